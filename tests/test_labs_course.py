"""The course's (seed 002's) exercises, Lesson 2's worked example, its Sampling-lab presets and its hands-on project:
each answer against the arithmetic done by hand here, and the project's models against their exact law."""

import itertools
import math

import numpy as np
import pytest
import torch

from specviz.core import theory
from specviz.labs.course_exercises import exercises as course
from specviz.labs.course_exercises import project as course_project
from specviz.labs.course_exercises import project_text
from specviz.labs.course_exercises import worked as course_worked
from specviz.labs.course_exercises.presets import COURSE_PRESETS
from specviz.labs.sampling_lab import rejection


def test_lesson_1_weight_reads_of_a_70b_model_at_2_tb_s():
    answer = course.lesson_1_exercise()
    assert answer["read_seconds"] == pytest.approx(70e9 * 2 / 2e12) == pytest.approx(0.07)
    assert answer["total_seconds"] == pytest.approx(100 * 0.07)
    assert "140 GB" in answer["markdown"] and "70 ms" in answer["markdown"] and "7 s" in answer["markdown"]


def test_lesson_2_exercise_top_3_and_temperature_2():
    probs = [0.5, 0.2, 0.15, 0.1, 0.05]
    answer = course.lesson_2_exercise()
    assert answer["top_k_probs"] == pytest.approx([0.5 / 0.85, 0.2 / 0.85, 0.15 / 0.85, 0, 0], abs=1e-6)
    roots = [math.sqrt(p) for p in probs]  # exp(log p / 2) = √p
    assert answer["temperature_probs"] == pytest.approx([r / sum(roots) for r in roots], abs=1e-6)
    assert "[0.588, 0.235, 0.176, 0.000, 0.000]" in answer["markdown"]


def test_lesson_2_worked_example_and_the_courses_rounding_slip():
    probs = course.LESSON_2_PROBS
    answer = course.lesson_2_worked_example()
    assert answer["argmax_probs"] == [1.0, 0.0, 0.0, 0.0, 0.0]
    squares = [p * p for p in probs]  # T = 0.5: exp(2 log p) = p²
    assert answer["exp_sum"] == pytest.approx(0.285)
    assert answer["temperature_probs"] == pytest.approx([s / 0.285 for s in squares], abs=1e-6)
    assert answer["top_k_probs"] == pytest.approx([4 / 7, 3 / 7, 0, 0, 0], abs=1e-6)
    # The course prints 0.077 and 0.011: .0225/.285 = 0.0789 and .0025/.285 = 0.0088 say otherwise.
    assert answer["differing_entries"] == [2, 4]
    assert [round(v, 3) for v in answer["temperature_probs"]] == [0.561, 0.316, 0.079, 0.035, 0.009]
    assert "0.079" in answer["markdown"] and "0.077" in answer["markdown"]


def test_lesson_3_exercise_m_is_3_and_a_is_the_bottleneck():
    answer = course.lesson_3_exercise()
    assert answer["bound"] == pytest.approx(3.0)  # p/q = [.6/.2, .3/.5, .1/.3]
    assert answer["acceptance"] == pytest.approx(1 / 3)
    assert answer["bottleneck"] == "A"
    assert answer["beta"] == pytest.approx(0.2 + 0.3 + 0.1)


def test_lesson_4_exercise_beta_residual_and_per_token_acceptance():
    answer = course.lesson_4_exercise()
    assert answer["beta"] == pytest.approx(0.3 + 0.25 + 0.15)
    assert answer["residual_probs"] == pytest.approx([1.0, 0.0, 0.0])  # max(0, p − q) = [.3, 0, 0]
    assert answer["accept_probs"] == pytest.approx([1.0, 0.25 / 0.5, 0.15 / 0.2])


def test_lesson_5_exercise_accepts_both_drafts_and_draws_the_bonus_from_p3():
    answer = course.lesson_5_exercise()
    assert answer["accept_probs"] == pytest.approx([0.4 / 0.5, 0.4 / 0.6])  # r = .6 < .8 and r = .5 < .667
    assert answer["accepted_count"] == 2 and answer["accepted_tokens"] == ["B", "A"]
    assert answer["next_kind"] == "bonus" and answer["next_probs"] == pytest.approx([0.5, 0.3, 0.2])


