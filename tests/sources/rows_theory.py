"""The seed table's rows for seed 002 figures that the app quotes outside the course tab: Lesson 4's worked example
(the Sampling lab's functions), Lesson 6's D_LK exercise (the glossary), Lesson 7's worked example (the Theory tab's
reference rows), its Figure 5 (the execution trace) and its oracle-γ claim (the Theory tab's oracle section).

The course's hands-on experiments, its Lesson 2 example and its "Apply" exercises are checked with the course tab.
"""

from __future__ import annotations

from specviz.labs import glossary
from specviz.labs.sampling_lab import rejection
from specviz.labs.theory import calculator, execution_trace, oracle_gamma
from tests.sources.checks import SeedRow

LESSON_4_TARGET, LESSON_4_DRAFT = [0.5, 0.3, 0.1, 0.1], [0.3, 0.4, 0.2, 0.1]  # over A, B, C, D
LESSON_4_VOCAB = ["A", "B", "C", "D"]


def lesson_4_step(draft_uniform: float = 0.5, r: float = 0.81) -> str:
    """Lesson 4, step 3: the draft proposes B (a uniform of 0.5 lands on B under q), r = 0.81 tests it; the token
    output, through the Sampling lab's one-step function."""
    step = rejection.speculative_step(LESSON_4_TARGET, LESSON_4_DRAFT, uniforms=[draft_uniform, r, 0.5])
    if LESSON_4_VOCAB[step["draft_token"]] != "B":
        return f"the draft proposed {LESSON_4_VOCAB[step['draft_token']]}, not B"
    return LESSON_4_VOCAB[step["output_token"]]


def _lesson_4(key: str):
    return rejection.overlap(LESSON_4_TARGET, LESSON_4_DRAFT)[key]


def reference_row(alpha: float, gamma: int, c: float) -> dict:
    """The Theory tab's reference row of this configuration."""
    return next(row for row in calculator.reference_table()
                if (row["alpha"], row["gamma"], row["c"]) == (alpha, gamma, c))


SEED_002_THEORY_ROWS = [
    SeedRow(seed="002", where="So 80% of proposals are accepted", what="Lesson 4: β = Σ min(p, q)",
            seed_value="0.8", specviz_value=lambda: _lesson_4("beta"), expected=0.8, agrees=True, settles=""),
    SeedRow(seed="002", where="Notice the normalizing constant is", what="Lesson 4: Σ max(0, p − q) = 1 − β",
            seed_value="1 - 0.8 = 0.2", specviz_value=lambda: _lesson_4("residual_mass"), expected=0.2,
            agrees=True, settles=""),
    SeedRow(seed="002", where="Sum = 0.2. Normalized:", what="Lesson 4: the correction distribution p′",
            seed_value="[1.0, 0.0, 0.0, 0.0]", specviz_value=lambda: tuple(_lesson_4("residual_probs")),
            expected=(1.0, 0.0, 0.0, 0.0), agrees=True, settles=""),
    SeedRow(seed="002", where="= 0.3/0.4 = 0.75", what="Lesson 4: probability of accepting the draft B",
            seed_value="0.75", specviz_value=lambda: rejection.acceptance_table(LESSON_4_TARGET, LESSON_4_DRAFT)[1],
            expected=0.75, agrees=True, settles=""),
    SeedRow(seed="002", where="we reject B and sample from", what="Lesson 4: the token output after r = 0.81 rejects B",
            seed_value="A", specviz_value=lesson_4_step, expected="A", agrees=True, settles=""),
    SeedRow(seed="002", where="compute \\(\\beta\\) and \\(D_{LK}(p, q)\\)",
            what="Lesson 6 exercise, in the glossary: β of p = [0.8, 0.1, 0.05, 0.05], q = [0.7, 0.15, 0.1, 0.05]",
            seed_value="—", specviz_value=lambda: glossary.dlk_exercise()["beta"], expected=0.9, agrees=True,
            settles=""),
    SeedRow(seed="002", where="compute \\(\\beta\\) and \\(D_{LK}(p, q)\\)", what="Lesson 6 exercise: D_LK = 1 − β",
            seed_value="—", specviz_value=lambda: glossary.dlk_exercise()["dlk"], expected=0.1, agrees=True,
            settles=""),
    SeedRow(seed="002", where="after argmax standardization", what="Lesson 6 exercise: β after argmax",
            seed_value="—", specviz_value=lambda: glossary.dlk_exercise()["beta_argmax"], expected=1.0,
            agrees=True, settles=""),
    SeedRow(seed="002", where="\\frac{0.900}{0.25} = 3.60", what="Lesson 7: E for α = 0.75, γ = 7 (T5-small)",
            seed_value="3.60", specviz_value=lambda: reference_row(0.75, 7, 0.02)["expected_tokens"],
            expected=(1 - 0.75**8) / 0.25, agrees=True, settles=""),
    SeedRow(seed="002", where="\\frac{3.60}{1.14} = 3.16", what="Lesson 7: speedup for α = 0.75, γ = 7, c = 0.02",
            seed_value="3.16x", specviz_value=lambda: reference_row(0.75, 7, 0.02)["speedup"],
            expected=(1 - 0.75**8) / 0.25 / 1.14, agrees=True, settles=""),
    SeedRow(seed="002", where="The paper measured 3.4x empirically", what="Lesson 7: T5-small's measured speedup",
            seed_value="3.4x", specviz_value=lambda: reference_row(0.75, 7, 0.02)["paper_measured_speedup"],
            expected=3.4, agrees=True, settles=""),
    SeedRow(seed="002", where="\\frac{1.75}{1.02} = 1.72", what="Lesson 7: the γ = 1 guarantee (1 + α)/(1 + c)",
            seed_value="1.72x", specviz_value=lambda: reference_row(0.75, 7, 0.02)["gamma_one_bound"],
            expected=1.75 / 1.02, agrees=True, settles=""),
    SeedRow(seed="002", where="\\frac{0.796}{0.319} = 2.50", what="Lesson 7: speedup for α = 0.82, γ = 7, c = 0.11 "
            "(T5-large)", seed_value="2.50x", specviz_value=lambda: reference_row(0.82, 7, 0.11)["speedup"],
            expected=(1 - 0.82**8) / (0.18 * 1.77), agrees=True, settles=""),
    SeedRow(seed="002", where="The paper measured 1.7x.", what="Lesson 7: T5-large's measured speedup",
            seed_value="1.7x", specviz_value=lambda: reference_row(0.82, 7, 0.11)["paper_measured_speedup"],
            expected=1.7, agrees=True, settles=""),
    SeedRow(seed="002", where="speculative decoding with gamma=7. Middle: gamma=3.",
            what="Lesson 7's Figure 5: the γ of its two speculative rows (the Theory tab's execution trace)",
            seed_value="[7, 3]", specviz_value=lambda: execution_trace.PAPER_GAMMAS, expected=(7, 3), agrees=True,
            settles=""),
    SeedRow(seed="002", where="could improve the speedup by up to 60%",
            what="oracle γ's largest gain over the best fixed γ (α, c on a 0.01 grid), to the nearest 10%",
            seed_value="60%", specviz_value=lambda: round(oracle_gamma.largest_gain()[0] - 1, 1), expected=0.6,
            agrees=True, settles=""),
]
