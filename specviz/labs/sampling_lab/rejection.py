"""Sampling lab: classical rejection sampling against speculative sampling, on one small distribution.

In the paper's symbols (Leviathan et al. 2023, section 2.3) the target is p and the draft q; in code they are
`target_probs` and `draft_probs`. Everything returns plain data (floats, ints, lists), ready for JSON and plots.
Internally we work in float64, so the exact identities hold to ~1e-15.

Worked example ("The Japan" preset): p = [.4, .3, .2, .1], q = [.5, .25, .15, .1].
β = Σ min(p, q) = .4 + .25 + .15 + .1 = 0.9; residual p′ = norm(max(0, p − q)) = [0, .05, .05, 0] / 0.1 = [0, .5, .5, 0];
classical M = max p/q = .2/.15 = 4/3, so classical rejection keeps 1/M = 0.75 of its proposals; speculative keeps β = 0.9.
"""

from __future__ import annotations

import math
import re

import torch

from specviz.core.sampling import residual, sample_with_uniform
from specviz.core.verify import verify
from specviz.labs.course_exercises.presets import COURSE_PRESETS

PRESETS = {  # name -> vocab, target p, draft q, and what the preset teaches
    "The Japan ... (textbook)": dict(vocab=["is", "stock", "girl", "cherry"], target_probs=[0.4, 0.3, 0.2, 0.1],
                                     draft_probs=[0.5, 0.25, 0.15, 0.1], note="β = 0.9, M = 4/3: a close draft."),
    "Draft over-confident on b": dict(vocab=list("abcd"), target_probs=[0.5, 0.3, 0.1, 0.1], draft_probs=[0.3, 0.4, 0.2, 0.1],
                                      note="β = 0.8, M = 5/3; p′ is all on 'a'."),
    "Draft misses a token (q = 0)": dict(vocab=list("abcd"), target_probs=[0.4, 0.3, 0.2, 0.1], draft_probs=[0.5, 0.3, 0.2, 0.0],
                                         note="No finite M: classical rejection never yields 'd'; the residual does."),
    "Far apart": dict(vocab=list("abcd"), target_probs=[0.05, 0.05, 0.6, 0.3], draft_probs=[0.7, 0.1, 0.1, 0.1],
                      note="β = 0.3 but 1/M = 1/6: classical needs 6 proposals per sample."),
    "D_LK exercise (Leviathan et al.'s divergence)": dict(vocab=list("abcd"), target_probs=[0.8, 0.1, 0.05, 0.05],
                                     draft_probs=[0.7, 0.15, 0.1, 0.05],
                                     note="D_LK = 1 − Σ min(p, q) = 0.1, so β = 0.9; by argmax (T = 0) both pick 'a': β = 1."),
    "Identical p and q": dict(vocab=list("abcd"), target_probs=[0.4, 0.3, 0.2, 0.1], draft_probs=[0.4, 0.3, 0.2, 0.1],
                              note="β = 1: nothing is rejected, so only the wrong-q′ mistake can show."),
    **COURSE_PRESETS,  # the course's pairs: experiment 1, lesson 3's three, lesson 4's (labs/course_exercises/presets.py)
}

MISTAKES = {  # name -> what the buggy sampler does differently
    "accept_if_r_greater": "accepts when r > min(1, p/q) instead of r < min(1, p/q)",
    "resample_from_target": "on rejection draws from p instead of the residual norm(max(0, p − q))",
    "wrong_draft": "tests (and repairs) with a q′ that is not the q the draft was drawn from (uniform by default)",
}
MAX_SAMPLES = 1_000_000


def mistake_choices() -> list[tuple[str, str]]:
    """The mistakes as (sentence shown, identifier sent) pairs for a radio: 'Accepts when r > min(1, p/q) ...'."""
    return [(what[:1].upper() + what[1:], name) for name, what in MISTAKES.items()]


