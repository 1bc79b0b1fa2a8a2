"""The seed table's rows for seed 002's course items that the "Course exercises" tab and the Simulated models tab's
project section show: Lesson 2's worked standardization example, Lesson 3's pairs (Sampling-lab presets), the seven
"Apply" exercises, the worked examples of Lessons 5-7, and (from rows_course_project.py) every printed figure of
the hands-on project's Experiments 1-4. The course prints no answers to its exercises: their rows have the seed
value "—". Each `expected` is the arithmetic done by hand here, not read back from specviz.

Values that pass through the sampler's float32 Standardizer are compared to 6 decimals. docs/sources-checked.md shows
COURSE_ROWS after the rows of rows.py; tests/test_seed_table.py runs over both.
"""

from __future__ import annotations

import math

from specviz.labs.course_exercises import exercises as course
from specviz.labs.course_exercises import worked as course_worked
from specviz.labs.sampling_lab import rejection
from tests.sources.checks import SeedRow
from tests.sources.rows_course_project import PROJECT_ROWS

EXPERIMENT_1 = "Course, experiment 1: the distribution check"
LESSON_3_WORKED = "Course, lesson 3: worked example (M = 5/3)"
LESSON_3_MARBLES = "Course, lesson 3: the marble bags"
LESSON_3_APPLY = "Course, lesson 3 exercise (M = 3)"


def _six(values) -> tuple:
    return tuple(round(value, 6) for value in values)


def _preset(name: str, key: str) -> tuple:
    return tuple(rejection.PRESETS[name][key])


def _classical(name: str, key: str):
    preset = rejection.PRESETS[name]
    return rejection.classical_rejection(preset["target_probs"], preset["draft_probs"], preset["vocab"])[key]


def _kept_probability(name: str, token: int) -> float:
    """Classical rejection's p(x) / (M q(x)) for a proposed token, from the lab's envelope M·q."""
    preset = rejection.PRESETS[name]
    return preset["target_probs"][token] / _classical(name, "envelope")[token]


LESSON_2_T_HALF = tuple(round(p * p / 0.285, 6) for p in course.LESSON_2_PROBS)  # T = 0.5: p² / Σ p², Σ p² = 0.285
LESSON_2_ROWS = [
    SeedRow(seed="002", where="Token 1 is always selected", what="Lesson 2: argmax-standardized p", seed_value=
            "[1.0, 0.0, 0.0, 0.0, 0.0]", specviz_value=lambda: tuple(course.lesson_2_worked_example()["argmax_probs"]),
            expected=(1.0, 0.0, 0.0, 0.0, 0.0), agrees=True, settles=""),
    SeedRow(seed="002", where="The logits are", what="Lesson 2: the logits log p",
            seed_value="[-0.916, -1.204, -1.897, -2.303, -2.996]",
            specviz_value=lambda: tuple(course.lesson_2_worked_example()["logits"]),
            expected=tuple(math.log(p) for p in course.LESSON_2_PROBS), agrees=True, settles=""),
    SeedRow(seed="002", where="Divide by 0.5:", what="Lesson 2: log p / 0.5",
            seed_value="[-1.832, -2.408, -3.794, -4.606, -5.992]",
            specviz_value=lambda: tuple(course.lesson_2_worked_example()["scaled_logits"]),
            expected=tuple(2 * math.log(p) for p in course.LESSON_2_PROBS), agrees=False,
            settles="2 ln 0.4 = −1.8326, 2 ln 0.1 = −4.6052, 2 ln 0.05 = −5.9915: −1.833, −4.605 and −5.991 to three "
                    "decimals. The course doubled its rounded logits (2 × −0.916 = −1.832)."),
    SeedRow(seed="002", where="Normalize (divide by sum 0.285)", what="Lesson 2: Σ exp(log p / 0.5) = Σ p²",
            seed_value="0.285", specviz_value=lambda: course.lesson_2_worked_example()["exp_sum"],
            expected=0.16 + 0.09 + 0.0225 + 0.01 + 0.0025, agrees=True, settles=""),
    SeedRow(seed="002", where="token 1 went from 0.4 to 0.561", what="Lesson 2: p at T = 0.5",
            seed_value="[0.561, 0.316, 0.077, 0.035, 0.011]",
            specviz_value=lambda: _six(course.lesson_2_worked_example()["temperature_probs"]),
            expected=LESSON_2_T_HALF, agrees=False,
            settles="p² / Σ p²: 0.0225 / 0.285 = 0.079 and 0.0025 / 0.285 = 0.009. The course rounded the exponentials "
                    "to 0.022 and 0.003 first: 0.022 / 0.285 = 0.077, 0.003 / 0.285 = 0.011."),
    SeedRow(seed="002", where="Normalize by dividing by 0.7", what="Lesson 2: top-2 p", seed_value=
            "[0.571, 0.429, 0, 0, 0]", specviz_value=lambda: _six(course.lesson_2_worked_example()["top_k_probs"]),
            expected=_six((0.4 / 0.7, 0.3 / 0.7, 0.0, 0.0, 0.0)), agrees=True, settles=""),
]

