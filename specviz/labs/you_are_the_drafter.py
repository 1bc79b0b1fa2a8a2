"""You are the drafter: a student proposes the next tokens and the real target verifies them with the real rule.

A proposal is certain, so its q is one-hot: q(x) = 1 for the proposed token. The exact test then accepts x with
min(1, p(x)/q(x)) = p(x), and a rejection draws the correction from norm(max(0, p − q)), which is p with x taken
out. So a student who always picks the target's favourite token is accepted with probability max p, no more;
the best a certain drafter can do is α = E[max p], and a drafter with the right uncertainty does better: the real
draft's acceptance at the same context is β = Σ min(p, q) (shown alongside).

Everything runs through `verify.verify`, the function the engine uses, on the real target's p.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specviz.core.sampling import Standardizer, one_hot
from specviz.core.verify import verify
from specviz.decoding.pipeline import Pipeline

MAX_PROPOSAL = 8  # tokens a student may propose at once
CHOICES = 10  # the target's top tokens offered to pick from


@dataclass
class Game:
    """The state of one student's game (plain data, kept per browser session)."""

    context_ids: list[int]  # the prompt as the target reads it, then everything accepted or drawn so far
    prompt_length: int
    temperature: float = 1.0
    seed: int = 0
    proposals: int = 0
    tested: int = 0  # the student's proposed tokens that were tested
    accepted: int = 0
    drafter_beta: list[float] = field(default_factory=list)  # the real draft's β at each tested position
    history: list[dict] = field(default_factory=list)  # one entry per proposal, for the rows

    @property
    def alpha(self) -> float | None:
        return self.accepted / self.tested if self.tested else None

    @property
    def drafter_alpha(self) -> float | None:
        return sum(self.drafter_beta) / len(self.drafter_beta) if self.drafter_beta else None


def choices(pipeline: Pipeline, game: Game) -> list[tuple[int, str, float]]:
    """The target's CHOICES most likely next tokens at the game's context: (id, text, p)."""
    probs = _target_probs(pipeline, game, [])[0]  # [V]
    values, ids = probs.topk(min(CHOICES, probs.numel()))
    return [(int(i), pipeline.tokenizer.decode([int(i)]), float(v)) for v, i in zip(values, ids)]


def propose(pipeline: Pipeline, game: Game, proposal: list[int]) -> dict:
    """Verify the student's tokens with the real rule, extend the context, and return what happened."""
    if not 1 <= len(proposal) <= MAX_PROPOSAL:
        raise ValueError(f"propose 1 to {MAX_PROPOSAL} tokens, got {len(proposal)}")
    target_probs = _target_probs(pipeline, game, proposal)  # [k+1, V]
    vocab = target_probs.shape[-1]
    if max(proposal) >= vocab:
        raise ValueError(f"token ids must be below {vocab}")
    draft_probs = one_hot(torch.tensor(proposal), vocab).to(target_probs.dtype)  # [k, V]: a certain proposal
    generator = torch.Generator().manual_seed(game.seed * 1_000_003 + game.proposals)
    uniforms = torch.rand(len(proposal), generator=generator)  # [k]
    next_uniform = float(torch.rand((), generator=generator))
    result = verify(torch.tensor(proposal), draft_probs, target_probs, uniforms, next_uniform)
    tested = min(result.accepted_count + 1, len(proposal))
    betas = _drafter_betas(pipeline, game, proposal, target_probs)[:tested]
    tokens = [{"id": token, "text": pipeline.tokenizer.decode([token]), "p": result.accept_probs[i],
               "r": float(uniforms[i]), "kind": "accepted" if i < result.accepted_count else "rejected"}
              for i, token in enumerate(proposal[:tested])]
    tokens.append({"id": result.next_token, "text": pipeline.tokenizer.decode([result.next_token]), "kind": result.next_kind,
                   "p": float(target_probs[result.accepted_count, result.next_token])})
    game.context_ids += proposal[: result.accepted_count] + [result.next_token]
    game.proposals += 1
    game.tested += tested
    game.accepted += result.accepted_count
    game.drafter_beta += betas
    untested = [{"id": token, "text": pipeline.tokenizer.decode([token])} for token in proposal[tested:]]
    entry = {"tokens": tokens, "untested": untested, "drafter_beta": betas}  # untested: proposed after the rejection
    game.history.append(entry)
    return entry


def _standardize(game: Game) -> Standardizer:
    return Standardizer(game.temperature)


def _target_probs(pipeline: Pipeline, game: Game, proposal: list[int]) -> torch.Tensor:
    """p at the context's end and after each proposed token: [len(proposal) + 1, V]."""
    model = pipeline.target
    model.reset()
    ids = torch.tensor(game.context_ids + proposal, dtype=torch.long, device=pipeline.device)
    logits = model.feed(ids, logits_to_keep=len(proposal) + 1)
    model.reset()
    return _standardize(game)(logits).cpu()


def _drafter_betas(pipeline: Pipeline, game: Game, proposal: list[int], target_probs: torch.Tensor) -> list[float]:
    """β = Σ min(p, q) of the pipeline's real draft model at each proposed position (empty without one)."""
    model = pipeline.draft_model
    if model is None:
        return []
    model.reset()
    ids = torch.tensor(game.context_ids + proposal[:-1], dtype=torch.long, device=pipeline.device)
    logits = model.feed(ids, logits_to_keep=len(proposal))  # [k, V]
    model.reset()
    draft_probs = _standardize(game)(logits).cpu()
    width = min(draft_probs.shape[-1], target_probs.shape[-1])
    return torch.minimum(draft_probs[:, :width], target_probs[: len(proposal), :width]).sum(-1).tolist()
