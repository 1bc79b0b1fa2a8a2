"""Theory: closed forms checked against independent computations (sums over the geometric law, brute force)."""

import math

import pytest

from specviz.core import theory


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.5, 0.8, 0.95, 1.0])
@pytest.mark.parametrize("gamma", [1, 2, 5, 10])
def test_expected_tokens_equals_mean_of_capped_geometric(alpha, gamma):
    # Tokens per round: n = 1 + (number of leading acceptances), capped at γ + 1.
    mean = sum((1 + accepted) * (alpha**accepted * (1 - alpha) if accepted < gamma else alpha**gamma)
               for accepted in range(gamma + 1))
    assert theory.expected_tokens(alpha, gamma) == pytest.approx(mean)
    probs = theory.tokens_per_round_distribution(alpha, gamma)
    assert sum(probs) == pytest.approx(1.0)
    assert sum(n * p for n, p in enumerate(probs, start=1)) == pytest.approx(mean)


def test_known_values():
    assert theory.expected_tokens(1.0, 4) == 5.0
    assert theory.expected_tokens(0.5, 3) == pytest.approx(1.875)  # 1 + .5 + .25 + .125
    assert theory.speedup(0.5, 3, 0.02) == pytest.approx(1.875 / 1.06)
    assert theory.speedup(0.8, 7, 0.04) == pytest.approx((1 - 0.8**8) / 0.2 / 1.28)
    assert theory.gamma_one_bound(0.75, 0.02) == pytest.approx(1.75 / 1.02)
    assert theory.gamma_one_bound(0.75, 0.02) == pytest.approx(theory.speedup(0.75, 1, 0.02))
    assert theory.operations_factor(0.0, 1, 0.0) == pytest.approx(2.0)  # every round wastes one token's work


@pytest.mark.parametrize("alpha,c", [(0.5, 0.02), (0.7, 0.02), (0.8, 0.04), (0.82, 0.11), (0.9, 0.02), (0.6, 0.5)])
def test_optimal_gamma_is_the_brute_force_argmax(alpha, c):
    def s(g):
        return (1 - alpha ** (g + 1)) / (1 - alpha) / (g * c + 1)
    best = max(range(1, 65), key=s)
    assert theory.optimal_gamma(alpha, c) == best
    assert isinstance(theory.optimal_gamma(alpha, c), int)


def test_viability_is_alpha_above_c():
    for alpha, c in [(0.3, 0.2), (0.2, 0.3), (0.5, 0.5)]:
        best = max(theory.speedup(alpha, g, c) for g in range(1, 65))
        assert theory.is_viable(alpha, c) == (best > 1.0 + 1e-12)


def test_verify_cost_model():
    flat = {k: 1.0 for k in range(1, 66)}
    assert theory.speedup_with_verify_cost(0.8, 4, 0.05, flat) == pytest.approx(theory.speedup(0.8, 4, 0.05))
    cpu = {1: 1.0, 2: 36 / 31, 3: 1.4, 4: 51 / 31, 5: 1.7}
    expected = theory.expected_tokens(0.8, 4) / (4 * 0.05 + 1.7)
    assert theory.speedup_with_verify_cost(0.8, 4, 0.05, cpu) == pytest.approx(expected)
    assert theory.optimal_gamma(0.8, 0.05, verify_cost=lambda k: float(k)) == 1  # cost linear in k: draft less


def test_returns_plain_python_numbers():
    assert type(theory.speedup(0.5, 3, 0.1)) is float
    assert type(theory.expected_tokens(0.5, 3)) is float
    assert not math.isnan(theory.expected_tokens(1.0, 3))
    with pytest.raises(ValueError):
        theory.expected_tokens(1.5, 3)


def test_verify_cost_table_is_read_interpolated_and_extended():
    costs = {1: 1.0, 2: 1.3, 3: 1.5, 4: 1.6, 5: 1.8}
    assert theory.verify_cost_at(costs, 3) == 1.5 and theory.verify_cost_at(lambda k: 2.0 * k, 3) == 6.0
    assert theory.verify_cost_at({1: 1.0, 5: 2.0}, 2) == pytest.approx(1.25)  # a straight line between measured sizes
    # Beyond the largest: the least-squares slope of the last four sizes, Σ(dk·dv)/Σdk² = 0.8 / 5 = 0.16.
    assert theory.verify_cost_at(costs, 7) == pytest.approx(1.8 + 0.16 * 2)
    assert theory.verify_cost_at(costs, 7, extrapolate=False) == 1.8  # held, as adaptive γ prices untried sizes
    assert theory.verify_cost_at({3: 40.0, 5: 50.0}, 1) == 40.0  # below the smallest: the smallest's cost
    assert theory.verify_cost_at({1: 1.0, 2: 1.3, 3: 1.2, 4: 1.1, 5: 1.05}, 7) == 1.05  # a falling tail is held
    assert theory.speedup_with_verify_cost(0.7, 6, 0.05, costs) == pytest.approx(
        theory.expected_tokens(0.7, 6) / (6 * 0.05 + 1.8 + 0.16 * 2))


def test_fit_line_is_least_squares():
    assert theory.fit_line([(1, 1.0), (3, 2.0), (5, 3.0)]) == (0.5, 0.5)
    slope, intercept = theory.fit_line([(0, 0.0), (1, 1.0), (2, 1.0)])  # by the normal equations: 1/2 and 1/6
    assert (slope, intercept) == (pytest.approx(0.5), pytest.approx(1 / 6))
    assert theory.fit_line([(4, 2.0), (4, 4.0)]) == (0.0, 3.0)  # one x: the flat line through the mean


def test_speedup_and_tokens_per_round_over_rounds_of_different_lengths():
    alpha, lengths, c = 0.6, [4, 1, 0, 4], 0.1
    by_hand = sum(sum(alpha**i for i in range(k + 1)) for k in lengths) / sum(k * c + 1 for k in lengths)
    assert theory.speedup_over_rounds(alpha, lengths, c) == pytest.approx(by_hand)
    assert theory.speedup_over_rounds(alpha, [3, 3, 3], c) == pytest.approx(theory.speedup(alpha, 3, c))
    assert theory.speedup_over_rounds(alpha, lengths, draft_steps=0.0) == pytest.approx(
        sum(sum(alpha**i for i in range(k + 1)) for k in lengths) / len(lengths))  # free drafting, v = 1
    counts = theory.tokens_per_round_counts(alpha, lengths)
    # k = 4: [.4, .24, .144, .0864, .1296]; k = 1: [.4, .6]; k = 0: [1]; a round of k drafts yields at most k + 1.
    law4 = [0.4, 0.24, 0.144, 0.0864, 0.6**4]
    assert counts == pytest.approx([2 * law4[0] + 0.4 + 1, 2 * law4[1] + 0.6, *[2 * p for p in law4[2:]]])
    assert sum(counts) == pytest.approx(len(lengths))
    with pytest.raises(ValueError):
        theory.speedup_over_rounds(alpha, [], c)
