"""A class pressing Run within one minute, seen from each student's side (gradio_client sessions).

Each student's session opens first (as the page would), then presses Run at its own moment in the window. One
watcher thread follows every run in flight, every WATCH_S:
- when the session first learns where it stands: Gradio's first queue message with its place (what the
  browser's status line shows as "queue: 5/28"), or the run starting if it never waited;
- when the first row arrives (the rows view holds its first row), not when the run ends;
- at the end, whether the trace and text it got are its own (loadtest.is_own).
With a teacher key, the teacher's session unlocks the teacher's lane before the burst and, once the last student
has pressed Run, presses Step and then Run there, timed the same way.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from specviz.app.request import RunRequest

WATCH_S = 0.02  # how often the watcher looks at every run in flight
ROW = '<div class="sv-row">'  # one row of the rows view (render.rows_html)


@dataclass
class Press:
    """One press of Run (or Step) and what its session saw, in seconds since the press."""

    session: str
    prompt: str
    seed: int
    pressed: float = 0.0  # time.monotonic() of the press
    place_s: float | None = None  # first queue place seen (or the start, for a run that never waited)
    place: tuple | None = None  # (place in the queue, people waiting, Gradio's estimate s) at that moment
    first_row_s: float | None = None
    end_s: float | None = None
    own: bool | None = None  # the trace, text and rows are this press's own
    error: str | None = None
    seen_outputs: int = field(default=0, repr=False)


def press_times(sessions: int, window_s: float, seed: int = 0) -> list[float]:
    """When each session presses Run, in seconds from the start: uniform over the window (seeded), the first at 0;
    all at 0 when the window is 0.

    >>> press_times(3, 0.0), [round(at, 1) for at in press_times(4, 60.0)]
    ([0.0, 0.0, 0.0], [0.0, 25.2, 45.5, 50.7])
    """
    if window_s <= 0:
        return [0.0] * sessions
    rng = random.Random(seed)
    return sorted([0.0] + [rng.uniform(0, window_s) for _ in range(sessions - 1)])


class Watcher:
    """One thread that follows every submitted job until it ends (cheaper than a polling thread per session)."""

    def __init__(self):
        self._jobs: list[tuple[object, Press]] = []
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread = threading.Thread(target=self._watch, name="loadtest-watcher", daemon=True)
        self._thread.start()

    def follow(self, job, press: Press) -> None:
        with self._lock:
            self._jobs.append((job, press))

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            with self._lock:
                jobs = [(job, press) for job, press in self._jobs if press.end_s is None]
            for job, press in jobs:
                look(job, press, now)
            self._stop.wait(WATCH_S)


def look(job, press: Press, now: float) -> None:
    """Note what `job` shows now: its first queue place (timed by when the message arrived) and its first row."""
    status = job.status()
    code = status.code.name
    knows_where_it_stands = (code == "IN_QUEUE" and status.rank is not None) or code in ("PROCESSING", "ITERATING")
    if press.place_s is None and knows_where_it_stands:
        arrived = status.time.timestamp() - (time.time() - now) if status.time else now  # that message's arrival
        press.place_s = max(0.0, arrived - press.pressed)
        press.place = (status.rank + 1, status.queue_size, status.eta) if code == "IN_QUEUE" else (0, 0, None)
    if press.first_row_s is None:
        outputs = job.outputs()
        for output in outputs[press.seen_outputs:]:
            if isinstance(output, (list, tuple)) and output and ROW in str(output[0]):
                press.first_row_s = now - press.pressed
                if press.place_s is None:  # the run started and streamed between two looks
                    press.place_s, press.place = press.first_row_s, (0, 0, None)
                break
        press.seen_outputs = len(outputs)


def submit_and_wait(client, api_name: str, request: RunRequest, press: Press, watcher: Watcher, own_check) -> Press:
    """Press (submit), let the watcher time it, wait for the end, and check the result is this press's own."""
    press.pressed = time.monotonic()
    try:
        job = client.submit(*request.api_args(), api_name=api_name)
        watcher.follow(job, press)
        result = job.result()
        look(job, press, time.monotonic())  # a row the watcher had no time to see
        press.own = own_check(result, press.prompt, press.seed)
    except Exception as error:  # a refused or failed run: counted, not raised
        press.error = f"{press.session}: {type(error).__name__}: {str(error)[:200]}"
    press.end_s = time.monotonic() - press.pressed
    return press


def class_burst(clients: list, request_for, window_s: float, runs: int, own_check, teacher=None) -> dict:
    """Every client presses Run `runs` times in a row, the first press at its moment of the window. `request_for(
    who, seed)` gives a press's RunRequest; `teacher`: (client, request) of an unlocked teacher's session, which
    presses Step and then Run on the teacher's lane once the last student has pressed. Returns the presses."""
    presses, teacher_presses, lock = [], {}, threading.Lock()
    watcher, start = Watcher(), time.monotonic()
    moments = press_times(len(clients), window_s)

    def student(number: int) -> None:
        time.sleep(max(0.0, start + moments[number] - time.monotonic()))
        for run in range(runs):
            request = request_for(f"Student {number}, run {run}", 1000 * number + run)
            press = Press(f"session {number} run {run}", request.prompt, request.seed)
            submit_and_wait(clients[number], "/run", request, press, watcher, own_check)
            with lock:
                presses.append(press)

    def teacher_presses_step_then_run() -> None:
        client, request = teacher
        time.sleep(max(0.0, start + moments[-1] + 0.5 - time.monotonic()))
        for kind in ("step", "run"):
            press = Press(f"teacher {kind}", request.prompt, request.seed)
            check = own_check if kind == "run" else (lambda *_: True)  # a Step's trace is one round: not compared
            teacher_presses[kind] = submit_and_wait(client, f"/teacher_{kind}", request, press, watcher, check)

    threads = [threading.Thread(target=student, args=(number,)) for number in range(len(clients))]
    if teacher is not None:
        threads.append(threading.Thread(target=teacher_presses_step_then_run))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    watcher.close()
    return {"presses": presses, "teacher": teacher_presses}
