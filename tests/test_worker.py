"""The app's model thread: one thread for all model work, runs ahead of their reader, stop and errors."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from specviz.app import worker


def _counting(n, log=None, delay=0.0, fail_at=None):
    try:
        for i in range(n):
            if fail_at == i:
                raise ValueError(f"failed at {i}")
            time.sleep(delay)
            if log is not None:
                log.append((threading.current_thread().name, i))
            yield i
    finally:
        if log is not None:
            log.append(("closed", n))


def test_call_and_step_run_on_the_one_model_thread():
    names = {worker.call(lambda: threading.current_thread().name) for _ in range(5)}
    assert len(names) == 1 and names.pop().startswith("specviz-model")
    items = _counting(2)
    assert [worker.step(items), worker.step(items), worker.step(items)] == [0, 1, None]


def test_the_model_thread_starts_on_first_use_and_only_once():
    model_thread = worker.ModelThread()
    assert not model_thread.started()  # constructing it (as importing worker does) starts nothing
    with ThreadPoolExecutor(max_workers=8) as callers:  # many first calls at once, as Gradio's threads make them
        idents = set(callers.map(lambda _: model_thread.submit(threading.get_ident).result(), range(32)))
    assert model_thread.started() and len(idents) == 1
    assert model_thread.submit(lambda: threading.current_thread().name).result().startswith("specviz-model")


def test_ahead_runs_to_the_end_on_the_model_thread_and_the_reader_sees_the_newest():
    log = []
    feed = worker.Ahead(_counting(30, log, delay=0.002), snapshot=lambda i: ("snapshot", i))
    seen, newest, finished = feed.newer_than(0)
    assert seen >= 1 and newest == ("snapshot", seen - 1)
    time.sleep(0.2)  # a slow reader skips what it was too slow for
    while not finished:
        seen, newest, finished = feed.newer_than(seen)
    assert seen == 30 and newest == ("snapshot", 29)
    assert all(name.startswith("specviz-model") for name, _ in log if name != "closed")
    assert [i for name, i in log if name != "closed"] == list(range(30))


def test_close_stops_the_run_after_the_item_in_flight():
    log = []
    feed = worker.Ahead(_counting(10_000, log, delay=0.005))
    feed.newer_than(2)
    feed.close()
    deadline = time.time() + 5
    while ("closed", 10_000) not in log and time.time() < deadline:
        time.sleep(0.01)
    produced = len(log) - 1
    assert ("closed", 10_000) in log and produced < 50
    time.sleep(0.1)
    assert len(log) == produced + 1  # nothing after the close


def test_an_error_in_the_run_reaches_the_reader():
    feed = worker.Ahead(_counting(10, fail_at=3))
    with pytest.raises(ValueError, match="failed at 3"):
        seen = 0
        while True:
            seen, _, finished = feed.newer_than(seen)
            assert not finished


def test_two_runs_interleave_item_by_item():
    log = []
    first, second = worker.Ahead(_counting(20, log, delay=0.002)), worker.Ahead(_counting(20, log, delay=0.002))
    for feed in (first, second):
        seen, finished = 0, False
        while not finished:
            seen, _, finished = feed.newer_than(seen)
    # Each run's items are queued one task at a time, so neither waits for the other to finish.
    order = [i for name, i in log if name != "closed"]
    assert order.index(19) < len(order) - 1 and order[:4] == [0, 0, 1, 1]


def test_a_forked_child_gets_a_model_thread_of_its_own():
    """ZeroGPU runs GPU calls in a forked process; the parent's worker thread does not exist there."""
    import os

    assert worker.call(lambda: 1) == 1  # the parent's worker thread is running now
    child = os.fork()
    if child == 0:  # in the child: exit 0 only if model work still runs
        code = 1
        try:
            code = 0 if worker.call(lambda: 42) == 42 else 1
        finally:
            os._exit(code)
    deadline = time.time() + 20
    while time.time() < deadline:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(child, 9)
    pytest.fail("the forked child's model call never returned")
