"""Where a greedy speculative run parts from plain decoding, and whether that is a half-precision tie.

At temperature 0 both runs take the target's argmax, so in exact arithmetic they agree token for token. In
bfloat16 on a GPU they need not: scoring γ + 1 tokens in one forward runs other kernels than scoring one, the
logits are rounded differently, and two near-equal logits can swap places. transformers' assisted generation
parts from plain decoding in the same way (docs/gpu.md). This module finds the first differing token and the
target's logit gap there, so a report can tell a tie from a bug.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass
class Parting:
    index: int  # the first generated token where the runs differ
    plain_token: int
    speculative_token: int
    logit_gap: float  # |logit(plain token) − logit(speculative token)| in a fresh forward over the common prefix
    rounding_step: float  # the model dtype's spacing at the larger of the two logits (one unit in the last place)

    @property
    def is_tie(self) -> bool:
        """Within a few rounding steps: a forward over other shapes could order the two either way."""
        return self.logit_gap <= 4 * self.rounding_step

    def describe(self) -> str:
        kind = "a rounding tie" if self.is_tie else "NOT a rounding tie: a real difference"
        return (f"parted at generated token {self.index}, where the target's logits for the two tokens differ by "
                f"{self.logit_gap:.3g} ({self.logit_gap / self.rounding_step:.1f} rounding steps of its dtype): {kind}")


def find_parting(target, prompt_ids: list[int], plain_ids: list[int], speculative_ids: list[int],
                 dtype: torch.dtype) -> Parting | None:
    """The first token where the two runs differ and the target's logit gap there; None if they agree.

    `target` is a LanguageModel; its cache is reset and refilled with the prompt and the common prefix.
    """
    index = next((i for i, (a, b) in enumerate(zip(plain_ids, speculative_ids)) if a != b), None)
    if index is None:
        return None
    plain_token, speculative_token = plain_ids[index], speculative_ids[index]
    target.reset()
    with torch.inference_mode():
        logits = target.feed(torch.tensor(prompt_ids + plain_ids[:index], dtype=torch.long))[-1].float()  # [V]
    plain_logit, speculative_logit = float(logits[plain_token]), float(logits[speculative_token])
    larger = max(abs(plain_logit), abs(speculative_logit), torch.finfo(dtype).tiny)
    step = torch.finfo(dtype).eps * 2.0 ** math.floor(math.log2(larger))  # spacing of dtype's values near `larger`
    return Parting(index, plain_token, speculative_token, abs(plain_logit - speculative_logit), step)
