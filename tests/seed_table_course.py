"""The seed table's rows for seed 002's course items that the course tab and the project section show: Lesson 2's
worked standardization example, Lesson 3's pairs (Sampling-lab presets), the seven "Apply" exercises, and every
printed figure of the hands-on project's Experiments 1-4. The course prints no answers to its exercises: their rows
have the seed value "—". Each `expected` is the arithmetic done by hand here, not read back from specviz.

Values that pass through the sampler's float32 Standardizer are compared to 6 decimals.
"""

from __future__ import annotations

import math

from specviz import theory
from specviz.labs import course, course_project, course_worked, rejection
from specviz.labs.seed_checks import SeedRow

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


def _exp3(gamma: int, key: str) -> float:
    """Experiment 3's exact figures at the models' β: tokens per round E, α, and the speedup E / (γc + 1)."""
    beta = course_project.experiment_3_beta()
    return {"tokens": theory.expected_tokens(beta, gamma), "alpha": beta,
            "speedup": theory.speedup(beta, gamma, course_project.EXPERIMENT_3_COST)}[key]


BETA_08 = ("Both models roll their vectors by the same shift, len(prefix) mod 8, so β = Σ min(p, q) = .25 + .20 + .15 + "
           ".08 + .05 + .03 + .02 + .02 = 0.80 at every position")
EXP3_SETTLES = {  # (γ, figure) -> the arithmetic; SE = sd of the capped geometric law / √1000
    (3, "tokens"): BETA_08 + ", so E = (1 − 0.8⁴)/0.2 = 2.952; 1000 rounds have a standard error of 0.038, and 2.68 "
                             "lies 7.1 of them below.",
    (5, "tokens"): BETA_08 + ", so E = (1 − 0.8⁶)/0.2 = 3.689; the standard error is 0.062, and 3.31 lies 6.1 of "
                             "them below.",
    (7, "tokens"): BETA_08 + ", so E = (1 − 0.8⁸)/0.2 = 4.161; the standard error is 0.082, and 3.62 lies 6.6 of "
                             "them below.",
    (3, "alpha"): BETA_08 + ": every estimate of α tends to 0.80. Read as accepted / drafted it is (E − 1)/γ = "
                            "0.651 at γ = 3, 0.538 at 5, 0.452 at 7: never 0.72 three times.",
    (3, "empirical"): "E/(γc + 1) = 2.952 / 1.06 = 2.785 at β = 0.80. The printed 2.53 is the printed 2.68 / 1.06, "
                      "itself 7 standard errors low.",
    (5, "empirical"): "E/(γc + 1) = 3.689 / 1.10 = 3.354 at β = 0.80. Even the printed 3.31 tokens give 3.31 / 1.10 = "
                      "3.01, not 2.99.",
    (7, "empirical"): "E/(γc + 1) = 4.161 / 1.14 = 3.650 at β = 0.80. Even the printed 3.62 tokens give 3.62 / 1.14 = "
                      "3.18, not 3.13.",
    (3, "theoretical"): "compute_speedup at the models' α = 0.80: 2.952 / 1.06 = 2.785. The printed 2.48 is the "
                        "formula at α ≈ 0.7245, an α the models cannot give.",
    (5, "theoretical"): "compute_speedup at α = 0.80: 3.689 / 1.10 = 3.354. The printed 2.89 does not even follow from "
                        "the printed α: any α printing as 0.72 gives 2.76 to 2.83.",
    (7, "theoretical"): "compute_speedup at α = 0.80: 4.161 / 1.14 = 3.650. The printed 3.09 does not even follow from "
                        "the printed α: any α printing as 0.72 gives 2.87 to 2.95.",
}
EXP3_PRINTED = {3: ("2.68", "0.72", "2.53x", "2.48x"), 5: ("3.31", "0.72", "2.99x", "2.89x"),
                7: ("3.62", "0.72", "3.13x", "3.09x")}


def _experiment_3_rows() -> list[SeedRow]:
    rows = []
    for gamma, (tokens, alpha, empirical, theoretical) in EXP3_PRINTED.items():
        exact = (1 - 0.8 ** (gamma + 1)) / 0.2
        rows += [
            SeedRow(seed="002", where=f"gamma={gamma}: avg_tokens/iter={tokens}",
                    what=f"Experiment 3, γ = {gamma}: mean tokens per round of its rolled models", seed_value=tokens,
                    specviz_value=lambda g=gamma: _exp3(g, "tokens"), expected=exact, agrees=False,
                    settles=EXP3_SETTLES[(gamma, "tokens")]),
            SeedRow(seed="002", where=f"avg_alpha={alpha}, empirical={empirical}",
                    what=f"Experiment 3, γ = {gamma}: avg α of its rolled models", seed_value=alpha,
                    specviz_value=lambda g=gamma: _exp3(g, "alpha"), expected=0.8, agrees=False,
                    settles=EXP3_SETTLES[(3, "alpha")]),
            SeedRow(seed="002", where=f"empirical={empirical}, theoretical={theoretical}",
                    what=f"Experiment 3, γ = {gamma}: empirical speedup, tokens / (γc + 1), c = 0.02",
                    seed_value=empirical, specviz_value=lambda g=gamma: _exp3(g, "speedup"),
                    expected=exact / (gamma * 0.02 + 1), agrees=False, settles=EXP3_SETTLES[(gamma, "empirical")]),
            SeedRow(seed="002", where=f"empirical={empirical}, theoretical={theoretical}",
                    what=f"Experiment 3, γ = {gamma}: theoretical speedup", seed_value=theoretical,
                    specviz_value=lambda g=gamma: _exp3(g, "speedup"), expected=exact / (gamma * 0.02 + 1),
                    agrees=False, settles=EXP3_SETTLES[(gamma, "theoretical")]),
        ]
    return rows