def test_lesson_6_exercise_beta_dlk_and_argmax():
    answer = course.lesson_6_exercise()
    assert answer["beta"] == pytest.approx(0.7 + 0.1 + 0.05 + 0.05)
    assert answer["divergence"] == pytest.approx(0.1) == pytest.approx(1 - answer["beta"])
    assert answer["greedy_beta"] == 1.0


def test_lesson_7_exercise_gamma_5_beats_gamma_10():
    answer = course.lesson_7_exercise()
    five, ten = answer["rows"]
    assert five["expected_tokens"] == pytest.approx((1 - 0.7**6) / 0.3) and five["cost"] == pytest.approx(1.15)
    assert five["speedup"] == pytest.approx((1 - 0.7**6) / 0.3 / 1.15)  # 2.558
    assert ten["speedup"] == pytest.approx((1 - 0.7**11) / 0.3 / 1.3)  # 2.513
    assert answer["better_gamma"] == 5
    brute = max(range(1, 65), key=lambda g: (1 - 0.7 ** (g + 1)) / 0.3 / (g * 0.03 + 1))
    assert answer["best_gamma"] == brute == 7


def test_the_remaining_worked_examples_of_lessons_5_6_and_7():
    fifth = course_worked.lesson_5_worked_example()
    assert fifth["positive_part"] == pytest.approx([0, 0, 0, 0.4])  # max(0, [.1 − .2, .1 − .2, .1 − .3, .7 − .3])
    assert fifth["residual_probs"] == pytest.approx([0, 0, 0, 1])
    sixth = course_worked.lesson_6_worked_example()
    assert sixth["betas"] == pytest.approx([0.3 + 0.3 + 0.2, 0.1 + 0.2 + 0.1]) and sixth["alpha"] == pytest.approx(0.6)
    assert course_worked.bigram_bound()["bound"] == pytest.approx(1.2)

def test_every_exercise_renders_and_an_unknown_one_is_refused():
    for title in course.EXERCISES:
        assert "**" in course.exercise_markdown(title)
    with pytest.raises(ValueError, match="unknown exercise"):
        course.exercise_markdown("Lesson 8")


def test_course_pairs_are_sampling_lab_presets_and_their_notes_hold():
    assert set(COURSE_PRESETS) <= set(rejection.PRESETS)
    first = rejection.PRESETS["Course, experiment 1: the distribution check"]
    assert first["target_probs"] == [0.35, 0.25, 0.15, 0.10, 0.07, 0.04, 0.02, 0.02]
    assert first["draft_probs"] == [0.20, 0.20, 0.20, 0.15, 0.10, 0.08, 0.05, 0.02]
    expected = {  # name -> (β, M), by hand
        "Course, experiment 1: the distribution check": (0.80, 0.35 / 0.20),
        "Course, lesson 3: the marble bags": (0.9, 0.5 / 0.4),
        "Course, lesson 3: worked example (M = 5/3)": (0.8, 5 / 3),
        "Course, lesson 3 exercise (M = 3)": (0.6, 3.0),
        "Course, lesson 4 exercise": (0.7, 2.0),
    }
    for name, (beta, bound) in expected.items():
        preset = rejection.PRESETS[name]
        classical = rejection.classical_rejection(preset["target_probs"], preset["draft_probs"], preset["vocab"])
        assert (classical["beta"], classical["bound"]) == (pytest.approx(beta), pytest.approx(bound)), name
        assert len(preset["vocab"]) == len(preset["target_probs"]) == len(preset["draft_probs"])
    worked = rejection.PRESETS["Course, lesson 3: worked example (M = 5/3)"]
    envelope = rejection.classical_rejection(worked["target_probs"], worked["draft_probs"])["envelope"]
    assert worked["target_probs"][2] / envelope[2] == pytest.approx(0.3)  # a drawn C is kept with probability 0.3


