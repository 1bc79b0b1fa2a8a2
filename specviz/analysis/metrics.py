"""Trace -> numbers: acceptance, tokens per round, cost ratio c, and the measured speedup beside the predicted one; and the
two statistics every check of the output's distribution uses (Pearson's χ² test and the total variation distance).

Each number's definition is in definitions.DEFINITIONS (re-exported here); the views quote it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import torch

from specviz.analysis.definitions import DEFINITIONS, Definition  # noqa: F401  (quoted from metrics by the views)
from specviz.analysis.speedup import (  # noqa: F401  (c's steps, v(k) and the speedups: read from metrics by the views)
    C_BASES,
    WARM_UP_ROUNDS,
    baseline_tokens_per_s,
    estimate_verify_cost,
    machine_busy,
    measured_speedup,
    plain_spread,
    run_wall_ms,
    speedup_interval,
    step_costs,
    tokens_per_s,
    waterfall,
)
from specviz.analysis.tree_metrics import depth_counts
from specviz.trace import ACCEPTED, REJECTED, Token, Trace


@dataclass
class Metrics:
    """A run's numbers; each is defined in DEFINITIONS under the key named in its comment."""

    rounds: int
    generated_tokens: int
    drafted_tokens: int
    tested_positions: int  # depth levels tested: a chain's acceptance tests; a tree's tried siblings count once
    accepted_tokens: int
    drafting_rounds: int  # rounds that drafted at least one token (vLLM's num_drafts)
    alpha: float  # "alpha": accepted / tested ("alpha_tree" for a tree: accepted / levels tested)
    alpha_per_position: list[float | None]  # "alpha_per_position" (None where no round tested position i)
    reached_per_position: list[int]
    accepted_per_position: list[int]
    draft_acceptance_rate: float | None  # "draft_acceptance_rate": accepted / drafted (None: nothing drafted)
    mean_acceptance_length: float | None  # "mean_acceptance_length": 1 + accepted / drafting rounds
    tokens_per_round: float  # "tokens_per_round": generated / target calls
    draft_nodes_per_round: float  # "draft_nodes_per_round": drafted tokens (tree nodes) / rounds
    target_calls: int  # target forward passes: one per round
    draft_ms_per_round: float
    verify_ms_per_round: float
    overhead_ms_per_round: float  # "overhead": wall time outside model forwards, per round
    draft_step_ms: float  # "draft_step" (per drafted token for prompt lookup)
    target_step_ms: float  # "target_step"
    c: float  # "c": draft_step_ms / target_step_ms
    c_basis: str  # where the two steps came from: a key of C_BASES
    tokens_per_s: float  # "tokens_per_s": generated tokens / run_wall_ms
    baseline_tokens_per_s: float | None  # "baseline_tokens_per_s": the plain run's tokens / its wall time
    speedup_measured: float | None  # "speedup_measured": tokens_per_s / baseline_tokens_per_s (measured_speedup)
    speedup_low: float | None  # "speedup_interval": the measured speedup's interval (speedup_interval), where the
    speedup_high: float | None  # plain run was timed in turn with the rounds
    plain_spread: float | None  # "plain_spread": the plain tokens' middle 80% of ms over their median
    others_busy_cores: float | None  # "others_busy_cores": cores other programs kept busy meanwhile (Linux)
    busy: bool | None  # machine_busy: whether the machine was busy while the two runs were timed
    speedup_predicted: float | None  # "speedup_predicted": Σ E(α, k) / Σ (k c + v(k + 1)), beside the measured one
    identical: bool | None  # generated ids equal the baseline's (meaningful at temperature 0)

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(trace: Trace) -> Metrics:
    reached, accepted = depth_counts(trace.rounds, int(trace.config["gamma"]))  # per position (a tree's depth)
    tested, accepted_total = sum(reached), sum(accepted)
    alpha = accepted_total / tested if tested else 0.0
    rounds = max(len(trace.rounds), 1)
    draft_lengths = [round_.drafted for round_ in trace.rounds]  # k_r: fewer than γ with adaptive γ or near the end
    drafting_rounds = sum(1 for length in draft_lengths if length > 0)
    draft_ms = sum(round_.draft_ms for round_ in trace.rounds)
    verify_ms = sum(round_.verify_ms for round_ in trace.rounds)
    draft_step_ms, target_step_ms, basis = step_costs(trace)
    c = draft_step_ms / target_step_ms if target_step_ms > 0 else 0.0
    generated = len(trace.token_ids)
    identical = trace.baseline.token_ids == trace.token_ids if trace.baseline is not None else None
    return Metrics(
        rounds=len(trace.rounds),
        generated_tokens=generated,
        drafted_tokens=sum(draft_lengths),
        tested_positions=tested,
        accepted_tokens=accepted_total,
        drafting_rounds=drafting_rounds,
        alpha=alpha,
        alpha_per_position=[a / r if r else None for a, r in zip(accepted, reached)],
        reached_per_position=reached,
        accepted_per_position=accepted,
        draft_acceptance_rate=accepted_total / sum(draft_lengths) if drafting_rounds else None,
        mean_acceptance_length=1 + accepted_total / drafting_rounds if drafting_rounds else None,
        tokens_per_round=generated / rounds,
        draft_nodes_per_round=sum(draft_lengths) / rounds,
        target_calls=len(trace.rounds),
        draft_ms_per_round=draft_ms / rounds,
        verify_ms_per_round=verify_ms / rounds,
        overhead_ms_per_round=max(trace.wall_ms - trace.forward_ms, 0.0) / rounds,
        draft_step_ms=draft_step_ms,
        target_step_ms=target_step_ms,
        c=c,
        c_basis=basis,
        tokens_per_s=tokens_per_s(trace),
        baseline_tokens_per_s=baseline_tokens_per_s(trace),
        speedup_measured=measured_speedup(trace),
        speedup_low=interval.low if (interval := speedup_interval(trace)) is not None else None,
        speedup_high=interval.high if interval is not None else None,
        plain_spread=plain_spread(trace),
        others_busy_cores=trace.others_busy_cores,
        busy=machine_busy(trace),
        speedup_predicted=predicted.predicted if (predicted := waterfall(trace, alpha)) is not None else None,
        identical=identical,
    )


