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
from specviz.app import progress, worker
from specviz.app.callbacks import friendly_message, make_config
from specviz.app.progress import JobSlot, status_only
from specviz.app.request import RunRequest
from specviz.app.views import held_plots, views
from specviz.config import DecodeConfig
from specviz.export import run_html, trace_from_text
from specviz.job import Cancelled
from specviz.pipeline import Pipeline
from specviz.trace import Trace

# Send the newest rows at most this often (Step shows every round): streaming cost 10-13% at 0.2 s, 2-9% at 0.4 s.
ROWS_INTERVAL_S = 0.4
PLOT_INTERVAL_S = 2.0  # and redraw the four plots at most this often (~25 ms of CPU each time)
STOPPED = "Stop"  # Trace.stop_reason of a run its user stopped (shown as "stopped by Stop")
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


def run(slot: JobSlot | None = None, **controls):
    """Stream a whole run, then the final views.

    Loading reports its stage every STATUS_INTERVAL_S. The engine then runs ahead on the model thread
    (worker.Ahead) and is never held up by drawing; every ROWS_INTERVAL_S this sends the newest rounds (Gradio
    sends only the rows appended since the last update), and every PLOT_INTERVAL_S the plots too. Whatever ends
    this generator (the run's end, an error, or Gradio closing it for Stop, Reset or a closed tab) cancels the
    job, so the model thread is free within one forward.
    """
    request = RunRequest(**controls)
    config = make_config(request)
    slot = slot or JobSlot()
    job = slot.start()
    feed, trace, started = None, None, time.perf_counter()
    try:
        yield _cleared(progress.waiting_line(job, started))  # at once: the page says what is happening
        pipeline = yield from progress.loaded(config, job, started)
        if request.compare:  # a fresh server's first run would otherwise pay set-up costs
            yield from progress.waiting(worker.MODEL_THREAD.submit(engine.warm_up, pipeline, config, job=job), job, started)
        job.enter(progress.FIRST_ROUND)
        feed = worker.Ahead(engine.speculative_decode(pipeline, request.prompt, config), snapshot=_snapshot, job=job)
        seen, sent, plotted, held = 0, float("-inf"), float("-inf"), None
        while True:
            time.sleep(max(0.0, sent + ROWS_INTERVAL_S - time.perf_counter()))
            newer = feed.newer_than(seen, timeout=progress.STATUS_INTERVAL_S)
            if newer is None:  # a slow round: say so (and let Gradio close this generator if it wants to)
                yield status_only(progress.waiting_line(job, started)) if trace is None else _unchanged()
                continue
            seen, trace, finished = newer
            if finished or job.cancelled:  # a cancelled engine ends within a forward: show no rows meanwhile
                break
            sent = time.perf_counter()
            if sent - plotted < PLOT_INTERVAL_S:
                yield (*views(trace, held), trace, None)
                continue
            plotted, outputs = sent, views(trace)
            held = held_plots(outputs, trace)
            yield (*outputs[:3], *held[:4], outputs[7], trace, None)
        if job.cancelled:  # Stop or Reset cancelled the job: the engine ended before its last round
            raise Cancelled("stopped")
        if request.compare:
            future = worker.MODEL_THREAD.submit(engine.baseline_decode, pipeline, request.prompt, config, job=job)
            trace.baseline = yield from progress.waiting(future, job, started)
    except Cancelled:
        if slot.was_cleared(job):  # Reset: the page was cleared; showing the stopped run would undo that
            return
        if trace is not None:
            trace.stop_reason = STOPPED
        yield (*views(trace), trace, write_trace_file(trace) if trace else None)
        return
    except gr.Error:  # a refusal already worded (gr.Error is a ValueError: it must not be wrapped again)
        raise
    except ValueError as error:
        raise gr.Error(str(error), print_exception=False) from error
    except Exception as error:
        raise gr.Error(friendly_message(error)) from error
    finally:
        job.cancel()  # the end, an error, or a cancel from outside: nothing of this run may go on
        if feed is not None:
            feed.close()
    yield (*views(trace), trace, write_trace_file(trace))


def _cleared(status: str) -> tuple:
    """The views emptied, with a status line where the stats go."""
    rows, final, _, *plots_and_slider = views(None)
    return rows, final, status, *plots_and_slider, None, None


def _unchanged() -> tuple:
    return tuple(gr.skip() for _ in range(10))


def _snapshot(item) -> Trace:
    """What a reader may hold while the engine goes on: the trace with its own list of (immutable) rounds."""
    _, trace = item
    return dataclasses.replace(trace, rounds=list(trace.rounds))


KEEP_SESSION = (gr.skip(),)  # Step's last output (its session) while it waits


