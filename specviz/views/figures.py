"""plotly only: each function takes numbers (or plain trace records) and returns a go.Figure."""

from __future__ import annotations

import html
import textwrap
from functools import lru_cache

import plotly.graph_objects as go

from specviz.core import theory
from specviz.trace import Round, TopToken

GREEN, RED, BLUE, GREY, ORANGE = "#2e9e4f", "#d64545", "#2f6fd6", "#8a8f98", "#e08a1e"
GRID, INK = "#ebf0f8", "#2a3f5f"
MODEBAR_MARGIN = 44  # px at the right of every plot: plotly's toolbar stands there, upright, over no title or label
LAYOUT = dict(margin=dict(l=50, r=MODEBAR_MARGIN, t=40, b=45), height=330, title_font_size=15,
              legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0))
LEGEND_ROW_PX = 22  # one row of a legend under the plot
LINE_CHARS = 44  # a line of text under a plot: narrow enough for a phone's 370 px plot (plotly never wraps)
COUNTS_UNDER_TICKS = 6  # α per position writes accepted/reached under each position up to this many positions


def wrapped(lines: list[str]) -> list[str]:
    """Lines of text under a plot, each cut at spaces into LINE_CHARS-character lines."""
    return [part for line in lines for part in textwrap.wrap(line, LINE_CHARS, break_long_words=False) or [""]]


def legend_below(figure: go.Figure, rows: int, axis_px: int = 60) -> go.Figure:
    """The legend at the figure's foot, two entries a row (`rows` of them), under the x axis's ticks and title
    (`axis_px` tall): never over the title or an axis, whatever the plot's width (a phone's 370 px included)."""
    legend = dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0, xanchor="left",
                  entrywidth=0.5, entrywidthmode="fraction")
    bottom = axis_px + rows * LEGEND_ROW_PX + 8
    figure.update_layout(legend=legend, margin=dict(b=bottom), height=figure.layout.height + rows * LEGEND_ROW_PX)
    return figure
TICK_CHARS = 10  # a token's label on a categorical axis is cut to this many characters (the hover has it whole)


@lru_cache(maxsize=1)
def _template() -> go.layout.Template:
    """plotly_white's look, layout only. Naming "plotly_white" instead validates and copies its full template on every
    figure, the largest cost of a streamed update; this one does neither (docs/results.md, "The default live run
    and the class page")."""
    axis = dict(gridcolor=GRID, linecolor=GRID, zerolinecolor=GRID, ticks="", automargin=True)
    return go.layout.Template(layout=dict(paper_bgcolor="white", plot_bgcolor="white", font=dict(color=INK),
                                          xaxis=axis, yaxis=axis, hoverlabel=dict(align="left"),
                                          modebar=dict(orientation="v")))  # in the right margin, not over the title


def base_figure(*traces) -> go.Figure:
    """A figure on the light template (given at construction, so plotly's default template is never applied)."""
    return go.Figure(list(traces), layout=dict(template=_template()))


def empty_figure(message: str) -> go.Figure:
    figure = base_figure()
    figure.add_annotation(text=message, showarrow=False, font=dict(size=14, color=GREY), x=0.5, y=0.5, xref="paper", yref="paper")
    figure.update_layout(**LAYOUT, xaxis=dict(visible=False), yaxis=dict(visible=False))
    return figure


def alpha_per_position_figure(alpha_per_position: list[float | None], reached: list[int], accepted: list[int],
                              alpha: float) -> go.Figure:
    """α_i = accepted at i / reached i, with the counts on each bar, and the overall α as a line."""
    positions = list(range(1, len(alpha_per_position) + 1))
    figure = base_figure(go.Bar(
        x=positions, y=[a if a is not None else 0 for a in alpha_per_position], marker_color=GREEN, name="α at position i",
        text=[f"{a}/{r}" for a, r in zip(accepted, reached)], textposition="none",  # the counts go under the axis
        hovertemplate="position %{x}<br>α = %{y:.3f}<br>accepted/reached = %{text}<extra></extra>",
    ))
    figure.add_hline(y=alpha, line_dash="dash", line_color=BLUE)  # named in the title: a label on it can meet a bar's
    counted = len(positions) <= COUNTS_UNDER_TICKS  # more would crowd a phone's axis: the bars' hover has them
    figure.update_layout(**LAYOUT, title=f"α per draft position (all: {alpha:.2f}, dashed)",
                         xaxis=dict(title="draft position i" + (" (accepted/reached)" if counted else ""),
                                    tickvals=positions, tickangle=0,
                                    ticktext=[f"{i}<br>{a}/{r}" if counted else str(i)
                                              for i, a, r in zip(positions, accepted, reached)]),
                         yaxis=dict(title="P(accept | reached)", range=[0, 1.15]), showlegend=False)
    return figure


