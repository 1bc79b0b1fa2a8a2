"""The speedup, told straight: one measured speedup with its interval, the prediction beside it, and the waterfall
between them.

    measured  = this run's tokens/s ÷ a plain run's tokens/s     (same prompt, target, backend, settings, process,
                                                                  the two timed in turn: decoding/comparison.py)
    predicted = a plain token's ms ÷ this run's predicted ms per token, from α, c and v(k) and this run's own forwards

Every surface (the live tab, Round anatomy, the gallery, the HTML export, the CLI and its --json, the benchmark)
reads these from here. Both are ratios of milliseconds per generated token, so the waterfall walks from one to the
other in this run's measured milliseconds per token, and every part of the gap has a name. c and v(k) come from the
run itself: its mean draft forward and its mean verify forward at each width, over the plain run's mean one-token
forward timed in the same seconds (means, not medians: a busy moment is a real cost, and it falls unevenly, harder
on a batched forward's two threads than on a one-token step). With the plain run timed token by token beside the rounds:

    predicted ms/token = [one step × Σ (k·c + v(k+1)) + reading the prompt + a mean round's time outside its
                          forwards × rounds] ÷ Σ E(α, k)
    + tokens per round as they fell      (the run's tokens against E(α, k): streaks, luck, the stop)
    + drafting beyond c                  (the drafts' measured time against k·c steps)
    + verifying beyond v(k)              (the verify forwards against v(k+1) steps, round 1 left out)
    + outside the forwards beyond a mean round's
    = this run's ms/token,

and the prediction is in units of the plain run's ms per token as measured (its prompt's reading and sampling in it,
as this run's are in the prediction). What remains between prediction and measurement is then chance in the tokens
and the spread of the times about their means. A trace without such a plain run predicts from the forwards alone,
one step × Σ (k·c + v(k+1)) ÷ Σ E(α, k) against one step, and reading the prompt and the time outside the forwards
are parts of its waterfall.

>>> from specviz.trace import Baseline, Round, Trace
>>> rounds = [Round(i, 2, 2, [], draft_ms=0.0, verify_ms=10.0, draft_forwards=0, verify_forward_ms=10.0)
...           for i in range(4)]
>>> trace = Trace({"gamma": 2}, "p", 1, "t", "d", "cpu", "float32", rounds, token_ids=list(range(12)), wall_ms=40.0,
...               target_forward_ms=[10.0, 10.0, 10.0], baseline=Baseline("", list(range(12)), 120.0, 10.0))
>>> round(measured_speedup(trace), 2), waterfall(trace).measured_ms  # 12 tokens in 4 rounds of one step each
(3.0, 3.3333333333333335)
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from specviz.analysis.tree_metrics import round_depth
from specviz.core import theory
from specviz.trace import Trace

TOKENS_AS_FELL, DRAFTING, VERIFYING, PROMPT, OUTSIDE, OUTSIDE_SPREAD = (
    "tokens per round as they fell", "drafting beyond c", "verifying beyond v(k)", "reading the prompt",
    "outside the forwards", "outside the forwards beyond a mean round's")
PART_NOTES = {  # what each part of the waterfall counts, as the page says it
    TOKENS_AS_FELL: "the tokens the rounds gave against the E(α, k) the prediction expects of them",
    DRAFTING: "the drafts' measured time against k·c target steps",
    VERIFYING: "the verify forwards' measured time against v(k + 1) target steps (round 1 left out)",
    PROMPT: "round 1's verify forward beyond v(k + 1) steps: it also reads the prompt",
    OUTSIDE: "sampling, acceptance tests, cache bookkeeping and recording the rounds for the views",
    OUTSIDE_SPREAD: "the rounds' time outside their forwards (sampling, tests, bookkeeping, recording) beyond the "
                    "mean round's, which the prediction counts",
}


WARM_UP_ROUNDS = 2  # round 1 also encodes the prompt; round 2 still pays first-call costs (allocations, caches)


C_BASES = {  # where step_costs took c's two steps from, as the page words it
    "baseline": "both from this run: its mean draft forward, and the mean one-token forward of the plain run "
                "timed in turn with it",
    "calibrated": "both timed once per model pair on this device, alternating forwards (no plain run to time them in)",
    "calibrated target": "draft step: this run's median; target step: timed once per model on this device",
    "verify": "draft step: this run's median; target step: this run's median verify forward (overstates it on a CPU)",
}


def step_costs(trace: Trace) -> tuple[float, float, str]:
    """(draft step ms, target step ms, basis) for c: DEFINITIONS["draft_step"] and ["target_step"]; basis is a
    key of C_BASES.

    A run timed in turn with plain decoding (decoding/comparison.py) gives both from its own forwards: the draft step
    is the mean draft time per forward, round 1 left out (per drafted token for prompt lookup, which makes no
    forward), and the target step the plain run's mean one-token forward, timed in the same seconds. A machine
    that has since changed then cannot tilt the prediction. Without a plain run, the steps timed once per model pair
    (calibration.calibrate: Trace.draft_step_ms, Trace.target_forward_ms[0]); else the median verify forward
    (k + 1 tokens: it overstates a step on a CPU).
    """
    if trace.baseline is not None and trace.baseline.step_ms > 0:
        return _draft_step_ms(trace.rounds[1:] or trace.rounds, statistics.fmean), trace.baseline.step_ms, "baseline"
    draft_step_ms = _draft_step_ms(_steady(trace), statistics.median)
    if trace.draft_step_ms > 0 and trace.target_forward_ms:
        return trace.draft_step_ms, trace.target_forward_ms[0], "calibrated"
    if trace.target_forward_ms:
        return draft_step_ms, trace.target_forward_ms[0], "calibrated target"
    verify = [r.verify_ms for r in _steady(trace)]
    return draft_step_ms, statistics.median(verify) if verify else 0.0, "verify"


def _steady(trace: Trace) -> list:
    """The rounds past the warm-up (WARM_UP_ROUNDS), where enough are left; else all but the first."""
    return trace.rounds[WARM_UP_ROUNDS:] if len(trace.rounds) > WARM_UP_ROUNDS + 2 else trace.rounds[1:] or trace.rounds


def _draft_step_ms(rounds: list, average) -> float:
    """The draft time per draft forward over `rounds`, `average`d (per drafted token where drafting ran no forward)."""
    per_forward = [r.draft_ms / r.draft_forwards for r in rounds if r.draft_forwards]
    if per_forward:
        return average(per_forward)
    drafted = sum(r.drafted for r in rounds)
    return sum(r.draft_ms for r in rounds) / drafted if drafted else 0.0


def recording_ms(trace: Trace) -> list[float]:
    """Each round's recording for the views (Round.record_ms), or an even share of Trace.record_ms in a trace that
    did not keep it per round."""
    share = trace.record_ms / len(trace.rounds) if trace.rounds else 0.0
    return [share if r.record_ms is None else r.record_ms for r in trace.rounds]


def run_verify_cost(trace: Trace) -> dict[int, float] | None:
    """v(k) at the widths this run verified (and v(1) = 1), from its own forwards: at each width k, the mean verify
    forward (round 1 left out: it also reads the prompt) over the plain run's mean one-token forward, timed in turn
    with the rounds; None without a plain run, or with no round after the first."""
    if trace.baseline is None or trace.baseline.step_ms <= 0:
        return None
    by_size: dict[int, list[float]] = {}
    for round_ in trace.rounds[1:]:
        by_size.setdefault(round_.drafted + 1, []).append(_verify_forward_ms(round_))
    table = {1: 1.0, **{k: max(statistics.fmean(ms) / trace.baseline.step_ms, 1.0) for k, ms in by_size.items()
                        if k > 1}}
    return table if len(table) >= 2 else None


def estimate_verify_cost(trace: Trace, max_k: int = 17) -> dict[int, float] | None:
    """v(k) for k = 1..max_k from this run's own timings: target forwards over k tokens relative to one.

    A run timed in turn with plain decoding gives v(k) at the widths its rounds verified (run_verify_cost); widths it
    never used are read off those by theory.verify_cost_at. Without a plain run, a calibrated trace
    (Trace.target_forward_ms) gives v(k) from those timings; else a least-squares line through the mean verify time
    at each k seen in at least two rounds (a k seen once is left out: a line through one short final round
    extrapolates from noise). None when nothing gives two sizes.
    """
    table = run_verify_cost(trace)
    if table is not None:
        return {k: max(theory.verify_cost_at(table, k), 1.0) for k in range(1, max_k + 1)}
    by_size: dict[int, list[float]] = {}
    for round_ in trace.rounds[1:]:
        by_size.setdefault(round_.drafted + 1, []).append(_verify_forward_ms(round_))
    measured = trace.target_forward_ms
    if len(measured) >= 2 and measured[0] > 0:
        table = {k: ms / measured[0] for k, ms in enumerate(measured, start=1)}
        return {k: max(theory.verify_cost_at(table, k), 1.0) if k > 1 else 1.0 for k in range(1, max_k + 1)}
    points = {k: sum(v) / len(v) for k, v in by_size.items() if len(v) >= 2}
    if trace.baseline is not None:
        points[1] = trace.baseline.step_ms
    if len(points) < 2:
        return None
    slope, intercept = theory.fit_line(list(points.items()))  # milliseconds against k
    if slope < 0:  # timing noise must not make longer verifies cheaper: the flat line through the mean instead
        slope, intercept = 0.0, sum(points.values()) / len(points)
    one = max(slope + intercept, 1e-6)
    return {k: max(slope * k + intercept, one) / one for k in range(1, max_k + 1)}


def run_wall_ms(trace: Trace) -> float:
    """The speculative run's whole wall time: its rounds from the prompt's first forward to the last token, and the
    recording of each round for the views (the plain run has none: it is a cost of showing the rounds)."""
    return trace.wall_ms + trace.record_ms


def tokens_per_s(trace: Trace) -> float:
    """DEFINITIONS["tokens_per_s"]: generated tokens over run_wall_ms; 0 before any time passed."""
    wall_ms = run_wall_ms(trace)
    return 1e3 * len(trace.token_ids) / wall_ms if wall_ms > 0 else 0.0


def baseline_tokens_per_s(trace: Trace) -> float | None:
    """DEFINITIONS["baseline_tokens_per_s"]: the plain run's tokens over its wall time, prompt read included as in
    tokens_per_s; None without a plain run."""
    baseline = trace.baseline
    if baseline is None or not baseline.token_ids or baseline.wall_ms <= 0:
        return None
    return 1e3 * len(baseline.token_ids) / baseline.wall_ms


def measured_speedup(trace: Trace) -> float | None:
    """THE measured speedup (DEFINITIONS["speedup_measured"]), the one every surface shows: this run's tokens per
    second over a plain run's of the same prompt, target, settings and process. None without a plain run, or
    before this run generated anything."""
    plain = baseline_tokens_per_s(trace)
    return tokens_per_s(trace) / plain if plain and trace.token_ids else None


INTERVAL_LEVEL = 0.95  # the measured speedup's interval: the middle 95% of its resamples
RESAMPLES = 2000
# Other programs kept at least a fifth of a core busy on average: the page says the machine was busy. Measured on a
# 2-core VM (python -m specviz.bench.busy_machine, docs/results.md): 0.01-0.02 cores left alone, 0.7-0.8 with a second
# process spinning, and 0.4 with the page's own Chromium drawing on the same cores, where the rounds' batched forwards
# (two threads) slowed far more than the plain run's one-token steps. The plain tokens' spread alone cannot say it: a
# quiet VM spread them by up to 84%, so where the load cannot be read the page gives the spread and no verdict.
BUSY_CORES = 0.2
FEWEST_PAIRS = 4  # rounds an interval needs: fewer give none, and the page says why


@dataclass(frozen=True)
class SpeedupInterval:
    """Where the measured speedup lies, given this run's timing noise: its INTERVAL_LEVEL interval."""

    low: float
    high: float
    pairs: int  # the rounds paired with the plain tokens decoded right after them


