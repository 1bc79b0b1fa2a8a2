"""Stop while the models load: answered at once, not when the load ends (it once took 16.7 s). The load goes on
on the model thread where it is inside a C call, and what it loads stays cached for the next run."""

import time
from concurrent.futures import Future

import pytest

from specviz.app import progress
from specviz.job import Cancelled, Job


def test_stop_while_loading_is_answered_before_the_load_ends():
    load = Future()
    load.set_running_or_notify_cancel()  # a load in flight on the model thread, for as long as this test likes
    job = Job()
    waiting = progress.waiting(load, job, time.perf_counter())
    next(waiting)  # a status line while the load runs
    job.cancel()
    with pytest.raises(Cancelled):
        next(waiting)
    assert not load.done()  # the answer did not wait for the load
    load.set_result(None)
