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
from specviz.app.gallery_panel import gallery_buttons, wire_gallery
from specviz.app.lab_tabs import build_lab_tabs
from specviz.app.live import JobSlot, reset, run, step, stop
from specviz.app.pair_menu import (
    CUSTOM_PAIR,
    PAIRS,
    default_pair,
    drafter_help,
    pair_choices,
    pair_help,
    pair_settings,
    unreachable,
)
from specviz.app.policy import Policy, current_policy, gpu_decorator
from specviz.app.progress import queue_shown
from specviz.app.request import DRAFT_MODEL, DRAFTERS, EXAMPLES, LOOKUP_THEN_DRAFT, RunRequest, field_limits
from specviz.app.teacher import build_teacher_lane
from specviz.app.trace_files import TRACE_FILE_TTL_S, export_page, import_trace
from specviz.app.views import LiveView, follow_latest_position, select_position
from specviz.app.warmup import warm_up_note
from specviz.config import BACKENDS, NUMBER_FIELDS, OFFLINE_MODEL
from specviz.models.llama_cpp import available as llama_cpp_available

ASSETS = Path(__file__).resolve().parents[2] / "assets"


@dataclass
class LiveTab:
    """The live tab's widgets that callbacks read or write."""

    controls: dict  # RunRequest field name -> its widget, in the field order (the HTTP API's argument order)
    custom_row: gr.Row  # the target and draft boxes, shown for the Custom pair
    buttons: dict  # "run", "step", "stop", "reset" -> gr.Button
    upload: gr.UploadButton
    outputs: dict  # LiveView field name -> its widget (or gr.State), in LiveView's order
    position_slider: gr.Slider
    export: gr.Button  # the run as one self-contained HTML page (export.py)
    exported: gr.File  # where that page is offered for download
    gallery: list  # (button, gallery entry) per recorded run shipped in assets/gallery (gallery_panel.py)


def build_app() -> gr.Blocks:
    """The whole app: a header, the live tab, the lab tabs, and the live tab's event wiring."""
    policy = current_policy()
    with gr.Blocks(title="specviz: speculative decoding, round by round",
                   delete_cache=(TRACE_FILE_TTL_S, TRACE_FILE_TTL_S)) as demo:  # Gradio's copies of files, hourly
        gr.Markdown(_header(policy))
        warm_up_note(demo)
        trace_state, step_state, job_state = gr.State(None), gr.State(None), gr.State(JobSlot())
        with gr.Tab("Live decoding"):
            live = _live_tab(policy, trace_state)
        build_lab_tabs(demo, trace_state)
        _wire_live_tab(live, step_state, job_state)
        wire_gallery(live.gallery, list(live.outputs.values()), step_state, live.controls, live.custom_row)
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


def _live_tab(policy: Policy, trace_state: gr.State) -> LiveTab:
    """The controls on the left, with Run and its status line near the top (visible at 1366×768 and first on a
    phone); the rows, text and stats on the right; the four plots below."""
    with gr.Row():
        with gr.Column(scale=1, min_width=320):
            controls, custom_row, buttons, status = _controls(policy, RunRequest(pair=default_pair()))
            with gr.Row():
                download = gr.DownloadButton("Download trace (JSON)", value=None)
                upload = gr.UploadButton("Load a trace", file_types=[".json", ".html"], type="filepath")
            export = gr.Button("Export page (HTML): rows, plots and stats in one file that opens offline")
            exported = gr.File(label="Exported page", visible=False, elem_id="sv-exported")
            gallery = gallery_buttons()
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
    outputs = {"rows": rows, "final_text": final_text, "stats": stats, "alpha_plot": alpha_plot, "pq_plot": pq_plot,
               "speedup_plot": speedup_plot, "histogram_plot": histogram_plot, "round_slider": round_slider,
               "status": status, "trace": trace_state, "download": download}
    if list(outputs) != LiveView.names():
        raise AssertionError(f"the live tab's outputs {list(outputs)} do not match LiveView's fields")
    return LiveTab(controls, custom_row, buttons, upload, outputs, position_slider, export, exported, gallery)