def speedup_interval(trace: Trace) -> SpeedupInterval | None:
    """The measured speedup's interval, from the spread of this run's paired timings; None without a plain run timed
    in turn with the rounds (decoding/comparison.py), or with fewer than four rounds.

    Round r is paired with the plain tokens decoded right after it, on the same cores, so a busy moment slows both.
    Its time in plain tokens, u_r = round ms ÷ those tokens' mean ms, is free of the drift, and the speedup is
    Σ tokens ÷ Σ u_r. Resampling u_r among the rounds that drafted as many tokens (round 1, which reads the prompt,
    alone) keeps each round's tokens as they fell and varies only the timing. The resamples' spread, scaled to the
    measured speedup, is the interval: a quiet machine gives a narrow one, a busy one a wide one.
    """
    import numpy as np

    pairs = _paired_rounds(trace)
    measured = measured_speedup(trace)
    if pairs is None or measured is None:
        return None
    tokens, units, strata = pairs
    total_tokens, point = sum(tokens), sum(tokens) / sum(units)
    generator = np.random.default_rng(0)  # the same trace always gives the same interval
    units_ms, resampled = np.asarray(units), np.zeros(RESAMPLES)
    for members in strata:  # Σ u_r of each resample, stratum by stratum; a stratum of one round stays as it is
        if len(members) < 2:
            resampled += units_ms[members].sum()
        else:
            resampled += units_ms[generator.choice(members, size=(RESAMPLES, len(members)))].sum(axis=1)
    ratios = (total_tokens / resampled) / point
    tail = (1 - INTERVAL_LEVEL) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return SpeedupInterval(float(measured * low), float(measured * high), len(tokens))


