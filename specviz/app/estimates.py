"""A lab action that takes more than a few seconds says so at once, with an estimate, then shows its result.

The estimate is how long the same action last took on this server, or, before its first run, what it took on a
two-core CPU (FIRST_GUESS_S; a fresh server also loads the model first). Actions that stream their own progress
(the Losslessness tab's distribution check: "run 40 of 200 · about 30 s left") word it themselves with remaining().
"""

from __future__ import annotations

import functools
import time

import gradio as gr

# Seconds each action took on a two-core AMD EPYC (docs/results.md, "Lab actions"), the model already loaded unless said.
FIRST_GUESS_S = {"greedy check": 15.0, "measure this machine": 25.0, "rules at a position": 10.0,
                 "rules over the run": 15.0}
_last_s: dict[str, float] = {}  # action -> seconds its last run took on this server (written by announced alone)


def estimate_line(action: str) -> str:
    """'*Working: about 25 s (on a two-core CPU; the first run also loads the model)…*' or the last run's time."""
    if action in _last_s:
        return f"*Working: about {max(_last_s[action], 1):.0f} s (its last run on this server)…*"
    return f"*Working: about {FIRST_GUESS_S[action]:.0f} s on a two-core CPU (the first run also loads the model)…*"


def announced(action: str, outputs: int = 1, text_at: int = 0):
    """A decorator for a lab callback whose outputs are `outputs` components, the `text_at`-th of them Markdown: it
    first sends estimate_line(action) there (the other outputs unchanged), then the callback's result, or, where the
    callback refuses (gr.Error), the refusal in place of the estimate."""
    def decorate(function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            first = [gr.skip()] * outputs
            first[text_at] = estimate_line(action)
            yield first[0] if outputs == 1 else tuple(first)
            started = time.perf_counter()
            try:
                result = function(*args, **kwargs)
            except gr.Error as error:  # the refusal replaces "Working…" on the page, and its toast says it too
                first[text_at] = f"**Not run**: {error.message}"
                yield first[0] if outputs == 1 else tuple(first)
                raise
            _last_s[action] = time.perf_counter() - started
            yield result
        return run
    return decorate


def remaining(done: int, total: int, elapsed_s: float) -> str:
    """Progress of a streamed action: 'run 40 of 200 · 8 s so far · about 32 s left'.

    >>> remaining(40, 200, 8.0), remaining(200, 200, 41.2)
    ('run 40 of 200 · 8 s so far · about 32 s left', 'run 200 of 200 · 41 s')
    """
    if done >= total:
        return f"run {done} of {total} · {elapsed_s:.0f} s"
    left = elapsed_s / max(done, 1) * (total - done)
    return f"run {done} of {total} · {elapsed_s:.0f} s so far · about {left:.0f} s left"
