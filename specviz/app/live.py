"""The live tab's callbacks: a request -> DecodeConfig -> engine (on the model thread) -> views.

Run and Step take the RunRequest's fields as keyword arguments (ui.py wires each field to its widget). Per-session
state (the trace, a Step session) lives in gr.State; nothing here mutates a module global.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from specviz import engine
from specviz.app import worker
from specviz.app.callbacks import friendly_message, load_pipeline, make_config
from specviz.app.request import RunRequest
from specviz.app.views import held_plots, views
from specviz.config import DecodeConfig
from specviz.pipeline import Pipeline
from specviz.trace import Trace

# Send the newest rows at most this often (Step shows every round): streaming cost 10-13% at 0.2 s, 2-9% at 0.4 s.
ROWS_INTERVAL_S = 0.4
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
    rounds: Iterator
    trace: Trace | None = None
    finished: bool = False


def run(**controls):
    """Stream a whole run, then the final views.

    The engine runs ahead on the model thread (worker.Ahead) and is never held up by drawing; every
    ROWS_INTERVAL_S this sends the newest rounds (Gradio sends only the rows appended since the last update),
    and every PLOT_INTERVAL_S the plots too. The first round is sent at once.
    """
    request = RunRequest(**controls)
    config = make_config(request)
    pipeline = load_pipeline(config)
    if request.compare:
        worker.call(engine.warm_up, pipeline, config)  # a fresh server's first run would otherwise pay set-up costs
    feed = worker.Ahead(engine.speculative_decode(pipeline, request.prompt, config), snapshot=_snapshot)
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
            held = held_plots(outputs, trace)
            yield (*outputs[:3], *held[:4], outputs[7], trace, None)
        if request.compare:
            trace.baseline = worker.call(engine.baseline_decode, pipeline, request.prompt, config)
    except ValueError as error:
        raise gr.Error(str(error)) from error
    except Exception as error:
        raise gr.Error(friendly_message(error)) from error
    finally:
        feed.close()
    yield (*views(trace), trace, write_trace_file(trace))


def _snapshot(item) -> Trace:
    """What a reader may hold while the engine goes on: the trace with its own list of (immutable) rounds."""
    _, trace = item
    return dataclasses.replace(trace, rounds=list(trace.rounds))


def step(session: StepSession | None, **controls):
    """Advance one round; the first click (or one after a finished run) starts a new run from the controls."""
    if session is None or session.finished:
        session = _start_session(RunRequest(**controls))
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
        raise gr.Error(friendly_message(error)) from error
    download = write_trace_file(session.trace) if session.finished else gr.skip()
    return (*views(session.trace), session.trace, download, session)


def _start_session(request: RunRequest) -> StepSession:
    config = make_config(request)
    pipeline = load_pipeline(config)
    if request.compare:
        worker.call(engine.warm_up, pipeline, config)
    try:
        rounds = engine.speculative_decode(pipeline, request.prompt, config)
    except ValueError as error:
        raise gr.Error(str(error)) from error
    return StepSession(config, request.prompt, bool(request.compare), pipeline, rounds)


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
