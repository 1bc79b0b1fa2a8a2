"""labs/theory/oracle_gamma.py and its figure: the oracle's closed form against a seeded simulation of its rounds, the best
fixed γ against a brute-force search, and Leviathan et al. 2023's "up to 60%" against the grid's largest gain."""

import math
import random

import pytest

from specviz.labs.theory import oracle_gamma, oracle_gamma_figures


def fixed_speedup_by_hand(alpha, gamma, c):
    return sum(alpha**i for i in range(gamma + 1)) / (gamma * c + 1)  # γ = 0: plain decoding, 1


def simulate_oracle(alpha, c, rounds, seed):
    """Rounds of the oracle: the draft's tokens pass an acceptance test with probability α each until the first
    failure; the oracle drafts just the n that pass (n·c) and the target's forward (1) adds one token."""
    rng = random.Random(seed)
    tokens = cost = 0.0
    for _ in range(rounds):
        accepted = 0
        while rng.random() < alpha:
            accepted += 1
        tokens += accepted + 1
        cost += c * accepted + 1
    return tokens / cost


def simulation_standard_error(alpha, c, rounds):
    """Delta method for Σ(n + 1) / Σ(cn + 1): Var(n) = α / (1 − α)², and T − S·C = n(1 − Sc) + (1 − S)."""
    speedup = 1 / (1 - alpha + c * alpha)
    mean_cost = 1 + c * alpha / (1 - alpha)
    return abs(1 - speedup * c) * math.sqrt(alpha) / (1 - alpha) / mean_cost / math.sqrt(rounds)


@pytest.mark.parametrize("alpha, c", [(0.5, 0.1), (0.8, 0.05), (0.9, 0.02)])
def test_closed_form_matches_a_seeded_simulation_of_the_oracle(alpha, c):
    rounds = 60_000
    simulated = simulate_oracle(alpha, c, rounds, seed=25)
    error = simulation_standard_error(alpha, c, rounds)
    assert simulated == pytest.approx(oracle_gamma.oracle_speedup(alpha, c), abs=4 * error)
    # The simulation tells the oracle from the best fixed γ: they differ by many standard errors.
    assert abs(simulated - oracle_gamma.best_fixed(alpha, c)[0]) > 10 * error


@pytest.mark.parametrize("alpha, c", [(0.0, 0.1), (0.3, 0.5), (0.8, 0.05), (0.9, 0.02), (0.98, 0.03), (0.5, 2.0)])
def test_best_fixed_gamma_is_the_brute_force_maximum_with_plain_decoding_as_gamma_0(alpha, c):
    speedups = [fixed_speedup_by_hand(alpha, gamma, c) for gamma in range(0, 400)]
    top = max(speedups)
    speedup, gamma = oracle_gamma.best_fixed(alpha, c)
    assert speedup == pytest.approx(top, rel=1e-12)
    assert gamma == min(g for g, s in enumerate(speedups) if s >= top * (1 - 1e-12))
    if c <= 1:  # drafting an accepted token costs c <= 1 and saves a target step: never worse than plain
        assert oracle_gamma.oracle_gain(alpha, c) >= 1 - 1e-12
    else:  # a draft step dearer than a target step: the oracle still drafts, and loses to plain decoding
        assert oracle_gamma.oracle_gain(alpha, c) < 1


def test_largest_gain_is_the_seeds_up_to_60_percent():
    gain, alpha, c = oracle_gamma.largest_gain()
    assert 1.5 < gain < 1.65
    assert (alpha, c) == pytest.approx((0.98, 0.03))
    assert gain == pytest.approx(1 / (1 - 0.98 + 0.03 * 0.98) / max(
        fixed_speedup_by_hand(0.98, g, 0.03) for g in range(200)))
    # Finer: the gain grows towards about 1.58 as α → 1 with c ≈ 1.4(1 − α), never reaching 1.6.
    assert 1.575 < oracle_gamma.oracle_gain(0.999, 0.0014) < 1.59
    assert oracle_gamma.oracle_gain(0.999, 0.0014) > gain


def test_gain_tends_to_1_as_c_tends_to_0_and_is_1_at_alpha_0():
    for alpha in (0.5, 0.8, 0.98):
        gains = [oracle_gamma.oracle_gain(alpha, c) for c in (1e-2, 1e-3, 1e-4, 1e-6)]
        assert gains == sorted(gains, reverse=True)  # falling as c falls
        assert gains[-1] < 1.001
        assert oracle_gamma.oracle_gain(alpha, 0.0) == 1.0  # c = 0: the fixed γ's supremum 1 / (1 − α)
        assert oracle_gamma.best_fixed(alpha, 0.0) == (pytest.approx(1 / (1 - alpha)), None)
    assert oracle_gamma.oracle_gain(0.0, 0.2) == 1.0  # nothing is ever accepted: both decode plainly


@pytest.mark.parametrize("alpha, c", [(1.0, 0.1), (-0.1, 0.1), (1.2, 0.1), (0.5, -0.01), (0.5, float("nan")),
                                      (0.5, float("inf")), ("0.5", 0.1), (True, 0.1)])
def test_bad_inputs_raise_value_error(alpha, c):
    with pytest.raises(ValueError):
        oracle_gamma.oracle_gain(alpha, c)
    with pytest.raises(ValueError):
        oracle_gamma.oracle_speedup(alpha, c)


def test_bad_grid_step_raises():
    for step in (0, -0.1, 0.9):
        with pytest.raises(ValueError):
            oracle_gamma.largest_gain(step)


def test_figure_marks_the_live_point_and_the_theory_tab_says_the_numbers():
    figure = oracle_gamma_figures.oracle_gain_figure(0.75, 0.02)
    names = [trace.name for trace in figure.data]
    assert names[:5] == ["c = 0.01", "c = 0.03", "c = 0.05", "c = 0.1", "c = 0.2"]
    assert "your c = 0.020" in names
    live = figure.data[names.index("α = 0.75, c = 0.020")]
    assert live.y[0] == pytest.approx(oracle_gamma.oracle_speedup(0.75, 0.02) / max(
        fixed_speedup_by_hand(0.75, g, 0.02) for g in range(200)))
    sentence = oracle_gamma.gain_sentence(0.75, 0.02)
    assert "3.774×" in sentence and "γ = 9" in sentence and "1.572×" in sentence and "α = 0.98, c = 0.03" in sentence
    assert "plain decoding (γ = 0)" in oracle_gamma.gain_sentence(0.1, 0.5)
