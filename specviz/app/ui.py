"""The Gradio app's layout: `build_app()` builds the Blocks (app.py calls it once; importing builds nothing).

The live tab's controls are RunRequest's fields (request.py), each mapped to its widget in one dict whose order
is the /run and /step endpoints' argument order. Callbacks live in live.py, views.py and the lab tab modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from specviz import render
from specviz.app.callbacks import quiet_refusals
from specviz.app.lab_tabs import build_lab_tabs
from specviz.app.live import TRACE_FILE_TTL_S, JobSlot, export_page, import_trace, reset, run, step, stop
from specviz.app.policy import Policy, current_policy, gpu_decorator
from specviz.app.request import (
    CUSTOM_PAIR,
    DRAFT_MODEL,
    DRAFTERS,
    EXAMPLES,
    LOOKUP_THEN_DRAFT,
    PAIRS,
    RunRequest,
    default_pair,
    field_limits,
    pair_choices,
)
from specviz.app.views import follow_latest_position, select_position
from specviz.config import OFFLINE_MODEL

ASSETS = Path(__file__).resolve().parents[2] / "assets"


@dataclass
class LiveTab:
    """The live tab's widgets that callbacks read or write."""

    controls: dict  # RunRequest field name -> its widget, in the field order (the HTTP API's argument order)
    custom_row: gr.Row  # the target and draft boxes, shown for the Custom pair
    buttons: dict  # "run", "step", "stop", "reset" -> gr.Button
    download: gr.DownloadButton
    upload: gr.UploadButton
    view_outputs: list  # the widgets views.views() fills, in its order
    pq_plot: gr.Plot
    round_slider: gr.Slider
    position_slider: gr.Slider
    export: gr.Button  # the run as one self-contained HTML page (export.py)
    exported: gr.File  # where that page is offered for download


def build_app() -> gr.Blocks:
    """The whole app: a header, the live tab, the lab tabs, and the live tab's event wiring."""
    policy = current_policy()
    with gr.Blocks(title="specviz: speculative decoding, round by round",
                   delete_cache=(TRACE_FILE_TTL_S, TRACE_FILE_TTL_S)) as demo:  # Gradio's copies of files, hourly
        gr.Markdown(_header(policy))
        trace_state, step_state, job_state = gr.State(None), gr.State(None), gr.State(JobSlot())
        with gr.Tab("Live decoding"):
            live = _live_tab(policy)
        build_lab_tabs(demo, trace_state)
        _wire_live_tab(live, trace_state, step_state, job_state)
    return demo


def css() -> str:
    return (ASSETS / "specviz.css").read_text(encoding="utf-8")


def _header(policy: Policy) -> str:
    return (
        "# specviz\nA small drafter proposes γ tokens; the target scores them all in **one** forward pass; "
        "modified rejection sampling keeps a prefix and draws a correction from norm(max(0, p − q)), or a bonus "
        "token when all γ pass. The output follows the target's distribution exactly."
        + (f"\n\n*Shared server: prompts up to {policy.max_prompt_chars:,} characters, up to "
           f"{policy.max_new_tokens} new tokens, γ up to {policy.max_gamma}, listed models only.*"
           if policy.hosted else "")
    )


def _live_tab(policy: Policy) -> LiveTab:
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            controls, custom_row = _controls(policy, RunRequest(pair=default_pair()))
            with gr.Row():
                buttons = {"run": gr.Button("Run", variant="primary"), "step": gr.Button("Step"),
                           "stop": gr.Button("Stop", variant="stop"), "reset": gr.Button("Reset")}
            with gr.Row():
                download = gr.DownloadButton("Download trace (JSON)", value=None)
                upload = gr.UploadButton("Load a trace", file_types=[".json", ".html"], type="filepath")
            export = gr.Button("Export page (HTML): rows, plots and stats in one file that opens offline")
            exported = gr.File(label="Exported page", visible=False, elem_id="sv-exported")
        with gr.Column(scale=2):
            rows = gr.HTML(render.rows_html(None), elem_id="sv-rows")
            final_text = gr.HTML(render.final_text_html(None), label="Final text", show_label=True, container=True,
                                 elem_id="sv-final")
            stats = gr.Markdown(elem_id="sv-stats")
    with gr.Row():
        alpha_plot = gr.Plot(label="α per draft position")
        with gr.Column():
            pq_plot = gr.Plot(label="p vs q")
            with gr.Row():
                round_slider = gr.Slider(1, 2, value=1, step=1, label="Round")
                position_slider = gr.Slider(1, 17, value=1, step=1, label="Draft position")
    with gr.Row():
        speedup_plot = gr.Plot(label="Speedup")
        histogram_plot = gr.Plot(label="Tokens per round")
    view_outputs = [rows, final_text, stats, alpha_plot, pq_plot, speedup_plot, histogram_plot, round_slider]
    return LiveTab(controls, custom_row, buttons, download, upload, view_outputs, pq_plot, round_slider,
                   position_slider, export, exported)


