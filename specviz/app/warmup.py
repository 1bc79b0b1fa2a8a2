"""The default model, warmed in the background as the server starts, so the first visitor does not wait for it.

A Space's disk is ephemeral: without a warm-up, the first Run after every start would download, convert and time
the default model while its visitor watched (docs/hosting.md, "A Space that is ready when the first visitor
arrives"). With SPACE_ID set (a Space) or SPECVIZ_WARM_UP=1, app.py starts `WARM_UP` before the page is even built:
it builds and calibrates the pipeline a default Run asks for, on the model thread (worker.py), under a Job of its
own whose stages the page shows.

A Run pressed meanwhile queues on the same thread, behind the warm-up, so it finds the weights in the cache
(models/cache.py) and the forward already timed (calibration.calibrate times a target once): it watches the warm-up
finish instead of starting a second copy. Its status line says so (waiting_stage).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future

import gradio as gr

from specviz.app import worker
from specviz.config import DecodeConfig
from specviz.decoding.calibration import calibrated_pipeline
from specviz.job import Job


def wanted(environ=os.environ) -> bool:
    """Warm up on a Space, or where SPECVIZ_WARM_UP asks for it (SPECVIZ_WARM_UP=0 turns it off on a Space)."""
    asked = environ.get("SPECVIZ_WARM_UP", "").strip().lower()
    if asked in ("0", "false", "no"):
        return False
    return asked in ("1", "true", "yes") or bool(environ.get("SPACE_ID"))


class WarmUp:
    """One background warm-up of one configuration, and what the page says of it."""

    def __init__(self):
        self.job: Job | None = None
        self.future: Future | None = None
        self.started = self.seconds = 0.0
        self.target = ""

    def start(self, config: DecodeConfig) -> None:
        self.job, self.started, self.target = Job(), time.perf_counter(), config.target
        self.future = worker.MODEL_THREAD.submit(calibrated_pipeline, config, job=self.job)
        self.future.add_done_callback(self._finished)

    def _finished(self, future: Future) -> None:
        self.seconds = time.perf_counter() - self.started

    def state(self) -> str:
        """"off" (never started), "warming", "ready" or "failed"."""
        if self.future is None:
            return "off"
        if not self.future.done():
            return "warming"
        return "failed" if self.future.exception() is not None else "ready"

    def waiting_stage(self) -> str | None:
        """What a Run queued behind the warm-up shows as its stage; None when no warm-up is running."""
        if self.state() != "warming":
            return None
        stage, _ = self.job.progress()
        return f"Warming up the default model (started with the server): {stage or 'starting'}"

    def note(self) -> str:
        """The line under the page's header: warming (with the stage), ready, or failed; "" when off."""
        state = self.state()
        if state == "warming":
            return (f"*{self.waiting_stage()}, {time.perf_counter() - self.started:.0f} s so far. A Run pressed "
                    "now starts as soon as it is ready.*")
        if state == "ready":
            return f"*The default model was warmed up when the server started ({self.seconds:.0f} s): Run starts at once.*"
        if state == "failed":
            return (f"*Warming up the default model failed ({str(self.future.exception())[:160]}); a Run loads it "
                    "itself.*")
        return ""


WARM_UP = WarmUp()  # the server's one warm-up; app.py starts it


def warm_up_note(demo: gr.Blocks) -> None:
    """A line under the header that follows the warm-up: refreshed each second while it runs (outside the queue,
    so a full queue does not hold it), hidden where there is none."""
    note = gr.Markdown(visible=False, elem_id="sv-warm-up")
    timer = gr.Timer(1.0, active=False)

    def refresh():
        text = WARM_UP.note()
        return gr.update(value=text, visible=bool(text)), gr.Timer(active=WARM_UP.state() == "warming")

    demo.load(refresh, None, [note, timer], queue=False)
    timer.tick(refresh, None, [note, timer], queue=False)
