"""plotly views of the memory-bandwidth lab: the roofline of one decoder step against batch size, and the measured
time of one forward against the number of new tokens k.

>>> figure = roofline_figure(**PRESETS["A100 80GB PCIe"], max_batch=400)
>>> [trace.name for trace in figure.data]
['weight read (memory)', 'arithmetic (compute)', 'step = max of the two']
"""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.labs.memory_bandwidth import bandwidth
from specviz.labs.memory_bandwidth.bandwidth import PRESETS  # noqa: F401  (for the doctest and for callers: roofline_figure(**PRESETS[name]))
from specviz.views.figures import BLUE, GREEN, GREY, INK, LAYOUT, ORANGE, RED, base_figure

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
                         xaxis=dict(title="k (new tokens in one forward)", tickvals=ks),
                         yaxis=dict(title="ms", rangemode="tozero"), showlegend=False)
    return figure


def _rate_text(bytes_per_s: float) -> str:
    """19e12 -> "19.0 TB/s", 1555e9 -> "1,555 GB/s" (the datasheet's way), 31.5e9 -> "31.5 GB/s"."""
    if bytes_per_s >= 2e12:
        return f"{bytes_per_s / 1e12:.1f} TB/s"
    return f"{bytes_per_s / 1e9:,.0f} GB/s" if bytes_per_s >= 100e9 else f"{bytes_per_s / 1e9:.1f} GB/s"


def memory_hierarchy_figure(model_bytes: float = bandwidth.COURSE_MODEL_BYTES,
                            tiers: list[dict] = bandwidth.A100_40GB_HIERARCHY) -> go.Figure:
    """Three panels sharing the tiers (fastest on top): capacity, bandwidth and the time to read `model_bytes` once,
    all on log axes. Tiers too small for the model say so; on the HBM2 row, hollow diamonds mark the seeds'
    bandwidths that this figure corrects (the course's round 1 TB/s, the blog post's 1,935 GB/s: the 80GB card's)."""
    rows = bandwidth.hierarchy_read_times(model_bytes, tiers)
    names = [row["tier"] for row in rows]
    figure = base_figure()
    figure.set_subplots(1, 3, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=["capacity", "bandwidth", f"reading {model_bytes / 1e9:g} GB once"])
    figure.add_bar(y=names, x=[row["capacity_bytes"] for row in rows], orientation="h", marker_color=GREEN,
                   text=[row["capacity_text"] for row in rows], textangle=0, name="capacity",
                   textposition=["outside" if row["capacity_bytes"] < 1e9 else "inside" for row in rows],
                   hovertemplate="%{y}: %{text}<extra></extra>", row=1, col=1)
    figure.add_bar(y=names, x=[row["bandwidth_bytes_per_s"] for row in rows], orientation="h", marker_color=BLUE,
                   text=[_rate_text(row["bandwidth_bytes_per_s"]) for row in rows], textposition="auto", textangle=0,
                   name="bandwidth",
                   hovertemplate="%{y}: %{text}<extra></extra>", row=1, col=2)
    held = [row for row in rows if row["holds"]]
    figure.add_bar(y=[row["tier"] for row in held], x=[row["read_seconds"] * 1e3 for row in held], orientation="h",
                   marker_color=ORANGE, text=[_duration_text(row["read_seconds"]) for row in held], textposition="inside",
                   textangle=0, insidetextanchor="start",
                   name=f"{model_bytes / 1e9:g} GB read", hovertemplate="%{y}: %{text}<extra></extra>", row=1, col=3)
    for row in rows:
        if not row["holds"]:
            figure.add_annotation(x=0.5, xref="x3 domain", y=row["tier"], yref="y3", showarrow=False,
                                  text=f"too small for {model_bytes / 1e9:g} GB", font=dict(color=GREY))
    if any(row["tier"] == "HBM2" for row in held):
        course = {"the course's 1 TB/s": 1e12,
                  "the blog post's 1,935 GB/s (A100 80GB PCIe)": bandwidth.PRESETS["A100 80GB PCIe"]["bandwidth_bytes_per_s"]}
        figure.add_scatter(x=[model_bytes / rate * 1e3 for rate in course.values()], y=["HBM2"] * len(course),
                           mode="markers", name="bandwidths this figure corrects", text=list(course),
                           marker=dict(symbol="diamond-open", size=12, color=RED, line=dict(width=2)),
                           hovertemplate="%{text}: %{x:.1f} ms<extra></extra>", row=1, col=3)
    figure.update_xaxes(type="log")
    figure.update_xaxes(title_text="bytes", row=1, col=1)
    figure.update_xaxes(title_text="bytes / s", row=1, col=2)
    figure.update_xaxes(title_text="ms (from 1 ms)", range=[0, 3.3], row=1, col=3)
    figure.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=names)
    figure.update_layout(**{**LAYOUT, "height": 320, "margin": {**LAYOUT["margin"], "l": 190}}, showlegend=False,
                         title="A100-40GB memory hierarchy (log scales)")
    return figure


def _duration_text(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
