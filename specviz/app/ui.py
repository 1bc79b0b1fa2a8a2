"""The Gradio app's layout: `build_app()` builds the Blocks (app.py calls it once; importing builds nothing).

The live tab's controls are RunRequest's fields (request.py), each mapped to its widget in one dict whose order
is the /run and /step endpoints' argument order. Callbacks live in live.py, views.py and the lab tab modules.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from specviz.app.callbacks import quiet_refusals
from specviz.app.live import JobSlot, pressed, reset, run, step, stop
from specviz.app.pair_menu import (
    CUSTOM_PAIR,
    PAIRS,
    default_pair,
    drafter_help,
    pair_choices,
    pair_help,
    pair_settings,
)
from specviz.app.pair_menu import refusal as pair_refusal  # ui has its own `refusal`s: the name says whose
from specviz.app.policy import Policy, current_policy, gpu_decorator
from specviz.app.progress import NOT_RUN, queue_shown
from specviz.app.request import DRAFT_MODEL, DRAFTERS, EXAMPLES, LOOKUP_THEN_DRAFT, RunRequest, field_limits
from specviz.app.tabs.groups import LIVE_TAB, build_lab_tabs
from specviz.app.tabs.runs_and_files import OTHER_CONTROLS, RECORDED, first_screen, gallery_buttons, wire_gallery
from specviz.app.teacher import build_teacher_lane
from specviz.app.trace_files import TRACE_FILE_TTL_S, export_page, import_trace, replay_check
from specviz.app.views import LiveView, follow_latest_position, select_position
from specviz.app.warmup import warm_up_note
from specviz.config import BACKENDS, NUMBER_FIELDS, OFFLINE_MODEL
from specviz.models.llama_cpp import available as llama_cpp_available
from specviz.views import render


@dataclass
class LiveTab:
    """The live tab's widgets that callbacks read or write."""

    controls: dict  # RunRequest field name -> its widget, in the field order (the HTTP API's argument order)
    custom_row: gr.Row  # the target and draft boxes, shown for the Custom pair
    buttons: dict  # "run", "step", "stop", "reset" -> gr.Button
    upload: gr.UploadButton | None  # on the Runs & files tab (_files_tab), like the three below
    outputs: dict  # LiveView field name -> its widget (or gr.State), in LiveView's order
    position_slider: gr.Slider
    export: gr.Button | None  # the run as one self-contained HTML page (export.py)
    exported: gr.File | None  # where that page is offered for download
    replay: gr.Button | None  # re-runs the shown trace on its models (trace_files.replay_check)
    load_note: gr.Markdown | None  # under Load: the file loaded, or the sentence that refused it; the replay's verdict
    gallery: list  # (button, gallery entry) per recorded run shipped in assets/gallery (gallery_panel.py)


def build_app() -> gr.Blocks:
    """The whole app: a header, then the tabs in a lesson's order (lab_tabs.TAB_GROUPS): watching a run, the guided
    lesson, why it is exact, why it is fast, trying it yourself, recorded runs and files, and the reference."""
    policy = current_policy()
    with gr.Blocks(title="specviz: speculative decoding, round by round",
                   delete_cache=(TRACE_FILE_TTL_S, TRACE_FILE_TTL_S)) as demo:  # Gradio's copies of files, hourly
        gr.Markdown(_header(policy), elem_id="sv-header")
        warm_up_note(demo)
        trace_state, step_state, job_state = gr.State(None), gr.State(None), gr.State(JobSlot())
        with gr.Tabs(elem_id="sv-tabs", overflow_behavior="wrap") as tabs:
            with gr.Tab(LIVE_TAB, id=LIVE_TAB):
                live = _live_tab(policy, trace_state)
            build_lab_tabs(demo, trace_state, files=lambda: _files_tab(live))
        _wire_live_tab(live, step_state, job_state)
        wire_gallery(live.gallery, list(live.outputs.values()), step_state, live.controls, live.custom_row,
                     tabs, LIVE_TAB)
        demo.load(first_screen, None, list(live.outputs.values()), queue=False)  # a recorded run, before any model
        demo.load(_backend_offered, None, live.controls["backend"], queue=False)
        demo.load(_pairs_here, None, live.controls["pair"], queue=False)  # "offline" as the pair's files are now
    return demo