def _paired_rounds(trace: Trace) -> tuple[list[int], list[float], list[list[int]]] | None:
    """Each round's tokens, its time in plain tokens (u_r), and the strata to resample within; None where the plain
    run was not decoded in turn with the rounds."""
    baseline, rounds = trace.baseline, trace.rounds
    if (baseline is None or not baseline.after_round or len(baseline.after_round) != len(baseline.token_ms)
            or len(rounds) < FEWEST_PAIRS):
        return None
    block_ms, block_tokens = [0.0] * len(rounds), [0] * len(rounds)
    for ms, index in zip(baseline.token_ms, baseline.after_round):
        if 0 <= index < len(rounds):
            block_ms[index] += ms
            block_tokens[index] += 1
    local = [ms / count if count else None for ms, count in zip(block_ms, block_tokens)]
    for index in [*range(1, len(local)), *range(len(local) - 2, -1, -1)]:  # a round the plain run ended before:
        if local[index] is None:  # its neighbour's plain speed
            local[index] = local[index - 1] if index and local[index - 1] is not None else (
                local[index + 1] if index + 1 < len(local) else None)
    if any(speed is None or speed <= 0 for speed in local):
        return None
    units = [(r.draft_ms + r.verify_ms + recorded) / speed
             for r, recorded, speed in zip(rounds, recording_ms(trace), local)]
    tokens = [len(r.emitted) for r in rounds]
    strata: dict[object, list[int]] = {}
    for index, round_ in enumerate(rounds):
        strata.setdefault("prompt" if index == 0 else round_.drafted, []).append(index)
    return tokens, units, list(strata.values())


