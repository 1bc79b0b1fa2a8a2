"""Why a draft of another tokenizer must renormalize q over the shared tokens, in closed form (issue 35).

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
