"""A live-tab run's job and its progress: what the page says while models load or the first round runs.

Model work runs on the model thread under the session's Job (specviz.job): a new Run, Step, Stop or Reset
cancels the previous one. The stage names come from the loading code itself (specviz.job.stage: downloading,
converting, loading, timing kernels, building the 4-bit copy); this module words them for the page and yields
them every STATUS_INTERVAL_S while it waits, so a Gradio cancel can also close the waiting generator.
"""

from __future__ import annotations

import time
from concurrent.futures import TimeoutError as FutureTimeout

import gradio as gr

from specviz.app import worker
from specviz.app.callbacks import pipeline_error
from specviz.app.views import LiveView
from specviz.app.warmup import WARM_UP
from specviz.config import DecodeConfig
from specviz.decoding import comparison
from specviz.decoding.calibration import calibrated_pipeline
from specviz.job import Cancelled, Job
from specviz.trace import USER_STOP, Trace
from specviz.words import count

STATUS_INTERVAL_S = 0.25  # while loading (or a slow round), say what is happening this often

FIRST_ROUND = "Encoding the prompt and decoding the first round"
QUEUED = "Waiting for the model thread: another run is using it"
ENDED_BEFORE_STOP = "**Stop came as the run ended**: it is shown whole"


def queue_shown(status_line) -> dict:
    """How a Run or Step that waits in Gradio's queue shows it: Gradio's own status tracker, "minimal" and on the
    status line beside Run only (keyword arguments for the event listener). While the event waits, the line's corner
    reads e.g. "queue: 5/28 | 3.1/40.2s": its place among the waiting, then the seconds waited and Gradio's estimate
    of when the run will be done (from the runs it has finished). The tracker hides once the callback's first
    update arrives, and this module's lines take over (QUEUE_LINE_CSS lays it out). On every output ("full") it would
    cover the rows while they stream and mark each output "Error" on a refusal; hidden, a waiting visitor would
    see nothing at all."""
    return {"show_progress": "minimal", "show_progress_on": status_line}


# For the status line that queue_shown picks (app.py adds it to the page's CSS). On a Markdown, Gradio draws the status
# tracker in a box 0 px tall ("center" variant, and no spinner in "minimal"), which clips "queue: 5/28 | 3.1/40.2s"
# away: these rules give it a line of its own above the status text while the Run waits (the box is empty,
# and no taller, at any other time). They also hide the tracker's "Error" mark and Clear button after a refusal:
# the refusal's toast already says it (callbacks.quiet_refusals).
QUEUE_LINE_CSS = """
#sv-status .wrap.minimal { position: static !important; overflow: visible; padding: 0; align-items: flex-start; }
#sv-status .wrap.minimal .progress-text { position: static; transform: none; padding: 0; }
#sv-status .error, #sv-status .clear-status { display: none; }
"""


def waiting_line(job: Job, started: float, queued: bool = False) -> str:
    """The stage and how long it has taken, then the total since Run (no emoji: a classroom's fonts may lack it), e.g.
    "**Loading HuggingFaceTB/SmolLM2-135M-Instruct on cpu** · 2.1 s (4.0 s since Run)"."""
    stage, in_stage = job.progress()
    total = time.perf_counter() - started
    if queued:  # behind another session's run, or behind the warm-up of the default model (warmup.py)
        stage, in_stage = WARM_UP.waiting_stage() or QUEUED, total
    if not stage:
        return f"**Starting** · {total:.1f} s"
    return f"**{_plain(stage)}** · {in_stage:.1f} s ({total:.1f} s since Run)"


NOT_RUN = "**Not run**: "  # how the status line opens on a Run refused in words


def not_run_line(error: gr.Error) -> str:
    """A refusal (bad settings, a model not installed or unreachable) or a failure, as the status line keeps it:
    "**Not run**: gamma must be a whole number from 1 to 16, got 0." """
    opening = "**Failed**: " if error.print_exception else NOT_RUN  # a refusal is quiet (callbacks.Refusal); a bug is not
    return f"{opening}{_plain(str(error.message))}"


def decoding_line(trace: Trace, started: float) -> str:
    """While rounds stream in, e.g. "**Round 7** · 28 tokens · 3.1 s since Run" ("1 token" after one)."""
    return (f"**Round {len(trace.rounds)}** · {count(len(trace.token_ids), 'token')} · "
            f"{time.perf_counter() - started:.1f} s since Run · Stop keeps what is decoded")


