"""labs/theory/calculator.py and calculator_figures.py: every number re-derived here by hand-written formulas, never by
calling specviz.core.theory."""

import math

import pytest

from specviz.labs.theory import calculator, calculator_figures


def expected_tokens_by_hand(alpha, gamma):
    return sum(alpha**i for i in range(gamma + 1))  # 1 + α + .. + α^γ: the geometric sum, also right at α = 1


def speedup_by_hand(alpha, gamma, c, verify=None):
    cost = 1.0 if verify is None else verify[gamma + 1]
    return expected_tokens_by_hand(alpha, gamma) / (gamma * c + cost)


def best_gamma_by_hand(alpha, c, verify=None, max_gamma=64):
    speedups = {g: speedup_by_hand(alpha, g, c, verify) for g in range(1, max_gamma + 1)}
    top = max(speedups.values())
    return min(g for g, s in speedups.items() if s == top)


COURSE = [(0.5, 3, 0.02), (0.7, 5, 0.02), (0.75, 7, 0.02), (0.8, 7, 0.04), (0.82, 7, 0.11), (0.9, 10, 0.02)]


def test_reference_table_rows_are_the_course_configurations_with_the_paper_values():
    rows = calculator.reference_table()
    assert [(r["alpha"], r["gamma"], r["c"]) for r in rows] == COURSE
    measured = {r["draft"]: r["paper_measured_speedup"] for r in rows if r["draft"]}
    assert measured == {"T5-small": 3.4, "T5-base": 2.8, "T5-large": 1.7}  # Leviathan et al., Table 2
    assert all(r["paper_measured_speedup"] is None for r in rows if r["draft"] is None)


def test_seed_004s_cost_model_gives_chen_et_als_predictions():
    assert calculator.r_prime_speedup(0.8) == pytest.approx(2.65, abs=0.005)  # HumanEval; measured 2.46
    assert calculator.r_prime_speedup(0.62) == pytest.approx(2.05, abs=0.005)  # XSum; measured 1.92
    table = calculator.chen_markdown(live_r_prime=0.5)
    for number in ("2.65×", "2.46×", "2.05×", "1.92×", "| 0.80 |", "| 0.62 |", "your last live run"):
        assert number in table
    with pytest.raises(ValueError, match="r′ must be in"):
        calculator.r_prime_speedup(1.5)


@pytest.mark.parametrize("row", calculator.reference_table(), ids=lambda r: f"{r['alpha']}-{r['gamma']}-{r['c']}")
def test_reference_table_numbers_match_hand_formulas(row):
    alpha, gamma, c = row["alpha"], row["gamma"], row["c"]
    assert row["expected_tokens"] == pytest.approx(expected_tokens_by_hand(alpha, gamma))
    assert row["speedup"] == pytest.approx(speedup_by_hand(alpha, gamma, c))
    assert row["best_gamma"] == best_gamma_by_hand(alpha, c)
    assert row["best_speedup"] == pytest.approx(speedup_by_hand(alpha, row["best_gamma"], c))
    assert row["gamma_one_bound"] == pytest.approx((1 + alpha) / (1 + c))
    assert row["operations_factor"] == pytest.approx((1 - alpha) * (gamma * c + gamma + 1) / (1 - alpha ** (gamma + 1)))
    assert row["viable"] is (alpha > c)


def test_reference_table_known_values():
    by_alpha = {r["alpha"]: r for r in calculator.reference_table()}
    assert by_alpha[0.5]["expected_tokens"] == pytest.approx(1.875)  # 1 + .5 + .25 + .125
    assert by_alpha[0.5]["speedup"] == pytest.approx(1.875 / 1.06)
    assert by_alpha[0.75]["speedup"] == pytest.approx(3.1575, abs=1e-4)  # below the paper's measured 3.4
    assert by_alpha[0.9]["best_gamma"] == 19  # beyond the 1..16 the figures draw


