"""The Gradio app. Callbacks only translate: widgets -> DecodeConfig -> engine -> views (render.py, figures.py).

Per-session state (the trace, a Step session) lives in gr.State; models are shared read-only through the
cache in models.py. Nothing here mutates a module global.
"""

from __future__ import annotations

import dataclasses
import html
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
from gradio.components.plot import PlotData

from specviz import engine, figures, render
from specviz.app import worker
from specviz.app.policy import current_policy, gpu_decorator
from specviz.models import loading as models
from specviz.config import DISTILLED_DRAFTER, LOOKUP_FIRST, NGRAM_DRAFTER, OFFLINE_MODEL, QUANTIZED_DRAFTER, DecodeConfig
from specviz.metrics import estimate_verify_cost, summarize
from specviz.app.lab_tabs import build_lab_tabs
from specviz.trace import Trace
from specviz.pipeline import Pipeline, build_pipeline

ASSETS = Path(__file__).resolve().parents[2] / "assets"
PAIRS = {
    "Offline: SmolLM2-135M-Instruct (embedded)": (OFFLINE_MODEL, DISTILLED_DRAFTER),
    "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy": (OFFLINE_MODEL, QUANTIZED_DRAFTER),
    "gpt2-xl ← gpt2": models.PRESETS["gpt2-xl"],
    "SmolLM2-1.7B-Instruct ← SmolLM2-135M-Instruct": models.PRESETS["smollm2-1.7b"],
    "Qwen2.5-1.5B-Instruct ← Qwen2.5-0.5B-Instruct": models.PRESETS["qwen2.5-1.5b"],
    "Custom": (None, None),
}
DRAFT_MODEL, PROMPT_LOOKUP, LOOKUP_THEN_DRAFT = "draft model", "prompt lookup (n-gram)", "lookup, else draft model"
DRAFTERS = [LOOKUP_THEN_DRAFT, PROMPT_LOOKUP, DRAFT_MODEL]
EXAMPLES = [
    "Alan Turing theorized that computers would one day become",
    "Repeat this sentence three times: the quick brown fox jumps over the lazy dog.",
    "Summarize in one sentence: The Amazon rainforest covers much of the Amazon basin of South America. "
    "The rainforest is home to millions of species and plays a key role in the global climate.",
    "Write a Python function that checks whether a number is prime.",
    "What is the capital of France? Answer in one word.",
]
ROWS_INTERVAL_S = 0.4  # send the newest rows at most this often (Step shows every round); at 0.2 s streaming measured 10-13%, at 0.4 s 2-9%
PLOT_INTERVAL_S = 2.0  # and redraw the four plots at most this often (~25 ms of CPU each time)
MAX_TRACE_BYTES = 20 * 1024 * 1024
TRACE_FILE_TTL_S = 3600  # downloadable trace files are kept this long

@dataclass
class StepSession:
    """A run advanced one round per click: the engine's generator and what it has produced so far."""

    config: DecodeConfig
    prompt: str
    compare: bool
    pipeline: Pipeline
    rounds: object
    trace: Trace | None = None
    finished: bool = False


def default_pair() -> str:
    """The offline pair whose draft is the offline default on this machine (models.offline_drafter)."""
    drafter = models.offline_drafter().removeprefix(LOOKUP_FIRST)
    return next(name for name, (target, draft) in PAIRS.items() if target == OFFLINE_MODEL and draft == drafter)


# ---------------------------------------------------------------- widgets -> config