def _controls(policy: Policy, initial: RunRequest) -> tuple[dict, gr.Row]:
    """One widget per RunRequest field, showing `initial`; returns them by field name, and the Custom pair's row."""
    pair = gr.Dropdown(pair_choices(), value=initial.pair, label="Model pair (target ← draft)")
    with gr.Row(visible=False) as custom_row:
        target = gr.Textbox(initial.target, label="Target id or folder", placeholder="HuggingFaceTB/SmolLM2-360M-Instruct")
        draft = gr.Textbox(initial.draft, label="Draft id or folder", placeholder="HuggingFaceTB/SmolLM2-135M-Instruct")
    drafter = gr.Radio(DRAFTERS, value=initial.drafter, label="Drafter",
                       info="Offline, the draft model is the target's own 4-bit copy (agrees "
                            "~98%, fastest on a CPU) or the head distilled from it (assets/; "
                            "more rejections to look at). Lookup, else draft model: copy from "
                            "the context where it matches and copying has paid off, draft elsewhere")
    prompt = gr.Textbox(initial.prompt, label="Prompt", lines=3, max_lines=12)
    system_prompt = gr.Textbox(initial.system_prompt, label="System prompt (empty: none)", lines=1, max_lines=6,
                               info="Sent before your prompt. Left empty the model reads nothing hidden; SmolLM2's "
                                    "template would otherwise add its own. The rows show the whole templated text.")
    gr.Examples([[text] for text in EXAMPLES], inputs=[prompt], label="Examples")
    limits = field_limits(policy)  # the same ranges to_config holds the API to
    gamma = gr.Slider(*limits["gamma"], value=initial.gamma, step=1, label="γ: tokens drafted per round")
    adaptive = gr.Checkbox(initial.adaptive, label="Adaptive γ: each round drafts 0..γ tokens, chosen from the "
                                                   "running acceptance and the measured costs")
    max_new_tokens = gr.Slider(*limits["max_new_tokens"], value=initial.max_new_tokens, step=1, label="Max new tokens")
    temperature = gr.Slider(*limits["temperature"], value=initial.temperature, step=0.05, label="Temperature (0 = greedy)")
    with gr.Row():
        top_k = gr.Number(initial.top_k, label="Top-k (0 = off)", precision=0, minimum=0)
        top_p = gr.Slider(*limits["top_p"], value=initial.top_p, step=0.01, label="Top-p (1 = off)")
        seed = gr.Number(initial.seed, label="Seed", precision=0, minimum=0)
    compare = gr.Checkbox(initial.compare, label="Compare with plain decoding (measures the speedup)")
    controls = {"pair": pair, "target": target, "draft": draft, "drafter": drafter, "prompt": prompt, "gamma": gamma,
                "max_new_tokens": max_new_tokens, "temperature": temperature, "top_k": top_k, "top_p": top_p,
                "seed": seed, "compare": compare, "adaptive": adaptive, "system_prompt": system_prompt}
    if list(controls) != RunRequest.field_names():
        raise AssertionError(f"the live tab's widgets {list(controls)} do not match RunRequest's fields")
    return controls, custom_row


def _wire_live_tab(live: LiveTab, trace_state: gr.State, step_state: gr.State, job_state: gr.State) -> None:
    """Run and Step stream into the views; the sliders redraw p vs q; Stop and Reset cancel what runs (the
    session's job at once, so the model stops within one forward, and the Gradio events).

    Run and Step skip Gradio's preprocessing (preprocess=False): their callbacks get the values as sent, and
    RunRequest.to_config names the field of any that is wrong (Gradio's own checks would answer "error" to text
    where a number goes, and print a traceback for every refusal)."""
    gpu = gpu_decorator()  # ZeroGPU on a Space, else nothing
    pair, views_and_trace = live.controls["pair"], [*live.view_outputs, trace_state]
    pair.change(lambda choice: gr.update(visible=choice == CUSTOM_PAIR), pair, live.custom_row, queue=False)
    pair.change(lambda choice: gr.update(value=LOOKUP_THEN_DRAFT if PAIRS[choice][0] == OFFLINE_MODEL else DRAFT_MODEL),
                pair, live.controls["drafter"], queue=False)
    run_event = live.buttons["run"].click(gpu(quiet_refusals(run)), [job_state], inputs_kwargs=live.controls,
                                          preprocess=False, outputs=[*views_and_trace, live.download], api_name="run")
    run_event.then(follow_latest_position, trace_state, live.position_slider, queue=False)
    step_event = live.buttons["step"].click(gpu(quiet_refusals(step)), [step_state, job_state],
                                            inputs_kwargs=live.controls, preprocess=False,
                                            outputs=[*views_and_trace, live.download, step_state], api_name="step")
    live.buttons["stop"].click(stop, [job_state], None, cancels=[run_event, step_event], queue=False)
    live.buttons["reset"].click(reset, [job_state], [*views_and_trace, step_state, live.download],
                                cancels=[run_event, step_event], queue=False)  # at once: a queued Reset could cancel the next Run
    live.upload.upload(quiet_refusals(import_trace), live.upload, [*views_and_trace, step_state])
    live.export.click(export_page, trace_state, live.exported, api_name="export_page")
    sliders = [live.round_slider, live.position_slider]
    for slider in sliders:
        slider.release(select_position, [trace_state, *sliders], [live.pq_plot, live.position_slider])
