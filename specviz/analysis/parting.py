"""Where a greedy speculative run parts from plain decoding, and whether that is a half-precision tie.

At temperature 0 both runs take the target's argmax, so in exact arithmetic they agree token for token. In
bfloat16 on a GPU they need not: scoring γ + 1 tokens in one forward runs other kernels than scoring one, the
logits are rounded differently, and two near-equal logits can swap places. transformers' assisted generation
parts from plain decoding in the same way (docs/gpu.md). This module finds the first differing token and the
target's logit gap there, and measures how far the target's logits at that position move between forward shapes:
the whole prefix in one forward, the last token fed alone after the rest (a decoding step), and the last few fed
together (a verify forward). A swap that this shape noise can explain is a tie; a wider gap is a bug. A fixed count
of rounding steps would not do: rounding errors add up over the layers, and a bfloat16 tie can be several steps of
the final logits wide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

SPLIT_TOKENS = 8  # the tokens fed together in the verify-like forward (γ + 1 for a γ of 7)


@dataclass
class Parting:
    index: int  # the first generated token where the runs differ
    plain_token: int
    speculative_token: int
    logit_gap: float  # |logit(plain token) − logit(speculative token)| in a fresh forward over the common prefix
    rounding_step: float  # the model dtype's spacing at the larger of the two logits (one unit in the last place)
    shape_noise: float = 0.0  # the largest |Δlogit| over the vocabulary between two forward shapes (see module doc)

    @property
    def is_tie(self) -> bool:
        """A swap the forward shapes' rounding can explain: each logit may move by shape_noise, so their difference by
        twice that (and a few rounding steps in any case)."""
        return self.logit_gap <= max(4 * self.rounding_step, 2 * self.shape_noise)

    def describe(self) -> str:
        kind = "a rounding tie" if self.is_tie else "NOT a rounding tie: a real difference"
        return (f"parted at generated token {self.index}, where the target's logits for the two tokens differ by "
                f"{self.logit_gap:.3g} ({self.logit_gap / self.rounding_step:.1f} rounding steps of its dtype; another "
                f"forward shape moves them by up to {self.shape_noise:.3g}): {kind}")


def find_parting(target, prompt_ids: list[int], plain_ids: list[int], speculative_ids: list[int],
                 dtype: torch.dtype) -> Parting | None:
    """The first token where the two runs differ and the target's logit gap there; None if they agree.

    `target` is a LanguageModel; its cache is reset and refilled with the prompt and the common prefix.
    """
    index = next((i for i, (a, b) in enumerate(zip(plain_ids, speculative_ids)) if a != b), None)
    if index is None:
        return None
    plain_token, speculative_token = plain_ids[index], speculative_ids[index]
    context = torch.tensor(prompt_ids + plain_ids[:index], dtype=torch.long)  # [n]: the prompt and common prefix
    with torch.inference_mode():
        target.reset()
        whole = target.feed(context)[-1].float()  # [V]: one forward over all n tokens
        noise = 0.0
        for last in sorted({1, min(SPLIT_TOKENS, len(context) - 1)} - {0}):  # a decoding step, and a verify forward
            target.reset()
            target.feed(context[:-last])
            split = target.feed(context[-last:])[-1].float()  # [V]: the last `last` tokens fed after the rest
            noise = max(noise, float((whole - split).abs().max()))
    target.reset()
    plain_logit, speculative_logit = float(whole[plain_token]), float(whole[speculative_token])
    larger = max(abs(plain_logit), abs(speculative_logit), torch.finfo(dtype).tiny)
    step = torch.finfo(dtype).eps * 2.0 ** math.floor(math.log2(larger))  # spacing of dtype's values near `larger`
    return Parting(index, plain_token, speculative_token, abs(plain_logit - speculative_logit), step, noise)