def make_config(pair, target, draft, drafter, prompt, gamma, max_new_tokens, temperature, top_k, top_p, seed,
                adaptive=False) -> DecodeConfig:
    """Translate the controls into a validated DecodeConfig, or raise gr.Error with a clear sentence."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise gr.Error("The prompt is empty: type one or click an example.")
    policy = current_policy()
    pair_target, pair_draft = PAIRS.get(pair, (None, None))
    target_id = (pair_target or (target or "")).strip()
    if drafter == PROMPT_LOOKUP:
        draft_id = NGRAM_DRAFTER
    else:
        draft_id = pair_draft or (draft or "").strip()
        if drafter == LOOKUP_THEN_DRAFT and draft_id and draft_id != NGRAM_DRAFTER:
            draft_id = LOOKUP_FIRST + draft_id.removeprefix(LOOKUP_FIRST)
    if not target_id or not draft_id:
        raise gr.Error("Give both a target and a draft model id (or choose prompt lookup).")
    try:
        config = DecodeConfig(target=target_id, draft=draft_id, gamma=_whole(gamma, "γ"),
                              max_new_tokens=_whole(max_new_tokens, "max new tokens"), temperature=float(temperature),
                              top_k=_whole(top_k, "top-k"), top_p=float(top_p), seed=_whole(seed, "seed"),
                              adaptive=bool(adaptive)).validate()
    except (TypeError, ValueError) as error:
        raise gr.Error(f"Setting out of range: {error}.") from error
    try:
        policy.check(config, prompt)
    except ValueError as error:
        raise gr.Error(f"{str(error)[:1].upper()}{str(error)[1:]}.") from error
    return config


def _whole(value, name: str) -> int:
    number = float(value)
    if number != int(number):
        raise ValueError(f"{name} must be a whole number, got {value}")
    return int(number)


def load_pipeline(config: DecodeConfig) -> Pipeline:
    try:
        return worker.call(build_pipeline, config)
    except (models.ModelUnavailable, models.IncompatibleModels, ValueError) as error:
        raise gr.Error(str(error)) from error
    except Exception as error:  # out of memory while loading, among others
        raise gr.Error(_friendly(error)) from error


def _friendly(error: Exception) -> str:
    import torch

    if isinstance(error, torch.OutOfMemoryError):
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return "The GPU ran out of memory: try a smaller pair, fewer new tokens or a smaller γ."
    return f"Decoding failed: {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"


# ---------------------------------------------------------------- trace -> views


def views(trace: Trace | None, held: tuple | None = None, position: int | None = None) -> tuple:
    """(rows, final text, stats, α plot, p-vs-q plot, speedup plot, histogram, round slider) for a trace.

    While streaming, `held` gives the last four plots (as PlotData) and round number to send again unchanged:
    Gradio then sends nothing for them, where gr.skip() or gr.update() would make it rebuild each component.
    """
    if trace is None or not trace.rounds:
        empty = figures.empty_figure("Run, Step or load a trace to see this plot")
        return (render.rows_html(None), render.final_text_html(None), "", empty, empty, empty, empty,
                gr.update(minimum=1, maximum=2, value=1))
    rows, final = render.rows_html(trace), render.final_text_html(trace)
    metrics = summarize(trace)
    stats = stats_markdown(trace, metrics)
    if held is not None:
        return rows, final, stats, *held
    slider = gr.update(minimum=1, maximum=max(len(trace.rounds), 2), value=len(trace.rounds), step=1)
    gamma = int(trace.config["gamma"])
    last = trace.rounds[-1]
    return (
        rows, final, stats,
        figures.alpha_per_position_figure(metrics.alpha_per_position, metrics.reached_per_position,
                                          metrics.accepted_per_position, metrics.alpha),
        figures.p_vs_q_figure(last, position or _default_position(last)),
        figures.speedup_figure(metrics.alpha, metrics.c, gamma, metrics.speedup_measured, estimate_verify_cost(trace)),
        figures.tokens_per_round_figure([len(r.emitted) for r in trace.rounds], metrics.alpha, gamma),
        slider,
    )


def _held(outputs: tuple, trace: Trace) -> tuple:
    """The plots of `outputs` serialized once (Gradio passes PlotData through as is), and the round shown."""
    return (*(PlotData(type="plotly", plot=figure.to_json()) for figure in outputs[3:7]), len(trace.rounds))


def _default_position(round_) -> int:
    """The position where the round was decided: the rejection, or the bonus."""
    return round_.tokens[-1].position


def stats_markdown(trace: Trace, metrics) -> str:
    per_position = " · ".join("–" if a is None else f"{a:.2f}" for a in metrics.alpha_per_position)
    lines = [
        f"**α = {metrics.alpha:.3f}** ({metrics.accepted_tokens}/{metrics.tested_positions} drafts accepted; per position {per_position})",
        f"**{metrics.tokens_per_round:.2f} tokens per round**: {metrics.generated_tokens} tokens from {metrics.target_calls} target calls",
        f"c = {metrics.c:.3f} ({metrics.c_basis}) · draft {metrics.draft_ms_per_round:.1f} ms + verify "
        f"{metrics.verify_ms_per_round:.1f} ms per round · {metrics.tokens_per_s:.1f} tokens/s",
        f"theoretical speedup **{metrics.speedup_theoretical:.2f}×**"
        + (f" · measured **{metrics.speedup_measured:.2f}×** against plain decoding"
           f" (identical output: {'yes' if metrics.identical else 'no'})" if metrics.speedup_measured is not None else
           " · tick *compare with plain decoding* to measure it"),
        f"{_plain(trace.target_name)} ← {_plain(trace.draft_name)} on **{_plain(trace.device)}** ({_plain(trace.dtype)}); "
        f"stopped by {_plain(trace.stop_reason) or '…'}",
    ]
    if trace.config.get("adaptive"):
        lengths = [round_.drafted for round_ in trace.rounds]
        lines.insert(3, f"adaptive γ ≤ {trace.config['gamma']}: {sum(lengths) / len(lengths):.2f} drafts per round on average, "
                        f"{lengths.count(0)} of {len(lengths)} rounds were plain steps (drafting would not have paid)")
    return "\n\n".join(lines)


def _plain(text) -> str:
    """A string from a trace shown as literal text in Markdown: HTML escaped, Markdown's marks backslashed."""
    escaped = html.escape(str(text), quote=True)
    return "".join("\\" + char if char in "\\`*_[]()|~!" else char for char in escaped)


