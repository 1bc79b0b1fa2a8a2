"""Acceptance rules: how a drafted token is tested against the target, and what replaces it when it fails.

At one position the target's distribution is p and the draft's q (both [V]). A rule says, for a proposed token x,
the probability that x is accepted, and the distribution a rejected position draws its token from instead. The
engine runs one rule (exact, or lenient in the losslessness lab), through core/verify.py; the Verification rules tab
sets them all side by side (labs/verification_rules/rules.py). Each rule is one object, so a new rule is one class.

- exact (Leviathan et al. 2023; Chen et al. 2023): accept with min(1, p(x)/q(x)), else draw from norm(max(0, p − q)).
  The emitted token follows p exactly.
- lenient (Leviathan et al., appendix A.5): accept with min(1, p(x)/(l·q(x))), l < 1, the same residual. More drafts
  pass, and the output leans towards q. l = 1 is the exact rule.
- argmax match (what engines such as llama.cpp run at T = 0): the draft proposes argmax q, accepted iff it is
  argmax p, else argmax p is emitted: right for greedy decoding, not a sample of p.
- typical acceptance (Medusa, Cai et al. 2024): accept iff p(x) > min(ε, δ·exp(−H(p))), else draw from p.
- top-k match: accept iff x is among p's k most likely tokens, else draw from p.

Every method works in the dtype it is given (the engine's float32, the lab's float64) on [V] or [n, V] tensors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from specviz.core.sampling import residual


def _tiny(probs: torch.Tensor) -> float:
    """A floor for a divisor that is only read where q > 0 (torch.where picks 0 elsewhere)."""
    return 1e-300 if probs.dtype == torch.float64 else 1e-30


def _one_hot_argmax(probs: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(probs).scatter_(-1, probs.argmax(dim=-1, keepdim=True), 1.0)


@dataclass(frozen=True)
class AcceptanceRule:
    """The exact rule. Subclasses change acceptance(), replacement() or proposal(); `exact` says whether the
    emitted token follows p."""

    name: str = "exact"
    exact: bool = True

    def acceptance(self, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """[..., V]: P(accept | the draft proposed x), for every x: min(1, p(x)/q(x))."""
        return torch.where(q > 0, (p / q.clamp(min=_tiny(q))).clamp(max=1.0), torch.zeros_like(p))

    def accept_probs(self, p_rows: torch.Tensor, q_rows: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """[n]: each drafted token's acceptance probability, tokens [n] at rows p_rows, q_rows [n, V]."""
        positions = torch.arange(tokens.shape[0], device=tokens.device)
        return self.at(p_rows[positions, tokens], q_rows[positions, tokens])

    def by_rows(self, p_rows: torch.Tensor, q_rows: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """[n]: accept_probs read row by row from acceptance(), for rules whose test needs the whole of p."""
        return torch.stack([self.acceptance(p, q)[token] for p, q, token in zip(p_rows, q_rows, tokens)])

    def at(self, p_at: torch.Tensor, q_at: torch.Tensor) -> torch.Tensor:
        # min(1, p(x)/q(x)) on the drafted tokens only: q(x) > 0 because x ~ q.
        return torch.where(q_at > 0, (p_at / q_at.clamp(min=_tiny(q_at))).clamp(max=1.0), torch.zeros_like(q_at))

    def replacement(self, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """[V]: what a rejected position draws from: the residual norm(max(0, p − q))."""
        return residual(p, q)

    def proposal(self, q: torch.Tensor) -> torch.Tensor:
        """[V]: the distribution of the token the draft proposes under this rule: q itself."""
        return q


@dataclass(frozen=True)
class Lenient(AcceptanceRule):
    """min(1, p/(l·q)): the same as drawing r ~ U[0, l). Not exact below l = 1."""

    name: str = "lenient"
    exact: bool = False
    lenience: float = 0.5

    def __post_init__(self):
        if not (isinstance(self.lenience, int | float) and 0 < self.lenience <= 1):
            raise ValueError(f"lenience must be in (0, 1], got {self.lenience}")

    def acceptance(self, p, q):
        return super().acceptance(p, self.lenience * q)

    def at(self, p_at, q_at):
        return super().at(p_at, q_at * self.lenience)  # l·q on the drafted tokens


@dataclass(frozen=True)
class ArgmaxMatch(AcceptanceRule):
    name: str = "argmax match"
    exact: bool = False

    def acceptance(self, p, q):
        return _one_hot_argmax(p)

    def accept_probs(self, p_rows, q_rows, tokens):
        return (p_rows.argmax(dim=-1) == tokens).to(p_rows.dtype)

    def replacement(self, p, q):
        return _one_hot_argmax(p)

    def proposal(self, q):
        return _one_hot_argmax(q)


@dataclass(frozen=True)
class Typical(AcceptanceRule):
    name: str = "typical acceptance"
    exact: bool = False
    epsilon: float = 0.3  # Medusa's posterior threshold
    delta: float = 0.09  # and its entropy-scaled α

    def acceptance(self, p, q):
        positive = p[p > 0]
        entropy = float(-(positive * positive.log()).sum())
        return (p > min(self.epsilon, self.delta * math.exp(-entropy))).to(p.dtype)

    accept_probs = AcceptanceRule.by_rows


    def replacement(self, p, q):
        return p


@dataclass(frozen=True)
class TopK(AcceptanceRule):
    name: str = "top-k match"
    exact: bool = False
    k: int = 3

    def acceptance(self, p, q):
        return torch.zeros_like(p).index_fill_(0, p.topk(min(self.k, p.numel())).indices, 1.0)

    accept_probs = AcceptanceRule.by_rows


    def replacement(self, p, q):
        return p


EXACT = AcceptanceRule()


def rule_for_lenience(lenience: float) -> AcceptanceRule:
    """The rule a run's config asks for (DecodeConfig.lenience): the exact rule at 1, else the lenient one."""
    return EXACT if lenience == 1 else Lenient(lenience=lenience)
