"""Closed forms of speculative decoding (Leviathan et al. 2023, sections 3.1-3.4). Imports nothing from specviz.

Symbols: α is the expected acceptance rate E[β], γ the number of drafted tokens per round, c the cost of one
draft step relative to one target step, and v(k) the cost of a target forward over k tokens relative to one.

>>> expected_tokens(0.8, 4)  # (1 - 0.8**5) / (1 - 0.8)
3.3615999999999997
>>> optimal_gamma(0.8, 0.05)
8
"""

from __future__ import annotations

from typing import Callable, Mapping

VerifyCost = Callable[[int], float] | Mapping[int, float]


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
    v = verify_cost[gamma + 1] if isinstance(verify_cost, Mapping) else verify_cost(gamma + 1)
    return float(expected_tokens(alpha, gamma) / (gamma * c + float(v)))


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


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