def parse_distribution(text: str, size: int | None = None) -> tuple[list[float], str | None]:
    """Parse "0.4, 0.3, .2 .1" (commas, semicolons or spaces) into a distribution; returns (probs, note).

    The numbers are always divided by their sum. `note` is None when the sum was already 1 (within 1e-6), else
    a sentence saying it was rescaled, for the UI to show: "40 30 20 10" -> ([.4, .3, .2, .1], "... summed to 100 ...").
    Raises ValueError (a sentence the UI can show) on empty input, non-numbers, negatives, all zeros, wrong length.
    """
    tokens = [token for token in re.split(r"[,;\s]+", text.strip()) if token]
    if not tokens:
        raise ValueError("Enter some probabilities, e.g. '0.4, 0.3, 0.2, 0.1'.")
    values = []
    for token in tokens:
        try:
            value = float(token)
        except ValueError:
            raise ValueError(f"'{token}' is not a number.") from None
        if not math.isfinite(value):
            raise ValueError(f"'{token}' is not a finite number.")
        if value < 0:
            raise ValueError(f"Probabilities cannot be negative, got {token}.")
        values.append(value)
    if size is not None and len(values) != size:
        raise ValueError(f"Expected {size} numbers (one per token), got {len(values)}.")
    total = sum(values)
    if total <= 0:
        raise ValueError("At least one probability must be positive.")
    note = None if abs(total - 1) <= 1e-6 else f"The numbers summed to {total:g}, so each was divided by {total:g}."
    return [value / total for value in values], note


def _pair(target_probs, draft_probs) -> tuple[torch.Tensor, torch.Tensor]:
    """Both distributions as float64 tensors [V] of the same length."""
    target = torch.as_tensor(target_probs, dtype=torch.float64).flatten()
    draft = torch.as_tensor(draft_probs, dtype=torch.float64).flatten()
    if target.shape != draft.shape:
        raise ValueError(f"p has {target.numel()} entries but q has {draft.numel()}.")
    return target, draft


def overlap(target_probs, draft_probs) -> dict:
    """β = Σ min(p, q), the per-token min, and the residual p′ = norm(max(0, p − q)) with its normaliser 1 − β.

    Japan preset -> {"beta": 0.9, "min_probs": [.4, .25, .15, .1], "residual_probs": [0, .5, .5, 0], "residual_mass": 0.1}.
    """
    target, draft = _pair(target_probs, draft_probs)
    min_probs = torch.minimum(target, draft)  # [V]; the mass that survives the accept test, token by token
    beta = float(min_probs.sum())
    # Σ max(0, p − q) = Σ p − Σ min(p, q) = 1 − β: the mass the rejections must put back.
    return dict(beta=beta, min_probs=min_probs.tolist(), residual_probs=residual(target, draft).tolist(),
                residual_mass=float((target - draft).clamp(min=0).sum()))


def classical_rejection(target_probs, draft_probs, vocab: list[str] | None = None) -> dict:
    """Classical rejection sampling of p with proposals from q: keep x ~ q with probability p(x) / (M q(x)).

    M = max p/q is the smallest envelope with M·q ≥ p; a proposal is kept with probability 1/M, so a sample
    costs M proposals on average. It is infinite when q(x) = 0 somewhere p(x) > 0 (then acceptance = 0).
    Speculative sampling keeps β ≥ 1/M always: q ≥ p/M gives min(p, q) ≥ p/M token by token; sum over x.
    Japan preset -> bound 4/3, acceptance 0.75, beta 0.9, envelope M·q = [2/3, 1/3, 0.2, 2/15].
    """
    target, draft = _pair(target_probs, draft_probs)
    names = vocab or [f"#{index}" for index in range(target.numel())]
    ratios = torch.where(draft > 0, target / draft.clamp(min=1e-300), torch.where(target > 0, math.inf, 0.0))  # [V]
    bound = float(ratios.max())
    beta = float(torch.minimum(target, draft).sum())
    acceptance = 0.0 if math.isinf(bound) else 1.0 / bound
    if math.isinf(bound):
        missing = ", ".join(repr(names[i]) for i in torch.nonzero((draft == 0) & (target > 0)).flatten().tolist())
        explanation = (f"q is 0 where p is positive ({missing}): no finite M makes M·q cover p, so classical rejection "
                       f"sampling can never produce those tokens. Speculative sampling is still exact: it keeps β = "
                       f"{beta:.3f} of the drafts and the residual p′ puts the missing mass back.")
    else:
        explanation = (f"Classical rejection keeps 1/M = {acceptance:.3f} of its proposals (M = {bound:.4g} proposals per "
                       f"sample). Speculative sampling keeps β = {beta:.3f} ≥ 1/M and repairs every rejection from the "
                       f"residual, so each proposal yields exactly one sample.")
    return dict(ratios=ratios.tolist(), bound=bound, acceptance=acceptance, beta=beta, explanation=explanation,
                envelope=None if math.isinf(bound) else (bound * draft).tolist())


