"""Why a draft of another tokenizer must renormalize q over the shared tokens, in closed form.

A draft whose vocabulary differs from the target's can only propose the tokens both vocabularies hold. Say its own
distribution q_D puts mass s < 1 on them. The exact way (drafters/cross_vocab.py) draws x from q = q_D restricted
to the shared tokens and divided by s, and gives the rule that q: the rule's guarantee needs the q the token was
really drawn from, so the emitted token follows p.

The naïve way draws x the same way but gives the rule q_D(x) itself, as a mapping that copies probabilities across
and forgets the lost mass would. Then q_rule(x) = s · q(x) < q(x): every test min(1, p(x) / q_rule(x)) passes too
often, the residual norm(max(0, p − q_rule)) is computed from the wrong q, and the emitted distribution leans
towards the draft. With s = 1 (every token shared) the two coincide.

Everything here is float64 on [V] tensors over the target's vocabulary, and `q_draft_on_target` is the draft's own
probability of each target token (0 where the target token has no draft counterpart); no models.

>>> p = torch.tensor([0.5, 0.3, 0.2]); q_d = torch.tensor([0.2, 0.2, 0.0])  # the draft put 0.6 on tokens the target lacks
>>> [round(outcome.distance, 3) for outcome in cross_vocab_outcomes(p, q_d)]
[0.0, 0.2]
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.analysis.metrics import chi_square_test

EXACT, NAIVE = "renormalized q (exact)", "the draft's own q (not renormalized)"


@dataclass(frozen=True)
class CrossVocabOutcome:
    rule: str
    shared_mass: float  # s: the draft's own mass on the shared tokens
    accept_prob: float  # P(the drafted token is accepted)
    emitted: torch.Tensor  # [V] float64: the distribution of the token the position emits
    distance: float  # total variation distance between emitted and p


def cross_vocab_outcomes(target_probs, q_draft_on_target) -> list[CrossVocabOutcome]:
    """The exact and the naïve rule at one position: p [V] over the target's vocabulary, and the draft's own
    probabilities of the target's tokens [V] (summing to s ≤ 1; the rest of its mass is on tokens the target lacks)."""
    p = torch.as_tensor(target_probs, dtype=torch.float64)
    q_own = torch.as_tensor(q_draft_on_target, dtype=torch.float64)
    if p.shape != q_own.shape:
        raise ValueError(f"p has {p.numel()} entries and the draft's q {q_own.numel()}")
    shared = float(q_own.sum())
    if not 0 < shared <= 1 + 1e-9:
        raise ValueError(f"the draft's mass on shared tokens must be in (0, 1], got {shared:.4f}")
    proposal = q_own / shared  # [V]: what x is drawn from, either way
    results = []
    for rule, told in ((EXACT, proposal), (NAIVE, q_own)):  # the q the rule is given
        accepted = _accept(p, told)  # [V]: P(accept | x proposed)
        accept_prob = float((proposal * accepted).sum())
        residual = (p - told).clamp(min=0)
        residual = residual / residual.sum() if residual.sum() > 0 else p
        emitted = proposal * accepted + (1 - accept_prob) * residual
        results.append(CrossVocabOutcome(rule, shared, accept_prob, emitted, 0.5 * float((emitted - p).abs().sum())))
    return results


def _accept(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """min(1, p(x) / q(x)) where q(x) > 0 (x can be proposed), else 0: [V]."""
    ratio = torch.where(q > 0, p / q.clamp(min=1e-300), torch.zeros_like(p))
    return ratio.clamp(max=1.0)


# The Verification rules tab's cases: the target's tokens, p over them, and the draft's own q of each; what the draft's
# q leaves (1 − s) is on tokens the target lacks. The tab's slider rescales the draft's q to another s (at_shared_mass).
CASES = {
    "Textbook: the draft puts 0.6 on tokens the target lacks (s = 0.4)": dict(
        tokens=["a", "b", "c"], target_probs=[0.5, 0.3, 0.2], q_draft_on_target=[0.2, 0.2, 0.0]),
    "Half the draft's mass lost, on a token the target doubts (s = 0.5)": dict(
        tokens=[" Paris", " the", " a"], target_probs=[0.6, 0.3, 0.1], q_draft_on_target=[0.1, 0.3, 0.1]),
    "Nearly shared: only 5% lost (s = 0.95)": dict(
        tokens=[" the", " a", " its", " this", " one"], target_probs=[0.45, 0.25, 0.15, 0.10, 0.05],
        q_draft_on_target=[0.30, 0.30, 0.20, 0.10, 0.05]),
}


def at_shared_mass(q_draft_on_target, shared_mass: float) -> torch.Tensor:
    """The draft's own q over the target's tokens [V], rescaled to sum to `shared_mass` (s): the same shape over the
    shared tokens, 1 − s on tokens the target lacks. at_shared_mass([0.2, 0.2, 0.0], 0.8) -> [0.4, 0.4, 0.0]."""
    q_own = torch.as_tensor(q_draft_on_target, dtype=torch.float64)
    if not 0 < shared_mass <= 1 or float(q_own.sum()) <= 0 or bool((q_own < 0).any()):
        raise ValueError(f"the shared mass must be in (0, 1] over non-negative draft probabilities, got {shared_mass}")
    return q_own / q_own.sum() * shared_mass


def sample_emitted(target_probs, q_draft_on_target, rule: str, samples: int, generator: torch.Generator) -> torch.Tensor:
    """Counts [V] of the tokens one position emits over `samples` runs of `rule` (EXACT or NAIVE) itself:
    1. the draft proposes x ~ q_D / s over the shared tokens (either way);
    2. r ~ U[0, 1); x is accepted if r < min(1, p(x) / q_rule(x)), with q_rule = q_D / s (EXACT) or q_D (NAIVE);
    3. else the position emits a draw from the residual norm(max(0, p − q_rule)) (p itself if that is all 0)."""
    p = torch.as_tensor(target_probs, dtype=torch.float64)
    q_own = torch.as_tensor(q_draft_on_target, dtype=torch.float64)
    shared = float(q_own.sum())
    if p.shape != q_own.shape or not 0 < shared <= 1 + 1e-9 or rule not in (EXACT, NAIVE):
        raise ValueError(f"sample_emitted needs p and q_D of one shape, s in (0, 1] and a rule of {EXACT!r}, {NAIVE!r}")
    proposal = q_own / shared  # [V]
    told = proposal if rule == EXACT else q_own  # [V]: the q the rule is given
    proposals = torch.multinomial(proposal, samples, replacement=True, generator=generator)  # [n]
    uniforms = torch.rand(samples, generator=generator, dtype=torch.float64)  # [n]
    accepted = uniforms < _accept(p, told)[proposals]  # [n]
    residual = (p - told).clamp(min=0)  # [V]
    residual = residual / residual.sum() if residual.sum() > 0 else p
    replacements = torch.multinomial(residual, samples, replacement=True, generator=generator)  # [n]
    emitted = torch.where(accepted, proposals, replacements)  # [n]
    return torch.bincount(emitted, minlength=p.numel()).double()


def chi_square_by_rule(target_probs, q_draft_on_target, samples: int = 20_000, seed: int = 0) -> dict[str, tuple]:
    """rule -> (χ² statistic, degrees of freedom, p-value) of `samples` emissions of each rule against p, each rule
    sampled with its own generator seeded `seed` (so both see the same proposals and uniforms)."""
    return {rule: chi_square_test(sample_emitted(target_probs, q_draft_on_target, rule, samples,
                                                 torch.Generator().manual_seed(seed)), target_probs)
            for rule in (EXACT, NAIVE)}
