"""The speedup, told straight: one measured speedup, the prediction beside it, and the waterfall between them.

    measured  = this run's tokens/s ÷ a plain run's tokens/s        (same prompt, target, backend, settings, process)
    predicted = Σ_r E(α, k_r) ÷ Σ_r (k_r·c + v(k_r + 1))              (α, c and the target's measured v(k))

Every surface (the live tab, Round anatomy, the gallery, the HTML export, the CLI and its --json, the benchmark)
reads these two from here. Both are ratios of milliseconds per generated token, so the waterfall walks from one to the
other in this run's measured milliseconds per token, and every part of the gap has a name:

    predicted ms/token = one plain step × Σ (k·c + v(k+1)) ÷ Σ E(α, k)
    + tokens per round as they fell      (the run's tokens against E(α, k): streaks, luck, the stop)
    + drafting beyond c                  (the drafts' measured time against k·c steps)
    + verifying beyond v(k)              (the verify forwards against v(k+1) steps, round 1 left out)
    + reading the prompt                 (round 1's verify forward, which also reads the prompt)
    + outside the forwards               (sampling, acceptance tests, bookkeeping and recording the rounds)
    = this run's ms/token.

On the plain side, a plain run's ms/token is one step plus what plain decoding spends beside its forwards (reading the
prompt, sampling). measured = plain ms/token ÷ this run's ms/token; predicted = one step ÷ predicted ms/token.

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

TOKENS_AS_FELL, DRAFTING, VERIFYING, PROMPT, OUTSIDE = (
    "tokens per round as they fell", "drafting beyond c", "verifying beyond v(k)", "reading the prompt",
    "outside the forwards")
PART_NOTES = {  # what each part of the waterfall counts, as the page says it
    TOKENS_AS_FELL: "the tokens the rounds gave against the E(α, k) the prediction expects of them",
    DRAFTING: "the drafts' measured time against k·c target steps",
    VERIFYING: "the verify forwards' measured time against v(k + 1) target steps (round 1 left out)",
    PROMPT: "round 1's verify forward beyond v(k + 1) steps: it also reads the prompt",
    OUTSIDE: "sampling, acceptance tests, cache bookkeeping and recording the rounds for the views",
}


WARM_UP_ROUNDS = 2  # round 1 also encodes the prompt; round 2 still pays first-call costs (allocations, caches)


C_BASES = {  # where step_costs took c's two steps from, as the page words it
    "calibrated": "both timed once per model pair on this device, alternating forwards",
    "calibrated target": "draft step: this run's median; target step: timed once per model on this device",
    "baseline": "draft step: this run's median; target step: the plain run's median step",
    "verify": "draft step: this run's median; target step: this run's median verify forward (overstates it on a CPU)",
}


def step_costs(trace: Trace) -> tuple[float, float, str]:
    """(draft step ms, target step ms, basis) for c: DEFINITIONS["draft_step"] and ["target_step"]; basis is a
    key of C_BASES.

    Steps timed once per model pair (calibration.calibrate: Trace.draft_step_ms, Trace.target_forward_ms[0]) come
    first: identical reruns then show the same c, whatever a busy machine or the views drawn meanwhile do to one
    run. Else the run's rounds give the draft step: the median draft time per forward, warm-up rounds left out
    (per drafted token for prompt lookup, which makes no forward); and the target step is the baseline's median
    step, else the calibrated one, else the median verify forward (k + 1 tokens: it overstates a step on a CPU).
    """
    if trace.draft_step_ms > 0 and trace.target_forward_ms:
        return trace.draft_step_ms, trace.target_forward_ms[0], "calibrated"
    steady = trace.rounds[WARM_UP_ROUNDS:] if len(trace.rounds) > WARM_UP_ROUNDS + 2 else trace.rounds[1:] or trace.rounds
    per_forward = [r.draft_ms / r.draft_forwards for r in steady if r.draft_forwards]
    if per_forward:
        draft_step_ms = statistics.median(per_forward)
    else:
        drafted = sum(r.drafted for r in steady)
        draft_step_ms = sum(r.draft_ms for r in steady) / drafted if drafted else 0.0
    if trace.baseline is not None:
        return draft_step_ms, trace.baseline.step_ms, "baseline"
    if trace.target_forward_ms:
        return draft_step_ms, trace.target_forward_ms[0], "calibrated target"
    verify = [r.verify_ms for r in steady]
    return draft_step_ms, statistics.median(verify) if verify else 0.0, "verify"


def estimate_verify_cost(trace: Trace, max_k: int = 17) -> dict[int, float] | None:
    """v(k) for k = 1..max_k from this run's own timings: target forwards over k tokens relative to one.

    Each round after the first fed the target k = drafted + 1 tokens. A least-squares line through the mean
    verify time at each k seen in at least two rounds (and the baseline's one-token step, when it ran) gives
    v(k) = t(k) / t(1). A k seen once is left out: a draft that almost always drafts γ leaves one short round at
    the end, and a line through that single timing and the rest extrapolates t(1) from noise. None when fewer
    than two k remain. A calibrated trace (Trace.target_forward_ms) gives v(k) from those timings instead, with
    theory.verify_cost_at's extrapolation beyond them.
    """
    measured = trace.target_forward_ms
    if len(measured) >= 2 and measured[0] > 0:
        table = {k: ms / measured[0] for k, ms in enumerate(measured, start=1)}
        return {k: max(theory.verify_cost_at(table, k), 1.0) if k > 1 else 1.0 for k in range(1, max_k + 1)}
    by_size: dict[int, list[float]] = {}
    for round_ in trace.rounds[1:]:
        by_size.setdefault(round_.drafted + 1, []).append(round_.verify_ms)
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


@dataclass(frozen=True)
class Waterfall:
    """The predicted and the measured speedup, and the named parts between them, in ms per generated token."""

    step_ms: float  # one plain target step: c's target step (metrics.step_costs)
    predicted_ms: float  # ms per token the prediction gives: step × Σ (k·c + v(k+1)) ÷ Σ E(α, k)
    parts: list[tuple[str, float]]  # (a name of PART_NOTES, ms per token), from predicted_ms to measured_ms
    measured_ms: float  # this run's ms per token: run_wall_ms ÷ tokens
    plain_ms: float | None  # a plain run's ms per token; None without one

    @property
    def predicted(self) -> float:
        """DEFINITIONS["speedup_predicted"]: one step ÷ the predicted ms per token."""
        return self.step_ms / self.predicted_ms if self.predicted_ms > 0 else 0.0

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
                "measured_ms": self.measured_ms, "plain_ms": self.plain_ms, "predicted": self.predicted,
                "measured": self.measured}


def waterfall(trace: Trace, alpha: float | None = None) -> Waterfall | None:
    """This run's waterfall (module docstring), at the run's α (metrics.summarize passes the one it computed); None
    before a round or a token, or without a target step."""
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
    cost_steps = c * sum(depths) + sum(verify_steps)
    verify_ms = [_verify_forward_ms(round_) for round_ in trace.rounds]
    draft_ms = sum(round_.draft_ms for round_ in trace.rounds)
    measured_ms = run_wall_ms(trace) / tokens
    parts = [
        (TOKENS_AS_FELL, step_ms * cost_steps / tokens - step_ms * cost_steps / expected),
        (DRAFTING, (draft_ms - step_ms * c * sum(depths)) / tokens),
        (VERIFYING, (sum(verify_ms[1:]) - step_ms * sum(verify_steps[1:])) / tokens),
        (PROMPT, (verify_ms[0] - step_ms * verify_steps[0]) / tokens),
        (OUTSIDE, measured_ms - (draft_ms + sum(verify_ms)) / tokens),
    ]
    plain = baseline_tokens_per_s(trace)
    return Waterfall(step_ms, step_ms * cost_steps / expected, parts, measured_ms, 1e3 / plain if plain else None)


def _alpha(trace: Trace) -> float:
    from specviz.analysis.tree_metrics import depth_counts

    reached, accepted = depth_counts(trace.rounds, int(trace.config["gamma"]))
    return sum(accepted) / sum(reached) if sum(reached) else 0.0


def _verify_forward_ms(round_) -> float:
    """The round's verify forward; the whole verify time for a trace recorded before the split existed."""
    return round_.verify_ms if round_.verify_forward_ms is None else min(round_.verify_forward_ms, round_.verify_ms)