def done_line(trace: Trace, started: float) -> str:
    return (f"**Done**: {count(len(trace.token_ids), 'token')} in {count(len(trace.rounds), 'round')} · "
            f"{time.perf_counter() - started:.1f} s since Run")


def stopped_line(trace: Trace) -> str:
    return (f"**Stopped by you after {count(len(trace.rounds), 'round')}** ({count(len(trace.token_ids), 'token')}): "
            "everything decoded so far is shown")


def stopped_early_line(previous: Trace | None) -> str:
    """Stop before the first round: nothing new to show; the page keeps the previous run, if there is one."""
    return ("**Stopped by you before the first round**: nothing was decoded"
            + ("; the page still shows the previous run" if previous is not None and previous.rounds else ""))


def step_line(trace: Trace, finished: bool) -> str:
    if finished:
        return (f"**Stopped by you after {count(len(trace.rounds), 'round')}**" if trace.stop_reason == USER_STOP else
                f"**Done**: {count(len(trace.token_ids), 'token')} in {count(len(trace.rounds), 'round')}")
    return f"**Round {len(trace.rounds)}** · {count(len(trace.token_ids), 'token')} · Step for the next round"


def _plain(text: str) -> str:
    """Stage names hold model ids (any characters): shown literally in Markdown."""
    return "".join("\\" + char if char in "\\`*_[]()|~!<>#" else char for char in text)


class JobSlot:
    """A browser session's current run (a gr.State holds one per tab). Starting a Run or a Step cancels the
    session's previous one; Stop and Reset cancel it. Cancelling stops the model within one forward."""

    def __init__(self):
        self.job: Job | None = None
        self.cleared: Job | None = None  # the job Reset ended: its views must not come back after the cleared page
        self.ahead = False  # the teacher's lane sets it for its next job alone: the model thread serves that one first
        # A Run or Step waits in the queue before its job starts; a Stop pressed meanwhile must stop it too. The page
        # counts its presses as they happen (`pressed`, not queued) and Stop notes the count it answered.
        self.presses = self.stopped_at_press = 0

    def pressed(self) -> None:
        """A Run or Step was pressed on the page: its job will start when the queue reaches it."""
        self.presses += 1

    def start(self) -> Job:
        self.cancel()
        self.job, self.ahead = Job(ahead=self.ahead), False
        if 0 < self.presses <= self.stopped_at_press:  # Stop came after this press, before its job started
            self.job.cancel()
        return self.job

    def stop(self) -> None:
        """Stop: the job running, and any pressed since that has not started yet."""
        self.stopped_at_press = self.presses
        self.cancel()

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def clear(self) -> None:
        """Reset: cancel the current job, and have its callback end without showing what it had (Stop shows it)."""
        self.cleared = self.job
        self.cancel()

    def was_cleared(self, job: Job) -> bool:
        return job is self.cleared

    def __deepcopy__(self, memo) -> JobSlot:  # gr.State deep-copies its initial value for every new session
        return JobSlot()


def loaded(config: DecodeConfig, job: Job, started: float, extra: tuple = (), warm: bool = False):
    """The pipeline, built and calibrated on the model thread while this reports each stage; gr.Error on failure.
    warm: also run each path once first (comparison.warm_up, before a timed comparison), in the same model-thread task:
    a run's first row then waits behind one task of the others', not two."""
    try:
        return (yield from waiting(worker.MODEL_THREAD.submit(_ready, config, warm, job=job), job, started, extra))
    except (Cancelled, gr.Error):
        raise
    except Exception as error:
        raise pipeline_error(error) from error


def _ready(config: DecodeConfig, warm: bool):
    pipeline = calibrated_pipeline(config)
    if warm:  # a fresh server's first compared run would otherwise pay set-up costs in one of the two runs
        comparison.warm_up(pipeline, config)
    return pipeline


def waiting(future, job: Job, started: float, extra: tuple = ()):
    """Wait for a model-thread task, yielding a status update every STATUS_INTERVAL_S; return its result.
    `extra`: what the callback's outputs after the live views get meanwhile (Step's session: gr.skip())."""
    while True:
        if job.cancelled:  # Stop while loading: answered now; a load in C goes on, and what it loads stays cached
            raise Cancelled("stopped while loading")
        try:
            return future.result(timeout=STATUS_INTERVAL_S)
        except FutureTimeout:
            yield *LiveView(status=waiting_line(job, started, queued=not future.running())).values(), *extra
