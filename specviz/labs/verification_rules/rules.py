"""Verification rules side by side: which token each rule emits at one draft position, and how far that is from p.

At one position the target's distribution is p and the draft's is q (both [V]). A rule decides whether the
draft's token is accepted and, if not, which token replaces it. What a student should see is the distribution
of the token the position *emits*, e(x), under each rule:

- exact (Leviathan et al. 2023; Chen et al. 2023): draw x ~ q, accept with min(1, p(x)/q(x)), else draw from
  norm(max(0, p − q)). e = p exactly, and the draft is accepted with probability β = Σ min(p, q).
- argmax match (what engines run at T = 0): the draft proposes x* = argmax q and it is accepted iff it is
  argmax p, else argmax p is emitted. e is one-hot at argmax p: right for greedy decoding, not a sample of p.
- lenient (Leviathan et al., appendix A.5): accept with min(1, p/(l·q)), l < 1, residual as in the exact rule.
  More drafts pass, and e leans towards q.
- typical acceptance (Medusa, Cai et al. 2024): accept x ~ q iff p(x) > min(ε, δ·exp(−H(p))), else draw from p.
- top-k match: accept x ~ q iff x is among p's k most likely tokens, else draw from p.

Each rule is an AcceptanceRule object (core/acceptance.py), the engine's own; e is written in closed form below from
the rule's acceptance, replacement and proposal, and can also be sampled (`simulate`): the χ² test of the samples
against p passes for the exact rule and fails, with enough samples, for any rule whose e differs from p.
All in float64 (the differences tested are small), on [V] tensors; no models.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.analysis.metrics import chi_square_test, total_variation
from specviz.core import acceptance
from specviz.core.acceptance import AcceptanceRule

LENIENCE, TOP_K_SIZE = 0.5, 3  # the lenient rule's l and the top-k rule's k, unless given


def lab_rules(lenience: float = LENIENCE, top_k: int = TOP_K_SIZE) -> dict[str, AcceptanceRule]:
    """The rules the tab compares, by name, in the order it shows them."""
    return {rule.name: rule for rule in (acceptance.EXACT, acceptance.ArgmaxMatch(), acceptance.Lenient(lenience=lenience),
                                         acceptance.Typical(), acceptance.TopK(k=top_k))}


EXACT, ARGMAX, LENIENT, TYPICAL, TOP_K = RULES = tuple(lab_rules())


@dataclass(frozen=True)
class RuleOutcome:
    rule: str
    accept_prob: float  # P(the draft's token is accepted) at this position
    emitted: torch.Tensor  # [V] float64: the distribution of the token this position emits
    distance: float  # total variation distance between emitted and p: 0 means lossless here


def outcomes(target_probs, draft_probs, lenience: float = LENIENCE, top_k: int = TOP_K_SIZE) -> list[RuleOutcome]:
    """Every rule's acceptance probability and emitted distribution at one position (p, q: [V])."""
    p, q = _distribution(target_probs), _distribution(draft_probs)
    if p.shape != q.shape:
        raise ValueError(f"p has {p.numel()} entries and q {q.numel()}")
    results = []
    for name, rule in lab_rules(lenience, top_k).items():
        accepted = rule.acceptance(p, q)  # [V]: P(accept | the draft proposed x)
        proposal = rule.proposal(q)  # [V]
        accept_prob = float((proposal * accepted).sum())
        emitted = proposal * accepted + (1 - accept_prob) * rule.replacement(p, q)  # [V]
        results.append(RuleOutcome(name, accept_prob, emitted, total_variation(emitted, p)))
    return results


def simulate(rule: str, target_probs, draft_probs, samples: int, generator: torch.Generator,
             lenience: float = LENIENCE, top_k: int = TOP_K_SIZE) -> torch.Tensor:
    """Counts [V] of the tokens the position emits over `samples` runs of the rule itself: draw the proposal,
    draw r ~ U[0, 1), accept if r < P(accept | proposal), else draw the replacement."""
    p, q = _distribution(target_probs), _distribution(draft_probs)
    chosen = lab_rules(lenience, top_k)[rule]
    if rule == ARGMAX:
        proposals = torch.full((samples,), int(q.argmax()))
    else:
        proposals = torch.multinomial(q, samples, replacement=True, generator=generator)  # [n]
    uniforms = torch.rand(samples, generator=generator, dtype=torch.float64)  # [n]
    accepted = uniforms < chosen.acceptance(p, q)[proposals]  # [n]
    replacements = torch.multinomial(chosen.replacement(p, q), samples, replacement=True, generator=generator)  # [n]
    emitted = torch.where(accepted, proposals, replacements)
    return torch.bincount(emitted, minlength=p.numel()).double()


def chi_square_by_rule(target_probs, draft_probs, samples: int = 20_000, seed: int = 0) -> dict[str, tuple]:
    """rule -> (χ² statistic, degrees of freedom, p-value) of `samples` simulated emissions against p."""
    p = _distribution(target_probs)
    results = {}
    for rule in RULES:
        counts = simulate(rule, p, draft_probs, samples, torch.Generator().manual_seed(seed))
        results[rule] = chi_square_test(counts, p)
    return results


def along_trace(target_rows: torch.Tensor, draft_rows: torch.Tensor, **settings) -> dict[str, dict[str, float]]:
    """Over many positions (p and q rows [T, V]): each rule's mean acceptance probability (its α) and mean
    distance of the emitted distribution from p (its drift)."""
    totals = {rule: {"alpha": 0.0, "drift": 0.0} for rule in RULES}
    for p, q in zip(target_rows, draft_rows):
        for outcome in outcomes(p, q, **settings):
            totals[outcome.rule]["alpha"] += outcome.accept_prob / len(target_rows)
            totals[outcome.rule]["drift"] += outcome.distance / len(target_rows)
    return totals


def _distribution(probs) -> torch.Tensor:
    probs = torch.as_tensor(probs, dtype=torch.float64).flatten()
    if probs.numel() == 0 or bool((probs < 0).any()) or float(probs.sum()) <= 0:
        raise ValueError("a distribution needs non-negative weights with a positive sum")
    return probs / probs.sum()
