"""The execution-trace picture (Leviathan et al. 2023, Figure 5) as plotly bars on a time axis in target steps:
draft steps blue and target steps purple, as in the paper, one row for γ = 7, one for γ = 3 and one for plain.

>>> figure = execution_trace_figure(0.75, 0.02, tokens=40)
>>> [trace.name for trace in figure.data]
['draft step (M_q)', 'target step (M_p)']
"""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.labs.theory import execution_trace as trace_lab
from specviz.views.figures import BLUE, INK, LAYOUT, base_figure

PURPLE = "#8e5cc8"  # the paper's colour for the target model's calls
KIND_STYLE = {trace_lab.DRAFT_STEP: ("draft step (M_q)", BLUE), trace_lab.TARGET_STEP: ("target step (M_p)", PURPLE)}


def execution_trace_figure(alpha: float, c: float, tokens: int = trace_lab.PICTURE_TOKENS,
                           gammas=trace_lab.PAPER_GAMMAS) -> go.Figure:
    """One bar per block (base = its start, length = its width), rows top to bottom as the paper orders them; each
    row's end is labelled with its time and its speedup N / time. Target blocks of speculative rows say +E."""
    rows = trace_lab.execution_trace(alpha, c, tokens, gammas)
    figure = base_figure()
    for kind, (name, colour) in KIND_STYLE.items():
        labels, starts, widths, texts, hovers = [], [], [], [], []
        for label, blocks in rows.items():
            for block in (b for b in blocks if b.kind == kind):
                labels.append(label)
                starts.append(block.start)
                widths.append(block.width)
                speculative = label != trace_lab.PLAIN and kind == trace_lab.TARGET_STEP
                texts.append(f"+{block.tokens:.1f}" if speculative else "")
                unit = "token" if label == trace_lab.PLAIN else "round"
                hovers.append(f"{label}, {unit} {block.round_number}: {name}, {block.width:.3g} target steps"
                              + (f", yields {block.tokens:.2f} tokens on average" if speculative else ""))
        figure.add_bar(y=labels, x=widths, base=starts, orientation="h", name=name, text=texts,
                       textposition="inside", insidetextanchor="middle", textangle=0, hovertext=hovers, hoverinfo="text",
                       marker=dict(color=colour, line=dict(color="white", width=1 if kind == trace_lab.TARGET_STEP else 0)))
    longest = max(trace_lab.row_end(blocks) for blocks in rows.values())
    for label, blocks in rows.items():
        end = trace_lab.row_end(blocks)
        figure.add_annotation(x=end, y=label, xanchor="left", showarrow=False, font=dict(color=INK),
                              text=f" {end:.1f} steps ({tokens / end:.2f}×)")
    figure.update_layout(**{**LAYOUT, "height": 260}, barmode="overlay", bargap=0.35,
                         title=f"What-if: {tokens} tokens at α = {float(alpha):.2f}, c = {float(c):.3f}",
                         xaxis=dict(title="time (target steps)", range=[0, longest * 1.18]),
                         yaxis=dict(autorange="reversed", categoryorder="array", categoryarray=list(rows)))
    return figure