def acceptance_table(target_probs, draft_probs) -> list[float]:
    """min(1, p(x)/q(x)) for every token x (0 where q(x) = 0), read from verify() itself: all V tokens as drafts."""
    target, draft = _pair(target_probs, draft_probs)
    vocab_size = target.numel()
    result = verify(torch.arange(vocab_size), draft.expand(vocab_size, -1), target.expand(vocab_size + 1, -1),
                    torch.zeros(vocab_size, dtype=torch.float64), next_uniform=0.0)
    return result.accept_probs


def speculative_step(target_probs, draft_probs, generator: torch.Generator | None = None,
                     uniforms: list[float] | torch.Tensor | None = None) -> dict:
    """One speculative sample through verify() with γ = 1, as plain data for the step-by-step view.

    Three uniforms drive it (drawn from `generator`, or given to replay): one for x ~ q, r for the test, and one for
    the corrected token ~ p′. Japan preset with uniforms [0.1, 0.9, 0.75]: x = "is" (0), min(1, .4/.5) = 0.8 ≤ r = 0.9
    -> rejected; p′ = [0, .5, .5, 0] and 0.75 lands on "girl" (2): output_token 2.
    """
    target, draft = _pair(target_probs, draft_probs)
    facts = overlap(target, draft)
    if uniforms is None:
        uniforms = torch.rand(3, generator=generator, dtype=torch.float64)
    draft_uniform, accept_uniform, next_uniform = torch.as_tensor(uniforms, dtype=torch.float64).tolist()
    # 1. The draft proposes x ~ q.
    draft_token = sample_with_uniform(draft, draft_uniform).view(1)  # [γ = 1]
    # 2.-4. verify: accept x if r < min(1, p(x)/q(x)), else draw the correction from p′. Row 2 of p is only the
    #       bonus distribution, which a one-sample lab ignores: an accepted x is the sample.
    result = verify(draft_token, draft.view(1, -1), torch.stack([target, target]),
                    torch.tensor([accept_uniform], dtype=torch.float64), next_uniform=next_uniform)
    token, accepted = int(draft_token), result.accepted_count == 1
    corrected = None if accepted else result.next_token
    return dict(target_probs=target.tolist(), draft_probs=draft.tolist(), draft_token=token, draft_uniform=draft_uniform,
                uniform=accept_uniform, target_prob=float(target[token]), draft_prob=float(draft[token]),
                accept_prob=result.accept_probs[0], accepted=accepted, beta=facts["beta"], residual_mass=facts["residual_mass"],
                residual_probs=None if accepted else result.next_probs.tolist(), correction_uniform=next_uniform,
                corrected_token=corrected, output_token=token if accepted else corrected)


def _tested_draft(draft: torch.Tensor, mistake: str | None, wrong_draft_probs) -> torch.Tensor:
    """The q the verifier believes in: q itself, or for "wrong_draft" the given q′ (uniform by default)."""
    if mistake is not None and mistake not in MISTAKES:
        raise ValueError(f"unknown mistake {mistake!r}; choose one of {sorted(MISTAKES)} or None")
    if mistake != "wrong_draft":
        return draft
    if wrong_draft_probs is None:
        return torch.full_like(draft, 1.0 / draft.numel())
    return _pair(draft, wrong_draft_probs)[1]