def _header(policy: Policy) -> str:
    return (
        "# specviz: speculative decoding, round by round\nA small model guesses; the large one checks every guess in "
        "**one** pass. The text is exactly what the large model alone would write."
        + (f"\n\n*Shared server: prompts up to {policy.max_prompt_chars:,} characters, up to "
           f"{policy.max_new_tokens} new tokens, γ up to {policy.max_gamma}, listed models only.*"
           if policy.hosted else "")
    )


def _live_tab(policy: Policy, trace_state: gr.State) -> LiveTab:
    """Laid out for a projector (1366×768) and a phone: on the left the pair, the prompt, Run/Step/Stop/Reset and
    the status line, the settings folded under them, then the rows; on the right the run's headline (the speedup)
    and the α-per-position plot, so the first screen after Run holds all of these. On a phone the columns stack:
    the rows come right after the buttons. The final text, the stats and the other three plots follow below."""
    gr.Markdown("Watch the small model guess and the large one check, one row per round; tap a token for its "
                "numbers.", elem_classes="sv-lead")
    with gr.Row(equal_height=False):
        with gr.Column(scale=3, min_width=320):
            controls, custom_row, buttons, status = _controls(policy, RunRequest(pair=default_pair()))
            rows = gr.HTML(render.rows_html(None), elem_id="sv-rows")
            race = gr.HTML("", elem_id="sv-race")  # a run compared with plain decoding: the two, side by side
        with gr.Column(scale=2, min_width=300):
            headline = gr.Markdown(elem_id="sv-headline")
            alpha_plot = gr.Plot(label="α per draft position", elem_id="sv-alpha-plot")
    final_text = gr.HTML(render.final_text_html(None), label="Final text", show_label=True, container=True,
                         elem_id="sv-final")
    stats = gr.Markdown(elem_id="sv-stats")
    with gr.Row(equal_height=False):
        with gr.Column(min_width=320):
            pq_plot = gr.Plot(label="p vs q", elem_id="sv-pq-plot")
            with gr.Row():
                round_slider = gr.Slider(1, 2, value=1, step=1, label="Round")
                position_slider = gr.Slider(1, 17, value=1, step=1, label="Draft position")
        speedup_plot = gr.Plot(label="Speedup: this run, and what-if curves over γ", elem_id="sv-speedup-plot", min_width=320)
        histogram_plot = gr.Plot(label="Tokens per round", elem_id="sv-histogram-plot", min_width=320)
    download = gr.DownloadButton("Download this run's trace (JSON)", value=None, visible=True, size="sm",
                                 elem_id="sv-download")
    outputs = {"rows": rows, "final_text": final_text, "stats": stats, "headline": headline, "alpha_plot": alpha_plot,
               "pq_plot": pq_plot, "speedup_plot": speedup_plot, "histogram_plot": histogram_plot,
               "round_slider": round_slider, "status": status, "trace": trace_state, "race": race,
               "download": download}
    if list(outputs) != LiveView.names():
        raise AssertionError(f"the live tab's outputs {list(outputs)} do not match LiveView's fields")
    return LiveTab(controls, custom_row, buttons, None, outputs, position_slider, None, None, None, None, [])


def _files_tab(live: LiveTab) -> None:
    """The Runs & files tab: the gallery of recorded runs, loading a trace, and exporting the run as one page. A
    recorded run or a loaded trace opens in the live tab's views (and the tabs switch there)."""
    live.gallery.extend(gallery_buttons())
    gr.Markdown("### Your run as a file\nThe trace holds every number of the run (each random draw included), so it "
                "replays exactly; the exported page shows the rows, plots and stats in one file that opens offline.")
    with gr.Row():
        live.upload = gr.UploadButton("Load a trace (JSON or exported page)", file_types=[".json", ".html"],
                                      type="filepath")
        live.export = gr.Button("Export the run as one page (HTML)")
        live.replay = gr.Button("Replay it on its models: does every round reproduce?")
    live.load_note = gr.Markdown(elem_id="sv-load-note")  # what Load made of the file: loaded, or why not
    live.exported = gr.File(label="Exported page", visible=False, elem_id="sv-exported")