def target_doubt(token: Token) -> float | None:
    """1 − the probability of the target's top choice at the token's position: how unsure the target was there
    (from the untempered distribution in a greedy run, where p itself is one-hot); None where no top list was kept.

    >>> from specviz.trace import TopToken
    >>> target_doubt(Token(5, "a", "accepted", 1, 0.7, target_top=[TopToken(5, "a", 0.75), TopToken(6, "b", 0.2)]))
    0.25
    """
    top = token.target_top_untempered or token.target_top
    return 1.0 - top[0].prob if top else None


def doubt_by_verdict(trace: Trace) -> tuple[float, float, int, int] | None:
    """(mean doubt at rejected drafts, at accepted ones, how many of each): where drafts fail, the target is unsure
    (target_doubt); None until both verdicts were seen."""
    doubts = {ACCEPTED: [], REJECTED: []}
    for round_ in trace.rounds:
        for token in round_.tokens:
            doubt = target_doubt(token)
            if token.kind in doubts and doubt is not None:
                doubts[token.kind].append(doubt)
    if not doubts[ACCEPTED] or not doubts[REJECTED]:
        return None
    rejected, accepted = doubts[REJECTED], doubts[ACCEPTED]
    return sum(rejected) / len(rejected), sum(accepted) / len(accepted), len(rejected), len(accepted)


def measured_gamma(trace: Trace) -> float:
    """The γ the run drafted with: the configured one, or the mean draft length of an adaptive run."""
    if trace.config.get("adaptive"):
        return sum(r.drafted for r in trace.rounds) / len(trace.rounds)
    return int(trace.config["gamma"])


