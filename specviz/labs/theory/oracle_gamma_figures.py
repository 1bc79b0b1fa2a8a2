"""plotly view of the oracle-γ bound: the oracle's gain over the best fixed γ, against α, one line per c.

>>> figure = oracle_gain_figure(0.75, 0.02)
>>> [trace.name for trace in figure.data][:2]
['c = 0.01', 'c = 0.03']
"""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.labs.theory import oracle_gamma
from specviz.labs.theory.calculator_figures import CURVE_COLOURS, LEGEND_RIGHT
from specviz.views.figures import GREY, INK, LAYOUT, MODEBAR_MARGIN, RED, base_figure

CURVE_COSTS = (0.01, 0.03, 0.05, 0.1, 0.2)  # c of the drawn lines; 0.03 holds the grid's largest gain
ALPHA_STEP = 0.005


def oracle_gain_figure(alpha: float, c: float, costs=CURVE_COSTS) -> go.Figure:
    """Gain = oracle speedup 1/(1 − α + cα) ÷ the best fixed γ's, over α in [0, 0.995], one line per c; the live
    (α, c) as a red dot on a dashed line at its c, and the grid's largest gain as a dotted level."""
    alpha, c = float(alpha), float(c)
    alphas = [step * ALPHA_STEP for step in range(round(0.995 / ALPHA_STEP) + 1)]
    figure = base_figure()
    for index, cost in enumerate(costs):
        figure.add_scatter(x=alphas, y=oracle_gamma.gain_grid(alphas, [cost])[0], mode="lines", name=f"c = {cost:g}",
                           line=dict(color=CURVE_COLOURS[index % len(CURVE_COLOURS)]),
                           hovertemplate=f"c = {cost:g}<br>α = %{{x:.3f}}<br>gain %{{y:.3f}}×<extra></extra>")
    live_gain = oracle_gamma.oracle_gain(alpha, c)
    if c not in costs:
        figure.add_scatter(x=alphas, y=oracle_gamma.gain_grid(alphas, [c])[0], mode="lines", name=f"your c = {c:.3f}",
                           line=dict(color=RED, dash="dash"), hoverinfo="skip")
    figure.add_scatter(x=[alpha], y=[live_gain], mode="markers+text", name=f"α = {alpha:.2f}, c = {c:.3f}",
                       text=[f"{live_gain:.2f}×"], textposition="top left",
                       marker=dict(size=12, color=RED, line=dict(color="black", width=1)))
    top, top_alpha, top_c = oracle_gamma.largest_gain()
    figure.add_hline(y=top, line_dash="dot", line_color=INK, annotation_position="top left",
                     annotation_text=f"largest on the 0.01 grid: {top:.3f}× (α = {top_alpha:.2f}, c = {top_c:.2f})")
    figure.add_hline(y=1.0, line_color=GREY, line_dash="dash")
    layout = {**LAYOUT, "legend": LEGEND_RIGHT, "margin": {**LAYOUT["margin"], "r": 150 + MODEBAR_MARGIN}}
    figure.update_layout(**layout, title="What-if: oracle γ ÷ best fixed γ (i.i.d. α)",
                         xaxis=dict(title="α (acceptance rate)", range=[0, 1]),
                         yaxis=dict(title="oracle speedup ÷ best fixed speedup", range=[0.95, 1.7]))
    return figure