def _controls(policy: Policy, initial: RunRequest) -> tuple[dict, gr.Row, dict, gr.Markdown]:
    """One widget per RunRequest field, showing `initial`; returns them by field name, the Custom pair's row, the
    buttons and the status line beside them."""
    with gr.Row(equal_height=False):
        pair = gr.Dropdown(pair_choices(), value=initial.pair, label="Model pair (target ← draft)",
                           info=pair_help(initial.pair, policy, backend=initial.backend), elem_id="sv-pair",
                           min_width=260, scale=3)  # the longest pair's label fits at 1366×768
        prompt = gr.Textbox(initial.prompt, label="Prompt", lines=2, max_lines=12, min_width=260, scale=2)
    with gr.Row(visible=False) as custom_row:
        target = gr.Textbox(initial.target, label="Target id or folder", placeholder="HuggingFaceTB/SmolLM2-360M-Instruct")
        draft = gr.Textbox(initial.draft, label="Draft id or folder", placeholder="HuggingFaceTB/SmolLM2-135M-Instruct")
    with gr.Row(elem_id="sv-buttons"):
        buttons = {"run": gr.Button("Run", variant="primary", min_width=60), "step": gr.Button("Step", min_width=60),
                   "stop": gr.Button("Stop", variant="stop", min_width=60), "reset": gr.Button("Reset", min_width=60)}
    status = gr.Markdown("Press **Run** to decode the prompt, or **Step** for one round at a time.",
                         elem_id="sv-status")
    with gr.Accordion("Settings: γ, temperature, drafter, …", open=False, elem_id="sv-settings"):
        return _settings(policy, initial, pair, custom_row, target, draft, prompt, buttons, status)


def _settings(policy: Policy, initial: RunRequest, pair, custom_row, target, draft, prompt, buttons, status):
    """The settings inside their folded panel; returns what _controls returns."""
    gr.Examples([[text] for text in EXAMPLES], inputs=[prompt], label="Example prompts")
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


NOT_AVAILABLE = "**Not available**: "  # how the status line opens on a pair the menu refused


def _pair_changed(choice: str, backend: str, accepted: str | None, status: str | None):
    """A new pair: show the Custom boxes or not, and set the drafter, γ, draft stop and adaptive γ this pair runs
    best with on the backend chosen. A pair this server cannot load (a hub pair without internet and not cached, an
    offline pair neither installed nor to be fetched) is refused at once: the menu goes back to the pair before
    (`accepted`), and the status line says why until the next choice succeeds or the next Run; a choice that
    succeeds clears an earlier refusal, of a pair or of a Run."""
    refusal = pair_refusal(choice)  # a hub pair without internet, or a GGUF neither here nor to be fetched
    if refusal is not None:
        gr.Warning(refusal)
        back = accepted if accepted in PAIRS else default_pair()
        return (gr.skip(), gr.skip(), gr.update(value=back), gr.skip(), gr.skip(), gr.skip(),
                f"{NOT_AVAILABLE}{refusal}", back)
    offline_smollm = PAIRS[choice][0] == OFFLINE_MODEL
    status = status or ""
    cleared = ("" if status.startswith((NOT_AVAILABLE, NOT_RUN)) else  # an earlier refusal is void
               OTHER_CONTROLS if status.startswith(RECORDED) else gr.skip())  # the recorded run: not these controls'
    return (gr.update(visible=choice == CUSTOM_PAIR),
            gr.update(value=LOOKUP_THEN_DRAFT if offline_smollm else DRAFT_MODEL, info=drafter_help(choice)),
            *_pair_settings_on(choice, backend), cleared, choice)


