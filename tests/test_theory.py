"""Theory: closed forms checked against independent computations (sums over the geometric law, brute force)."""

import math

import pytest

from specviz import theory


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