def step(session: StepSession | None, slot: JobSlot | None = None, **controls):
    """Advance one round; the first click (or one after a finished run) starts a new run from the controls,
    reporting the loading stages as it goes. Each click is a job of its own: Stop cancels the round in flight."""
    slot = slot or JobSlot()
    job, started = slot.start(), time.perf_counter()
    try:
        if session is None or session.finished:
            request = RunRequest(**controls)
            config = make_config(request)
            yield (*status_only(progress.waiting_line(job, started)), *KEEP_SESSION)
            pipeline = yield from progress.loaded(config, job, started, KEEP_SESSION)
            if request.compare:
                yield from progress.waiting(worker.MODEL_THREAD.submit(engine.warm_up, pipeline, config, job=job), job, started,
                                          KEEP_SESSION)
            rounds = engine.speculative_decode(pipeline, request.prompt, config)
            session = StepSession(config, request.prompt, bool(request.compare), pipeline, rounds)
        future = worker.MODEL_THREAD.submit(next, session.rounds, None, job=job)
        produced = yield from progress.waiting(future, job, started, KEEP_SESSION)
        if produced is None:
            session.finished = True
        else:
            _, session.trace = produced
            session.finished = bool(session.trace.stop_reason)
            if session.finished and session.compare:
                future = worker.MODEL_THREAD.submit(engine.baseline_decode, session.pipeline, session.prompt,
                                                    session.config, job=job)
                session.trace.baseline = yield from progress.waiting(future, job, started, KEEP_SESSION)
    except Cancelled:
        if session is None or slot.was_cleared(job):  # nothing to show, or Reset cleared the page (and the session)
            return
        session.finished = True  # the engine's generator ended with the cancel: the next click starts afresh
        if session.trace is not None:
            session.trace.stop_reason = STOPPED
    except gr.Error:  # a refusal already worded (gr.Error is a ValueError: it must not be wrapped again)
        if session is not None:
            session.finished = True
        raise
    except ValueError as error:
        if session is not None:
            session.finished = True  # the next click starts afresh
        raise gr.Error(str(error), print_exception=False) from error
    except Exception as error:  # out of memory, among others: the session ends, the server goes on
        if session is not None:
            session.finished = True
        raise gr.Error(friendly_message(error)) from error
    finally:
        job.cancel()
    download = write_trace_file(session.trace) if session.finished and session.trace else gr.skip()
    yield (*views(session.trace), session.trace, download, session)


def write_trace_file(trace: Trace, suffix: str = ".json") -> str:
    """The trace as a file to download: its JSON, or (suffix ".html") the self-contained page of export.py. Files
    older than TRACE_FILE_TTL_S are removed on the way, so a server that runs for weeks does not fill its disk
    (Gradio serves its own copy, pruned by delete_cache)."""
    folder = Path(tempfile.gettempdir()) / "specviz-traces"
    folder.mkdir(exist_ok=True)
    expired = time.time() - TRACE_FILE_TTL_S
    for old in folder.glob("specviz-trace-*"):
        try:
            if old.stat().st_mtime < expired:
                old.unlink()
        except OSError:  # another worker removed it first
            pass
    handle = tempfile.NamedTemporaryFile("w", suffix=suffix, prefix="specviz-trace-", dir=folder, delete=False,
                                         encoding="utf-8")
    with handle:
        handle.write(run_html(trace) if suffix == ".html" else trace.to_json())
    return handle.name


def export_page(trace: Trace | None):
    """The run as one self-contained HTML page, offered for download."""
    if trace is None or not trace.rounds:
        raise gr.Error("Nothing to export yet: Run, Step or load a trace first.")
    return gr.update(value=write_trace_file(trace, ".html"), visible=True)


def import_trace(path):
    """Load a saved trace and render it with no model at all."""
    if not path:
        raise gr.Error("Choose a trace file first (JSON, or a page exported as HTML).")
    file = Path(path)
    if file.stat().st_size > MAX_TRACE_BYTES:
        raise gr.Error(f"That file is larger than {MAX_TRACE_BYTES // 2**20} MB; a trace is far smaller.")
    try:
        trace = trace_from_text(file.read_text(encoding="utf-8"))  # trace JSON, or an exported page
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise gr.Error(f"That file is not valid JSON ({str(error)[:200]}).") from error
    except (KeyError, TypeError, ValueError) as error:
        raise gr.Error(f"That JSON is not a specviz trace ({error}).") from error
    return (*views(trace), trace, None)


def stop(slot: JobSlot | None = None) -> None:
    if slot is not None:
        slot.cancel()
    gr.Info("Stopped.")


def reset(slot: JobSlot | None = None):
    if slot is not None:
        slot.clear()
    return (*views(None), None, None, None)
