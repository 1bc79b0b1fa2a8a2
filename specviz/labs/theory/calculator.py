"""The "Theory and calculator" lab: the closed forms of `specviz.core.theory` read out for one (α, γ, c), over a grid,
and for the reference configurations of the course and of Leviathan et al. 2023. Numbers only; views are in
`calculator_figures.py`.

Symbols as in `theory`: α the acceptance rate, γ the drafted tokens per round, c the time of one draft step over one
target step, ĉ the same ratio for arithmetic operations, v(k) the time of a target forward over k tokens over one.

>>> round(readout(0.8, 7, 0.04)["speedup"], 4)  # E = (1 - 0.8**8) / 0.2 = 4.1611; 4.1611 / (7 * 0.04 + 1)
3.2509
>>> readout(0.8, 7, 0.04)["best_gamma"], readout(0.8, 7, 0.04)["viable"]
(9, True)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping

from specviz.core import theory
from specviz.core.theory import VerifyCost, extend_verify_cost

MAX_GAMMA_SEARCHED = 64  # best γ is searched over 1..64, as theory.optimal_gamma does
GPU_LIKE_LABEL, MEASURED_LABEL = "v(k) = 1 (GPU-like)", "measured v(k)"


def gpu_like_verify_cost(k: int) -> float:
    """v(k) = 1 for every k: verifying γ+1 tokens costs one target step (the paper's assumption, true on a GPU
    while the forward stays memory-bound). `readout(.., verify_cost=GPU_LIKE_VERIFY_COST)` equals the plain speedup."""
    return 1.0


GPU_LIKE_VERIFY_COST: Callable[[int], float] = gpu_like_verify_cost


def cost_model_label(verify_cost: VerifyCost | None) -> str:
    """The name of the cost model, for titles: none or GPU-like -> "v(k) = 1 (GPU-like)", else "measured v(k)"."""
    return GPU_LIKE_LABEL if verify_cost is None or verify_cost is GPU_LIKE_VERIFY_COST else MEASURED_LABEL


def readout(alpha: float, gamma: int, c: float, verify_cost: VerifyCost | None = None,
            c_hat: float | None = None, max_gamma: int = MAX_GAMMA_SEARCHED) -> dict:
    """Everything the calculator shows for one (α, γ, c), as plain numbers.

    expected_tokens  E = (1 - α^(γ+1)) / (1 - α)            speedup  E / (γc + 1)
    operations_factor (1 - α)(γĉ + γ + 1) / (1 - α^(γ+1)), with ĉ = c unless c_hat is given: ĉ counts arithmetic,
        c counts time, and for a draft of the target's own architecture on memory-bound hardware both are about
        the ratio of parameter counts. Give c_hat where the two differ (a draft of another architecture, an n-gram table).
    best_gamma / best_speedup  the best γ in 1..max_gamma and its speedup, under the cost model used
    viable  α > c;  gamma_one_bound  (1 + α) / (1 + c), the speedup γ = 1 guarantees
    speedup_with_verify_cost  E / (γc + v(γ+1)) when verify_cost (a dict k -> v(k), v(1) = 1, or a function) is
        given, else None. A measured dict is extended past its range by `theory.extend_verify_cost`.

    (0.5, 3, 0.02) -> expected_tokens 1.875, speedup 1.875 / 1.06 = 1.7689, best_gamma 4, gamma_one_bound 1.4706
    """
    alpha, gamma, c = validate_inputs(alpha, gamma, c)
    c_hat = c if c_hat is None else _check_cost("c_hat", c_hat)
    max_gamma = _check_gamma(max_gamma)
    cost = _usable_verify_cost(verify_cost, max(gamma, max_gamma) + 1)
    best = theory.optimal_gamma(alpha, c, verify_cost=cost, max_gamma=max_gamma)
    return {
        "alpha": alpha, "gamma": gamma, "c": c, "c_hat": c_hat, "cost_model": cost_model_label(verify_cost),
        "expected_tokens": theory.expected_tokens(alpha, gamma),
        "speedup": theory.speedup(alpha, gamma, c),
        "operations_factor": theory.operations_factor(alpha, gamma, c_hat),
        "best_gamma": best,
        "best_speedup": _speedup(alpha, best, c, cost),
        "viable": theory.is_viable(alpha, c),
        "gamma_one_bound": theory.gamma_one_bound(alpha, c),
        "speedup_with_verify_cost": None if cost is None else theory.speedup_with_verify_cost(alpha, gamma, c, cost),
    }


def speedup_grid(c: float, alphas, gammas, verify_cost: VerifyCost | None = None) -> list[list[float]]:
    """Speedup for every (α, γ): grid[i][j] = S(alphas[j], gammas[i]), one row per γ, so that
    go.Heatmap(x=alphas, y=gammas, z=grid) draws it. With verify_cost the speedup is E / (γc + v(γ+1)).

    c=0, alphas=[0, 0.5], gammas=[1, 2] -> [[1.0, 1.5], [1.0, 1.75]]
    """
    c = _check_cost("c", c)
    gammas = [_check_gamma(gamma) for gamma in gammas]
    alphas = [_check_alpha(alpha) for alpha in alphas]
    cost = _usable_verify_cost(verify_cost, max(gammas, default=1) + 1)
    return [[_speedup(alpha, gamma, c, cost) for alpha in alphas] for gamma in gammas]


# The course's configurations (α, γ, c). Three are the T5 drafts for T5-XXL (11B) of Leviathan et al. 2023,
# Table 2 (WMT EnDe, argmax sampling, γ = 7, batch 1 on a TPU-v4), with the c the course gives for each draft.
REFERENCE_CONFIGURATIONS = [(0.5, 3, 0.02), (0.7, 5, 0.02), (0.75, 7, 0.02), (0.8, 7, 0.04), (0.82, 7, 0.11),
                            (0.9, 10, 0.02)]
PAPER_PAIRS = {
    # (α, c): (draft, speedup the paper measured, or None where we could not check the paper's table)
    (0.75, 0.02): ("T5-small", 3.4),
    (0.8, 0.04): ("T5-base", 2.8),
    (0.82, 0.11): ("T5-large", 1.7),
}


# Chen et al. 2023 (Chinchilla 70B drafted by a 4B model, K = 4), in a round-cost model: a round costs K draft
# steps (1.8 ms each) and one target step (14.1 ms), and yields r′(K + 1) tokens, r′ being tokens per round ÷ (K + 1).
CHEN_TARGET_MS, CHEN_DRAFT_MS, CHEN_K = 14.1, 1.8, 4
CHEN_POINTS = {"HumanEval": (0.8, 2.46), "XSum": (0.62, 1.92)}  # task: (r′, the speedup the paper measured)


def r_prime_speedup(r_prime: float, k: int = CHEN_K, target_ms: float = CHEN_TARGET_MS,
                    draft_ms: float = CHEN_DRAFT_MS) -> float:
    """The round-cost model on Chen et al. 2023's timings: r′(K + 1)·t_target / (K·t_draft + t_target).

    >>> round(r_prime_speedup(0.8), 2), round(r_prime_speedup(0.62), 2)  # HumanEval and XSum, Chen et al. 2023
    (2.65, 2.05)
    """
    if not 0 <= r_prime <= 1 or k < 1 or target_ms <= 0 or draft_ms < 0:
        raise ValueError("r′ must be in [0, 1], K at least 1, and the step times positive")
    return r_prime * (k + 1) * target_ms / (k * draft_ms + target_ms)


def chen_markdown(live_r_prime: float | None = None) -> str:
    """The two Chen et al. 2023 points, predicted by the round-cost model against what the paper measured."""
    lines = ["| task | r′ | predicted r′(K+1)·14.1 / (K·1.8 + 14.1) | measured (Chen et al.) |", "|---|---|---|---|"]
    lines += [f"| {task} | {r:.2f} | {r_prime_speedup(r):.2f}× | {measured:.2f}× |"
              for task, (r, measured) in CHEN_POINTS.items()]
    if live_r_prime is not None:
        lines.append(f"| what-if: your last live run's r′ at Chinchilla's costs | {live_r_prime:.2f} | "
                     f"{r_prime_speedup(live_r_prime):.2f}× | |")
    return ("**Recorded: Chen et al. 2023's timings in a round-cost model, with a what-if row for your run** "
            "(Chinchilla 70B drafted by a 4B model, K = 4, a "
            "draft step 1.8 ms, a target step 14.1 ms): a round costs K draft steps and one target step and yields "
            "r′(K + 1) tokens, r′ = tokens per round ÷ (K + 1), so the speedup is r′(K + 1)·t_target / (K·t_draft + "
            "t_target), with r′ read from the paper's acceptance figures. The model predicts a little "
            "more than was measured: it leaves out the verify forward's extra cost and the overheads.\n\n"
            + "\n".join(lines))


def reference_table() -> list[dict]:
    """One plain dict per reference configuration, every number computed here by `readout` (ĉ = c), plus the
    paper's measured speedup where known. Rows: name, draft, alpha, gamma, c, expected_tokens, speedup, best_gamma,
    best_speedup, viable, gamma_one_bound, operations_factor, paper_measured_speedup."""
    rows = []
    for alpha, gamma, c in REFERENCE_CONFIGURATIONS:
        draft, measured = PAPER_PAIRS.get((alpha, c), (None, None))
        computed = readout(alpha, gamma, c)
        rows.append({
            "name": f"{draft} → T5-XXL (Leviathan et al.)" if draft else "course configuration",
            "draft": draft, "alpha": alpha, "gamma": gamma, "c": c,
            **{key: computed[key] for key in ("expected_tokens", "speedup", "best_gamma", "best_speedup", "viable",
                                              "gamma_one_bound", "operations_factor")},
            "paper_measured_speedup": measured,
        })
    return rows


def _speedup(alpha: float, gamma: int, c: float, cost: VerifyCost | None) -> float:
    return theory.speedup(alpha, gamma, c) if cost is None else theory.speedup_with_verify_cost(alpha, gamma, c, cost)


def _usable_verify_cost(verify_cost: VerifyCost | None, max_k: int) -> VerifyCost | None:
    """A measured dict made to cover k = 1..max_k; functions are used as they are."""
    if verify_cost is None or callable(verify_cost):
        return verify_cost
    if isinstance(verify_cost, Mapping):
        return extend_verify_cost(verify_cost, max_k)
    raise ValueError(f"verify_cost must be a dict k -> v(k) or a function of k, got {type(verify_cost).__name__}")


def validate_inputs(alpha, gamma, c) -> tuple[float, int, float]:
    """(α, γ, c) as (float, int, float), or ValueError saying which is wrong: α in [0, 1], γ an integer >= 1, c >= 0."""
    return _check_alpha(alpha), _check_gamma(gamma), _check_cost("c", c)


def _check_alpha(alpha) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha (the acceptance rate) must be a number in [0, 1], got {alpha!r}")
    return float(alpha)


def _check_gamma(gamma) -> int:
    """An integer >= 1; an integral float (a slider's 3.0) is accepted, 2.5 is not."""
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or not math.isfinite(gamma) or gamma < 1 \
            or not float(gamma).is_integer():
        raise ValueError(f"gamma (drafted tokens per round) must be an integer >= 1, got {gamma!r}")
    return int(gamma)


def _check_cost(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} (draft step cost relative to a target step) must be a finite number >= 0, got {value!r}")
    return float(value)
