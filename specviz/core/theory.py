"""Closed forms of speculative decoding (Leviathan et al. 2023, sections 3.1-3.4). Imports nothing from specviz.

Symbols: α is the expected acceptance rate E[β], γ the number of drafted tokens per round, c the cost of one
draft step relative to one target step, and v(k) the cost of a target forward over k tokens relative to one.
A run whose rounds drafted k_1, k_2, .. tokens (adaptive γ, prompt lookup, a round cut short) is held to the
same forms summed over its rounds (`speedup_over_rounds`, `tokens_per_round_counts`).

The v(k) cost model is either a function of k or a table {k: v(k)} of measured sizes, read by `verify_cost_at`:
the table where k was measured, a straight line between measured sizes, the smallest size's cost below it, and
beyond the largest a line with the least-squares slope of the last four sizes, never falling.

>>> expected_tokens(0.8, 4)  # (1 - 0.8**5) / (1 - 0.8)
3.3616
>>> optimal_gamma(0.8, 0.05)
8
"""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Callable, Mapping, Sequence

VerifyCost = Callable[[int], float] | Mapping[int, float]
TAIL_POINTS = 4  # measured sizes whose least-squares slope extends v(k) beyond the largest


def expected_tokens(alpha: float, gamma: int) -> float:
    """E[tokens per round] = (1 - α^(γ+1)) / (1 - α); the limit γ + 1 at α = 1 (Leviathan eq. 1)."""
    _check_alpha(alpha)
    if alpha == 1.0:
        return float(gamma + 1)
    return float((1.0 - alpha ** (gamma + 1)) / (1.0 - alpha))


def speedup(alpha: float, gamma: int, c: float) -> float:
    """Expected walltime improvement E / (γc + 1), assuming a target forward over γ+1 tokens costs one step."""
    return float(expected_tokens(alpha, gamma) / (gamma * c + 1.0))


def speedup_with_verify_cost(alpha: float, gamma: int, c: float, verify_cost: VerifyCost) -> float:
    """Speedup when verifying k tokens costs v(k) target steps (v(1) = 1): E / (γc + v(γ+1)).

    On a GPU v(k) stays near 1 for small k, and this equals `speedup`. On a small CPU v(k) grows with k.
    """
    return float(expected_tokens(alpha, gamma) / (gamma * c + verify_cost_at(verify_cost, gamma + 1)))


def optimal_gamma(alpha: float, c: float, verify_cost: VerifyCost | None = None, max_gamma: int = 64) -> int:
    """The integer γ in [1, max_gamma] that maximises the (verify-cost-aware) speedup."""
    def score(gamma: int) -> float:
        if verify_cost is None:
            return speedup(alpha, gamma, c)
        return speedup_with_verify_cost(alpha, gamma, c, verify_cost)

    return int(max(range(1, max_gamma + 1), key=lambda gamma: (score(gamma), -gamma)))


def is_viable(alpha: float, c: float) -> bool:
    """Some γ gives a speedup above 1 exactly when α > c (Leviathan corollary 3.9)."""
    return bool(alpha > c)


def gamma_one_bound(alpha: float, c: float) -> float:
    """The speedup at γ = 1: (1 + α) / (1 + c), a guaranteed improvement whenever α > c."""
    _check_alpha(alpha)
    return float((1.0 + alpha) / (1.0 + c))


def operations_factor(alpha: float, gamma: int, c_hat: float) -> float:
    """Expected arithmetic operations relative to plain decoding (Leviathan theorem 3.11):
    (1 - α)(γ ĉ + γ + 1) / (1 - α^(γ+1)), where ĉ is draft/target operations per token."""
    return float((gamma * c_hat + gamma + 1.0) / expected_tokens(alpha, gamma))


def tokens_per_round_distribution(alpha: float, gamma: int) -> list[float]:
    """P(a round yields n tokens) for n = 1..γ+1: the capped geometric law α^(n-1)(1-α), and α^γ for n = γ+1."""
    _check_alpha(alpha)
    probs = [alpha ** (n - 1) * (1.0 - alpha) for n in range(1, gamma + 1)]
    return [float(p) for p in probs] + [float(alpha**gamma)]


def speedup_over_rounds(alpha: float, draft_lengths: Sequence[int], c: float = 0.0,
                        verify_cost: VerifyCost | None = None, draft_steps: float | None = None) -> float:
    """The expected speedup of rounds that drafted k_1, k_2, .. tokens: Σ_r E(α, k_r) / (Σ_r v(k_r + 1) + drafting).

    Drafting costs Σ_r k_r c target steps, or `draft_steps` when the drafting time was measured. v = 1 without a
    verify_cost. A round with k_r = 0 is one plain step (E = 1, cost v(1) = 1). Every k_r = γ gives `speedup`:
    >>> speedup_over_rounds(0.5, [3, 3], 0.02) == speedup(0.5, 3, 0.02)
    True
    """
    if not draft_lengths:
        raise ValueError("the speedup of no rounds is undefined")
    tokens = sum(expected_tokens(alpha, k) for k in draft_lengths)
    drafting = c * sum(draft_lengths) if draft_steps is None else draft_steps
    verifying = sum(1.0 if verify_cost is None else verify_cost_at(verify_cost, k + 1) for k in draft_lengths)
    return float(tokens / (verifying + drafting))


