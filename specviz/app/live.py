"""The live tab's callbacks: a request -> DecodeConfig -> engine (on the model thread) -> views.

Run and Step take the RunRequest's fields as keyword arguments (ui.py wires each field to its widget). Per-session
state (the trace, a Step session) lives in gr.State; nothing here mutates a module global.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass

import gradio as gr

from specviz.app import progress, worker
from specviz.app.callbacks import friendly_message, make_config
from specviz.app.progress import JobSlot
from specviz.app.request import RunRequest
from specviz.app.trace_files import write_trace_file
from specviz.app.views import LiveView, held_plots, views
from specviz.config import DecodeConfig
from specviz.decoding import comparison, engine
from specviz.decoding.pipeline import Pipeline
from specviz.job import Cancelled
from specviz.trace import USER_STOP, Trace

# Send the newest rows at most this often (Step shows every round): each update slows the run, more the more often
# it comes (docs/results.md, "The default live run and the class page").
ROWS_INTERVAL_S = 0.4
PLOT_INTERVAL_S = 6.0  # and redraw the four plots at most this often (drawn here, and at far more cost in the browser)
STOPPED = USER_STOP  # Trace.stop_reason of a run its user stopped


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


def run(slot: JobSlot | None = None, previous: Trace | None = None, **controls):
    """Stream a whole run (_run); a refusal or failure also stays on the status line once its toast has faded."""
    try:
        yield from _run(slot, previous, **controls)
    except gr.Error as error:
        yield LiveView(status=progress.not_run_line(error)).values()
        raise


def _run(slot: JobSlot | None = None, previous: Trace | None = None, **controls):
    """Stream a whole run, then the final views.

    Loading reports its stage every STATUS_INTERVAL_S beside the Run button; the page keeps the previous run until
    the first round arrives. The engine then runs ahead on the model thread (worker.Ahead) and is never held up by
    drawing; every ROWS_INTERVAL_S this sends the newest rounds (Gradio sends only the rows appended since the last
    update), and every PLOT_INTERVAL_S the plots too. Stop cancels the session's job (the model stops within one
    forward) and this generator then ends by itself, showing every round decoded so far, all views of the same
    rounds. Whatever else ends it (an error, Reset, Gradio closing it for a closed tab) cancels the job too.
    """
    request = RunRequest(**controls)
    config = make_config(request)
    slot = slot or JobSlot()
    job = slot.start()
    feed, trace, started = None, None, time.perf_counter()
    try:
        yield LiveView(status=progress.waiting_line(job, started)).values()  # at once: say what is happening
        pipeline = yield from progress.loaded(config, job, started, warm=request.compare)
        job.enter(progress.FIRST_ROUND)
        decode = comparison.compared_decode if request.compare else engine.speculative_decode  # plain decoding in turn
        feed = worker.Ahead(decode(pipeline, request.prompt, config), snapshot=_snapshot, job=job)
        seen, sent, plotted, held = 0, float("-inf"), float("-inf"), None
        while not job.cancelled:
            time.sleep(max(0.0, sent + ROWS_INTERVAL_S - time.perf_counter()))
            newer = feed.newer_than(seen, timeout=progress.STATUS_INTERVAL_S)
            if newer is None:  # a slow round: say so
                yield LiveView(status=progress.waiting_line(job, started) if trace is None
                               else progress.decoding_line(trace, started)).values()
                continue
            seen, trace, finished = newer
            if finished:
                break
            sent = time.perf_counter()
            if sent - plotted >= PLOT_INTERVAL_S:
                plotted, view = sent, views(trace)
                held = held_plots(view)
            else:
                view = views(trace, held)
            yield dataclasses.replace(view, status=progress.decoding_line(trace, started)).values()
        if job.cancelled:  # Stop, Reset or a new Run cancelled the job: the engine ends within a forward
            raise Cancelled("stopped")
    except Cancelled:
        if slot.was_cleared(job):  # Reset: this stream's last word is the cleared page, after any update in flight
            yield _cleared().values()
            return
        yield from _stopped(feed, trace, previous)
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
    yield dataclasses.replace(views(trace), status=progress.done_line(trace, started),
                              download=write_trace_file(trace)).values()


def _stopped(feed: worker.Ahead | None, trace: Trace | None, previous: Trace | None):
    """What the page shows after Stop: every round decoded so far (the feed's newest, which may be newer than
    the last one drawn), marked stopped, all views of the same rounds; or, before the first round, the previous
    run left as it was, and a line saying nothing was decoded. A toast confirms either way."""
    newest = feed.newest() if feed is not None else None
    trace = newest if newest is not None and newest.rounds else trace
    if trace is None or not trace.rounds:
        line = progress.stopped_early_line(previous)
        gr.Info(line.replace("**", ""))
        yield LiveView(status=line).values()
        return
    if trace.stop_reason:  # the run had ended (its plain decoding too) when Stop came
        line = progress.ENDED_BEFORE_STOP
    else:
        trace.stop_reason = STOPPED
        line = progress.stopped_line(trace)
    gr.Info(line.replace("**", ""))
    yield dataclasses.replace(views(trace), status=line, download=write_trace_file(trace)).values()


def _snapshot(item) -> Trace:
    """What a reader may hold while the engine goes on: the trace with its own list of (immutable) rounds."""
    _, trace = item
    return dataclasses.replace(trace, rounds=list(trace.rounds))


KEEP_SESSION = (gr.skip(),)  # Step's last output (its session) while it waits


def step(session: StepSession | None, slot: JobSlot | None = None, **controls):
    """One round (_step); a refusal or failure also stays on the status line once its toast has faded."""
    try:
        yield from _step(session, slot, **controls)
    except gr.Error as error:
        yield (*LiveView(status=progress.not_run_line(error)).values(), *KEEP_SESSION)
        raise


def _step(session: StepSession | None, slot: JobSlot | None = None, **controls):
    """Advance one round; the first click (or one after a finished run) starts a new run from the controls,
    reporting the loading stages as it goes. Each click is a job of its own: Stop cancels the round in flight."""
    slot = slot or JobSlot()
    job, started = slot.start(), time.perf_counter()
    try:
        if session is None or session.finished:
            request = RunRequest(**controls)
            config = make_config(request)
            yield (*LiveView(status=progress.waiting_line(job, started)).values(), *KEEP_SESSION)
            pipeline = yield from progress.loaded(config, job, started, KEEP_SESSION, warm=request.compare)
            decode = comparison.compared_decode if request.compare else engine.speculative_decode
            rounds = decode(pipeline, request.prompt, config)
            session = StepSession(config, request.prompt, bool(request.compare), pipeline, rounds)
        future = worker.MODEL_THREAD.submit(next, session.rounds, None, job=job)
        produced = yield from progress.waiting(future, job, started, KEEP_SESSION)
        if produced is None:
            session.finished = True
        else:
            _, session.trace = produced
            session.finished = bool(session.trace.stop_reason)
    except Cancelled:
        if slot.was_cleared(job):  # Reset: this stream's last word is the cleared page (and no session)
            yield (*_cleared().values(), None)
            return
        if session is None:  # stopped while loading: nothing to show
            yield (*LiveView(status=progress.stopped_early_line(None)).values(), *KEEP_SESSION)
            return
        session.finished = True  # the engine's generator ended with the cancel: the next click starts afresh
        if session.trace is not None and not session.trace.stop_reason:
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
    trace = session.trace
    view = views(trace)
    if trace is not None:
        view.status = progress.step_line(trace, session.finished)
        view.download = write_trace_file(trace) if session.finished else gr.skip()
    yield (*view.values(), session)


def pressed(slot: JobSlot | None = None) -> None:
    """Run or Step pressed (answered at once, not queued): a Stop before its job starts stops it too (JobSlot)."""
    if slot is not None:
        slot.pressed()


def stop(slot: JobSlot | None = None) -> None:
    """Cancel the session's run or step: its own callback then shows what was decoded, marked stopped, with a
    toast (a Gradio cancel would leave the page as the last update left it, and mark every output with an error)."""
    if slot is not None:
        slot.stop()


def reset(slot: JobSlot | None = None):
    """Clear the page and the session's state; the run in flight ends without showing anything more."""
    if slot is not None:
        slot.clear()
    return (*_cleared().values(), None)  # and the Step session


def _cleared() -> LiveView:
    """The page after Reset: Reset's own answer, and the last update of the run or step it ended. That run's stream
    ends with it, so an update of its rows already on its way cannot leave rows on the cleared page."""
    view = views(None)
    view.status, view.download = "", None
    return view
