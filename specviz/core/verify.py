"""The accept/reject step of speculative sampling, as one pure function over probabilities.

Leviathan et al. 2023 (algorithm 1) and Chen et al. 2023. In the paper's symbols the target distribution is
p and the draft distribution q; in code they are `target_probs` and `draft_probs`. No models, no devices:
the uniforms are passed in, so any round can be replayed and the textbook examples tested exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.core.acceptance import EXACT, AcceptanceRule
from specviz.core.sampling import compute_dtype, sample_with_uniform

CORRECTED = "corrected"
BONUS = "bonus"


@dataclass(frozen=True)
class VerifyResult:
    accepted_count: int  # how many drafts were accepted, 0..γ
    next_token: int  # the token that ends the round: a correction or a bonus
    next_kind: str  # CORRECTED (drawn from norm(max(0, p - q))) or BONUS (drawn from p_{γ+1})
    accept_probs: list[float]  # min(1, p_i(x_i) / q_i(x_i)) for every draft position i = 1..γ
    next_probs: torch.Tensor  # [V] the distribution the next token was drawn from


def verify(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    uniforms: torch.Tensor,
    next_uniform: float | torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    rule: AcceptanceRule = EXACT,
) -> VerifyResult:
    """Accept a prefix of the drafts and draw the token that follows it.

    Shapes: draft_tokens [γ], draft_probs [γ, V], target_probs [γ+1, V], uniforms [γ] (γ may be 0).
    The next token is drawn by inverse CDF from `next_uniform` if given, else from `generator`.
    Probabilities are compared and subtracted in float32 at least, whatever their dtype (fp16 and bf16 are cast
    up). A draft id outside [0, V), or shapes that do not fit, raise ValueError.

    `rule` is the acceptance rule (core/acceptance.py): the exact one everywhere but the losslessness lab, whose
    lenient rule accepts with min(1, p/(l·q)), l < 1: more drafts pass, and the output NO LONGER follows p.

    Example (the textbook case): p = [.4, .3, .2, .1], q = [.5, .25, .15, .1], x = 0, r = 0.9.
    min(1, .4/.5) = 0.8 < 0.9, so x is rejected and the correction comes from norm(max(0, p - q)) = [0, .5, .5, 0].
    """
    gamma, vocab_size = draft_tokens.shape[0], target_probs.shape[-1]
    if (draft_probs.shape[0] != gamma or target_probs.shape[0] != gamma + 1 or uniforms.shape[0] != gamma
            or draft_probs.shape[-1] != vocab_size):
        raise ValueError(
            f"shape mismatch: draft_tokens {tuple(draft_tokens.shape)}, draft_probs {tuple(draft_probs.shape)}, "
            f"target_probs {tuple(target_probs.shape)}, uniforms {tuple(uniforms.shape)}"
        )
    if gamma and bool(((draft_tokens < 0) | (draft_tokens >= vocab_size)).any()):  # a negative id would index from the end
        raise ValueError(f"draft ids must be in [0, {vocab_size}), got {draft_tokens.tolist()}")
    dtype = compute_dtype(draft_probs, target_probs)
    draft_probs, target_probs = draft_probs.to(dtype), target_probs.to(dtype)  # [γ, V], [γ+1, V]
    # 3. Acceptance probability of each draft: min(1, p_i(x_i) / q_i(x_i)) for the exact rule. [γ]
    accept_probs = rule.accept_probs(target_probs[:gamma], draft_probs, draft_tokens)
    # Accept x_i while r_i < min(1, p/q). With r ~ U[0, 1) that happens with probability exactly min(1, p/q).
    # r may come from another device than the probabilities (a replay's recorded uniforms, p and q on a GPU).
    rejected = uniforms.to(accept_probs.device, accept_probs.dtype) >= accept_probs  # [γ]
    accepted_count = int(rejected.int().argmax()) if bool(rejected.any()) else gamma

    # 4. After the first rejection, draw the correction from norm(max(0, p - q)); after γ acceptances, the
    #    bonus token from p_{γ+1}.
    if accepted_count < gamma:
        next_probs = rule.replacement(target_probs[accepted_count], draft_probs[accepted_count])
        next_kind = CORRECTED
    else:
        next_probs = target_probs[gamma]
        next_kind = BONUS
    if next_uniform is None:
        next_uniform = torch.rand((), generator=generator, device=next_probs.device)
    next_token = int(sample_with_uniform(next_probs, next_uniform))
    return VerifyResult(accepted_count, next_token, next_kind, accept_probs.tolist(), next_probs)