def acceptance_by_depth_and_rank_figure(accepted_per_depth: list[int], tested_per_depth: list[int],
                                        accepted_per_rank: list[int], tests_per_rank: list[int], alpha: float) -> go.Figure:
    """A tree run's acceptance two ways, side by side: at each depth d (rounds that accepted a node there ÷ rounds
    whose walk tested one there) and by sibling rank r (r-th siblings accepted ÷ tested); the counts under each bar
    and in the hover, and the tree's α as a dashed line (tree_metrics.py)."""
    figure = base_figure()
    panels = ((accepted_per_depth, tested_per_depth, "depth d", GREEN, ""), (accepted_per_rank, tests_per_rank,
                                                                            "sibling rank r", ORANGE, "2"))
    for accepted, tested, name, colour, axis in panels:
        xs, counts = list(range(1, len(tested) + 1)), [f"{a}/{t}" for a, t in zip(accepted, tested)]
        figure.add_bar(x=xs, y=[a / t if t else 0 for a, t in zip(accepted, tested)], marker_color=colour, name=name,
                       customdata=counts, xaxis="x" + axis, yaxis="y" + axis,
                       hovertemplate=f"{name} = %{{x}}<br>acceptance = %{{y:.3f}}<br>accepted/tested = %{{customdata}}"
                                     "<extra></extra>")
        figure.update_layout({f"xaxis{axis}": dict(title=f"{name} (accepted/tested)", tickvals=xs, anchor="y" + axis,
                                                   ticktext=[f"{x}<br>{c}" for x, c in zip(xs, counts)],
                                                   domain=[0.0, 0.46] if not axis else [0.54, 1.0]),
                              f"yaxis{axis}": dict(range=[0, 1.15], anchor="x" + axis, showticklabels=not axis,
                                                   title="P(accept | tested)" if not axis else None)})
    figure.add_shape(type="line", xref="paper", x0=0, x1=1, yref="y", y0=alpha, y1=alpha,
                     line=dict(color=BLUE, dash="dash"))
    figure.update_layout(**{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 62}}, showlegend=False,
                         title=f"Acceptance by depth and by sibling rank<br><sup>tree α = {alpha:.3f} (dashed line): "
                               "accepted ÷ depth levels tested</sup>")
    return figure


