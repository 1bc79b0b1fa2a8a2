"""The live tab's Run and Step in process, on a scripted pipeline that loads slowly: the page says what is
happening while it loads, and Stop (the session's JobSlot) ends the work at any moment, loading included.
Tests that wait through a scripted load or round are in the slow tier; those that only need the models, fast."""

import threading
import time

import gradio as gr
import pytest

from specviz import job
from specviz.app import live, worker
from specviz.app.request import PROMPT_LOOKUP, RunRequest
from specviz.app.views import LiveView
from specviz.decoding import pipeline
from specviz.trace import Trace
from specviz.words import count
from tests.fakes import fake_pipeline

LOAD_S = 1.2
STAGE = "Converting the offline GGUF to safetensors, once"
REQUEST = RunRequest(drafter=PROMPT_LOOKUP, prompt="abcabcabcabc", max_new_tokens=200, temperature=1.0)


def _scripted_loading(monkeypatch, load_s: float) -> list:
    """build_pipeline replaced by one that names a stage, takes load_s (checking for a cancel as the real
    loading does between stages) and returns scripted models; `loads` records how each load ended."""
    loads = []

    def build(config):
        job.stage(STAGE)
        job.check()
        deadline = time.perf_counter() + load_s
        try:
            while time.perf_counter() < deadline:
                job.check()
                time.sleep(0.01)
        except job.Cancelled:
            loads.append("cancelled")
            raise
        loads.append("loaded")
        return fake_pipeline(8, drafter="ngram+model", draft_salt=1)

    monkeypatch.setattr(pipeline, "build_pipeline", build)  # what progress's calibrated_pipeline builds with
    return loads


@pytest.fixture
def slow_loading(monkeypatch):
    return _scripted_loading(monkeypatch, LOAD_S)


@pytest.fixture
def quick_loading(monkeypatch):
    """The same scripted loading without the wait, for tests about what follows it."""
    return _scripted_loading(monkeypatch, 0.0)


def _named(output) -> dict:
    """A callback's output tuple by LiveView's field names (Step's session, if any, under "session")."""
    return dict(zip([*LiveView.names(), "session"], output))


def _status(output) -> str:
    status = _named(output)["status"]
    return status if isinstance(status, str) else ""


def _trace(output):
    """The trace state an output sets; None when it sets none or clears it."""
    trace = _named(output)["trace"]
    return trace if isinstance(trace, Trace) else None


@pytest.mark.slow
def test_a_first_run_says_what_it_is_doing_while_it_loads(slow_loading):
    seen = []  # each status line, and whether the load had ended when it came
    for output in live.run(live.JobSlot(), **vars(REQUEST)):
        seen.append((bool(slow_loading), _status(output)))
    assert seen[0] == (False, seen[0][1]) and seen[0][1].startswith("**Starting**")
    while_loading = [text for loaded, text in seen if not loaded and STAGE in text]
    assert len(while_loading) >= 2, seen[:5]  # the stage, said as soon as it began and again while it lasted
    assert seen[-1][1].startswith("**Done**") and slow_loading == ["loaded"]  # the run then went to its end


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.05, 0.1, 1.0])
def test_stop_during_the_loading_frees_the_model_thread_at_once(slow_loading, delay):
    slot = live.JobSlot()
    outputs = live.run(slot, **vars(REQUEST))
    threading.Timer(delay, slot.cancel).start()
    *_, last = outputs
    assert worker.call(lambda: "free") == "free"  # the load ended by the cancel (below), not by finishing
    assert slow_loading == ["cancelled"] and _trace(last) is None  # no trace: nothing was decoded
    assert "before the first round" in _status(last) and _named(last)["rows"] == gr.skip()  # the page kept as it was


