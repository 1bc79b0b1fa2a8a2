"""The oracle-γ bound (Leviathan et al. 2023's "up to 60%"): how much faster speculative decoding would be if each round
drafted exactly as many tokens as the target will accept, against the best fixed γ.

With i.i.d. acceptance α (Leviathan et al. 2023's simplifying assumption), the tokens a draft would get accepted
before its first rejection number n ~ Geometric: P(n = k) = α^k (1 − α), k = 0, 1, .., so E[n] = α / (1 − α).
The oracle drafts those n tokens (cost n·c), all are accepted, and the target's one forward adds token n + 1:

    oracle speedup = E[n + 1] / (c·E[n] + 1) = 1 / (1 − α + cα)

A fixed γ gets S(γ) = (1 − α^(γ+1)) / ((1 − α)(γc + 1)) (Leviathan eq. 1 over γc + 1); γ = 0 is plain decoding,
S = 1. S is quasi-concave in γ (a concave numerator over an affine denominator), so the best γ is found by walking
up from γ = 0 while S grows. At c = 0 it grows forever towards 1 / (1 − α), its supremum, which the oracle equals.

The gain oracle / best fixed is 1 as c → 0 and largest when α is near 1 and c ≈ 1.4(1 − α): 1.572 at α = 0.98,
c = 0.03 on a 0.01 grid, and about 1.58 in the limit α → 1. So "up to 60%" is right to within its rounding.

>>> round(oracle_speedup(0.8, 0.05), 4)  # 1 / (0.2 + 0.04)
4.1667
>>> speedup, gamma = best_fixed(0.8, 0.05)  # theory.optimal_gamma(0.8, 0.05) is 8 too
>>> round(speedup, 4), gamma
(3.0921, 8)
>>> round(oracle_gain(0.98, 0.03), 3)
1.572
"""

from __future__ import annotations

from functools import lru_cache

from specviz.core import theory
from specviz.labs.theory.calculator import validate_inputs

MAX_WALK = 1_000_000  # γ steps walked at most: α = 0.999, c = 1e-9 needs 13,808


def _checked(alpha, c) -> tuple[float, float]:
    """(α, c) for the oracle: α in [0, 1) (at α = 1 the oracle never stops drafting), c >= 0 and finite."""
    alpha, _, c = validate_inputs(alpha, 1, c)
    if alpha == 1.0:
        raise ValueError("alpha must be below 1 for the oracle: at alpha = 1 every draft is accepted and it drafts forever")
    return alpha, c


def oracle_speedup(alpha: float, c: float) -> float:
    """1 / (1 − α + cα): E[n + 1] tokens for c·E[n] + 1 target steps per round, n ~ Geometric(1 − α) accepted."""
    alpha, c = _checked(alpha, c)
    return 1.0 / (1.0 - alpha + c * alpha)


def best_fixed(alpha: float, c: float) -> tuple[float, int | None]:
    """(best speedup, its γ) over fixed γ = 0, 1, 2, .. (γ = 0: plain decoding, speedup 1; the smaller γ on a tie).
    At c = 0 with α > 0 no γ is best: (1 / (1 − α), None), the supremum as γ → ∞."""
    alpha, c = _checked(alpha, c)
    if c == 0.0 and alpha > 0.0:
        return 1.0 / (1.0 - alpha), None
    gamma, speedup = 0, 1.0
    while gamma < MAX_WALK:
        following = theory.speedup(alpha, gamma + 1, c)
        if following <= speedup:  # past the peak of a quasi-concave S(γ)
            return speedup, gamma
        gamma, speedup = gamma + 1, following
    raise ValueError(f"the best gamma for alpha={alpha}, c={c} is beyond {MAX_WALK}: c is too small to search")


def oracle_gain(alpha: float, c: float) -> float:
    """Oracle speedup over the best fixed γ's: 1 / (1 − α + cα) ÷ max_γ S(γ). At least 1 while c <= 1; 1 at c = 0
    or α = 0."""
    return oracle_speedup(alpha, c) / best_fixed(alpha, c)[0]


def gain_grid(alphas, cs) -> list[list[float]]:
    """grid[i][j] = oracle_gain(alphas[j], cs[i]): one row per c, so go.Heatmap(x=alphas, y=cs, z=grid) draws it."""
    return [[oracle_gain(alpha, c) for alpha in alphas] for c in cs]


@lru_cache(maxsize=4)
def largest_gain(step: float = 0.01) -> tuple[float, float, float]:
    """(gain, α, c) of the largest oracle gain on the grid α = step, 2·step, .. < 1 and c = step, .., 1.
    step 0.01 -> (1.5717, 0.98, 0.03)."""
    if not 0.0 < step <= 0.5:
        raise ValueError(f"step must be in (0, 0.5], got {step!r}")
    count = round(1.0 / step)
    alphas = [k * step for k in range(1, count) if k * step < 1.0]
    cs = [k * step for k in range(1, count + 1)]
    return max((oracle_gain(alpha, c), alpha, c) for alpha in alphas for c in cs)


def gain_sentence(alpha: float, c: float) -> str:
    """What-if: the sliders' (α, c) oracle gain and the grid's largest, in Markdown, for the Theory tab."""
    fixed, gamma = best_fixed(alpha, c)
    best = "plain decoding (γ = 0)" if gamma == 0 else ("γ → ∞" if gamma is None else f"γ = {gamma}")
    top, top_alpha, top_c = largest_gain()
    return (f"**What-if: the oracle γ** (drafts exactly the tokens that will be accepted) at α = {alpha:.2f}, c = {c:.3f}: "
            f"1/(1 − α + cα) = **{oracle_speedup(alpha, c):.3f}×** against {fixed:.3f}× for the best fixed "
            f"choice, {best}: a gain of **{oracle_gain(alpha, c):.3f}×**. On the grid α, c in steps of 0.01 the "
            f"gain is largest at α = {top_alpha:.2f}, c = {top_c:.2f}: **{top:.3f}×**: Leviathan et al. 2023's \"up to 60%\" "
            "(about 1.58× in the limit α → 1 with c ≈ 1.4(1 − α)). An adaptive γ can recover only part of it.")