def test_readout_with_measured_verify_cost():
    verify = {1: 1.0, 2: 1.1, 3: 1.3, 4: 1.5, 5: 1.7}
    result = calculator.readout(0.8, 4, 0.05, verify_cost=verify)
    extended = calculator.extend_verify_cost(verify, 65)
    assert result["speedup_with_verify_cost"] == pytest.approx(expected_tokens_by_hand(0.8, 4) / (4 * 0.05 + 1.7))
    assert result["speedup"] == pytest.approx(speedup_by_hand(0.8, 4, 0.05))  # the paper's form stays v = 1
    assert result["best_gamma"] == best_gamma_by_hand(0.8, 0.05, extended)
    assert result["best_speedup"] == pytest.approx(speedup_by_hand(0.8, result["best_gamma"], 0.05, extended))
    assert result["cost_model"] == "measured v(k)"
    assert result["best_gamma"] < calculator.readout(0.8, 4, 0.05)["best_gamma"]  # costly verify: draft fewer


def test_gpu_like_cost_is_the_paper_assumption():
    plain = calculator.readout(0.7, 5, 0.03)
    flat = calculator.readout(0.7, 5, 0.03, verify_cost=calculator.GPU_LIKE_VERIFY_COST)
    assert plain["speedup_with_verify_cost"] is None and plain["cost_model"] == "v(k) = 1 (GPU-like)"
    assert flat["speedup_with_verify_cost"] == pytest.approx(plain["speedup"])
    assert flat["best_gamma"] == plain["best_gamma"] and flat["cost_model"] == plain["cost_model"]


def test_readout_takes_c_hat_for_the_operations_factor():
    result = calculator.readout(0.75, 7, 0.02, c_hat=0.007)
    assert result["operations_factor"] == pytest.approx(0.25 * (7 * 0.007 + 8) / (1 - 0.75**8))
    assert result["speedup"] == pytest.approx(speedup_by_hand(0.75, 7, 0.02))  # c_hat leaves time alone


def test_extend_verify_cost_interpolates_and_extrapolates_linearly():
    assert calculator.extend_verify_cost({1: 1.0, 2: 1.2, 3: 1.4}, 5) == pytest.approx({1: 1.0, 2: 1.2, 3: 1.4, 4: 1.6, 5: 1.8})
    assert calculator.extend_verify_cost({1: 1.0, 3: 1.4, 4: 9.0}, 2) == pytest.approx({1: 1.0, 2: 1.2})
    noisy_fall = calculator.extend_verify_cost({1: 1.0, 2: 1.3, 3: 1.2, 4: 1.1, 5: 1.05}, 7)
    assert noisy_fall[6] == noisy_fall[7] == pytest.approx(1.05)  # a falling tail is held, never extrapolated down
    assert list(calculator.extend_verify_cost({1: 1.0}, 3).values()) == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("bad", [{}, {2: 1.0}, {1: 1.0, 2: -1.0}, {1: float("nan")}, {0: 1.0, 1: 1.0}])
def test_extend_verify_cost_rejects_bad_measurements(bad):
    with pytest.raises(ValueError):
        calculator.extend_verify_cost(bad, 4)


def test_speedup_grid_is_rows_per_gamma():
    alphas, gammas = [0.0, 0.3, 0.6, 0.95, 1.0], [1, 2, 7, 16]
    grid = calculator.speedup_grid(0.04, alphas, gammas)
    assert len(grid) == len(gammas) and all(len(row) == len(alphas) for row in grid)
    for i, gamma in enumerate(gammas):
        for j, alpha in enumerate(alphas):
            assert grid[i][j] == pytest.approx(speedup_by_hand(alpha, gamma, 0.04))
    assert calculator.speedup_grid(0, [0, 0.5], [1, 2]) == [[1.0, 1.5], [1.0, 1.75]]