def p_vs_q_figure(round_: Round, position: int) -> go.Figure:
    """Top tokens of p and q at one position of one round, the overlap min(p, q), the drafted token and its test."""
    tokens = [t for t in round_.tokens if t.position == position]
    if not tokens:
        return empty_figure(f"round {round_.index + 1} has no position {position}")
    drafted = next((t for t in tokens if t.kind in ("accepted", "rejected")), None)
    closing = next((t for t in tokens if t.kind in ("corrected", "bonus")), None)
    head = drafted or closing
    target, draft = _as_map(head.target_top), _as_map(head.draft_top)
    residual = _as_map(closing.residual_top) if closing is not None and closing.kind == "corrected" else {}
    soft_p, soft_q = _as_map(head.target_top_untempered), _as_map(head.draft_top_untempered)  # greedy runs only

    def shown_prob(token_id: int) -> float:  # the larger of p and q (untempered where recorded), to rank the bars
        return max(m.get(token_id, (0.0, ""))[0] for m in (target, draft, soft_p, soft_q))

    ids = sorted(set(target) | set(draft) | set(residual) | set(soft_p) | set(soft_q), key=lambda i: -shown_prob(i))[:10]
    labels = tick_labels([target.get(i) or draft.get(i) or residual.get(i) or soft_p.get(i) or soft_q.get(i)
                          for i in ids], ids)
    p = [target.get(i, (0.0, ""))[0] for i in ids]
    q = [draft.get(i, (0.0, ""))[0] for i in ids]
    figure = base_figure()
    figure.add_bar(x=labels, y=p, name="p (target)", marker_color=BLUE, opacity=0.55)
    if draft:
        figure.add_bar(x=labels, y=q, name="q (draft)", marker_color=ORANGE, opacity=0.55)
        figure.add_bar(x=labels, y=[min(a, b) for a, b in zip(p, q)], name="min(p, q)", marker_color=GREEN,
                       marker_pattern_shape="/", opacity=0.9)
    if residual:
        figure.add_scatter(x=labels, y=[residual.get(i, (0.0, ""))[0] for i in ids], mode="markers+lines",
                           name="residual norm(max(0, p − q))", marker=dict(color=RED, size=9, symbol="diamond"))
    for soft, name, colour in ((soft_p, "p at T = 1", BLUE), (soft_q, "q at T = 1", ORANGE)):
        if soft:
            top = max(soft, key=lambda i: soft[i][0])
            figure.add_scatter(x=labels, y=[soft.get(i, (0.0, ""))[0] for i in ids], mode="markers", name=name,
                               marker=dict(color=colour, size=[16 if i == top else 9 for i in ids], symbol="line-ew-open",
                                           line=dict(width=3, color=colour)),
                               hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>")
    title, below = f"Round {round_.index + 1}, position {position}", []
    if drafted is not None:
        if drafted.token_id in ids:
            at = ids.index(drafted.token_id)
            figure.add_annotation(x=labels[at], y=max(p[at], q[at]),
                                  text=f"drafted ({drafted.kind})", showarrow=True, arrowhead=2, ay=-25, ax=40)
        verdict = "<" if drafted.kind == "accepted" else "≥"
        title += f": {drafted.kind}"
        below.append(f"r = {drafted.uniform:.3f} {verdict} min(1, p/q) = {drafted.accept_prob:.3f}"
                     + (f", β = {drafted.overlap:.3f}" if drafted.overlap is not None else ""))
    if closing is not None:
        below.append(f"{closing.kind}: {plot_text(repr(closing.text))}")
    if soft_p:
        below.extend(greedy_margin(soft_p, soft_q, drafted).split("<br>"))
    below = wrapped(below)
    figure.update_layout(**LAYOUT, title=title, barmode="overlay", yaxis=dict(title="probability", range=[0, 1.3]),
                         xaxis=dict(tickangle=-45, automargin=True, title=dict(text="<br>".join(below),
                                                                               font=dict(size=12))))
    entries = len(figure.data)
    return legend_below(figure, rows=(entries + 1) // 2, axis_px=90 + 16 * len(below))


def speedup_figure(alpha: float, c: float, gamma_used: float, measured: float | None = None,
                   verify_cost: dict[int, float] | None = None, max_gamma: int = 16,
                   tree_budget: int | None = None) -> go.Figure:
    """Theoretical S(γ) from the measured α and c, the verify-cost-aware variant, the measured point, the best γ.

    gamma_used: where the measured point goes; an adaptive run passes its mean draft length (a fraction).
    tree_budget: a tree run's node budget, marked at γ = its depth (the curve reads a tree as a chain that deep)."""
    alpha = min(max(alpha, 0.0), 1.0)
    gammas = list(range(1, max_gamma + 1))
    ideal = [theory.speedup(alpha, g, c) for g in gammas]
    figure = base_figure()
    figure.add_scatter(x=gammas, y=ideal, mode="lines+markers", name="S = E/(γc+1)", line_color=BLUE)
    best = theory.optimal_gamma(alpha, c, max_gamma=max_gamma)
    figure.add_scatter(x=[best], y=[theory.speedup(alpha, best, c)], mode="markers", name=f"best: γ = {best}",
                       marker=dict(symbol="star", size=15, color=BLUE))
    if verify_cost:
        costed = [theory.speedup_with_verify_cost(alpha, g, c, verify_cost) for g in gammas]
        figure.add_scatter(x=gammas, y=costed, mode="lines+markers", name="with v(k)",
                           line=dict(color=ORANGE, dash="dot"))
        best_costed = theory.optimal_gamma(alpha, c, verify_cost=verify_cost, max_gamma=max_gamma)
        figure.add_scatter(x=[best_costed], y=[costed[best_costed - 1]], mode="markers", name=f"best: γ = {best_costed}",
                           marker=dict(symbol="star", size=15, color=ORANGE))
    if measured is not None:
        mean = "" if float(gamma_used).is_integer() else f" at mean γ {gamma_used:.1f}"
        figure.add_scatter(x=[gamma_used], y=[measured], mode="markers", name=f"measured {measured:.2f}×{mean}",
                           marker=dict(symbol="circle", size=13, color=RED, line=dict(color="black", width=1)))
    figure.add_hline(y=1.0, line_color=GREY, line_dash="dash")
    if tree_budget:
        figure.add_annotation(x=gamma_used, y=theory.speedup(alpha, max(round(gamma_used), 1), c), ax=45, ay=-40,
                              text=f"tree: budget {tree_budget} nodes", showarrow=True, arrowhead=2)
    figure.update_layout(**LAYOUT, title="Speedup: the run, what-ifs over γ",
                         xaxis=dict(title=f"γ, drafted tokens per round (α = {alpha:.2f}, c = {c:.3f})", dtick=1),
                         yaxis=dict(title="speedup ×"))
    return legend_below(figure, rows=(len(figure.data) + 1) // 2)


def tokens_per_round_figure(tokens_per_round: list[int], alpha: float, gamma: int,
                            draft_lengths: list[int] | None = None, other: list[int] | None = None,
                            names: tuple[str, str] = ("tree", "chain")) -> go.Figure:
    """Histogram of tokens produced per round against the capped geometric law the theory predicts.

    draft_lengths: the tokens each round actually drafted (Round.drafted; a tree's depth), one per round; the
    prediction is then the sum of each round's own law (theory.tokens_per_round_counts), right for adaptive γ and for
    rounds cut short. None means every round drafted γ. other: a second run's tokens per round (a chain beside a
    tree), drawn beside the first; names: the two runs' names in the legend.
    """
    rounds = max(len(tokens_per_round), 1)
    lengths = [gamma] * len(tokens_per_round) if draft_lengths is None else list(draft_lengths)
    largest = max([gamma, *lengths, *[n - 1 for n in other or []]]) + 1  # the most tokens a round can yield
    counts = [sum(1 for n in tokens_per_round if n == size) for size in range(1, largest + 1)]
    predicted = theory.tokens_per_round_counts(min(max(alpha, 0.0), 1.0), lengths)
    predicted += [0.0] * (largest - len(predicted))
    sizes = list(range(1, largest + 1))
    figure = base_figure()
    title = f"Tokens per round ({rounds} rounds)"
    if other is None:
        figure.add_bar(x=sizes, y=counts, name="rounds seen", marker_color=GREEN)
    else:
        means = [sum(series) / max(len(series), 1) for series in (tokens_per_round, other)]
        figure.add_bar(x=sizes, y=counts, name=f"{names[0]} ({len(tokens_per_round)} rounds)", marker_color=GREEN)
        figure.add_bar(x=sizes, y=[sum(1 for n in other if n == size) for size in sizes], marker_color=GREY,
                       name=f"{names[1]} ({len(other)} rounds)")
        title = f"Tokens per round: {names[0]} {means[0]:.2f}, {names[1]} {means[1]:.2f}"
        figure.update_layout(barmode="group")
    figure.add_scatter(x=sizes, y=predicted, mode="lines+markers", name="theory", line_color=BLUE)
    figure.update_layout(**LAYOUT, title=title, xaxis=dict(title="tokens produced", dtick=1), yaxis=dict(title="rounds"))
    return legend_below(figure, rows=(len(figure.data) + 1) // 2)


def greedy_margin(soft_p: dict, soft_q: dict, drafted) -> str:
    """At T = 0 only the argmaxes meet: how far the target's top token led, and where the draft's pick stood in p."""
    ranked = sorted(soft_p.items(), key=lambda item: -item[1][0])
    (top, (first, text)), second = ranked[0], ranked[1][1][0] if len(ranked) > 1 else 0.0
    line = f"T = 1 view: argmax p = {plot_text(repr(text))} at {first:.3f}, next {second:.3f} (margin {first - second:.3f})"
    if drafted is not None:
        in_p = soft_p.get(drafted.token_id, (None, ""))[0]
        in_q = f" (q = {soft_q[drafted.token_id][0]:.3f})" if drafted.token_id in soft_q else ""
        line += (f"<br>the draft's pick{in_q} " + ("is p's argmax too: accepted" if drafted.token_id == top else
                 f"has p = {'< ' + format(ranked[-1][1][0], '.3f') if in_p is None else format(in_p, '.3f')}: "
                 f"it loses by {first - (in_p or 0.0):.3f}"))
    return line


def _as_map(entries: list[TopToken]) -> dict[int, tuple[float, str]]:
    return {entry.token_id: (entry.prob, entry.text) for entry in entries}


def tick_labels(entries: list, ids: list[int]) -> list[str]:
    """Short, distinct axis labels for tokens: spaces drawn as '·' (as the rows draw them), cut to TICK_CHARS, and a
    token's id added where two labels would read the same (plotly would merge their bars).
    [(p, ' the'), (p, 'the')] -> ['·the', 'the']."""
    labels = [_label(entry, token_id) for entry, token_id in zip(entries, ids)]
    return [label if labels.count(label) == 1 else f"{label} #{token_id}" for label, token_id in zip(labels, ids)]


def _label(entry, token_id: int) -> str:
    text = repr(entry[1] if entry else str(token_id))[1:-1].replace(" ", "·")
    text = text if len(text) <= TICK_CHARS else text[: TICK_CHARS - 1] + "…"
    return plot_text(text) or f"#{token_id}"


def default_position(round_: Round) -> int:
    """Where p vs q opens on a round: its last tested draft (the rejection, or the last accepted one), which has
    both p and q; a round that drafted nothing (round 1 reads the prompt) has only its own token's position."""
    tested = [token.position for token in round_.tokens if token.kind in ("accepted", "rejected")]
    return tested[-1] if tested else round_.tokens[-1].position


def plot_text(text: str) -> str:
    """Text shown literally by plotly, which reads a few HTML tags and entities in labels and titles."""
    return html.escape(text, quote=False)


def run_figures(trace, metrics, position: int | None = None) -> list[go.Figure]:
    """A run's four plots: α per position (a tree run: acceptance by depth and by sibling rank), p vs q (last round,
    at `position` or its last tested draft), the speedup curve (a tree run's node budget marked) and the
    tokens-per-round histogram (the live tab and the exported page)."""
    from specviz.analysis.metrics import estimate_verify_cost, measured_gamma
    from specviz.analysis.tree_metrics import node_budget, round_depth, summarize_tree

    last, tree = trace.rounds[-1], summarize_tree(trace)
    acceptance = (acceptance_by_depth_and_rank_figure(tree.accepted_per_depth, tree.tested_per_depth,
                                                      tree.accepted_per_rank, tree.tests_per_rank, tree.alpha)
                  if tree.is_tree else alpha_per_position_figure(metrics.alpha_per_position, metrics.reached_per_position,
                                                                 metrics.accepted_per_position, metrics.alpha))
    return [
        acceptance,
        p_vs_q_figure(last, position or default_position(last)),
        speedup_figure(metrics.alpha, metrics.c, measured_gamma(trace), metrics.speedup_measured,
                       estimate_verify_cost(trace), tree_budget=node_budget(trace)),
        tokens_per_round_figure([len(r.emitted) for r in trace.rounds], metrics.alpha, int(trace.config["gamma"]),
                                [round_depth(r) for r in trace.rounds]),  # a chain's draft length, a tree's depth
    ]