def test_experiment_3_models_have_beta_0_8_at_every_shift():
    for shift in range(2 * course_project.VOCAB_SIZE):
        target = course_project.rolled(course_project.EXPERIMENT_3_TARGET_BASE, shift)
        draft = course_project.rolled(course_project.EXPERIMENT_3_DRAFT_BASE, shift)
        assert float(np.minimum(target, draft).sum()) == pytest.approx(0.8)
    assert course_project.experiment_3_beta() == 0.8
    assert course_project.tokens_sd(0.8, 3) == pytest.approx(math.sqrt(10.184 - 2.952**2))  # E[n²] = .2+.64+1.152+8.192


class _ScriptedGenerator:
    """Stands in for the course's np.random.Generator: hands out the given uniforms in the order they are asked for."""

    def __init__(self, values):
        self.values = list(values)

    def random(self, size=None):
        return self.values.pop(0) if size is None else np.array([self.values.pop(0) for _ in range(size)])


def _round_law(prefix_length: int, gamma: int, monkeypatch) -> tuple[list[float], torch.Tensor]:
    """(P(k drafts accepted) for k = 0..γ, the law of the round's first token [V]) of the course's
    speculative_round as written, enumerated: every draft sequence (each x_i drawn at the middle of its inverse-CDF
    interval, weight q_i(x_i)), every k (r_i = 0 for i < k, r_k = a_k, the a_i read from verify itself), and the
    distribution verify draws the last token from."""
    seen, verify = [], course_project.verify
    monkeypatch.setattr(course_project, "verify", lambda *args, **kwargs: seen.append(verify(*args, **kwargs)) or seen[-1])
    accepted_law, first_law = [0.0] * (gamma + 1), torch.zeros(course_project.VOCAB_SIZE, dtype=torch.float64)
    drafts = [torch.from_numpy(course_project.rolled(course_project.EXPERIMENT_3_DRAFT_BASE, prefix_length + i))
              for i in range(gamma)]
    for tokens in itertools.product(range(course_project.VOCAB_SIZE), repeat=gamma):
        weight = math.prod(float(drafts[i][token]) for i, token in enumerate(tokens))
        if weight == 0:
            continue
        middles = [float(drafts[i][:token].sum() + drafts[i][token] / 2) for i, token in enumerate(tokens)]
        course_project.speculative_round(prefix_length, gamma, _ScriptedGenerator(middles + [0.0] * gamma + [0.0]))
        accept = seen[-1].accept_probs
        for k in range(gamma + 1):
            stops = weight * (1 - accept[k]) if k < gamma else weight
            checks = [0.0] * k + ([accept[k]] if k < gamma else []) + [0.0] * (gamma - k - 1)
            accepted, emitted = course_project.speculative_round(prefix_length, gamma,
                                                                 _ScriptedGenerator(middles + checks + [0.0]))
            assert accepted == k and emitted[:k] == list(tokens[:k])
            accepted_law[k] += stops
            first_law += stops * (seen[-1].next_probs.double() if k == 0 else torch.nn.functional.one_hot(
                torch.tensor(tokens[0]), course_project.VOCAB_SIZE).double())
            weight *= accept[k] if k < gamma else 1
    return accepted_law, first_law


@pytest.mark.parametrize("gamma,prefix_length", [(1, 1), (1, 6), (2, 3)])
def test_experiment_3_s_round_as_written_has_the_exact_law(gamma, prefix_length, monkeypatch):
    """The capped geometric law at α = β = 0.8 for the tokens per round, and the target's p for the first token."""
    accepted_law, first_law = _round_law(prefix_length, gamma, monkeypatch)
    beta = course_project.experiment_3_beta()
    assert accepted_law == pytest.approx(theory.tokens_per_round_distribution(beta, gamma), abs=1e-9)
    assert sum((k + 1) * p for k, p in enumerate(accepted_law)) == pytest.approx(theory.expected_tokens(beta, gamma))
    target = torch.from_numpy(course_project.rolled(course_project.EXPERIMENT_3_TARGET_BASE, prefix_length))
    assert torch.allclose(first_law, target.double(), atol=1e-9)


