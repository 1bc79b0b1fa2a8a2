"""The "Memory bandwidth" tab: why one target pass over γ+1 tokens costs about one token, and this machine's v(k)."""

from __future__ import annotations

import gradio as gr

from specviz.app import worker
from specviz.app.callbacks import lab_callback
from specviz.app.estimates import announced
from specviz.app.fields import lab_field
from specviz.app.tabs.losslessness import LOSSLESS_PROMPT
from specviz.config import DecodeConfig
from specviz.decoding.pipeline import build_pipeline, encode_prompt
from specviz.labs.memory_bandwidth import bandwidth, figures


@lab_callback
def bandwidth_view(params_billions, bytes_per_param, bandwidth_gb_s, tflops, batch, tokens):
    params_billions = lab_field("Parameters P (billions)", params_billions, 0.001, 10_000)
    bytes_per_param = lab_field("Bytes per parameter", bytes_per_param, 0.125, 8)
    bandwidth_gb_s = lab_field("Memory bandwidth (GB/s)", bandwidth_gb_s, 0.1, 1_000_000)
    tflops = lab_field("TFLOP/s", tflops, 0, 1_000_000, note="0 ignores compute")
    batch = lab_field("Batch B", batch, 1, 100_000, whole=True)
    tokens = lab_field("N tokens", tokens, 1, 10_000_000, whole=True)
    params, bandwidth_bytes = params_billions * 1e9, bandwidth_gb_s * 1e9
    flops = tflops * 1e12 if tflops else None
    read_s = bandwidth.weight_read_seconds(params, float(bytes_per_param), bandwidth_bytes)
    lines = [f"Reading the weights once: **{read_s * 1e3:.2f} ms** (P·bytes / bandwidth) — the floor of every decoding step."]
    if flops:
        lines.append(f"Compute for batch {int(batch)}: **{bandwidth.compute_seconds(params, float(batch), flops) * 1e3:.3f} ms** "
                     f"(2·P·B / FLOP/s). Compute overtakes memory at **B ≈ "
                     f"{bandwidth.crossover_batch(float(bytes_per_param), bandwidth_bytes, flops):.0f}**.")
    walltime = bandwidth.min_walltime_seconds(int(tokens), params, float(bytes_per_param), bandwidth_bytes, flops, int(batch))
    lines.append(f"Minimum walltime for {int(tokens)} tokens, one at a time: **{walltime:.2f} s**. Scoring γ+1 tokens in "
                 "one pass costs about one weight read while B·(γ+1) stays below the crossover: that is the room "
                 "speculative decoding uses.")
    figure = figures.roofline_figure(bandwidth_bytes, flops, params=params, bytes_per_param=float(bytes_per_param))
    return "\n\n".join(lines), figure


def bandwidth_preset(name):
    preset = bandwidth.PRESETS[name]
    tflops = preset["flops_per_s"] / 1e12 if preset["flops_per_s"] else 0
    return preset["params"] / 1e9, preset["bytes_per_param"], preset["bandwidth_bytes_per_s"] / 1e9, tflops


@announced("measure this machine", outputs=2)
def measure_machine():
    """Time one forward of the offline target over k new tokens (bandwidth.MEASURED_SIZES) on this machine."""
    config = DecodeConfig().validate()
    pipeline = worker.call(build_pipeline, config)
    context = encode_prompt(pipeline.tokenizer, LOSSLESS_PROMPT, chat=False)
    timings = worker.call(bandwidth.measure_forward_ms, pipeline.target, context)
    flat, largest = bandwidth.bandwidth_bound_until(timings), max(timings)
    text = (f"Timed now, apart from any run (a live run's own plain step is in its stats and Round anatomy, timed "
            f"in turn with its rounds): one forward of {config.target} on {pipeline.device} "
            f"({str(pipeline.dtype).removeprefix('torch.')}) after a {len(context)}-token context, "
            f"at k = {', '.join(map(str, timings))}: {timings[1]:.1f} ms for 1 token, {timings[largest]:.1f} ms "
            f"for {largest}. It stays within a quarter more than one token's time up to **k = {flat}**: beyond that "
            "this hardware is no longer bandwidth-bound, so verifying γ+1 tokens costs more than one step, and a CPU "
            "gains less than a GPU.")
    return text, figures.measured_forward_figure(timings)


def bandwidth_tab() -> tuple:
    first = bandwidth.OPENING_PRESET
    params, bytes_per_param, bandwidth_gb_s, tflops = bandwidth_preset(first)
    with gr.Row():
        preset = gr.Dropdown(list(bandwidth.PRESETS), value=first, label="Preset")
        params_widget = gr.Number(params, label="Parameters P (billions)", minimum=0.001)
        bytes_widget = gr.Number(bytes_per_param, label="Bytes per parameter", minimum=0.1)
        bandwidth_widget = gr.Number(bandwidth_gb_s, label="Memory bandwidth (GB/s)", minimum=0.1)
        flops_widget = gr.Number(tflops, label="TFLOP/s (0 = ignore compute)", minimum=0)
        batch = gr.Number(1, label="Batch B", precision=0, minimum=1)
        tokens = gr.Number(1000, label="N tokens", precision=0, minimum=1)
    readout, roofline = gr.Markdown(), gr.Plot(label="Memory and compute time per step against batch")
    gr.Markdown(bandwidth.hierarchy_caption(), elem_id="sv-hierarchy-caption")
    gr.Plot(figures.memory_hierarchy_figure(), label="A100-40GB memory hierarchy", elem_id="sv-hierarchy")
    with gr.Row():
        measure_button = gr.Button("Measure this machine (the offline target, k = 1..32 tokens)")
    measured_text, measured_plot = gr.Markdown(), gr.Plot(label="Forward time against tokens on this machine")
    fields = [params_widget, bytes_widget, bandwidth_widget, flops_widget, batch, tokens]
    preset.change(bandwidth_preset, preset, fields[:4]).then(bandwidth_view, fields, [readout, roofline])
    for field in fields:
        field.submit(bandwidth_view, fields, [readout, roofline])
    measure_button.click(measure_machine, None, [measured_text, measured_plot])
    return fields, [readout, roofline]


def build(demo: gr.Blocks, trace_state: gr.State, tab: gr.Tab) -> None:
    """The tab's contents; the A100 roofline draws on page load."""
    inputs, outputs = bandwidth_tab()
    demo.load(bandwidth_view, inputs, outputs)
