"""plotly views of the simulated-models lab. Each function takes the rows an experiment in simulated.py returned.

>>> from specviz.labs.simulated_models import experiments as simulated
>>> figure = speedup_vs_gamma_figure(simulated.simulated_vs_theory(n_tokens=200), alpha=0.8, c=0.1)
>>> [trace.name for trace in figure.data]
['theory E/(γc+1)', 'simulated ± 3 SE']
"""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.core import theory
from specviz.labs.simulated_models.experiments import AGREEMENT_SE
from specviz.views.figures import BLUE, GREEN, GREY, LAYOUT, ORANGE, base_figure


def speedup_vs_gamma_figure(rows: list[dict], alpha: float, c: float) -> go.Figure:
    """The theoretical speedup against γ as a line, the simulated speedups as points with ±3-standard-error bars
    (the band inside which the table calls them in agreement). rows: simulated.simulated_vs_theory(alpha, c)."""
    gammas = [row["gamma"] for row in rows]
    curve = list(range(1, max(gammas + [1]) + 2))
    figure = base_figure()
    figure.add_scatter(x=curve, y=[theory.speedup(alpha, gamma, c) for gamma in curve], mode="lines+markers",
                       name="theory E/(γc+1)", line_color=BLUE, marker=dict(size=5))
    figure.add_scatter(
        x=gammas, y=[row["speedup"] for row in rows], mode="markers", name=f"simulated ± {AGREEMENT_SE:g} SE",
        marker=dict(color=GREEN, size=11, line=dict(color="black", width=1)),
        error_y=dict(type="data", array=[AGREEMENT_SE * row["speedup_se"] for row in rows], color=GREEN, thickness=2),
        customdata=[[row["rounds"], row["speedup_theory"], row["z"]] for row in rows],
        hovertemplate="γ = %{x}<br>simulated %{y:.3f}× over %{customdata[0]} rounds"
                      "<br>theory %{customdata[1]:.3f}×, z = %{customdata[2]}<extra></extra>",
    )
    figure.add_hline(y=1.0, line_color=GREY, line_dash="dash")
    figure.update_layout(**LAYOUT, title=f"Simulated against theoretical speedup (α = {alpha:g}, c = {c:g})",
                         xaxis=dict(title="γ (drafted tokens per round)", dtick=1), yaxis=dict(title="speedup ×"))
    return figure


def distribution_figure(rows: list[dict], overlap: float | None = None) -> go.Figure:
    """The first generated token: the target's exact probabilities against the frequencies of the engine's output
    and of the draft sampled alone. rows: simulated.first_token_frequencies(...)."""
    words = [row["token"] for row in rows]
    figure = base_figure()
    figure.add_bar(x=words, y=[row["target"] for row in rows], name="target p (exact)", marker_color=BLUE)
    figure.add_bar(x=words, y=[row["speculative"] for row in rows], name="speculative output", marker_color=GREEN)
    figure.add_bar(x=words, y=[row["draft"] for row in rows], name="draft alone", marker_color=ORANGE)
    title = "First token: speculative output against the target and the draft"
    if overlap is not None:
        title += f" (overlap β = {overlap:g})"
    figure.update_layout(**LAYOUT, title=dict(text=title, font=dict(size=13)), barmode="group",
                         xaxis=dict(title="first generated word", tickangle=-30), yaxis=dict(title="probability"))
    return figure
