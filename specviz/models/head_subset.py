"""A draft model's LM head scored over a subset of the vocabulary (FR-Spec's frequency-ranked head), kept exact.

A small draft spends much of each step in its LM head: SmolLM2-135M's is 49,152 × 576 (28M of its 135M weights),
Qwen2.5-0.5B's 151,936 × 896. FR-Spec (Zhao et al. 2025) scores only the rows of the tokens a draft is likely to
draw. The subset here (subset_ids) is:
- the N lowest token ids, the frequency ranking: a byte-level BPE tokenizer (Qwen's, SmolLM2's) numbers its tokens
  in merge order, and it learns merges in order of the pair's frequency in its training text, so low ids are the
  frequent tokens (a cheap stand-in for FR-Spec's corpus counts);
- every token of the prompt (a draft copies names, numbers and code from it);
- the EOS ids, so that the draft can still end.

It stays exact: the draft's q is 0 outside the subset (its logits are -inf there, so standardizing and sampling give
those tokens probability 0), and q is exactly what the draft sampled from, which is all the test min(1, p/q) and
the residual max(0, p - q) need. A token the target wants outside the subset is reached through the residual; at
T = 0 the draft's argmax is the subset's. Only the draft's head is scored this way, never the target's.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from specviz.models.int4 import Int8RowLinear


def subset_ids(lowest: int, prompt: Iterable[int], ends: Iterable[int], vocab_size: int) -> list[int]:
    """The head rows a draft scores, sorted: the `lowest` lowest ids, the prompt's ids and the EOS ids, all below
    vocab_size (the vocabulary draft and target share).

    >>> subset_ids(3, [7, 1, 7, 12], ends=[9], vocab_size=10)
    [0, 1, 2, 7, 9]
    """
    chosen = set(range(min(lowest, vocab_size))) | set(prompt) | set(ends)
    return sorted(token for token in chosen if 0 <= token < vocab_size)


class HeadSubset:
    """A head that scores only the rows `ids` of `head` (nn.Linear or Int8RowLinear) and gives -inf elsewhere.

    The rows are gathered once into a compact copy: float rows of an nn.Linear, int8 codes and their scales of an
    Int8RowLinear (the 4-bit copies' and the lean step's head). The full head is only read, never altered, so tied
    input embeddings still read every token. Each score equals the full head's on its row: the same weights meet
    the same hidden state (the kernel may sum in another order: float rounding, nothing more).
    """

    def __init__(self, head: torch.nn.Module, ids: list[int]):
        if not isinstance(head, (torch.nn.Linear, Int8RowLinear)):
            raise ValueError(f"a head subset gathers the rows of an nn.Linear or Int8RowLinear head, not a "
                             f"{type(head).__name__}")
        self.head = head
        self.width = head.out_features  # V': the full head's rows, padding included
        device = head.codes.device if isinstance(head, Int8RowLinear) else head.weight.device
        self.ids = torch.tensor(sorted(set(ids)), dtype=torch.long, device=device)  # [N]
        if isinstance(head, Int8RowLinear):
            self.codes = head.codes.index_select(0, self.ids).contiguous()  # [N, H] int8
            self.scales = head.scales.index_select(0, self.ids).contiguous()  # [N] bfloat16
        else:
            self.weight = head.weight.detach().index_select(0, self.ids)  # [N, H]
            self.bias = None if head.bias is None else head.bias.detach().index_select(0, self.ids)  # [N]

    def __len__(self) -> int:
        return self.ids.numel()

    def scores(self, hidden: torch.Tensor) -> torch.Tensor:
        """The subset's scores [..., N] for hidden states [..., H], column j for token ids[j]."""
        if isinstance(self.head, Int8RowLinear):  # as Int8RowLinear.forward, over the gathered rows
            rows = hidden.reshape(-1, hidden.shape[-1]).to(torch.bfloat16)  # [m, H]
            out = torch.ops.aten._weight_int8pack_mm(rows, self.codes, self.scales)  # [m, N]
            return out.to(hidden.dtype).view(*hidden.shape[:-1], len(self))
        return torch.nn.functional.linear(hidden, self.weight, self.bias)  # [..., N]

    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits [..., V'] for hidden states [..., H]: the subset's scores at their ids, -inf everywhere else."""
        return self._spread(self.scores(hidden))

    def mask(self, logits: torch.Tensor) -> torch.Tensor:
        """The full head's logits [..., V'] with -inf outside the subset: the same q where a model's forward cannot
        run its head apart (it still pays for every row)."""
        return self._spread(logits.index_select(-1, self.ids))  # [..., N] -> [..., V']

    def _spread(self, scores: torch.Tensor) -> torch.Tensor:
        full = scores.new_full((*scores.shape[:-1], self.width), float("-inf"))  # [..., V']
        return full.index_copy_(-1, self.ids, scores)
