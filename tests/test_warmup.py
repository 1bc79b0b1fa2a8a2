"""The background warm-up (app/warmup.py): when it starts, what the page and a queued Run say meanwhile, and that
a Run pressed during it waits on the same model thread (so it reuses the warmed weights, not a second copy)."""

import threading
import time

import pytest

from specviz import job as jobs
from specviz.app import warmup, worker
from specviz.config import DecodeConfig


@pytest.mark.parametrize("environ, wanted", [
    ({}, False), ({"SPACE_ID": "someone/specviz"}, True), ({"SPECVIZ_WARM_UP": "1"}, True),
    ({"SPACE_ID": "someone/specviz", "SPECVIZ_WARM_UP": "0"}, False), ({"SPECVIZ_WARM_UP": "yes"}, True),
])
def test_it_warms_up_on_a_space_or_when_asked(environ, wanted):
    assert warmup.wanted(environ) is wanted


def test_a_run_pressed_during_the_warm_up_waits_for_it_on_the_model_thread(monkeypatch):
    release, order = threading.Event(), []

    def slow_warm_up(config):
        jobs.stage("Converting the model")
        order.append(("warm-up", threading.current_thread().name))
        release.wait(10)

    monkeypatch.setattr(warmup, "calibrated_pipeline", slow_warm_up)
    warm = warmup.WarmUp()
    assert warm.state() == "off" and warm.note() == "" and warm.waiting_stage() is None
    warm.start(DecodeConfig())
    while not order:
        time.sleep(0.01)
    assert warm.state() == "warming"
    assert warm.waiting_stage() == "Warming up the default model (started with the server): Converting the model"
    assert "A Run pressed now starts as soon as it is ready" in warm.note()
    run = worker.MODEL_THREAD.submit(lambda: order.append(("run", threading.current_thread().name)))
    time.sleep(0.2)
    assert not run.done()  # queued behind the warm-up, not loading a copy of its own beside it
    release.set()
    run.result(5)
    assert [who for who, _ in order] == ["warm-up", "run"] and order[0][1] == order[1][1]  # one thread
    assert warm.state() == "ready" and "was warmed up when the server started" in warm.note()


def test_a_failed_warm_up_says_so_and_leaves_the_run_to_load_it(monkeypatch):
    def broken(config):
        raise OSError("no space left on device")

    monkeypatch.setattr(warmup, "calibrated_pipeline", broken)
    warm = warmup.WarmUp()
    warm.start(DecodeConfig())
    with pytest.raises(OSError):
        warm.future.result(5)
    assert warm.state() == "failed" and "no space left on device" in warm.note() and "a Run loads it" in warm.note()
