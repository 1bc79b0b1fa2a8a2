"""The course's (seed 002's) remaining worked examples that no other tab shows, recomputed by specviz's own code:
Lesson 5's correction at the rejected third draft, Lesson 6's α over two prefixes, and Lesson 7's bigram bound.

Lesson 2's example is in specviz.labs.course_exercises.exercises; Lessons 3 and 4 are Sampling-lab presets; Lesson 7's
T5 figures are the Theory tab's reference rows. Each function returns its figures and the steps as markdown, like
course.py's answers.

>>> lesson_6_worked_example()["alpha"]
0.6
"""

from __future__ import annotations

from specviz.core import theory
from specviz.labs.sampling_lab import rejection

LESSON_5_TARGET_3, LESSON_5_DRAFT_3 = [0.1, 0.1, 0.1, 0.7], [0.2, 0.2, 0.3, 0.3]  # p₃ and q₃ over A, B, C, D
LESSON_6_PREFIXES = [([0.5, 0.3, 0.2], [0.3, 0.4, 0.3]), ([0.7, 0.2, 0.1], [0.1, 0.6, 0.3])]  # (p, q) per prefix
BIGRAM_ALPHA, BIGRAM_COST = 0.2, 0.0  # the paper's bigram draft for T5-XXL: α ≈ 0.2 at c ≈ 0


def _vector(values, digits: int = 1) -> str:
    return "[" + ", ".join(f"{value:.{digits}f}" for value in values) + "]"


def lesson_5_worked_example() -> dict:
    """The third draft is rejected: the correction comes from norm(max(0, p₃ − q₃)) = norm([0, 0, 0, .4]) = D."""
    facts = rejection.overlap(LESSON_5_TARGET_3, LESSON_5_DRAFT_3)
    positive = [max(0.0, p - q) for p, q in zip(LESSON_5_TARGET_3, LESSON_5_DRAFT_3)]
    differences = ", ".join(f"{p:g} − {q:g}" for p, q in zip(LESSON_5_TARGET_3, LESSON_5_DRAFT_3))
    markdown = (f"At the rejected position, p₃ = {LESSON_5_TARGET_3} and q₃ = {LESSON_5_DRAFT_3}.\n\n"
                f"1. max(0, p₃ − q₃) = max(0, [{differences}]) = **{_vector(positive)}**, whose mass "
                f"{facts['residual_mass']:.1f} is 1 − β = 1 − {facts['beta']:.1f}.\n"
                f"2. Normalised: p′ = **{_vector(facts['residual_probs'])}**, so the correction is always D: the only "
                "token the draft under-weights.")
    return dict(positive_part=positive, residual_probs=facts["residual_probs"], markdown=markdown)


def lesson_6_worked_example() -> dict:
    """β per prefix by the Sampling lab's overlap, and α as their mean (both prefixes equally likely): (.8 + .4)/2."""
    betas = [rejection.overlap(target, draft)["beta"] for target, draft in LESSON_6_PREFIXES]
    lines = [f"{i}. p = {target}, q = {draft}: β{i} = Σ min(p, q) = "
             f"{' + '.join(f'{min(p, q):g}' for p, q in zip(target, draft))} = **{beta:.1f}**"
             for i, ((target, draft), beta) in enumerate(zip(LESSON_6_PREFIXES, betas), start=1)]
    alpha = round(sum(betas) / len(betas), 12)
    markdown = ("\n".join(lines) + f"\n\nWith both prefixes equally likely, α = E(β) = ({' + '.join(f'{b:.1f}' for b in betas)})"
                f" / {len(betas)} = **{alpha:g}**: the prefix where the models disagree pulls α down.")
    return dict(betas=betas, alpha=alpha, markdown=markdown)


def bigram_bound() -> dict:
    """Corollary 3.9 at γ = 1 for a bigram draft: (1 + α)/(1 + c) = 1.2/1.0 = 1.2× when α = 0.2 and c ≈ 0."""
    bound = theory.gamma_one_bound(BIGRAM_ALPHA, BIGRAM_COST)
    markdown = (f"A bigram draft costs almost nothing (c ≈ {BIGRAM_COST:g}) and matches T5-XXL with α ≈ {BIGRAM_ALPHA:g}. "
                f"α > c, so speculative decoding helps; at γ = 1 the speedup is (1 + α)/(1 + c) = "
                f"{1 + BIGRAM_ALPHA:.1f} / {1 + BIGRAM_COST:.1f} = **{bound:.2f}×**. With free drafts a longer γ only "
                f"helps: E climbs towards 1/(1 − α) = {1 / (1 - BIGRAM_ALPHA):.2f} tokens per target call.")
    return dict(bound=bound, markdown=markdown)