PAIR_ROWS = [
    SeedRow(seed="002", where="p = np.array([0.35, 0.25, 0.15, 0.10, 0.07, 0.04, 0.02, 0.02])",
            what="Experiment 1's p, a Sampling-lab preset", seed_value="[0.35, 0.25, 0.15, 0.10, 0.07, 0.04, 0.02, 0.02]",
            specviz_value=lambda: _preset(EXPERIMENT_1, "target_probs"),
            expected=(0.35, 0.25, 0.15, 0.10, 0.07, 0.04, 0.02, 0.02), agrees=True, settles=""),
    SeedRow(seed="002", where="q = np.array([0.20, 0.20, 0.20, 0.15, 0.10, 0.08, 0.05, 0.02])",
            what="Experiment 1's q, a Sampling-lab preset", seed_value="[0.20, 0.20, 0.20, 0.15, 0.10, 0.08, 0.05, 0.02]",
            specviz_value=lambda: _preset(EXPERIMENT_1, "draft_probs"),
            expected=(0.20, 0.20, 0.20, 0.15, 0.10, 0.08, 0.05, 0.02), agrees=True, settles=""),
    SeedRow(seed="002", where="50% red, 30% blue, 20% green", what="Lesson 3: the target marble bag, a preset",
            seed_value="[50%, 30%, 20%]", specviz_value=lambda: _preset(LESSON_3_MARBLES, "target_probs"),
            expected=(0.5, 0.3, 0.2), agrees=True, settles=""),
    SeedRow(seed="002", where="40% red, 40% blue, 20% green", what="Lesson 3: the proposal bag, a preset",
            seed_value="[40%, 40%, 20%]", specviz_value=lambda: _preset(LESSON_3_MARBLES, "draft_probs"),
            expected=(0.4, 0.4, 0.2), agrees=True, settles=""),
    SeedRow(seed="002", where="Target: \\(p = [0.5, 0.3, 0.1, 0.1]\\) over vocabulary",
            what="Lesson 3's worked p (and Lesson 4's), a preset", seed_value="[0.5, 0.3, 0.1, 0.1]",
            specviz_value=lambda: _preset(LESSON_3_WORKED, "target_probs"), expected=(0.5, 0.3, 0.1, 0.1), agrees=True,
            settles=""),
    SeedRow(seed="002", where="Proposal: \\(q = [0.3, 0.3, 0.2, 0.2]\\)", what="Lesson 3's worked q, a preset",
            seed_value="[0.3, 0.3, 0.2, 0.2]", specviz_value=lambda: _preset(LESSON_3_WORKED, "draft_probs"),
            expected=(0.3, 0.3, 0.2, 0.2), agrees=True, settles=""),
    SeedRow(seed="002", where="\\max(1.667, 1.0, 0.5, 0.5) = 1.667", what="Lesson 3: M = max p/q",
            seed_value="1.667", specviz_value=lambda: _classical(LESSON_3_WORKED, "bound"), expected=0.5 / 0.3,
            agrees=True, settles=""),
    SeedRow(seed="002", where="So 40% of proposals are wasted", what="Lesson 3: classical acceptance 1/M",
            seed_value="0.6", specviz_value=lambda: _classical(LESSON_3_WORKED, "acceptance"), expected=0.6,
            agrees=True, settles=""),
    SeedRow(seed="002", where="Always accept.", what="Lesson 3: P(keep A) = p(A) / (M q(A))", seed_value="1.0",
            specviz_value=lambda: _kept_probability(LESSON_3_WORKED, 0), expected=1.0, agrees=True, settles=""),
    SeedRow(seed="002", where="Reject 70% of the time", what="Lesson 3: P(keep C) = p(C) / (M q(C))",
            seed_value="0.3", specviz_value=lambda: _kept_probability(LESSON_3_WORKED, 2), expected=0.3, agrees=True,
            settles=""),
    SeedRow(seed="002", where="Given target \\(p = [0.6, 0.3, 0.1]\\) and proposal",
            what="Lesson 3 exercise's p, a preset", seed_value="[0.6, 0.3, 0.1]",
            specviz_value=lambda: _preset(LESSON_3_APPLY, "target_probs"), expected=(0.6, 0.3, 0.1), agrees=True,
            settles=""),
    SeedRow(seed="002", where="and proposal \\(q = [0.2, 0.5, 0.3]\\)", what="Lesson 3 exercise's q, a preset",
            seed_value="[0.2, 0.5, 0.3]", specviz_value=lambda: _preset(LESSON_3_APPLY, "draft_probs"),
            expected=(0.2, 0.5, 0.3), agrees=True, settles=""),
]