def write_trace_file(trace: Trace) -> str:
    """The trace as a JSON file to download. Files older than TRACE_FILE_TTL_S are removed on the way, so a
    server that runs for weeks does not fill its disk (Gradio serves its own copy, pruned by delete_cache)."""
    folder = Path(tempfile.gettempdir()) / "specviz-traces"
    folder.mkdir(exist_ok=True)
    expired = time.time() - TRACE_FILE_TTL_S
    for old in folder.glob("specviz-trace-*.json"):
        try:
            if old.stat().st_mtime < expired:
                old.unlink()
        except OSError:  # another worker removed it first
            pass
    handle = tempfile.NamedTemporaryFile("w", suffix=".json", prefix="specviz-trace-", dir=folder, delete=False,
                                         encoding="utf-8")
    with handle:
        handle.write(trace.to_json())
    return handle.name


# ---------------------------------------------------------------- callbacks


def run(pair, target, draft, drafter, prompt, gamma, max_new_tokens, temperature, top_k, top_p, seed, compare,
        adaptive=False):
    """Stream a whole run, then the final views.

    The engine runs ahead on the model thread (worker.Ahead) and is never held up by drawing; every
    ROWS_INTERVAL_S this sends the newest rounds (Gradio sends only the rows appended since the last update),
    and every PLOT_INTERVAL_S the plots too. The first round is sent at once.
    """
    config = make_config(pair, target, draft, drafter, prompt, gamma, max_new_tokens, temperature, top_k, top_p, seed,
                         adaptive)
    pipeline = load_pipeline(config)
    if compare:
        worker.call(engine.warm_up, pipeline, config)  # a fresh server's first run would otherwise pay set-up costs
    feed = worker.Ahead(engine.speculative_decode(pipeline, prompt, config), snapshot=_snapshot)
    seen, sent, plotted, trace, held = 0, float("-inf"), float("-inf"), None, None
    try:
        while True:
            time.sleep(max(0.0, sent + ROWS_INTERVAL_S - time.perf_counter()))
            seen, trace, finished = feed.newer_than(seen)
            if finished:
                break
            sent = time.perf_counter()
            if sent - plotted < PLOT_INTERVAL_S:
                yield (*views(trace, held), trace, None)
                continue
            plotted, outputs = sent, views(trace)
            held = _held(outputs, trace)
            yield (*outputs[:3], *held[:4], outputs[7], trace, None)
        if compare:
            trace.baseline = worker.call(engine.baseline_decode, pipeline, prompt, config)
    except ValueError as error:
        raise gr.Error(str(error)) from error
    except Exception as error:
        raise gr.Error(_friendly(error)) from error
    finally:
        feed.close()
    yield (*views(trace), trace, write_trace_file(trace))