def _controls(policy: Policy, initial: RunRequest) -> tuple[dict, gr.Row, dict, gr.Markdown]:
    """One widget per RunRequest field, showing `initial`; returns them by field name, the Custom pair's row, the
    buttons and the status line beside them."""
    pair = gr.Dropdown(pair_choices(), value=initial.pair, label="Model pair (target ← draft)",
                       info=pair_help(initial.pair, policy, backend=initial.backend), elem_id="sv-pair")
    with gr.Row(visible=False) as custom_row:
        target = gr.Textbox(initial.target, label="Target id or folder", placeholder="HuggingFaceTB/SmolLM2-360M-Instruct")
        draft = gr.Textbox(initial.draft, label="Draft id or folder", placeholder="HuggingFaceTB/SmolLM2-135M-Instruct")
    prompt = gr.Textbox(initial.prompt, label="Prompt", lines=3, max_lines=12)
    with gr.Row():
        buttons = {"run": gr.Button("Run", variant="primary", min_width=60), "step": gr.Button("Step", min_width=60),
                   "stop": gr.Button("Stop", variant="stop", min_width=60), "reset": gr.Button("Reset", min_width=60)}
    status = gr.Markdown("Press **Run** to decode the prompt, or **Step** for one round at a time.",
                         elem_id="sv-status")
    gr.Examples([[text] for text in EXAMPLES], inputs=[prompt], label="Examples")
    settings = pair_settings(initial.pair, policy, initial.backend)
    drafter = gr.Radio(DRAFTERS, value=initial.drafter, label="Drafter", info=drafter_help(initial.pair))
    system_prompt = gr.Textbox(initial.system_prompt, label="System prompt (empty: none)", lines=1, max_lines=6,
                               info="Sent before your prompt. Left empty the model reads nothing hidden; SmolLM2's "
                                    "template would otherwise add its own. The rows show the whole templated text.")
    number = _number_fields(policy)
    with gr.Row():
        gamma = number("gamma", settings["gamma"], "γ: tokens drafted per round", 1)
        max_new_tokens = number("max_new_tokens", initial.max_new_tokens, "Max new tokens", 1)
        temperature = number("temperature", initial.temperature, "Temperature (0 = greedy)", 0.05)
    draft_confidence = number("draft_confidence", settings["draft_confidence"],
                              "Draft stop: end a draft after a token the draft gave less than this (0 = off)", 0.05,
                              "Saves drafting what would likely be rejected; the output stays exact")
    adaptive = gr.Checkbox(initial.adaptive, label="Adaptive γ: each round drafts 0..γ tokens, chosen from the "
                                                   "running acceptance and the measured costs")
    with gr.Row():
        top_k = gr.Number(initial.top_k, label="Top-k (0 = off)", precision=0)
        top_p = number("top_p", initial.top_p, "Top-p (1 = off)", 0.01)
        seed = gr.Number(initial.seed, label="Seed", precision=0)
    compare = gr.Checkbox(initial.compare, label="Compare with plain decoding (measures the speedup)")
    # one above the other: side by side, each label wrapped over four lines or more
    tree = gr.Checkbox(initial.tree, label="Token tree: draft several continuations, γ deep, all verified in one "
                                           "target forward (exact)", elem_id="sv-tree",
                       info="Needs a draft model (a pair's own draft or its 4-bit copy): prompt lookup and the "
                            "distilled head draft one continuation")
    tree_budget = number("tree_budget", initial.tree_budget, "Tree budget: most nodes per round (0 = what this machine "
                         "affords)", 1)
    backend = gr.Radio(list(BACKENDS), value=initial.backend, label="Run the models with",
                       info="transformers: float32 weights, read in full each step (a forward bound by reading "
                            "weights); llama.cpp: the GGUF's own 4-bit weights (a forward bound by arithmetic): see "
                            "when speculative decoding pays", visible=llama_cpp_available(), elem_id="sv-backend")
    controls = {"pair": pair, "target": target, "draft": draft, "drafter": drafter, "prompt": prompt, "gamma": gamma,
                "max_new_tokens": max_new_tokens, "temperature": temperature, "top_k": top_k, "top_p": top_p,
                "seed": seed, "compare": compare, "adaptive": adaptive, "system_prompt": system_prompt,
                "draft_confidence": draft_confidence, "tree": tree, "tree_budget": tree_budget, "backend": backend}
    if list(controls) != RunRequest.field_names():
        raise AssertionError(f"the live tab's widgets {list(controls)} do not match RunRequest's fields")
    return controls, custom_row, buttons, status


def _number_fields(policy: Policy):
    """A maker of the live tab's numeric fields: plain number boxes, never sliders, because a slider quietly clamps
    a typed 100000 to its end and runs that; a box sends what was typed, and Run refuses a value out of range with
    the field table's sentence. Under each box, its range on this server (config.NUMBER_FIELDS, request.field_limits:
    a hosted server's caps included)."""
    limits, full = field_limits(policy), field_limits(Policy())

    def number(name: str, value, label: str, step: float, info: str = "") -> gr.Number:
        allowed = NUMBER_FIELDS[name].describe(*limits.get(name, (None, None)))
        shared = " on this shared server" if limits.get(name) != full.get(name) else ""  # a hosted cap narrows it
        return gr.Number(value, label=label, step=step, info=(f"{info}. " if info else "") + allowed[0].upper()
                         + allowed[1:] + shared, elem_id=f"sv-{name.replace('_', '-')}")
    return number


