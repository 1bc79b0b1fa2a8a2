"""The round-anatomy timeline: measured rounds as coloured segments, above the plain decoder's steps."""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.labs.round_anatomy import anatomy
from specviz.views.figures import BLUE, GREEN, GREY, LAYOUT, ORANGE, base_figure

KIND_COLOURS = {anatomy.DRAFT_FORWARDS: ORANGE, anatomy.DRAFT_OVERHEAD: "#f5c89a",
                anatomy.VERIFY_FORWARD: BLUE, anatomy.VERIFY_OVERHEAD: "#a9c4eb"}
SPECULATIVE, PLAIN = "speculative", "plain, same tokens"


def timeline_figure(segments: list[anatomy.Segment], plain: list[tuple[int, float, float]], emitted: dict[int, int]) -> go.Figure:
    """Horizontal bars on a time axis: each round's four parts on one lane, one plain step per token below.
    `emitted`: round number -> tokens it produced (written on its verify segment), for every round of the run. The
    title names exactly the rounds drawn, of how many."""
    figure = base_figure()
    for kind in anatomy.KINDS:
        chosen = [segment for segment in segments if segment.kind == kind]
        figure.add_bar(y=[SPECULATIVE] * len(chosen), x=[segment.ms for segment in chosen],
                       base=[segment.start_ms for segment in chosen], orientation="h", name=kind,
                       marker=dict(color=KIND_COLOURS[kind], line=dict(color="white", width=0.5)),
                       text=[f"+{emitted[s.round_number]}" if kind == anatomy.VERIFY_FORWARD else "" for s in chosen],
                       textposition="inside", customdata=[s.round_number for s in chosen],
                       hovertemplate=f"round %{{customdata}} · {kind}: %{{x:.1f}} ms<extra></extra>")
    figure.add_bar(y=[PLAIN] * len(plain), x=[ms for _, _, ms in plain], base=[start for _, start, _ in plain],
                   orientation="h", name="plain step (one token)",
                   marker=dict(color=[GREEN if index % 2 else "#7fcf97" for index in range(len(plain))],
                               line=dict(color="white", width=0.5)),
                   customdata=[number for number, _, _ in plain],
                   hovertemplate="token of round %{customdata}: %{x:.1f} ms<extra></extra>")
    end = max([s.start_ms + s.ms for s in segments] + [start + ms for _, start, ms in plain] + [1.0])
    rounds = sorted({s.round_number for s in segments})
    figure.update_layout(**{**LAYOUT, "height": 300}, barmode="overlay",
                         title=f"{_covered(rounds[0], rounds[-1])} of {len(emitted)}, measured, against plain decoding "
                               "of the same tokens" if rounds else "",
                         xaxis=dict(title="ms", range=[0, end * 1.02]), yaxis=dict(autorange="reversed"))
    figure.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.35, x=0))
    return figure


def _covered(first: int, last: int) -> str:
    return f"Round {first}" if first == last else f"Rounds {first}–{last}"


def totals_figure(facts: dict) -> go.Figure:
    """Where the time went over the rounds the summary covers (those after round 1): one stacked bar, beside the plain
    time for their tokens; the title names those rounds."""
    figure = base_figure()
    for kind, ms in facts["totals_ms"].items():
        figure.add_bar(x=[ms / 1e3], y=[SPECULATIVE], orientation="h", name=kind, marker_color=KIND_COLOURS[kind],
                       hovertemplate=f"{kind}: %{{x:.2f}} s<extra></extra>")
    figure.add_bar(x=[facts["plain_ms"] / 1e3], y=[PLAIN], orientation="h", name="plain steps", marker_color=GREEN)
    figure.update_layout(**{**LAYOUT, "height": 220}, barmode="stack", xaxis_title="seconds", showlegend=False,
                         title=f"{_covered(facts['first_round'], facts['last_round'])}: where the time went, beside "
                               "plain steps for their tokens")
    figure.update_yaxes(autorange="reversed", linecolor=GREY)
    return figure


def waterfall_figure(reconciled) -> go.Figure:
    """speedup.Waterfall as bars of ms per token: the prediction, each named part, this run; and plain decoding."""
    figure = base_figure()
    if reconciled is None:
        return figure
    names = ["predicted", *(name for name, _ in reconciled.parts), "this run"]
    values = [reconciled.predicted_ms, *(ms for _, ms in reconciled.parts), reconciled.measured_ms]
    figure.add_trace(go.Waterfall(x=names, y=values, measure=["absolute", *["relative"] * len(reconciled.parts), "total"],
                                  text=[f"{value:+.1f}" if 0 < index < len(values) - 1 else f"{value:.1f}"
                                        for index, value in enumerate(values)],
                                  textposition="outside", connector=dict(line=dict(color=GREY)),
                                  increasing=dict(marker_color=ORANGE), decreasing=dict(marker_color=GREEN),
                                  totals=dict(marker_color=BLUE), name="this run"))
    if reconciled.plain_ms is not None:
        figure.add_hline(y=reconciled.plain_ms, line_color=GREEN, line_dash="dash",
                         annotation_text=f"plain decoding {reconciled.plain_ms:.1f}", annotation_position="top left")
    measured = "" if reconciled.measured is None else f", measured {reconciled.measured:.2f}×"
    figure.update_layout(**{**LAYOUT, "height": 360}, showlegend=False, yaxis_title="ms per token",
                         title=f"Predicted {reconciled.predicted:.2f}×{measured}: where they part")
    return figure