def _snapshot(item) -> Trace:
    """What a reader may hold while the engine goes on: the trace with its own list of (immutable) rounds."""
    _, trace = item
    return dataclasses.replace(trace, rounds=list(trace.rounds))


def step(session: StepSession | None, pair, target, draft, drafter, prompt, gamma, max_new_tokens, temperature, top_k,
         top_p, seed, compare, adaptive=False):
    """Advance one round; the first click (or one after a finished run) starts a new run from the controls."""
    if session is None or session.finished:
        config = make_config(pair, target, draft, drafter, prompt, gamma, max_new_tokens, temperature, top_k, top_p,
                             seed, adaptive)
        pipeline = load_pipeline(config)
        if compare:
            worker.call(engine.warm_up, pipeline, config)
        try:
            rounds = engine.speculative_decode(pipeline, prompt, config)
        except ValueError as error:
            raise gr.Error(str(error)) from error
        session = StepSession(config, prompt, bool(compare), pipeline, rounds)
    try:
        produced = worker.step(session.rounds)
        if produced is None:
            session.finished = True
        else:
            _, session.trace = produced
            session.finished = bool(session.trace.stop_reason)
            if session.finished and session.compare:
                session.trace.baseline = worker.call(engine.baseline_decode, session.pipeline, session.prompt,
                                                      session.config)
    except ValueError as error:
        session.finished = True  # the next click starts afresh
        raise gr.Error(str(error)) from error
    except Exception as error:  # out of memory, among others: the session ends, the server goes on
        session.finished = True
        raise gr.Error(_friendly(error)) from error
    download = write_trace_file(session.trace) if session.finished else gr.skip()
    return (*views(session.trace), session.trace, download, session)


def select_position(trace: Trace | None, round_number, position):
    """Redraw p vs q for the chosen round (1-based) and draft position."""
    if trace is None or not trace.rounds:
        return figures.empty_figure("No run yet"), gr.update()
    round_ = trace.rounds[min(max(int(round_number), 1), len(trace.rounds)) - 1]
    last_position = round_.tokens[-1].position
    chosen = min(max(int(position or last_position), 1), last_position)
    return figures.p_vs_q_figure(round_, chosen), gr.update(maximum=max(int(trace.config["gamma"]) + 1, 2))


def follow_latest_position(trace: Trace | None):
    """After a run the position slider points at where the last round was decided."""
    if trace is None or not trace.rounds:
        return gr.update()
    return gr.update(value=_default_position(trace.rounds[-1]), maximum=int(trace.config["gamma"]) + 1)


