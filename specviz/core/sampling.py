"""Pure tensor helpers: logits -> standardized probabilities, the residual, and seeded sampling.

Temperature, top-k and top-p are transformers' own logits warpers, applied identically to the target and
the draft. Temperature 0 is greedy, represented as a one-hot distribution so the same exact test applies.
Every helper computes in float32 at least (fp16 and bf16 inputs are cast up; float64 stays float64), so a
half-precision q is never compared with, or subtracted from, a float32 p in half precision.
"""

from __future__ import annotations

import torch
from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper


class Standardizer:
    """Turns raw logits [n, V] into the probabilities [n, V] (float32) that tokens are actually drawn from."""

    def __init__(self, temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0):
        self.greedy = temperature == 0
        self.warpers = LogitsProcessorList()
        if not self.greedy:
            if temperature != 1.0:
                self.warpers.append(TemperatureLogitsWarper(float(temperature)))
            if top_k > 0:
                self.warpers.append(TopKLogitsWarper(int(top_k)))
            if top_p < 1.0:
                self.warpers.append(TopPLogitsWarper(float(top_p)))

    def __call__(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits.float()  # [n, V]; fp32 so that bf16 noise never differs between p and q
        if self.greedy:
            return one_hot(logits.argmax(dim=-1), logits.shape[-1])
        # The warpers ignore input_ids; they only read the scores, one row per position.
        warped = self.warpers(None, logits)
        return torch.softmax(warped, dim=-1)


def one_hot(ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Float32 one-hot rows [..., V] for ids [...], written in one pass (torch's one_hot builds int64, then copies)."""
    rows = torch.zeros(*ids.shape, vocab_size, device=ids.device)
    return rows.scatter_(-1, ids.unsqueeze(-1), 1.0)


def compute_dtype(*tensors: torch.Tensor) -> torch.dtype:
    """The dtype the helpers compute in: the inputs' common dtype, at least float32.

    >>> compute_dtype(torch.ones(1, dtype=torch.bfloat16), torch.ones(1, dtype=torch.float16))
    torch.float32
    """
    dtype = torch.float32
    for tensor in tensors:
        dtype = torch.promote_types(dtype, tensor.dtype)
    return dtype


def residual(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> torch.Tensor:
    """The correction distribution norm(max(0, p - q)) over the last axis (Leviathan, algorithm 1).

    Where p == q the positive part has no mass; a rejection then has probability 0, and we return p itself
    instead of dividing by zero, so the result is always a valid distribution.

    >>> residual(torch.tensor([.4, .3, .2, .1]), torch.tensor([.5, .25, .15, .1]))
    tensor([0.0000, 0.5000, 0.5000, 0.0000])
    """
    dtype = compute_dtype(target_probs, draft_probs)
    target_probs, draft_probs = target_probs.to(dtype), draft_probs.to(dtype)
    positive = (target_probs - draft_probs).clamp(min=0)
    mass = positive.sum(dim=-1, keepdim=True)
    safe_mass = torch.where(mass > 0, mass, torch.ones_like(mass))
    return torch.where(mass > 0, positive / safe_mass, target_probs)


def sample_with_uniform(probs: torch.Tensor, uniform: torch.Tensor | float) -> torch.Tensor:
    """Inverse-CDF sampling: the token whose cumulative interval holds `uniform` ∈ [0, 1). Shapes [..., V] -> [...].

    Tokens with zero probability are never chosen. With an explicit uniform any draw can be replayed.
    """
    cdf = probs.to(compute_dtype(probs)).cumsum(dim=-1)  # [..., V]; a bf16 cdf could not resolve the uniform
    uniform = torch.as_tensor(uniform, dtype=cdf.dtype, device=cdf.device)
    point = (uniform * cdf[..., -1]).unsqueeze(-1)  # scale to the mass actually present
    index = torch.searchsorted(cdf, point, right=True).squeeze(-1)
    # Rounding can push the point past the last positive entry; fall back to the last token with mass, the
    # first index where the cdf reaches its total (a binary search, not another pass over the vocabulary).
    last_positive = torch.searchsorted(cdf, cdf[..., -1:].contiguous(), right=False).squeeze(-1)
    return torch.minimum(index, last_positive)


def sample(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Draw one token per row of probs [..., V] with the run's explicit generator."""
    uniform = torch.rand(probs.shape[:-1], generator=generator, device=probs.device)
    return sample_with_uniform(probs, uniform)


def draw_siblings(draft_probs: torch.Tensor, count: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Up to `count` distinct tokens [m] drawn from draft_probs [V] without replacement, and for each the exact
    distribution it was drawn from [m, V]: q, then q with the earlier draws zeroed and renormalised (the q_j that
    tree_verify needs). Stops early (m < count) when no mass is left, as after top-k or top-p truncation.

    q = [.5, .5, 0] and count 3: two tokens, rows [.5, .5, 0] and one-hot on the token not drawn first.
    """
    dtype = compute_dtype(draft_probs)
    remaining = draft_probs.to(dtype)  # [V]; the first draw is from q itself, not renormalised
    tokens, rows = [], []
    for _ in range(count):
        mass = remaining.sum()
        if not bool(mass > 0):
            break
        row = remaining if not rows else remaining / mass  # [V]
        token = sample(row, generator)  # the run's generator, so the round replays
        tokens.append(token)
        rows.append(row)
        remaining = row.index_fill(0, token.view(1), 0.0)  # a copy: `row` stays the distribution it was drawn from
    if not rows:  # count 0, or no mass at all
        return torch.empty(0, dtype=torch.long, device=draft_probs.device), remaining.new_empty(0, remaining.shape[-1])
    return torch.stack(tokens), torch.stack(rows)
