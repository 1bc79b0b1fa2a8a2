"""plotly views of the calculator lab: speedup over α × γ as a heatmap, and speedup against γ for a few α.

Both take an optional `measured=(alpha, c, gamma, speedup)` from the last live run and mark it as a red dot (its
measured speedup, or with `theoretical=True` the speedup the theory gives its α, γ and c), and say in the title which
cost model draws them: "v(k) = 1 (GPU-like)" (the paper's) or "measured v(k)".

>>> figure = speedup_heatmap(0.05)
>>> figure.data[0].type, len(figure.data[0].y)  # γ = 1..16 on the y axis
('heatmap', 16)
"""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.labs.theory import calculator
from specviz.views.figures import BLUE, GREEN, GREY, INK, LAYOUT, MODEBAR_MARGIN, ORANGE, RED, base_figure

Measured = tuple[float, float, int, float]  # (alpha, c, gamma, measured_speedup) of the last live run
CURVE_COLOURS = [BLUE, GREEN, ORANGE, RED, INK, GREY]
LEGEND_RIGHT = dict(orientation="v", x=1.02, y=1.0, xanchor="left", yanchor="top")  # one entry per α: beside the plot


def speedup_heatmap(c: float, verify_cost: calculator.VerifyCost | None = None, measured: Measured | None = None,
                    alpha_steps: int = 50, max_gamma: int = 16, theoretical: bool = False) -> go.Figure:
    """Speedup over α ∈ [0, 1) (x, `alpha_steps` values) × γ = 1..max_gamma (y) for one c.

    Colour is red below 1 (slower than plain decoding), white at exactly 1, green above; a black contour draws
    S = 1. A dotted line gives the best γ for each α (within 1..max_gamma), a dashed one α = c (viability).
    """
    alphas = [step / alpha_steps for step in range(alpha_steps)]
    gammas = list(range(1, max_gamma + 1))
    grid = calculator.speedup_grid(c, alphas, gammas, verify_cost)
    low, high = min(min(row) for row in grid), max(max(row) for row in grid)
    figure = base_figure(go.Heatmap(
        x=alphas, y=gammas, z=grid, zmin=low, zmax=high, colorscale=_scale_white_at_one(low, high),
        colorbar=dict(title="speedup ×", thickness=12), name="speedup",
        hovertemplate="α = %{x:.2f}<br>γ = %{y}<br>speedup = %{z:.2f}×<extra></extra>",
    ))
    figure.add_contour(x=alphas, y=gammas, z=grid, showscale=False, name="speedup = 1", hoverinfo="skip",
                       contours=dict(start=1.0, end=1.0, size=1.0, coloring="none", showlabels=True),
                       line=dict(color="black", width=2))
    best = [_best_gamma(gammas, column) for column in zip(*grid)]  # column: the speedups of one α, per γ
    figure.add_scatter(x=alphas, y=best, mode="lines", name="best γ", line=dict(color=INK, dash="dot", width=2))
    if 0.0 <= c < 1.0:
        figure.add_vline(x=c, line_dash="dash", line_color=GREY, annotation_text="α = c", annotation_position="top")
    if measured is not None:
        alpha, run_c, gamma, value = _checked_measured(measured)
        figure.add_scatter(x=[alpha], y=[gamma], mode="markers+text",
                           name=_measured_label(alpha, run_c, gamma, value, theoretical),
                           hovertemplate=_measured_hover(alpha, run_c, gamma, value, theoretical),
                           text=[f"last run {value:.2f}×{' (theory)' if theoretical else ''}"], textposition="top center",
                           textfont=dict(color=INK),
                           marker=dict(symbol="circle", size=13, color=RED, line=dict(color="black", width=1)))
    layout = {**LAYOUT, "legend": dict(orientation="h", yanchor="top", y=-0.3, x=0), "height": 400,  # legend below:
              "margin": {**LAYOUT["margin"], "b": 115}}  # above, its entries would run into the title
    figure.update_layout(**layout, title=f"Speedup over α × γ (c = {c:.3f}, {calculator.cost_model_label(verify_cost)})",
                         xaxis=dict(title="α (acceptance rate)", range=[0, 1]),
                         yaxis=dict(title="γ (drafted tokens per round)", dtick=1 if max_gamma <= 16 else None))
    return figure