def _pair_changed(choice: str, backend: str, accepted: str | None):
    """A new pair: show the Custom boxes or not, and set the drafter, γ, draft stop and adaptive γ this pair runs
    best with on the backend chosen. A hub pair this server cannot load (no internet, not cached) is refused at once:
    the menu goes back to the pair before (`accepted`), and the status line says why until the next Run."""
    refusal = unreachable(choice)
    if refusal is not None:
        gr.Warning(refusal)
        back = accepted if accepted in PAIRS else default_pair()
        return (gr.skip(), gr.skip(), gr.update(value=back), gr.skip(), gr.skip(), gr.skip(),
                f"**Not available**: {refusal}", back)
    offline_smollm = PAIRS[choice][0] == OFFLINE_MODEL
    return (gr.update(visible=choice == CUSTOM_PAIR),
            gr.update(value=LOOKUP_THEN_DRAFT if offline_smollm else DRAFT_MODEL, info=drafter_help(choice)),
            *_backend_changed(choice, backend), gr.skip(), choice)


def _backend_changed(choice: str, backend: str):
    """Another backend: the pair's settings on it (a preset differs by backend), and the reason under the menu."""
    policy = current_policy()
    settings = pair_settings(choice, policy, backend)
    return (gr.update(info=pair_help(choice, policy, backend=backend)), gr.update(value=settings["gamma"]),
            gr.update(value=settings["draft_confidence"]), gr.update(value=settings["adaptive"]))


def _custom_named(pair: str, target: str, draft: str):
    """The Custom boxes changed: the line under the menu names the terms of a model that has its own (Gemma)."""
    return gr.update(info=pair_help(pair, current_policy(), target or "", draft or ""))


def _wire_live_tab(live: LiveTab, step_state: gr.State, job_state: gr.State) -> None:
    """Run and Step stream into the views (LiveView's fields, by name); the sliders redraw p vs q; Stop and Reset
    cancel the session's job, so the model stops within one forward, and the run's own callback then ends: Stop
    shows what was decoded, Reset what it cleared. (Gradio's own cancel would leave the last update standing, the
    plots possibly rounds behind the rows, and mark the outputs with an error.)

    Run and Step skip Gradio's preprocessing (preprocess=False): their callbacks get the values as sent, and
    RunRequest.to_config names the field of any that is wrong (Gradio's own checks would answer "error" to text
    where a number goes, and print a traceback for every refusal).

    A Run or Step that waits in Gradio's queue shows its place and Gradio's estimate on the status line beside
    Run (progress.queue_shown); with SPECVIZ_TEACHER_KEY set, a sidebar unlocks the teacher's own lane (teacher.py)."""
    gpu = gpu_decorator()  # ZeroGPU on a Space, else nothing
    controls, outputs, trace_state = live.controls, list(live.outputs.values()), live.outputs["trace"]
    queue = queue_shown(live.outputs["status"])  # a waiting Run or Step shows its place on the status line
    settings = [controls["pair"], controls["gamma"], controls["draft_confidence"], controls["adaptive"]]
    accepted = gr.State(controls["pair"].value)  # the last pair the menu accepted, to go back to after a refusal
    # .input, not .change: a person's choice sets the pair's preset; a gallery run setting the menu keeps its own
    controls["pair"].input(_pair_changed, [controls["pair"], controls["backend"], accepted],
                            [live.custom_row, controls["drafter"], *settings, live.outputs["status"], accepted],
                            queue=False)
    controls["backend"].change(_backend_changed, [controls["pair"], controls["backend"]], settings, queue=False)
    gr.on([controls["target"].change, controls["draft"].change], _custom_named,  # a Gemma typed in: its terms
          [controls["pair"], controls["target"], controls["draft"]], controls["pair"], queue=False)
    run_event = live.buttons["run"].click(gpu(quiet_refusals(run)), [job_state, trace_state], inputs_kwargs=controls,
                                          preprocess=False, outputs=outputs, api_name="run", **queue)
    run_event.then(follow_latest_position, trace_state, live.position_slider, queue=False)
    live.buttons["run"].click(lambda: None, None, step_state, queue=False)  # a Step after a Run starts afresh
    live.buttons["step"].click(gpu(quiet_refusals(step)), [step_state, job_state], inputs_kwargs=controls,
                               preprocess=False, outputs=[*outputs, step_state], api_name="step", **queue)
    live.buttons["stop"].click(stop, [job_state], None, queue=False)
    # Reset clears at once (queue=False) and ends the session's job; that run's or step's own stream then ends with
    # the cleared page too (live._cleared), after any update of its rows in flight. (A Gradio cancel here marked the
    # outputs "Error" when the cancel overtook the cleared page.)
    live.buttons["reset"].click(reset, [job_state], [*outputs, step_state], queue=False)
    live.upload.upload(quiet_refusals(import_trace), live.upload, [*outputs, step_state])
    live.export.click(export_page, trace_state, live.exported, api_name="export_page")
    sliders = [live.outputs["round_slider"], live.position_slider]
    for slider in sliders:
        slider.release(select_position, [trace_state, *sliders], [live.outputs["pq_plot"], live.position_slider])
    build_teacher_lane(live, step_state, job_state, gpu)