def plain_spread(trace: Trace) -> float | None:
    """How much the plain run's tokens varied: the middle 80% of their ms (the first, which reads the prompt, left
    out) over the median; None with fewer than 8 tokens timed."""
    baseline = trace.baseline
    timed = baseline.token_ms[1:] if baseline is not None else []
    if len(timed) < 8:
        return None
    deciles = statistics.quantiles(timed, n=10)
    return (deciles[-1] - deciles[0]) / statistics.median(timed)


def machine_busy(trace: Trace) -> bool | None:
    """Whether the machine was busy while this run was timed: other programs kept BUSY_CORES busy on average; None
    where the load was not read (not Linux, no plain run, an older trace)."""
    if trace.others_busy_cores is None or trace.baseline is None:
        return None
    return trace.others_busy_cores >= BUSY_CORES


@dataclass(frozen=True)
class Waterfall:
    """The predicted and the measured speedup, and the named parts between them, in ms per generated token."""

    step_ms: float  # one plain target step: c's target step (metrics.step_costs)
    predicted_ms: float  # ms per token the prediction gives this run (module docstring)
    parts: list[tuple[str, float]]  # (a name of PART_NOTES, ms per token), from predicted_ms to measured_ms
    measured_ms: float  # this run's ms per token: run_wall_ms ÷ tokens
    plain_ms: float | None  # a plain run's ms per token; None without one
    # The plain token the prediction is in units of: the plain run's ms per token where it was timed token by token
    # beside this run (its prompt's reading and sampling in it, as the prediction holds this run's), else one step
    unit_ms: float = 0.0

    @property
    def predicted(self) -> float:
        """DEFINITIONS["speedup_predicted"]: a plain token's ms ÷ this run's predicted ms per token."""
        return (self.unit_ms or self.step_ms) / self.predicted_ms if self.predicted_ms > 0 else 0.0

    @property
    def measured(self) -> float | None:
        """The plain run's ms per token ÷ this run's: measured_speedup."""
        return self.plain_ms / self.measured_ms if self.plain_ms and self.measured_ms > 0 else None

    @property
    def plain_beyond_step_ms(self) -> float | None:
        """What plain decoding spends per token beside one forward (reading the prompt, sampling)."""
        return None if self.plain_ms is None else self.plain_ms - self.step_ms

    def to_dict(self) -> dict:
        return {"step_ms": self.step_ms, "predicted_ms": self.predicted_ms, "parts": dict(self.parts),
                "measured_ms": self.measured_ms, "plain_ms": self.plain_ms,
                "unit_ms": self.unit_ms or self.step_ms, "predicted": self.predicted, "measured": self.measured}