def speedup_curves(c: float, alphas=(0.5, 0.6, 0.7, 0.8, 0.9), verify_cost: calculator.VerifyCost | None = None,
                   max_gamma: int = 16, measured: Measured | None = None, theoretical: bool = False) -> go.Figure:
    """Speedup against γ = 1..max_gamma, one line per α, each with its best γ starred; the measured run as a red dot
    with its own theory curve (dashed, at its α and c)."""
    gammas = list(range(1, max_gamma + 1))
    figure = base_figure()
    for index, alpha in enumerate(alphas):
        colour = CURVE_COLOURS[index % len(CURVE_COLOURS)]
        _add_curve(figure, alpha, c, gammas, verify_cost, colour, name=f"α = {alpha:.2f}")
    if measured is not None:
        alpha, run_c, gamma, value = _checked_measured(measured)
        _add_curve(figure, alpha, run_c, gammas, verify_cost, RED, name="theory at the run's α, c",
                   dash="dash", star=False)
        figure.add_scatter(x=[gamma], y=[value], mode="markers+text",
                           name=_measured_label(alpha, run_c, gamma, value, theoretical),
                           hovertemplate=_measured_hover(alpha, run_c, gamma, value, theoretical),
                           text=[f"last run {value:.2f}×{' (theory)' if theoretical else ''}"], textposition="bottom center",
                           marker=dict(symbol="circle", size=13, color=RED, line=dict(color="black", width=1)))
    figure.add_hline(y=1.0, line_color=GREY, line_dash="dash")
    layout = {**LAYOUT, "legend": LEGEND_RIGHT, "margin": {**LAYOUT["margin"], "r": 150 + MODEBAR_MARGIN}}
    figure.update_layout(**layout, title=f"Speedup against γ (c = {c:.3f}, {calculator.cost_model_label(verify_cost)})",
                         xaxis=dict(title="γ (drafted tokens per round)", dtick=1 if max_gamma <= 16 else None),
                         yaxis=dict(title="speedup ×", rangemode="tozero"))
    return figure


def _add_curve(figure: go.Figure, alpha: float, c: float, gammas: list[int], verify_cost, colour: str, name: str,
               dash: str = "solid", star: bool = True) -> None:
    speedups = calculator.speedup_grid(c, [alpha], gammas, verify_cost)
    curve = [row[0] for row in speedups]
    figure.add_scatter(x=gammas, y=curve, mode="lines", name=name, line=dict(color=colour, dash=dash),
                       hovertemplate=f"{name}<br>γ = %{{x}}<br>speedup = %{{y:.2f}}×<extra></extra>")
    if star:
        best = _best_gamma(gammas, curve)
        figure.add_scatter(x=[best], y=[curve[gammas.index(best)]], mode="markers", showlegend=False,
                           name=f"best γ = {best} for {name}", marker=dict(symbol="star", size=13, color=colour),
                           hovertemplate=f"best γ = {best} for {name}<br>speedup = %{{y:.2f}}×<extra></extra>")


def _best_gamma(gammas: list[int], speedups) -> int:
    """The γ of the highest speedup; the smaller γ on a tie, as theory.optimal_gamma chooses."""
    return max(gammas, key=lambda gamma: (speedups[gammas.index(gamma)], -gamma))


def _scale_white_at_one(low: float, high: float) -> list:
    """A red-white-green scale over [low, high] whose white sits exactly at speedup 1."""
    if high <= 1.0:
        return [[0.0, RED], [1.0, "white"]]
    if low >= 1.0:
        return [[0.0, "white"], [1.0, GREEN]]
    middle = (1.0 - low) / (high - low)
    return [[0.0, RED], [middle, "white"], [1.0, GREEN]]


def _checked_measured(measured) -> Measured:
    if len(measured) != 4:
        raise ValueError(f"measured must be (alpha, c, gamma, measured_speedup), got {measured!r}")
    alpha, c, gamma, value = measured
    alpha, gamma, c = calculator.validate_inputs(alpha, gamma, c)
    if not value > 0:
        raise ValueError(f"the measured speedup must be positive, got {value!r}")
    return alpha, c, gamma, float(value)


def _measured_label(alpha: float, c: float, gamma: int, value: float, theoretical: bool = False) -> str:
    """The red dot's legend name, short (the legend must leave the plot its width); the hover has α, c and γ."""
    return f"last run {value:.2f}× ({'predicted' if theoretical else 'measured'})"


def _measured_hover(alpha: float, c: float, gamma: int, value: float, theoretical: bool) -> str:
    kind = "its predicted speedup (not measured)" if theoretical else "measured speedup"
    return f"last live run: {kind} {value:.2f}×<br>α {alpha:.2f}, c {c:.3f}, γ {gamma}<extra></extra>"