EXERCISE_ROWS = [
    SeedRow(seed="002", where="A model with 70 billion parameters uses 16-bit",
            what="Lesson 1 exercise: one read of 140 GB at 2 TB/s (s)", seed_value="—",
            specviz_value=lambda: course.lesson_1_exercise()["read_seconds"], expected=140e9 / 2e12, agrees=True,
            settles=""),
    SeedRow(seed="002", where="what is the minimum walltime for the weight reads alone?",
            what="Lesson 1 exercise: 100 tokens' reads (s)", seed_value="—",
            specviz_value=lambda: course.lesson_1_exercise()["total_seconds"], expected=100 * 0.07, agrees=True,
            settles=""),
    SeedRow(seed="002", where="and top-3 sampling, compute the adjusted distribution",
            what="Lesson 2 exercise: top-3 of [.5, .2, .15, .1, .05]", seed_value="—",
            specviz_value=lambda: _six(course.lesson_2_exercise()["top_k_probs"]),
            expected=_six((0.5 / 0.85, 0.2 / 0.85, 0.15 / 0.85, 0.0, 0.0)), agrees=True, settles=""),
    SeedRow(seed="002", where="Then compute the adjusted distribution for temperature",
            what="Lesson 2 exercise: T = 2, ∝ √p", seed_value="—",
            specviz_value=lambda: _six(course.lesson_2_exercise()["temperature_probs"]),
            expected=_six(tuple(math.sqrt(p) / sum(math.sqrt(x) for x in (0.5, 0.2, 0.15, 0.1, 0.05))
                                for p in (0.5, 0.2, 0.15, 0.1, 0.05))), agrees=True, settles=""),
    SeedRow(seed="002", where="compute \\(M\\) and the overall acceptance probability", what="Lesson 3 exercise: M",
            seed_value="—", specviz_value=lambda: course.lesson_3_exercise()["bound"], expected=0.6 / 0.2, agrees=True,
            settles=""),
    SeedRow(seed="002", where="compute \\(M\\) and the overall acceptance probability",
            what="Lesson 3 exercise: acceptance 1/M", seed_value="—",
            specviz_value=lambda: course.lesson_3_exercise()["acceptance"], expected=1 / 3, agrees=True, settles=""),
    SeedRow(seed="002", where="causing low acceptance?", what="Lesson 3 exercise: the bottleneck token (max p/q)",
            seed_value="—", specviz_value=lambda: course.lesson_3_exercise()["bottleneck"], expected="A", agrees=True,
            settles=""),
    SeedRow(seed="002", where="Given \\(p = [0.6, 0.25, 0.15]\\) and \\(q = [0.3, 0.5, 0.2]\\)",
            what="Lesson 4 exercise: β", seed_value="—", specviz_value=lambda: course.lesson_4_exercise()["beta"],
            expected=0.3 + 0.25 + 0.15, agrees=True, settles=""),
    SeedRow(seed="002", where="Given \\(p = [0.6, 0.25, 0.15]\\) and \\(q = [0.3, 0.5, 0.2]\\)",
            what="Lesson 4 exercise: p′ = norm(max(0, p − q))", seed_value="—",
            specviz_value=lambda: tuple(course.lesson_4_exercise()["residual_probs"]), expected=(1.0, 0.0, 0.0),
            agrees=True, settles=""),
    SeedRow(seed="002", where="the acceptance probability for each token individually",
            what="Lesson 4 exercise: min(1, p/q) per token", seed_value="—",
            specviz_value=lambda: tuple(course.lesson_4_exercise()["accept_probs"]), expected=(1.0, 0.25 / 0.5, 0.15 / 0.2),
            agrees=True, settles=""),
    SeedRow(seed="002", where="determine \\(n\\), the output tokens, and the distribution",
            what="Lesson 5 exercise: n", seed_value="—",
            specviz_value=lambda: course.lesson_5_exercise()["accepted_count"], expected=2.0, agrees=True, settles=""),
    SeedRow(seed="002", where="determine \\(n\\), the output tokens, and the distribution",
            what="Lesson 5 exercise: the accepted tokens (then one more)", seed_value="—",
            specviz_value=lambda: tuple(course.lesson_5_exercise()["accepted_tokens"]), expected=("B", "A"),
            agrees=True, settles=""),
    SeedRow(seed="002", where="the distribution used to sample the correction token",
            what="Lesson 5 exercise: the last token's distribution (bonus, p₃)", seed_value="—",
            specviz_value=lambda: tuple(course.lesson_5_exercise()["next_probs"]), expected=(0.5, 0.3, 0.2),
            agrees=True, settles=""),
    SeedRow(seed="002", where="compute \\(\\beta\\) and \\(D_{LK}(p, q)\\)", what="Lesson 6 exercise (course tab): β",
            seed_value="—", specviz_value=lambda: course.lesson_6_exercise()["beta"], expected=0.7 + 0.1 + 0.05 + 0.05,
            agrees=True, settles=""),
    SeedRow(seed="002", where="compute \\(\\beta\\) and \\(D_{LK}(p, q)\\)",
            what="Lesson 6 exercise (course tab): D_LK = Σ|p − (p + q)/2|", seed_value="—",
            specviz_value=lambda: course.lesson_6_exercise()["divergence"], expected=0.05 + 0.025 + 0.025 + 0.0,
            agrees=True, settles=""),
    SeedRow(seed="002", where="after argmax standardization", what="Lesson 6 exercise (course tab): β after argmax",
            seed_value="—", specviz_value=lambda: course.lesson_6_exercise()["greedy_beta"], expected=1.0, agrees=True,
            settles=""),
    SeedRow(seed="002", where="Compute the expected tokens per iteration",
            what="Lesson 7 exercise: E at α = 0.7, γ = 5", seed_value="—",
            specviz_value=lambda: course.lesson_7_exercise()["rows"][0]["expected_tokens"], expected=(1 - 0.7**6) / 0.3,
            agrees=True, settles=""),
    SeedRow(seed="002", where="the walltime cost per iteration", what="Lesson 7 exercise: cost γc + 1 at γ = 5",
            seed_value="—", specviz_value=lambda: course.lesson_7_exercise()["rows"][0]["cost"], expected=1.15,
            agrees=True, settles=""),
    SeedRow(seed="002", where="and the speedup factor", what="Lesson 7 exercise: speedup at γ = 5, c = 0.03",
            seed_value="—", specviz_value=lambda: course.lesson_7_exercise()["rows"][0]["speedup"],
            expected=(1 - 0.7**6) / 0.3 / 1.15, agrees=True, settles=""),
    SeedRow(seed="002", where="Then compute the speedup at", what="Lesson 7 exercise: speedup at γ = 10",
            seed_value="—", specviz_value=lambda: course.lesson_7_exercise()["rows"][1]["speedup"],
            expected=(1 - 0.7**11) / 0.3 / 1.3, agrees=True, settles=""),
    SeedRow(seed="002", where="determine which \\(\\gamma\\) is better",
            what="Lesson 7 exercise: the better of γ = 5 and γ = 10", seed_value="—",
            specviz_value=lambda: course.lesson_7_exercise()["better_gamma"], expected=5.0, agrees=True, settles=""),
]