def test_experiment_3_s_printed_tokens_per_round_lie_over_5_standard_errors_below_the_exact_law():
    beta = course_project.experiment_3_beta()
    for gamma in course_project.EXPERIMENT_3_GAMMAS:
        se = course_project.tokens_sd(beta, gamma) / math.sqrt(course_project.EXPERIMENT_3_ROUNDS)
        printed = course_project.PRINTED_EXPERIMENT_3[gamma]["tokens"]
        assert (printed - theory.expected_tokens(beta, gamma)) / se < -5


@pytest.mark.slow  # 2 × 3,000 rounds of the course's code; the fast tier enumerates its round's law (above)
def test_experiment_3_run_as_written_follows_the_exact_law_and_not_the_printed_output():
    rows = course_project.experiment_3_rows()
    assert [row["exact_tokens"] for row in rows] == [2.952, 3.689, 4.161]
    for row in rows:
        assert abs(row["run_tokens_z"]) < 4  # our run of the course's code sits on the exact law
        assert row["printed_tokens_z"] < -5  # the printed tokens per round lie over 5 standard errors below it
        assert row["run_alpha_tested"] == pytest.approx(0.8, abs=0.03)
        assert row["exact_theoretical"] == pytest.approx(row["exact_tokens"] / (row["gamma"] * 0.02 + 1), abs=1e-3)
    first = course_project.experiment_1(np.random.default_rng(course_project.PROJECT_SEED))
    assert course_project.run_project()["experiment_1"] == first  # what the fast tests read in its place
    for run in course_project.run_project()["experiment_3"]:  # every round yields accepted + 1 tokens
        assert run["alpha_drafted"] * run["gamma"] == pytest.approx(run["tokens"] - 1)
    assert course_project.run_project(7) != course_project.run_project(42)


def test_experiment_1_beta_and_the_error_bound_of_the_printed_frequencies():
    first = course_project.experiment_1(np.random.default_rng(course_project.PROJECT_SEED))  # run_project's first draws
    assert first["beta"] == pytest.approx(0.8) != course_project.PRINTED_EXPERIMENT_1["beta"]
    assert first["max_error"] < 0.01  # the course's PASS test
    assert sum(first["empirical"]) == pytest.approx(1.0)
    assert course_project.printed_error_bound() == pytest.approx(0.0015)


def test_experiments_2_and_4_row_by_row():
    agreements = [row["agrees"] for row in course_project.experiment_2_rows()]
    assert agreements == [True, False, True, False, False, True]  # α = 0.7, 0.8 and 0.82 are misprinted
    fourth = course_project.experiment_4_rows()
    assert all(row["agrees"] for row in fourth)
    assert [row["min_speedup"] for row in fourth] == [1.08, 1.24, 1.47, 1.72, None]


@pytest.fixture
def short_project_run(monkeypatch):
    """run_project with 50 rounds per γ in place of the course's 1,000 (seconds), for tests of the page's printed and
    exact figures, which do not depend on the run; its cache is emptied before and after, so no other test sees it.
    The run as written is checked in the slow tier (test_experiment_3_run_as_written_...)."""
    simulate = course_project.simulate
    monkeypatch.setattr(course_project, "simulate", lambda gamma, rng: simulate(gamma, rng, rounds=50))
    course_project.run_project.cache_clear()
    yield
    course_project.run_project.cache_clear()


def test_project_markdown_shows_printed_and_recomputed_figures(short_project_run):
    text = project_text.project_markdown()
    for figure in ("0.780", "**0.800**", "2.941", "4.161", "2.952", "0.72", "**0.80**", "1.08          x"):
        assert figure in text, figure


def test_course_tab_and_the_project_section_build(short_project_run):
    gradio = pytest.importorskip("gradio")
    from specviz.app.tabs.course_exercises import course_project_section, course_tab, exercise_view

    with gradio.Blocks():
        course_tab()
        course_project_section()
    assert "n = 2" in exercise_view("Lesson 5 exercise: one round with γ = 2")