@pytest.mark.parametrize("alpha,gamma,c", [
    (-0.1, 3, 0.1), (1.1, 3, 0.1), (float("nan"), 3, 0.1), ("0.5", 3, 0.1),
    (0.5, 0, 0.1), (0.5, 2.5, 0.1), (0.5, True, 0.1), (0.5, -1, 0.1), (0.5, float("inf"), 0.1),
    (0.5, 3, -0.01), (0.5, 3, float("inf")), (0.5, 3, None),
])
def test_bad_inputs_raise_value_error_naming_the_input(alpha, gamma, c):
    with pytest.raises(ValueError) as error:
        calculator.readout(alpha, gamma, c)
    named = "alpha" if not (isinstance(alpha, float) and 0 <= alpha <= 1) else "gamma" if gamma != 3 else "c"
    assert str(error.value).startswith(f"{named} (")


def test_integral_float_gamma_is_accepted():
    assert calculator.readout(0.6, 3.0, 0.1)["gamma"] == 3
    with pytest.raises(ValueError):
        calculator.speedup_grid(0.1, [0.5], [0])


# ---------------------------------------------------------------- figures


def test_heatmap_draws_the_grid_with_white_at_one_and_the_measured_point():
    figure = calculator_figures.speedup_heatmap(0.05, measured=(0.62, 0.05, 4, 2.1))
    heatmap = figure.data[0]
    alphas, gammas = list(heatmap.x), list(heatmap.y)
    assert alphas[0] == 0.0 and alphas[-1] < 1.0 and gammas == list(range(1, 17))
    z = [list(row) for row in heatmap.z]
    assert z == calculator.speedup_grid(0.05, alphas, gammas)
    assert z[3][31] == pytest.approx(speedup_by_hand(alphas[31], 4, 0.05))
    white = [position for position, colour in heatmap.colorscale if colour == "white"]
    assert white == [pytest.approx((1 - heatmap.zmin) / (heatmap.zmax - heatmap.zmin))]
    contour = figure.data[1]
    assert contour.type == "contour" and contour.contours.start == contour.contours.end == 1.0
    point = next(trace for trace in figure.data if trace.name and trace.name.startswith("last run"))
    assert list(point.x) == [0.62] and list(point.y) == [4] and "2.10×" in point.text[0]
    assert "v(k) = 1 (GPU-like)" in figure.layout.title.text


def test_heatmap_best_gamma_line_and_measured_cost_title():
    verify = {1: 1.0, 2: 1.2, 3: 1.4}
    figure = calculator_figures.speedup_heatmap(0.2, verify_cost=verify, alpha_steps=10, max_gamma=8)
    best = next(trace for trace in figure.data if trace.name == "best γ")
    extended = calculator.extend_verify_cost(verify, 9)
    assert list(best.y) == [best_gamma_by_hand(a, 0.2, extended, max_gamma=8) for a in best.x]
    assert "measured v(k)" in figure.layout.title.text


def test_curves_one_line_per_alpha_with_best_gamma_and_measured_point():
    alphas = (0.5, 0.7, 0.9)
    figure = calculator_figures.speedup_curves(0.05, alphas=alphas, max_gamma=12, measured=(0.62, 0.05, 4, 2.1))
    for alpha in alphas:
        line = next(trace for trace in figure.data if trace.name == f"α = {alpha:.2f}")
        assert list(line.x) == list(range(1, 13))
        assert list(line.y) == pytest.approx([speedup_by_hand(alpha, g, 0.05) for g in range(1, 13)])
        star_name = f"best γ = {best_gamma_by_hand(alpha, 0.05, max_gamma=12)} for α = {alpha:.2f}"
        star = next(trace for trace in figure.data if trace.name == star_name)
        assert star.marker.symbol == "star"
    point = next(trace for trace in figure.data if trace.name and trace.name.startswith("last run"))
    assert list(point.x) == [4] and list(point.y) == [2.1]
    assert "v(k) = 1 (GPU-like)" in figure.layout.title.text


