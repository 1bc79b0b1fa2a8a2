"""The figures of "When it pays": v(k) per regime, and the predicted speedup against γ per regime."""

from __future__ import annotations

import os

import plotly.graph_objects as go

from specviz.core import theory
from specviz.labs.when_it_pays.regimes import MAX_GAMMA, WEIGHT_BOUND_V, Regime
from specviz.views.figures import BLUE, GREEN, GREY, LAYOUT, ORANGE, RED, base_figure

COLOURS = [BLUE, ORANGE, GREEN, "#8e44ad", "#16a085"]
LIVE_COLOUR = RED
BELOW = dict(orientation="h", yanchor="top", y=-0.25, x=0)  # the legend under the plot, clear of the axis titles


def _colour(index: int, regime: Regime) -> str:
    return LIVE_COLOUR if regime.source == "the live tab" else COLOURS[index % len(COLOURS)]


def _shared_name(names: list[str]) -> str:
    """The part of several regimes' names they share, to its last comma: 'the 4-bit target, CPU, a draft' and
    'the 4-bit target, CPU, lookup' -> 'the 4-bit target, CPU'."""
    shared = os.path.commonprefix(names)
    return shared[: shared.rfind(",")] if "," in shared else shared.strip() or names[0]


def verify_cost_figure(regimes: list[Regime], max_k: int = MAX_GAMMA + 1) -> go.Figure:
    """v(k) against k for each regime (measured sizes marked, the rest as theory.verify_cost_at reads them), with the
    line below which a forward is bound by reading the weights."""
    figure = base_figure()
    ks = list(range(1, max_k + 1))
    drawn: dict[tuple, str] = {}  # regimes of one target on one machine share their v(k): one curve, named once
    for index, regime in enumerate(regimes):
        key = tuple(sorted(regime.verify_cost.items()))
        if key in drawn:
            continue
        colour = drawn[key] = _colour(index, regime)
        names = [other.name for other in regimes if tuple(sorted(other.verify_cost.items())) == key]
        figure.add_scatter(x=ks, y=[theory.verify_cost_at(regime.verify_cost, k) for k in ks], mode="lines",
                           name=names[0] if len(names) < 2 else _shared_name(names),
                           line=dict(color=colour))
        measured = sorted(k for k in regime.verify_cost if k <= max_k)
        figure.add_scatter(x=measured, y=[regime.verify_cost[k] for k in measured], mode="markers", showlegend=False,
                           marker=dict(color=colour, size=7), hovertemplate="v(%{x}) = %{y:.2f}<extra></extra>")
    figure.add_hline(y=WEIGHT_BOUND_V, line_color=GREY, line_dash="dash")
    figure.add_annotation(x=1, y=WEIGHT_BOUND_V, text=f"v = {WEIGHT_BOUND_V}: below, bound by reading weights",
                          showarrow=False, xanchor="left", yanchor="top", font=dict(color=GREY, size=11))
    figure.update_layout(**{**LAYOUT, "height": 400, "legend": BELOW, "margin": {**LAYOUT["margin"], "b": 110}},
                         title="A forward over k tokens, in one-token forwards",
                         xaxis=dict(title="k (tokens in one forward)", dtick=2), yaxis=dict(title="v(k)", rangemode="tozero"))
    return figure


def payoff_figure(regimes: list[Regime], max_gamma: int = MAX_GAMMA) -> go.Figure:
    """What-if: the speedup E(α, γ) ÷ (γ·c + v(γ + 1)) predicted at every γ from each regime's α, c and v(k), with its
    measured speedup where one was measured (the benchmark's, or the live run's at its γ), and the line of plain
    decoding."""
    figure = base_figure()
    gammas = list(range(1, max_gamma + 1))
    for index, regime in enumerate(regimes):
        colour = _colour(index, regime)
        figure.add_scatter(x=gammas, y=[regime.predicted(g) for g in gammas], mode="lines+markers", name=regime.name,
                           line=dict(color=colour), marker=dict(size=5))
        if regime.measured_speedup is not None and regime.measured_gamma:
            figure.add_scatter(x=[regime.measured_gamma], y=[regime.measured_speedup], mode="markers",
                               name=f"measured {regime.measured_speedup:.2f}×", showlegend=False,
                               marker=dict(symbol="diamond", size=13, color=colour, line=dict(color="black", width=1)),
                               hovertemplate=f"{regime.name}: measured %{{y:.2f}}× at γ %{{x}}<extra></extra>")
            if regime.measured_low is not None:  # the live run's interval, as an error bar on its diamond
                figure.data[-1].error_y = dict(type="data", symmetric=False, color=colour,
                                               array=[regime.measured_high - regime.measured_speedup],
                                               arrayminus=[regime.measured_speedup - regime.measured_low])
    figure.add_hline(y=1.0, line_color=GREY, line_dash="dash")
    figure.update_layout(**{**LAYOUT, "height": 400, "legend": BELOW, "margin": {**LAYOUT["margin"], "b": 110}},
                         title="What-if over γ (◆ measured)",
                         xaxis=dict(title="γ (drafted tokens per round)", dtick=2), yaxis=dict(title="speedup ×"))
    return figure