def test_stop_during_the_decoding_ends_the_run_within_a_round(quick_loading):
    slot, rounds_shown = live.JobSlot(), 0
    for output in live.run(slot, **vars(REQUEST)):
        if rounds_shown == 0 and _trace(output) is not None:
            rounds_shown = len(_trace(output).rounds)
            live.stop(slot)
    assert worker.call(lambda: "free") == "free"
    trace, shown = _trace(output), _named(output)
    assert trace.stop_reason == live.STOPPED and len(trace.token_ids) < REQUEST.max_new_tokens
    rounds = count(len(trace.rounds), "round")  # "1 round", "3 rounds"
    assert _status(output).startswith(f"**Stopped by you after {rounds}**")
    assert f"stopped by you after {rounds}" in shown["stats"] and shown["download"].endswith(".json")
    # every view is of the same rounds: the rows, and the plots drawn afresh (not held from an earlier round)
    assert shown["rows"].count('class="sv-row') == len(trace.rounds)
    histogram = shown["histogram_plot"]
    assert sum(sum(bar.y) for bar in histogram.data if bar.type == "bar") >= len(trace.rounds)
    assert shown["round_slider"]["maximum"] == max(len(trace.rounds), 2)


@pytest.mark.slow
def test_stop_before_the_first_round_keeps_the_previous_run(slow_loading):
    previous = next(_trace(output) for output in reversed(list(live.run(live.JobSlot(), **vars(REQUEST))))
                    if _trace(output) is not None)
    slot = live.JobSlot()
    outputs = live.run(slot, previous, **vars(REQUEST))
    threading.Timer(0.1, live.stop, [slot]).start()
    shown = [_named(output) for output in outputs]
    assert all(view[name] == gr.skip() for view in shown for name in LiveView.names() if name != "status")
    assert shown[-1]["status"] == ("**Stopped by you before the first round**: nothing was decoded; the page still "
                                   "shows the previous run")


@pytest.mark.slow
def test_step_reports_loading_then_shows_one_round(slow_loading):
    outputs = list(live.step(None, live.JobSlot(), **vars(REQUEST)))
    assert any(STAGE in _status(output) for output in outputs[:-1])
    *_, trace, _, _, session = outputs[-1]  # ..., the trace, the race, the download, Step's session
    assert len(trace.rounds) == 1 and not session.finished
    *_, trace, _, _, session = list(live.step(session, live.JobSlot(), **vars(REQUEST)))[-1]
    assert len(trace.rounds) == 2 and slow_loading == ["loaded"]  # the second click loads nothing


@pytest.mark.slow
def test_a_new_run_cancels_the_sessions_previous_one(slow_loading):
    slot = live.JobSlot()
    first = live.run(slot, **vars(REQUEST))
    next(first)
    next(first)  # the first run is loading
    second = live.run(slot, **vars(REQUEST))
    next(second)  # starting the second cancelled the first's job
    *_, last_of_first = first
    assert _trace(last_of_first) is None
    *_, last = second
    assert _trace(last).stop_reason and slow_loading == ["cancelled", "loaded"]


def test_reset_during_the_decoding_leaves_the_page_cleared(quick_loading):
    """Reset clears the page at once (queue=False); the run it cancels must not then show its stopped rows."""
    slot = live.JobSlot()
    outputs = live.run(slot, **vars(REQUEST))
    next(output for output in outputs if _trace(output) is not None)  # the first rows are on the page
    cleared = _named(live.reset(slot))
    later = list(outputs)
    assert cleared["trace"] is None and worker.call(lambda: "free") == "free"  # the trace state emptied, the model free
    assert [output for output in later if _trace(output) is not None] == []
    last = _named(later[-1])  # the run's stream ends with the cleared page, after any update of it in flight
    assert later and {name: last[name] for name in ("rows", "stats", "status")} == {"rows": cleared["rows"],
                                                                                  "stats": "", "status": ""}


@pytest.mark.slow
def test_reset_during_a_step_brings_back_neither_its_round_nor_its_session(slow_loading):
    slot = live.JobSlot()
    *_, session = list(live.step(None, slot, **vars(REQUEST)))[-1]

    def slow_rounds():  # a round that takes a second, checking for a cancel as the engine does between forwards
        deadline = time.perf_counter() + 1.0
        while time.perf_counter() < deadline:
            job.check()
            time.sleep(0.01)
        yield from ()

    session.rounds = slow_rounds()
    threading.Timer(0.1, live.reset, [slot]).start()
    outputs = list(live.step(session, slot, **vars(REQUEST)))
    assert slot.cleared is not None and worker.call(lambda: "free") == "free"
    assert all(not isinstance(output[-1], live.StepSession) for output in outputs)  # only status lines, if any
    assert _named(outputs[-1])["session"] is None and _named(outputs[-1])["stats"] == ""  # ending on the cleared page