@pytest.mark.parametrize("measured", [(0.6, 0.05, 4), (1.5, 0.05, 4, 2.0), (0.6, 0.05, 4, 0.0)])
def test_figures_reject_a_bad_measured_point(measured):
    with pytest.raises(ValueError):
        calculator_figures.speedup_curves(0.05, measured=measured)


def test_no_nan_anywhere_in_the_grid_at_alpha_one():
    assert not any(math.isnan(s) for row in calculator.speedup_grid(0.1, [1.0], range(1, 17)) for s in row)


def test_the_theory_tab_shows_chens_points_and_the_live_runs_r_prime():
    from specviz.app.tabs.theory import theory_views
    from tests.builders import hand_built_trace

    chen = theory_views(0.8, 4, 0.05, False, hand_built_trace())[3]  # 2 tokens per round at γ = 4: r′ = 0.4
    assert "2.65×" in chen and "| what-if: your last live run's r′ at Chinchilla's costs | 0.40 | 1.32× |" in chen


def test_seed_002s_d_lk_exercise_is_a_preset_and_in_the_glossary():
    from specviz.labs import glossary
    from specviz.labs.sampling_lab import rejection

    preset = rejection.PRESETS["D_LK exercise (Leviathan et al.'s divergence)"]
    overlap = sum(min(a, b) for a, b in zip(preset["target_probs"], preset["draft_probs"]))
    assert overlap == pytest.approx(0.9)  # β = 1 − D_LK, D_LK = 0.1
    assert "D_LK" in dict(glossary.GLOSSARY) and "β = 1 − D_LK" in dict(glossary.GLOSSARY)["D_LK"]


def test_every_glossary_cell_is_whole():
    """A "|" inside a definition (D_LK's Σₓ |p(x) − M(x)|, TVD's ½ Σ |a − b|) is escaped, so each row has exactly
    its three cell borders and the definition reaches its end."""
    import re

    from specviz.labs import glossary

    rows = glossary.glossary_markdown().splitlines()[2:]
    assert len(rows) == len(glossary.GLOSSARY)
    for row, (term, definition) in zip(rows, glossary.GLOSSARY):
        assert len(re.findall(r"(?<!\\)\|", row)) == 3, term
        assert row.endswith(glossary.table_cell(definition) + " |"), term
    assert sum("\\|" in row for row in rows) >= 2  # D_LK and TVD hold bars


def test_the_theory_tab_draws_its_best_gamma_and_the_last_run_and_names_the_papers():
    from specviz.app.tabs.theory import theory_views
    from specviz.config import DecodeConfig
    from specviz.decoding import engine
    from tests.fakes import fake_pipeline

    text, heatmap, curves, chen, _, oracle_text, _ = theory_views(0.95, 4, 0.005, False, None)
    best = calculator.readout(0.95, 4, 0.005)["best_gamma"]
    assert best > 16 and f"best γ = **{best}**" in text
    assert max(heatmap.data[0].y) >= best and max(curves.data[0].x) >= best  # the best γ lies within the axes
    assert "Red dot" not in text and not [item for item in heatmap.data if (item.name or "").startswith("last run")]
    for words in (text, chen, oracle_text):
        assert "seed" not in words.lower()
    assert "Chen et al. 2023" in chen and "Leviathan et al. 2023" in oracle_text

    pipeline = fake_pipeline(vocab_size=6)
    trace = engine.run_speculative(pipeline, "abcab", DecodeConfig(gamma=4, max_new_tokens=30, chat=False,
                                                                    temperature=1.0))
    text, heatmap, curves, *_ = theory_views(0.75, 4, 0.02, False, trace)  # a run not compared with plain decoding
    dots = [item for figure in (heatmap, curves) for item in figure.data if (item.name or "").startswith("last run")]
    assert len(dots) == 2 and all(dot.name.endswith("× (predicted)") for dot in dots)
    assert all("not measured" in dot.hovertemplate for dot in dots)
    assert "Red dot: your last live run, at its predicted speedup" in text
