"""The run in progress: the stage it is in (for progress lines) and its cancel flag.

The app and the CLI open a Job around model work (`with job.running(Job(...)): ...`). Long steps name their
stage (`job.stage("Converting the offline GGUF to safetensors")`). The engine and every model forward call
`job.check()`, which raises Cancelled once the job was cancelled, so a stopped run ends within one forward.
Outside a Job, `stage` and `check` do nothing.

The current job lives in a ContextVar, so each thread (the app's model thread runs one task at a time, for
any session) sees the job of the task it is running, and nothing is shared between tasks.

>>> j = Job()
>>> with running(j):
...     stage("Loading weights")
...     j.cancel()
...     check()
Traceback (most recent call last):
...
specviz.job.Cancelled: stopped while: Loading weights
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class Cancelled(Exception):
    """The run was stopped by its user: Stop, Reset, a new Run, a closed tab, or Ctrl-C."""


class Job:
    """One run's cancel flag and current stage. Any thread may cancel it or read its stage."""

    def __init__(self, on_stage: Callable[[str], None] | None = None, ahead: bool = False):
        self._cancelled = threading.Event()
        self.on_stage = on_stage  # told each new stage's name (the CLI prints it on stderr)
        self.ahead = ahead  # the app's model thread serves this job's tasks before others' (the teacher's lane)
        self.stage_name = ""
        self.stage_started = time.perf_counter()

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def enter(self, name: str) -> None:
        self.stage_name, self.stage_started = name, time.perf_counter()
        if self.on_stage is not None:
            self.on_stage(name)

    def progress(self) -> tuple[str, float]:
        """The current stage's name ("" before the first) and seconds spent in it."""
        return self.stage_name, time.perf_counter() - self.stage_started


_CURRENT: ContextVar[Job | None] = ContextVar("specviz_job", default=None)


@contextmanager
def running(job: Job | None) -> Iterator[Job | None]:
    """Make `job` the current one in this context (None: no job)."""
    token = _CURRENT.set(job)
    try:
        yield job
    finally:
        _CURRENT.reset(token)


def check() -> None:
    """Raise Cancelled if the current job was cancelled. Called between model forwards: it costs a lookup."""
    job = _CURRENT.get()
    if job is not None and job.cancelled:
        raise Cancelled(f"stopped while: {job.stage_name}" if job.stage_name else "stopped")


def stage(name: str) -> None:
    """Name the step the current job starts now (checked for cancellation first)."""
    check()
    job = _CURRENT.get()
    if job is not None:
        job.enter(name)
