"""Trace -> numbers: acceptance, tokens per round, cost ratio c, and measured against theoretical speedup."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from specviz import theory
from specviz.trace import ACCEPTED, REJECTED, Trace


@dataclass
class Metrics:
    rounds: int
    generated_tokens: int
    drafted_tokens: int
    tested_positions: int  # acceptance tests that ran (drafts after a rejection are never tested)
    accepted_tokens: int
    alpha: float  # accepted / tested: the per-token acceptance rate the theory calls α
    mean_accept_prob: float  # mean of min(1, p/q) over tested drafts: another estimate of α = E[β]
    alpha_per_position: list[float | None]  # position i: accepted at i / reached i (None if never reached)
    reached_per_position: list[int]
    accepted_per_position: list[int]
    tokens_per_round: float
    target_calls: int  # target forward passes: one per round
    draft_ms_per_round: float
    verify_ms_per_round: float
    draft_step_ms: float  # drafting time per draft forward (per drafted token for prompt lookup), round 1 left out
    target_step_ms: float  # one target forward over one token (from the baseline when it ran)
    c: float  # draft_step_ms / target_step_ms
    c_basis: str  # "baseline" or "verify" (verify time overstates a target step on CPU)
    tokens_per_s: float
    speedup_theoretical: float  # E(α, γ) / (γc + 1)
    speedup_measured: float | None  # baseline wall time per token / speculative wall time per token
    identical: bool | None  # generated ids equal the baseline's (meaningful at temperature 0)
    overhead_fraction: float  # share of wall time outside model forwards

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(trace: Trace) -> Metrics:
    gamma = int(trace.config["gamma"])
    reached = [0] * gamma
    accepted = [0] * gamma
    accept_probs = []
    for round_ in trace.rounds:
        for token in round_.tokens:
            if token.kind in (ACCEPTED, REJECTED):
                reached[token.position - 1] += 1
                accepted[token.position - 1] += token.kind == ACCEPTED
                accept_probs.append(token.accept_prob)
    tested, accepted_total = sum(reached), sum(accepted)
    alpha = accepted_total / tested if tested else 0.0
    rounds = max(len(trace.rounds), 1)
    drafted = sum(round_.drafted for round_ in trace.rounds)
    draft_ms = sum(round_.draft_ms for round_ in trace.rounds)
    verify_ms = sum(round_.verify_ms for round_ in trace.rounds)
    # Step costs leave out round 1, whose forwards also encode the whole prompt.
    steady = trace.rounds[1:] or trace.rounds
    draft_steps = sum(r.draft_forwards for r in steady) or sum(r.drafted for r in steady)
    draft_step_ms = sum(r.draft_ms for r in steady) / draft_steps if draft_steps else 0.0
    if trace.baseline is not None:
        target_step_ms, basis = trace.baseline.step_ms, "baseline"
    else:
        target_step_ms, basis = sum(r.verify_ms for r in steady) / len(steady) if steady else 0.0, "verify"
    c = draft_step_ms / target_step_ms if target_step_ms > 0 else 0.0
    generated = len(trace.token_ids)
    speedup_measured = identical = None
    if trace.baseline is not None and trace.wall_ms > 0 and trace.baseline.token_ids:
        baseline_ms_per_token = trace.baseline.wall_ms / len(trace.baseline.token_ids)
        speedup_measured = baseline_ms_per_token / (trace.wall_ms / max(generated, 1))
        identical = trace.baseline.token_ids == trace.token_ids
    return Metrics(
        rounds=len(trace.rounds),
        generated_tokens=generated,
        drafted_tokens=drafted,
        tested_positions=tested,
        accepted_tokens=accepted_total,
        alpha=alpha,
        mean_accept_prob=sum(accept_probs) / len(accept_probs) if accept_probs else 0.0,
        alpha_per_position=[a / r if r else None for a, r in zip(accepted, reached)],
        reached_per_position=reached,
        accepted_per_position=accepted,
        tokens_per_round=generated / rounds,
        target_calls=len(trace.rounds),
        draft_ms_per_round=draft_ms / rounds,
        verify_ms_per_round=verify_ms / rounds,
        draft_step_ms=draft_step_ms,
        target_step_ms=target_step_ms,
        c=c,
        c_basis=basis,
        tokens_per_s=1e3 * generated / trace.wall_ms if trace.wall_ms > 0 else 0.0,
        speedup_theoretical=theory.speedup(min(max(alpha, 0.0), 1.0), gamma, c),
        speedup_measured=speedup_measured,
        identical=identical,
        overhead_fraction=1.0 - trace.forward_ms / trace.wall_ms if trace.wall_ms > 0 else 0.0,
    )


def estimate_verify_cost(trace: Trace, max_k: int = 17) -> dict[int, float] | None:
    """v(k) for k = 1..max_k from this run's own timings: target forwards over k tokens relative to one.

    Each round after the first fed the target k = drafted + 1 tokens. A least-squares line through the mean
    verify time at each k seen in at least two rounds (and the baseline's one-token step, when it ran) gives
    v(k) = t(k) / t(1). A k seen once is left out: a draft that almost always drafts γ leaves one short round at
    the end, and a line through that single timing and the rest extrapolates t(1) from noise. None when fewer
    than two k remain.
    """
    by_size: dict[int, list[float]] = {}
    for round_ in trace.rounds[1:]:
        by_size.setdefault(round_.drafted + 1, []).append(round_.verify_ms)
    points = {k: sum(v) / len(v) for k, v in by_size.items() if len(v) >= 2}
    if trace.baseline is not None:
        points[1] = trace.baseline.step_ms
    if len(points) < 2:
        return None
    xs, ys = list(points), list(points.values())
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sum((x - mean_x) ** 2 for x in xs)
    slope = max(slope, 0.0)  # timing noise must not make longer verifies cheaper
    one = max(mean_y + slope * (1 - mean_x), 1e-6)
    return {k: max(mean_y + slope * (k - mean_x), one) / one for k in range(1, max_k + 1)}