def speculative_outputs(target_probs, draft_probs, uniforms: torch.Tensor, mistake: str | None = None,
                        wrong_draft_probs=None) -> torch.Tensor:
    """Vectorized speculative samples: uniforms [3, n] (x ~ q, r, correction) -> output tokens [n].

    With mistake=None it is token for token what speculative_step() (verify()) returns for the same uniforms.
    """
    target, draft = _pair(target_probs, draft_probs)
    tested = _tested_draft(draft, mistake, wrong_draft_probs)
    draft_uniforms, accept_uniforms, next_uniforms = uniforms.to(torch.float64)  # [n] each
    drafted = sample_with_uniform(draft, draft_uniforms)  # [n]: 1. x ~ q
    accept_probs = torch.tensor(acceptance_table(target, tested), dtype=torch.float64)[drafted]  # [n] min(1, p/q)
    # 3. accept iff r < min(1, p/q) (verify rejects on r ≥ it); the mistake flips the comparison.
    accepted = accept_uniforms > accept_probs if mistake == "accept_if_r_greater" else accept_uniforms < accept_probs
    repair = target if mistake == "resample_from_target" else residual(target, tested)  # [V]
    corrected = sample_with_uniform(repair, next_uniforms)  # [n]: 4. the correction
    return torch.where(accepted, drafted, corrected)


def sample_many(target_probs, draft_probs, sample_count: int, generator: torch.Generator, mistake: str | None = None,
                wrong_draft_probs=None) -> list[int]:
    """Counts per token of `sample_count` (≤ 10^6) independent speculative samples, vectorized."""
    if not 1 <= sample_count <= MAX_SAMPLES:
        raise ValueError(f"sample count must be between 1 and {MAX_SAMPLES:,}, got {sample_count:,}")
    uniforms = torch.rand(3, sample_count, generator=generator, dtype=torch.float64)  # [3, n]
    outputs = speculative_outputs(target_probs, draft_probs, uniforms, mistake, wrong_draft_probs)
    return torch.bincount(outputs, minlength=len(target_probs)).tolist()


def exact_output_distribution(target_probs, draft_probs, mistake: str | None = None, wrong_draft_probs=None) -> list[float]:
    """The distribution each variant's output follows: q(x)·a(x) + (1 − Σ q·a)·(rejection distribution).

    Correct: a = min(1, p/q), so q·a = min(p, q), and (1 − β)·p′ = max(0, p − q): the sum is exactly p.
    Japan preset: accept_if_r_greater -> [.1, .45, .45, 0]; resample_from_target -> [.44, .28, .17, .11];
    wrong_draft (uniform q′) -> [.5675, .2725, .12, .04].
    """
    target, draft = _pair(target_probs, draft_probs)
    tested = _tested_draft(draft, mistake, wrong_draft_probs)
    accept = torch.tensor(acceptance_table(target, tested), dtype=torch.float64)  # [V]
    if mistake == "accept_if_r_greater":
        accept = 1 - accept  # P(r > a) for r ~ U[0, 1)
    repair = target if mistake == "resample_from_target" else residual(target, tested)
    kept = draft * accept  # [V]
    return (kept + (1 - kept.sum()) * repair).tolist()


def tvd_noise(expected_probs, sample_count: int) -> float:
    """The TVD an exact sampler's empirical frequencies show from its own truth after n samples, on average.

    Each count is ≈ normal with sd √(n p (1 − p)), and E|N(0, σ²)| = σ √(2/π),
    so E[TVD] ≈ ½ Σ √(2 p (1 − p) / (π n)).
    Japan p, n = 10^6 -> 0.00066. A TVD below about 3× this is within sampling noise.
    """
    probs = torch.as_tensor(expected_probs, dtype=torch.float64)
    probs = probs / probs.sum()
    return 0.5 * float(torch.sqrt(2 * probs * (1 - probs) / (math.pi * sample_count)).sum())