SIGNIFICANCE = 0.001  # a χ² (or any) p-value below this says the samples do not follow the distribution tested


def chi_square_verdict(p_value: float) -> str:
    """The p-value read against SIGNIFICANCE, threshold stated: every lab words its verdict so.

    >>> chi_square_verdict(0.0173), chi_square_verdict(2e-5)
    ('p-value 0.0173 ≥ 0.001: follows p', 'p-value 2e-05 < 0.001: does NOT follow p')
    """
    if p_value >= SIGNIFICANCE:
        return f"p-value {p_value:.3g} ≥ {SIGNIFICANCE:g}: follows p"
    return f"p-value {p_value:.3g} < {SIGNIFICANCE:g}: does NOT follow p"


def chi_square_test(counts, expected_probs, min_expected: float = 5.0) -> tuple[float, int, float]:
    """Pearson's χ² of counts [K] against expected_probs [K]: (statistic, dof, p-value = Q(dof/2, statistic/2)).

    Bins expected to be empty are skipped, unless they hold counts (then statistic = inf, p-value = 0: an
    impossible token was seen). Bins expecting fewer than `min_expected` draws are pooled into one (a pool still
    under it joins the smallest other bin). Fewer than two bins left: (0.0, 0, 1.0).
    counts [600, 400] against [.5, .5] -> (40.0, 1, 2.5e-10).
    """
    observed = torch.as_tensor(counts, dtype=torch.float64).flatten()
    probs = torch.as_tensor(expected_probs, dtype=torch.float64).flatten()
    total = float(observed.sum())
    if total <= 0:
        raise ValueError("chi-square test needs at least one sample")
    expected = probs / probs.sum() * total
    possible = expected > 0
    if bool((observed[~possible] > 0).any()):
        return math.inf, int(possible.sum()) - 1, 0.0
    large, small = possible & (expected >= min_expected), possible & (expected < min_expected)
    observed_bins, expected_bins = observed[large].tolist(), expected[large].tolist()
    if bool(small.any()):  # pool the small bins; a pool still too small joins the smallest large bin
        pooled = float(expected[small].sum())
        at = expected_bins.index(min(expected_bins)) if pooled < min_expected and expected_bins else len(expected_bins)
        observed_bins[at:at + 1] = [sum(observed_bins[at:at + 1]) + float(observed[small].sum())]
        expected_bins[at:at + 1] = [sum(expected_bins[at:at + 1]) + pooled]
    dof = len(expected_bins) - 1
    if dof < 1:
        return 0.0, 0, 1.0
    statistic = sum((o - e) ** 2 / e for o, e in zip(observed_bins, expected_bins))
    half_dof, half_statistic = torch.tensor([dof / 2, statistic / 2], dtype=torch.float64)
    return statistic, dof, float(torch.special.gammaincc(half_dof, half_statistic))  # Q(dof/2, χ²/2)


def total_variation(first, second) -> float:
    """½ Σ |a − b| between two distributions, each divided by its own sum (counts or probabilities): sequences or
    tensors of equal length, or mappings key -> weight (a missing key weighs 0). It is the largest difference in
    probability the two give any event.

    >>> total_variation([0.4, 0.3, 0.2, 0.1], [50, 25, 15, 10]), total_variation({"a": 3}, {"a": 1, "b": 1})
    (0.1, 0.5)
    """
    if isinstance(first, Mapping) or isinstance(second, Mapping):
        keys = list(set(first) | set(second))
        first, second = [first.get(key, 0) for key in keys], [second.get(key, 0) for key in keys]
    first = torch.as_tensor(first, dtype=torch.float64).flatten()
    second = torch.as_tensor(second, dtype=torch.float64).flatten()
    if first.numel() != second.numel():
        raise ValueError(f"the distributions have {first.numel()} and {second.numel()} entries")
    first, second = first / first.sum().clamp(min=1e-300), second / second.sum().clamp(min=1e-300)
    return 0.5 * float((first - second).abs().sum())