def waterfall(trace: Trace, alpha: float | None = None) -> Waterfall | None:
    """This run's waterfall (module docstring), at the run's α (metrics.summarize passes the one it computed); None
    before a round or a token, or without a target step.

    Where the plain run was timed token by token beside this one, the prediction also holds what the run measured
    around its forwards (reading the prompt, and a mean round's time outside them), on both sides; what remains
    between prediction and measurement is then the tokens as they fell and each time's spread about its mean."""
    tokens = len(trace.token_ids)
    draft_step_ms, step_ms, _ = step_costs(trace)
    if not trace.rounds or not tokens or step_ms <= 0:
        return None
    c = draft_step_ms / step_ms
    verify_cost = estimate_verify_cost(trace) or {1: 1.0}  # none measured: a verify forward costs one step
    alpha = _alpha(trace) if alpha is None else alpha
    depths = [round_depth(round_) for round_ in trace.rounds]  # E and drafting: a tree's depth, a chain's k
    widths = [round_.drafted + 1 for round_ in trace.rounds]  # verifying: every drafted node, and the token before
    expected = sum(theory.expected_tokens(alpha, depth) for depth in depths)
    verify_steps = [theory.verify_cost_at(verify_cost, width) for width in widths]
    cost_ms = step_ms * (c * sum(depths) + sum(verify_steps))  # the forwards the theory counts: Σ (k c + v(k+1)) steps
    verify_ms = [_verify_forward_ms(round_) for round_ in trace.rounds]
    draft_ms = sum(round_.draft_ms for round_ in trace.rounds)
    measured_ms = run_wall_ms(trace) / tokens
    drafting = (DRAFTING, (draft_ms - step_ms * c * sum(depths)) / tokens)
    verifying = (VERIFYING, (sum(verify_ms[1:]) - step_ms * sum(verify_steps[1:])) / tokens)
    plain = baseline_tokens_per_s(trace)
    plain_ms = 1e3 / plain if plain else None
    timed = trace.baseline.token_ms if trace.baseline is not None else []
    if len(timed) < 2:  # the theory's forwards alone; the prompt and the time outside the forwards are parts
        parts = [(TOKENS_AS_FELL, cost_ms / tokens - cost_ms / expected), drafting, verifying,
                 (PROMPT, (verify_ms[0] - step_ms * verify_steps[0]) / tokens),
                 (OUTSIDE, measured_ms - (draft_ms + sum(verify_ms)) / tokens)]
        return Waterfall(step_ms, cost_ms / expected, parts, measured_ms, plain_ms)
    prompt_ms = verify_ms[0] - step_ms * verify_steps[0]  # round 1's verify forward beyond v(k+1) steps
    outside = [r.verify_ms - verify + recorded  # sampling, tests, bookkeeping, recording: per round
               for r, verify, recorded in zip(trace.rounds, verify_ms, recording_ms(trace))]
    typical_outside = statistics.fmean(outside[1:] or outside)
    predicted_total = cost_ms + prompt_ms + typical_outside * len(trace.rounds)
    parts = [(TOKENS_AS_FELL, predicted_total / tokens - predicted_total / expected), drafting, verifying,
             (OUTSIDE_SPREAD, (sum(outside) - typical_outside * len(trace.rounds)) / tokens)]
    return Waterfall(step_ms, predicted_total / expected, parts, measured_ms, plain_ms, plain_ms)


def _alpha(trace: Trace) -> float:
    from specviz.analysis.tree_metrics import depth_counts

    reached, accepted = depth_counts(trace.rounds, int(trace.config["gamma"]))
    return sum(accepted) / sum(reached) if sum(reached) else 0.0


def _verify_forward_ms(round_) -> float:
    """The round's verify forward; the whole verify time for a trace recorded before the split existed."""
    return round_.verify_ms if round_.verify_forward_ms is None else min(round_.verify_forward_ms, round_.verify_ms)
