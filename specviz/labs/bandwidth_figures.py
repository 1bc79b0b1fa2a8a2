"""plotly views of the memory-bandwidth lab: the roofline of one decoder step against batch size, and the measured
time of one forward against the number of new tokens k.

>>> figure = roofline_figure(**PRESETS["A100 80GB PCIe"], max_batch=400)
>>> [trace.name for trace in figure.data]
['weight read (memory)', 'arithmetic (compute)', 'step = max of the two']
"""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.figures import BLUE, GREEN, GREY, INK, LAYOUT, ORANGE, base_figure
from specviz.labs import bandwidth
from specviz.labs.bandwidth import PRESETS  # noqa: F401  (for the doctest and for callers: roofline_figure(**PRESETS[name]))

_INSIDE_TOP_LEFT = dict(x=0.01, y=0.99, xanchor="left", yanchor="top", bgcolor="rgba(255,255,255,0.85)")


def roofline_figure(bandwidth_bytes_per_s: float, flops_per_s: float | None, params: float = 11e9,
                    bytes_per_param: float = 2, max_batch: int | None = None, name: str = "") -> go.Figure:
    """Milliseconds of one forward against batch B = 1..max_batch: the weight read (flat: the weights are read once
    whatever B), the arithmetic (a line through 0), the step (their max), and the crossover B* where they meet.

    Left of B* the step costs the same for 1 token or B*: the room speculative decoding spends on drafted tokens.
    Takes a preset's numbers as keywords: roofline_figure(**bandwidth.PRESETS["H100 SXM"]). max_batch defaults to
    twice the crossover (or 256 without a FLOP/s figure, where only the memory line is drawn).
    """
    crossover = None if flops_per_s is None else bandwidth.crossover_batch(bytes_per_param, bandwidth_bytes_per_s, flops_per_s)
    if max_batch is None:
        max_batch = 256 if crossover is None else max(int(2 * crossover), 2)
    if not isinstance(max_batch, int) or max_batch < 1:
        raise ValueError(f"max_batch must be an integer >= 1, got {max_batch!r}")
    batches = list(range(1, max_batch + 1))
    memory_ms = bandwidth.weight_read_seconds(params, bytes_per_param, bandwidth_bytes_per_s) * 1e3
    figure = base_figure()
    figure.add_scatter(x=batches, y=[memory_ms] * len(batches), mode="lines", name="weight read (memory)",
                       line=dict(color=BLUE, width=2),
                       hovertemplate="B = %{x}<br>weight read %{y:.2f} ms<extra></extra>")
    if flops_per_s is not None:
        compute_ms = [bandwidth.compute_seconds(params, batch, flops_per_s) * 1e3 for batch in batches]
        figure.add_scatter(x=batches, y=compute_ms, mode="lines", name="arithmetic (compute)",
                           line=dict(color=ORANGE, width=2),
                           hovertemplate="B = %{x}<br>arithmetic %{y:.2f} ms<extra></extra>")
        figure.add_scatter(x=batches, y=[max(memory_ms, ms) for ms in compute_ms], mode="lines",
                           name="step = max of the two", line=dict(color=INK, width=4, dash="dot"),
                           hovertemplate="B = %{x}<br>step %{y:.2f} ms<extra></extra>")
        figure.add_vline(x=crossover, line_dash="dash", line_color=GREY)
        figure.add_annotation(x=crossover, y=memory_ms, text=f"B* = {crossover:.0f}<br>compute overtakes memory",
                              showarrow=True, arrowhead=2, ax=-60, ay=-40, font=dict(color=INK))
        if crossover > 1:
            figure.add_vrect(x0=1, x1=min(crossover, max_batch), fillcolor=GREEN, opacity=0.08, line_width=0,
                             annotation_text="memory-bound", annotation_position="bottom left")
    gigabytes, terabytes_per_s = params * bytes_per_param / 1e9, bandwidth_bytes_per_s / 1e12
    figure.add_annotation(x=max_batch, y=memory_ms, xanchor="right", yanchor="bottom", showarrow=False,
                          text=f"{gigabytes:g} GB / {terabytes_per_s:g} TB/s = {memory_ms:.1f} ms", font=dict(color=BLUE))
    if flops_per_s is None:
        figure.add_annotation(x=0.5, y=0.3, xref="paper", yref="paper", showarrow=False, font=dict(color=GREY),
                              text="no FLOP/s given: the memory bound only")
    title = f"{name + ': ' if name else ''}{memory_ms:.1f} ms per token at B = 1 ({1e3 / memory_ms:.0f} tokens/s at most)"
    figure.update_layout(**{**LAYOUT, "legend": _INSIDE_TOP_LEFT}, title=title, showlegend=flops_per_s is not None,
                         xaxis=dict(title="batch B (tokens per forward)"), yaxis=dict(title="ms", rangemode="tozero"))
    return figure


def measured_forward_figure(timings_ms: dict[int, float], tolerance: float = 1.25) -> go.Figure:
    """Measured ms of one forward against k new tokens, with the flat start (every k within tolerance × time(1),
    see bandwidth.bandwidth_bound_until) shaded as the bandwidth-bound region and the tolerance line drawn."""
    bound = bandwidth.bandwidth_bound_until(timings_ms, tolerance)
    ks = sorted(timings_ms)
    limit = tolerance * timings_ms[1]
    figure = base_figure()
    figure.add_scatter(x=ks, y=[timings_ms[k] for k in ks], mode="lines+markers", name="measured forward",
                       line=dict(color=BLUE), hovertemplate="k = %{x}<br>%{y:.2f} ms<extra></extra>")
    figure.add_hline(y=limit, line_dash="dash", line_color=GREY,
                     annotation_text=f"{tolerance:g} × time(1) = {limit:.2f} ms", annotation_position="top left")
    figure.add_vrect(x0=0.5, x1=bound + 0.5, fillcolor=GREEN, opacity=0.12, line_width=0,
                     annotation_text=f"bandwidth-bound up to k = {bound}", annotation_position="top right")
    figure.update_layout(**LAYOUT, title=f"One forward over k new tokens: nearly flat up to k = {bound}",
                         xaxis=dict(title="k (new tokens in one forward)", dtick=1 if len(ks) <= 16 else None),
                         yaxis=dict(title="ms", rangemode="tozero"), showlegend=False)
    return figure
