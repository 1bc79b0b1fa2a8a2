"""One thread for all model work in the app.

Gradio runs each step of a callback on whichever of its worker threads is free. PyTorch gives every thread that
runs CPU ops its own OpenMP team, and once a second thread has used torch, decoding on a small CPU runs markedly
slower (docs/results.md, "The default live run and the class page"). So the app sends every model call through
this single thread: the cost disappears, and concurrent sessions interleave round by round instead of fighting
over the cores. The CLI and the benchmarks run on their own main thread and do not need it.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import TypeVar

from specviz import job as jobs
from specviz.job import Job

T = TypeVar("T")
_DONE = object()


class ModelThread:
    """The one thread all model work runs on. Nothing starts until the first submit. A forked child (ZeroGPU runs
    each GPU call in one) inherits this object but not its thread, so the child starts one of its own.

    Tasks run one at a time in the order they came, except that a task of a job marked `ahead` (the teacher's lane,
    teacher.py) runs before every waiting task of the others: the class's runs interleave round by round, and the
    teacher's next round comes next, so a teacher's first row is no slower than a student's on a server at rest."""

    def __init__(self):
        self._tasks: queue.PriorityQueue | None = None
        self._order = itertools.count()
        self._lock = threading.Lock()  # two first submits at once must not start two threads
        self._watching_forks = False

    def submit(self, function: Callable[..., T], *args, job: Job | None = None, **kwargs) -> Future:
        """Queue function(*args, **kwargs); while it runs, `job` is the current job (its stage and cancel flag)."""
        future: Future = Future()
        first = 0 if job is not None and job.ahead else 1
        self._started_queue().put((first, next(self._order), future, job, function, args, kwargs))
        return future

    def started(self) -> bool:
        return self._tasks is not None

    def _started_queue(self) -> queue.PriorityQueue:
        with self._lock:
            if self._tasks is None:
                self._tasks = queue.PriorityQueue()
                threading.Thread(target=self._serve, args=(self._tasks,), name="specviz-model", daemon=True).start()
                if not self._watching_forks:
                    os.register_at_fork(after_in_child=self._forget_in_child)
                    self._watching_forks = True
            return self._tasks

    @staticmethod
    def _serve(tasks: queue.PriorityQueue) -> None:
        while True:
            *_, future, job, function, args, kwargs = tasks.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = _under(job, function, *args, **kwargs)
            except BaseException as error:  # handed to whoever waits on the future
                future.set_exception(error)
            else:
                future.set_result(result)

    def _forget_in_child(self) -> None:
        """Right after a fork, in the child: the parent's thread does not exist here (a submit would wait forever),
        and the parent's lock may have been held at the fork."""
        self._tasks, self._lock = None, threading.Lock()


def _under(job: Job | None, function: Callable[..., T], *args, **kwargs) -> T:
    with jobs.running(job):
        return function(*args, **kwargs)


MODEL_THREAD = ModelThread()  # the app's one model thread, started by the first call


def call(function: Callable[..., T], *args, job: Job | None = None, **kwargs) -> T:
    """Run function(*args, **kwargs) on the model thread and return its result (or raise its exception)."""
    return MODEL_THREAD.submit(function, *args, job=job, **kwargs).result()


def step(iterator: Iterator[T], job: Job | None = None) -> T | None:
    """The iterator's next item, produced on the model thread; None when it is exhausted."""
    item = call(next, iterator, _DONE, job=job)
    return None if item is _DONE else item


class Ahead:
    """Runs an iterator on the model thread ahead of its reader, one item per task, and keeps only the newest.

    The reader (a streaming callback) takes whatever is newest when it is ready to draw, so drawing and sending
    never hold up the model; items it was too slow for are skipped. Each item is queued as its own task, so runs
    of different sessions interleave item by item. close() stops the run after the item in flight; cancelling
    the job stops it within one model forward (the item in flight raises job.Cancelled).
    """

    def __init__(self, iterator: Iterator, snapshot: Callable = lambda item: item, job: Job | None = None):
        self._iterator, self._snapshot, self._job = iterator, snapshot, job
        self._changed = threading.Condition()
        self._newest, self._count, self._finished, self._stopped = None, 0, False, False
        self._error: BaseException | None = None
        MODEL_THREAD.submit(self._advance, job=job)

    def _advance(self) -> None:
        """On the model thread: produce one item, publish a snapshot of it, and queue the next."""
        if self._stopped or (self._job is not None and self._job.cancelled):
            self._iterator.close()
            with self._changed:
                self._finished = True
                self._changed.notify_all()
            return
        try:
            item = next(self._iterator, _DONE)
            snapshot = None if item is _DONE else self._snapshot(item)
        except BaseException as error:  # handed to the reader, which raises it
            item, snapshot = _DONE, None
            self._error = error
        with self._changed:
            if item is _DONE:
                self._finished = True
            else:
                self._newest, self._count = snapshot, self._count + 1
            self._changed.notify_all()
        if not self._finished:
            MODEL_THREAD.submit(self._advance, job=self._job)

    def newer_than(self, seen: int, timeout: float | None = None) -> tuple[int, object, bool] | None:
        """Wait until more than `seen` items exist or the run ended: (count, newest snapshot, finished); None if
        `timeout` seconds passed first."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._count > seen or self._finished, timeout):
                return None
            if self._error is not None:
                raise self._error
            return self._count, self._newest, self._finished

    def newest(self):
        """The newest snapshot produced so far (None before the first), whatever ended the run."""
        with self._changed:
            return self._newest

    def close(self) -> None:
        self._stopped = True