def import_trace(path):
    """Load a saved trace and render it with no model at all."""
    if not path:
        raise gr.Error("Choose a trace JSON file first.")
    file = Path(path)
    if file.stat().st_size > MAX_TRACE_BYTES:
        raise gr.Error(f"That file is larger than {MAX_TRACE_BYTES // 2**20} MB; a trace is far smaller.")
    try:
        trace = Trace.from_json(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise gr.Error(f"That file is not valid JSON ({str(error)[:200]}).") from error
    except (KeyError, TypeError, ValueError) as error:
        raise gr.Error(f"That JSON is not a specviz trace ({error}).") from error
    return (*views(trace), trace, None)


def reset():
    return (*views(None), None, None, None)


# ---------------------------------------------------------------- layout


def build_app() -> gr.Blocks:
    policy = current_policy()
    gpu = gpu_decorator()  # ZeroGPU on a Space, else nothing
    with gr.Blocks(title="specviz: speculative decoding, round by round",
                   delete_cache=(TRACE_FILE_TTL_S, TRACE_FILE_TTL_S)) as demo:  # Gradio's copies of files, hourly
        gr.Markdown(
            "# specviz\nA small drafter proposes γ tokens; the target scores them all in **one** forward pass; "
            "modified rejection sampling keeps a prefix and draws a correction from norm(max(0, p − q)), or a bonus "
            "token when all γ pass. The output follows the target's distribution exactly."
            + (f"\n\n*Shared server: prompts up to {policy.max_prompt_chars:,} characters, up to "
               f"{policy.max_new_tokens} new tokens, γ up to {policy.max_gamma}, listed models only.*"
               if policy.hosted else "")
        )
        trace_state = gr.State(None)
        step_state = gr.State(None)
        with gr.Tab("Live decoding"):
            with gr.Row():
                with gr.Column(scale=1, min_width=320):
                    pair = gr.Dropdown(list(PAIRS), value=default_pair(), label="Model pair (target ← draft)")
                    with gr.Row(visible=False) as custom_row:
                        target = gr.Textbox(label="Target id or folder", placeholder="HuggingFaceTB/SmolLM2-360M-Instruct")
                        draft = gr.Textbox(label="Draft id or folder", placeholder="HuggingFaceTB/SmolLM2-135M-Instruct")
                    drafter = gr.Radio(DRAFTERS, value=LOOKUP_THEN_DRAFT, label="Drafter",
                                       info="Offline, the draft model is the target's own 4-bit copy (agrees "
                                            "~98%, fastest on a CPU) or the head distilled from it (assets/; "
                                            "more rejections to look at). Lookup, else draft model: copy from "
                                            "the context where it matches, draft elsewhere")
                    prompt = gr.Textbox(EXAMPLES[0], label="Prompt", lines=3, max_lines=12)
                    gr.Examples([[text] for text in EXAMPLES], inputs=[prompt], label="Examples")
                    gamma = gr.Slider(1, min(16, policy.max_gamma), value=4, step=1, label="γ: tokens drafted per round")
                    adaptive = gr.Checkbox(False, label="Adaptive γ: each round drafts 0..γ tokens, chosen from the "
                                                        "running acceptance and the measured costs")
                    max_new_tokens = gr.Slider(1, min(512, policy.max_new_tokens), value=64, step=1, label="Max new tokens")
                    temperature = gr.Slider(0, 2, value=0, step=0.05, label="Temperature (0 = greedy)")
                    with gr.Row():
                        top_k = gr.Number(0, label="Top-k (0 = off)", precision=0, minimum=0)
                        top_p = gr.Slider(0.05, 1, value=1, step=0.01, label="Top-p (1 = off)")
                        seed = gr.Number(0, label="Seed", precision=0, minimum=0)
                    compare = gr.Checkbox(False, label="Compare with plain decoding (measures the speedup)")
                    with gr.Row():
                        run_button = gr.Button("Run", variant="primary")
                        step_button = gr.Button("Step")
                        stop_button = gr.Button("Stop", variant="stop")
                        reset_button = gr.Button("Reset")
                    with gr.Row():
                        download = gr.DownloadButton("Download trace (JSON)", value=None)
                        upload = gr.UploadButton("Load a trace", file_types=[".json"], type="filepath")
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

        build_lab_tabs(demo, trace_state)

        view_outputs = [rows, final_text, stats, alpha_plot, pq_plot, speedup_plot, histogram_plot, round_slider]
        controls = [pair, target, draft, drafter, prompt, gamma, max_new_tokens, temperature, top_k, top_p, seed, compare,
                    adaptive]
        pair.change(lambda choice: gr.update(visible=choice == "Custom"), pair, custom_row, queue=False)
        pair.change(lambda choice: gr.update(value=LOOKUP_THEN_DRAFT if PAIRS[choice][0] == OFFLINE_MODEL else DRAFT_MODEL),
                    pair, drafter, queue=False)
        run_event = run_button.click(gpu(run), controls, [*view_outputs, trace_state, download], api_name="run")
        run_event.then(follow_latest_position, trace_state, position_slider, queue=False)
        step_event = step_button.click(gpu(step), [step_state, *controls], [*view_outputs, trace_state, download, step_state],
                                        api_name="step")
        stop_button.click(lambda: gr.Info("Stopped."), None, None, cancels=[run_event, step_event], queue=False)
        reset_button.click(reset, None, [*view_outputs, trace_state, step_state, download], cancels=[run_event, step_event])
        upload.upload(import_trace, upload, [*view_outputs, trace_state, step_state])
        for slider in (round_slider, position_slider):
            slider.release(select_position, [trace_state, round_slider, position_slider], [pq_plot, position_slider])
    return demo


def css() -> str:
    return (ASSETS / "specviz.css").read_text(encoding="utf-8")