def _pair_settings_on(choice: str, backend: str):
    """The pair's settings on a backend (a preset differs by backend), and the reason under the menu."""
    policy = current_policy()
    settings = pair_settings(choice, policy, backend)
    return (gr.update(info=pair_help(choice, policy, backend=backend)), gr.update(value=settings["gamma"]),
            gr.update(value=settings["draft_confidence"]), gr.update(value=settings["adaptive"]))


def _backend_changed(choice: str, backend: str, gamma, adaptive: bool):
    """Another backend: the reason under the menu and the pair's draft stop on it. γ and adaptive γ as the pair's
    preset on the other backend left them follow the preset on this one; a γ or adaptive γ the user set stays, but for
    adaptive γ's largest draft, which takes the pair's on this backend."""
    policy = current_policy()
    settings = pair_settings(choice, policy, backend)
    before = pair_settings(choice, policy, next(other for other in BACKENDS if other != backend))
    try:
        untouched = float(gamma) == before["gamma"] and bool(adaptive) == before["adaptive"]
    except (TypeError, ValueError):
        untouched = False  # a box left empty or mistyped: the user's, kept for Run to refuse in words
    if untouched:
        return _pair_settings_on(choice, backend)
    return (gr.update(info=pair_help(choice, policy, backend=backend)),
            gr.update(value=settings["gamma"]) if adaptive else gr.skip(),
            gr.update(value=settings["draft_confidence"]), gr.skip())


def _pairs_here():
    """The pair menu's labels as this machine holds the pairs' files now (installed or fetched since the start)."""
    return gr.update(choices=pair_choices())


def _backend_offered():
    """The backend choice, shown once llama.cpp's bindings import (installed while the server ran, too)."""
    return gr.update(visible=llama_cpp_available())


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
    controls["pair"].input(_pair_changed, [controls["pair"], controls["backend"], accepted, live.outputs["status"]],
                            [live.custom_row, controls["drafter"], *settings, live.outputs["status"], accepted],
                            queue=False)
    controls["backend"].input(_backend_changed, [controls["pair"], controls["backend"], controls["gamma"],
                                                 controls["adaptive"]], settings, queue=False)
    gr.on([controls["target"].change, controls["draft"].change], _custom_named,  # a Gemma typed in: its terms
          [controls["pair"], controls["target"], controls["draft"]], controls["pair"], queue=False)
    run_event = live.buttons["run"].click(gpu(quiet_refusals(run)), [job_state, trace_state], inputs_kwargs=controls,
                                          preprocess=False, outputs=outputs, api_name="run", **queue)
    run_event.then(follow_latest_position, trace_state, live.position_slider, queue=False)
    live.buttons["run"].click(pressed, job_state, step_state, queue=False)  # a Step after a Run starts afresh
    live.buttons["step"].click(pressed, job_state, None, queue=False)
    live.buttons["step"].click(gpu(quiet_refusals(step)), [step_state, job_state], inputs_kwargs=controls,
                               preprocess=False, outputs=[*outputs, step_state], api_name="step", **queue)
    live.buttons["stop"].click(stop, [job_state], None, queue=False)
    # Reset clears at once (queue=False) and ends the session's job; that run's or step's own stream then ends with
    # the cleared page too (live._cleared), after any update of its rows in flight. (A Gradio cancel here would mark
    # the outputs "Error" when the cancel overtook the cleared page.)
    live.buttons["reset"].click(reset, [job_state], [*outputs, step_state], queue=False)
    live.upload.upload(quiet_refusals(import_trace), live.upload, [*outputs, step_state, live.load_note])
    live.export.click(export_page, trace_state, live.exported, api_name="export_page")
    live.replay.click(replay_check, trace_state, live.load_note, api_name="replay_check")
    sliders = [live.outputs["round_slider"], live.position_slider]
    for slider in sliders:
        slider.release(select_position, [trace_state, *sliders], [live.outputs["pq_plot"], live.position_slider])
    build_teacher_lane(live, step_state, job_state, gpu)