WORKED_ROWS = [
    SeedRow(seed="002", where="\\text{norm}([0, 0, 0, 0.4])", what="Lesson 5: max(0, p₃ − q₃) at the rejected draft",
            seed_value="[0, 0, 0, 0.4]", specviz_value=lambda: tuple(course_worked.lesson_5_worked_example()["positive_part"]),
            expected=(0.0, 0.0, 0.0, 0.7 - 0.3), agrees=True, settles=""),
    SeedRow(seed="002", where="norm}([0, 0, 0, 0.4]) = [0, 0, 0, 1.0]", what="Lesson 5: the correction distribution p′",
            seed_value="[0, 0, 0, 1.0]", specviz_value=lambda: tuple(course_worked.lesson_5_worked_example()["residual_probs"]),
            expected=(0.0, 0.0, 0.0, 1.0), agrees=True, settles=""),
    SeedRow(seed="002", where="\\min(0.2, 0.3) = 0.3 + 0.3 + 0.2 = 0.8", what="Lesson 6: β at prefix 1",
            seed_value="0.8", specviz_value=lambda: course_worked.lesson_6_worked_example()["betas"][0],
            expected=0.3 + 0.3 + 0.2, agrees=True, settles=""),
    SeedRow(seed="002", where="\\min(0.1, 0.3) = 0.1 + 0.2 + 0.1 = 0.4", what="Lesson 6: β at prefix 2",
            seed_value="0.4", specviz_value=lambda: course_worked.lesson_6_worked_example()["betas"][1],
            expected=0.1 + 0.2 + 0.1, agrees=True, settles=""),
    SeedRow(seed="002", where="\\alpha = E(\\beta) = \\frac{0.8 + 0.4}{2} = 0.6", what="Lesson 6: α = E(β) over the two",
            seed_value="0.6", specviz_value=lambda: course_worked.lesson_6_worked_example()["alpha"], expected=0.6,
            agrees=True, settles=""),
    SeedRow(seed="002", where="frac{1.2}{1.0} = 1.2\\)x speedup", what="Lesson 7: a bigram draft's γ = 1 speedup",
            seed_value="1.2x", specviz_value=lambda: course_worked.bigram_bound()["bound"], expected=1.2 / 1.0,
            agrees=True, settles=""),
]

# Every course item the course tab and the project section show, in the course's order.
COURSE_ROWS: list[SeedRow] = LESSON_2_ROWS + PAIR_ROWS + EXERCISE_ROWS + WORKED_ROWS + PROJECT_ROWS