EXP2_SETTLES = {
    (0.7, 5, 0.02): ("(1 − 0.7⁶)/0.3 = (1 − 0.117649)/0.3 = 2.941, not 2.88",
                     "2.941 / (5 × 0.02 + 1) = 2.941 / 1.10 = 2.674, not 2.62 (2.62 is the wrong 2.88 / 1.10)"),
    (0.8, 7, 0.04): ("(1 − 0.8⁸)/0.2 = (1 − 0.167772)/0.2 = 4.161, not 4.40",
                     "4.161 / (7 × 0.04 + 1) = 4.161 / 1.28 = 3.251, not 3.33"),
    (0.82, 7, 0.11): ("(1 − 0.82⁸)/0.18 = (1 − 0.204414)/0.18 = 4.420, not 4.76; the course's own Lesson 7 works it "
                      "to 0.796 / 0.18 = 4.42", ""),
}
EXP2_PRINTED = {(0.5, 3, 0.02): ("1.88", "1.77x"), (0.7, 5, 0.02): ("2.88", "2.62x"), (0.75, 7, 0.02): ("3.60", "3.16x"),
                (0.8, 7, 0.04): ("4.40", "3.33x"), (0.82, 7, 0.11): ("4.76", "2.50x"), (0.9, 10, 0.02): ("6.86", "5.72x")}


def _experiment_2_rows() -> list[SeedRow]:
    """Each printed row of Experiment 2: its tokens per iteration and its speedup, as the Theory tab's formulas give."""
    rows = []
    for (alpha, gamma, c), (tokens, speedup) in EXP2_PRINTED.items():
        where = f"{alpha:<8}{gamma:<8}{c:<8}{tokens}"  # the printed row (whitespace is normalised)
        exact = (1 - alpha ** (gamma + 1)) / (1 - alpha)
        tokens_settles, speedup_settles = EXP2_SETTLES.get((alpha, gamma, c), ("", ""))
        rows += [
            SeedRow(seed="002", where=" ".join(where.split()), what=f"Experiment 2: E at α = {alpha}, γ = {gamma}",
                    seed_value=tokens, specviz_value=lambda a=alpha, g=gamma: theory.expected_tokens(a, g),
                    expected=exact, agrees=not tokens_settles, settles=tokens_settles),
            SeedRow(seed="002", where=" ".join(where.split()) + f" {speedup}",
                    what=f"Experiment 2: speedup at α = {alpha}, γ = {gamma}, c = {c}", seed_value=speedup,
                    specviz_value=lambda a=alpha, g=gamma, cost=c: theory.speedup(a, g, cost),
                    expected=exact / (gamma * c + 1), agrees=not speedup_settles, settles=speedup_settles),
        ]
    return rows


def _experiment_4_rows() -> list[SeedRow]:
    """Each printed row of Experiment 4: viable when α > c, with the γ = 1 bound (1 + α)/(1 + c)."""
    rows = []
    for (alpha, c), printed in zip(course_project.EXPERIMENT_4_PAIRS, ("1.08x", "1.24x", "1.47x", "1.72x", "N/A")):
        viable = alpha > c
        rows.append(SeedRow(
            seed="002", where=f"{alpha} {c} {'Yes' if viable else 'No'} {printed}",
            what=f"Experiment 4: the γ = 1 speedup at α = {alpha}, c = {c} (N/A when α ≤ c)", seed_value=printed,
            specviz_value=lambda a=alpha, cost=c: theory.gamma_one_bound(a, cost) if theory.is_viable(a, cost) else "N/A",
            expected=(1 + alpha) / (1 + c) if viable else "N/A", agrees=True, settles=""))
    return rows


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

EXPERIMENT_1_ROWS = [
    SeedRow(seed="002", where="Acceptance rate (beta): 0.780", what="Experiment 1: β = Σ min(p, q)", seed_value="0.780",
            specviz_value=lambda: course_project.run_project()["experiment_1"]["beta"], expected=0.8, agrees=False,
            settles="Σ min(p, q) = .20 + .20 + .15 + .10 + .07 + .04 + .02 + .02 = 0.80."),
    SeedRow(seed="002", where="Max absolute error: 0.0025",
            what="Experiment 1: the largest max |empirical − p| its printed frequencies allow", seed_value="0.0025",
            specviz_value=course_project.printed_error_bound, expected=0.001 + 0.0005, agrees=False,
            settles="Each printed frequency is within 0.001 of p and rounded to 3 decimals (±0.0005), so the error is "
                    "at most 0.0015; an error of 0.0025 would print as a gap of at least 0.002."),
    SeedRow(seed="002", where="Distribution match: PASS", what="Experiment 1: max error < 0.01 over 100,000 samples",
            seed_value="PASS",
            specviz_value=lambda: "PASS" if course_project.run_project()["experiment_1"]["max_error"] < 0.01 else "FAIL",
            expected="PASS", agrees=True, settles=""),
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
COURSE_ROWS: list[SeedRow] = (LESSON_2_ROWS + PAIR_ROWS + EXERCISE_ROWS + WORKED_ROWS + EXPERIMENT_1_ROWS + _experiment_2_rows()
                              + _experiment_3_rows() + _experiment_4_rows())