def expected_path(rates: Sequence[float], depth: int) -> float:
    """Expected tokens from a round that drafted `depth` levels (a chain's k, a tree's depth) when the test at level i
    passes with probability rates[i - 1] given that every level before it passed (a run's acceptance by position
    or depth; levels beyond the list pass with probability 0): 1 + Σ_{j=1..depth} Π_{i≤j} rates[i - 1]. The
    correction or bonus is the 1. Equal rates α give E(α, depth):

    >>> round(expected_path([0.8] * 4, 4), 12) == expected_tokens(0.8, 4), expected_path([1.0, 0.5], 3)
    (True, 2.5)
    """
    total, reach = 1.0, 1.0
    for level in range(depth):
        reach *= rates[level] if level < len(rates) else 0.0
        total += reach
    return float(total)


def speedup_of_drafted_rounds(rates: Sequence[float], depths: Sequence[int], nodes: Sequence[int],
                              verify_cost: VerifyCost | None = None, draft_steps: float = 0.0) -> float:
    """The expected speedup of the rounds a run drafted, held to what each round drafted: round r drafted nodes[r]
    tokens in depths[r] levels (a chain: both its k_r), accepted level by level with `rates`, and its verify forward
    read nodes[r] + 1 tokens: Σ_r expected_path(rates, d_r) / (Σ_r v(n_r + 1) + draft_steps), draft_steps being the
    drafting time in target steps. With equal rates α and chains it is `speedup_over_rounds`:

    >>> a, b = speedup_of_drafted_rounds([0.5] * 3, [3, 3], [3, 3], draft_steps=0.12), speedup_over_rounds(0.5, [3, 3], 0.02)
    >>> round(a, 12) == round(b, 12)
    True
    """
    if not depths:
        raise ValueError("the speedup of no rounds is undefined")
    tokens = sum(expected_path(rates, depth) for depth in depths)
    verifying = sum(1.0 if verify_cost is None else verify_cost_at(verify_cost, n + 1) for n in nodes)
    return float(tokens / (verifying + draft_steps))


def tokens_per_round_counts(alpha: float, draft_lengths: Sequence[int]) -> list[float]:
    """Expected number of rounds that yield n = 1..max(k_r)+1 tokens, for rounds that drafted k_1, k_2, ..: the sum
    of each round's capped geometric law (a round that drafted k yields at most k + 1 tokens).

    >>> tokens_per_round_counts(0.5, [1, 2])  # [.5, .5] + [.5, .25, .25]
    [1.0, 0.75, 0.25]
    """
    counts = [0.0] * (max(draft_lengths, default=0) + 1)
    for drafted in draft_lengths:
        for size, prob in enumerate(tokens_per_round_distribution(alpha, drafted)):
            counts[size] += prob
    return counts


def verify_cost_at(verify_cost: VerifyCost, k: int, extrapolate: bool = True) -> float:
    """v(k) from a cost model: a function is called; a table {size: cost} is read as the module docstring says.

    extrapolate=False holds the largest size's cost beyond it instead (adaptive γ does: optimistic on purpose).
    >>> verify_cost_at({1: 1.0, 3: 1.5}, 2), verify_cost_at({1: 1.0, 3: 1.5}, 5)  # between; beyond: slope 0.25
    (1.25, 2.0)
    """
    if not isinstance(verify_cost, Mapping):
        return float(verify_cost(k))
    if k in verify_cost:
        return float(verify_cost[k])
    points = sorted((int(size), float(cost)) for size, cost in verify_cost.items())
    right = bisect.bisect_left([size for size, _ in points], k)  # points[right - 1] < k < points[right]
    if right == 0:
        return points[0][1]
    if right == len(points):
        slope = max(0.0, fit_line(points[-TAIL_POINTS:])[0]) if extrapolate else 0.0  # noise must not make cost fall
        return points[-1][1] + slope * (k - points[-1][0])
    (size0, cost0), (size1, cost1) = points[right - 1], points[right]
    return cost0 + (cost1 - cost0) * (k - size0) / (size1 - size0)


def extend_verify_cost(measured: Mapping[int, float], max_k: int) -> dict[int, float]:
    """A measured v(k) (keys from 1, as profiling.relative_costs gives) as a table over exactly k = 1..max_k.

    Beyond the measured range the cost grows along a line: holding the last value would claim that verifying 64
    tokens costs what 16 did, false once the forward turns compute-bound (its time then grows about linearly in k).
    {1: 1.0, 2: 1.2, 3: 1.4}, max_k=5 -> {1: 1.0, 2: 1.2, 3: 1.4, 4: 1.6, 5: 1.8}
    {1: 1.0, 3: 1.4}, max_k=2      -> {1: 1.0, 2: 1.2}
    """
    if not measured or 1 not in measured:
        raise ValueError("a measured verify cost needs v(1) (the time of a one-token forward, normally 1.0)")
    if not isinstance(max_k, numbers.Integral) or max_k < 1:
        raise ValueError(f"max_k must be an integer >= 1, got {max_k!r}")
    points = dict(sorted((int(k), float(v)) for k, v in measured.items()))
    if min(points) < 1 or any(not math.isfinite(v) or v <= 0 for v in points.values()):
        raise ValueError(f"verify costs need integer keys k >= 1 and positive finite values, got {points}")
    return {k: verify_cost_at(points, k) for k in range(1, max_k + 1)}


def fit_line(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (slope, intercept) of y = slope·x + intercept; slope 0 (the mean) when all x are equal.

    >>> fit_line([(1, 1.0), (3, 2.0), (5, 3.0)])
    (0.5, 0.5)
    """
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0
    return slope, mean_y - slope * mean_x


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
