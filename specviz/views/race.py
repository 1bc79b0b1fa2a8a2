"""The race: plain and speculative decoding of the same prompt, side by side, each text appearing at its measured pace.

A class sees the measured speedup happen. Each lane replays its run's own timings: the speculative lane shows each
round's tokens together at the moment that round ended (its draft, verify and recording), the plain lane each token
when it was sampled (Baseline.token_ms; evenly over its wall time in a trace that did not keep them). A clock runs
under each lane and stops at its finish, with its tokens per second; the last line is the measured speedup and its
interval. Pure CSS: a token is hidden until its `animation-delay`, a clock is a counter animated to its lane's time,
and "Race again" flips a checkbox that switches every animation to a twin, which restarts them. No script runs.

    race = lanes(trace)         # None without a plain run
    race_html(trace)            # the HTML under the rows; "" without a plain run
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from specviz.analysis.metrics import Metrics, summarize
from specviz.analysis.speedup import recording_ms, run_wall_ms
from specviz.trace import Trace

LONGEST_S = 12.0  # a race whose slower lane took longer is played faster, both lanes alike, and says so


@dataclass(frozen=True)
class Lane:
    """One decoder's text as it appeared: each piece of text and the ms after the start when it appeared."""

    name: str
    pieces: list[tuple[str, float]]
    total_ms: float
    tokens: int
    timed: bool  # False: the token times were not kept, and the pieces are spread evenly over the total

    @property
    def tokens_per_s(self) -> float:
        return 1e3 * self.tokens / self.total_ms if self.total_ms > 0 else 0.0


def lanes(trace: Trace | None) -> tuple[Lane, Lane] | None:
    """(speculative, plain) lanes of a run compared with plain decoding, once it has ended (or been stopped); None
    without a plain run, and while the run goes on (its plain run is then only as long as its rounds)."""
    if (trace is None or trace.baseline is None or not trace.rounds or not trace.baseline.token_ids
            or not trace.stop_reason):
        return None
    pieces, elapsed = [], 0.0
    for round_, recorded in zip(trace.rounds, recording_ms(trace)):  # a round's tokens all appear when it ends
        elapsed += round_.draft_ms + round_.verify_ms + recorded
        pieces.extend((token.text, elapsed) for token in round_.emitted)
    speculative = Lane("Speculative decoding", pieces, run_wall_ms(trace), len(trace.token_ids), True)
    return speculative, _plain_lane(trace)


def _plain_lane(trace: Trace) -> Lane:
    baseline = trace.baseline
    count = len(baseline.token_ids)
    if baseline.token_texts and len(baseline.token_texts) == count:
        texts = baseline.token_texts
    elif baseline.token_ids == trace.token_ids:  # greedy: the same tokens as the rounds emitted
        texts = [token.text for round_ in trace.rounds for token in round_.emitted]
    else:  # an older trace of a sampled run: its text, word by word, over its tokens
        words = baseline.text.split(" ")
        texts = [" ".join(words[len(words) * i // count:len(words) * (i + 1) // count]) + " " for i in range(count)]
    timed = len(baseline.token_ms) == count
    if timed:
        times, elapsed = [], 0.0
        for ms in baseline.token_ms:
            elapsed += ms
            times.append(elapsed)
    else:
        times = [baseline.wall_ms * (index + 1) / count for index in range(count)]
    return Lane("Plain decoding", list(zip(texts, times)), baseline.wall_ms, count, timed)


def race_html(trace: Trace | None, metrics: Metrics | None = None) -> str:
    """The race as HTML (escaped text, CSS animations from assets/specviz.css); "" without a plain run."""
    both = lanes(trace)
    if both is None:
        return ""
    metrics = metrics or summarize(trace)
    slowest_s = max(lane.total_ms for lane in both) / 1e3
    speed = max(1.0, slowest_s / LONGEST_S)
    played = "at the pace they ran" if speed == 1.0 else f"at {speed:.1f} times the pace they ran, both alike"
    untimed = "" if both[1].timed else " (the plain run's token times were not kept: its tokens come at its average pace)"
    head = (f'<div class="sv-race-head"><b>The race</b>: the same prompt, both decoders, played {played}{untimed}. '
            '<label class="sv-race-again"><input type="checkbox" class="sv-race-flip"/>Race again</label></div>')
    body = "".join(_lane_html(lane, speed, "sv-lane-spec" if index == 0 else "sv-lane-plain")
                   for index, lane in enumerate(both))
    finish_s = slowest_s / speed
    return (f'<div class="sv-race">{head}<div class="sv-race-lanes">{body}</div>'
            f'<div class="sv-race-result sv-race-show" style="animation-delay:{finish_s:.3f}s">'
            f'{html.escape(_result(both, metrics))}</div></div>')


def _lane_html(lane: Lane, speed: float, kind: str) -> str:
    tokens = "".join(f'<span class="sv-race-tok sv-race-show" style="animation-delay:{ms / 1e3 / speed:.3f}s">'
                     f"{html.escape(text)}</span>" for text, ms in lane.pieces)
    seconds = lane.total_ms / 1e3
    clock = (f'<span class="sv-race-clock" style="--sv-race-end:{round(lane.total_ms)};'
             f'animation-duration:{seconds / speed:.3f}s"></span>')
    finish = (f'<span class="sv-race-finish sv-race-show" style="animation-delay:{seconds / speed:.3f}s">'
              f"done: {lane.tokens} tokens in {seconds:.1f} s, {lane.tokens_per_s:.1f} tokens/s</span>")
    return (f'<div class="sv-race-lane {kind}"><div class="sv-race-name">{lane.name} {clock} {finish}</div>'
            f'<div class="sv-race-text">{tokens}</div></div>')


def _result(both: tuple[Lane, Lane], metrics: Metrics) -> str:
    """The finish in words: the measured speedup and its interval, as every surface gives it."""
    speculative, plain = both
    interval = ("" if metrics.speedup_low is None else
                f" ({metrics.speedup_low:.2f}–{metrics.speedup_high:.2f})")
    speedup = metrics.speedup_measured or 0.0
    first = speculative if speculative.total_ms <= plain.total_ms else plain
    return (f"{first.name} finished first. Speculative decoding made {speculative.tokens_per_s:.1f} tokens/s against "
            f"plain decoding's {plain.tokens_per_s:.1f}: the measured speedup, {speedup:.2f}×{interval}.")
