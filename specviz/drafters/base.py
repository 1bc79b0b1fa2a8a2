"""Drafters: anything that proposes up to γ tokens together with q, the distribution each was drawn from.

The interface is two methods, as in transformers' candidate generators:
- `begin()` starts a new sequence;
- `propose(sequence, gamma, standardize, generator)` returns a `Draft` for the text so far, which says which
  part of the drafter filled it (`Draft.source`: prompt lookup or a model).

The kinds: a draft model (model.py), prompt lookup and lookup-then-draft (lookup.py), the distilled draft
that reads the target's hidden states (distilled.py), and the target's own 4-bit copy, which is a draft model
whose step is models/int4.py / models/int4_decoder.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch

from specviz.core.tree_shape import TreeShape

# Which part of a drafter filled a Draft (Draft.source). Lookup-then-draft sends either part's proposal, and adaptive γ
# learns the draft model's acceptance from the model's drafts only.
BY_LOOKUP = "lookup"  # copied from the context by prompt lookup: no forward, q one-hot
BY_MODEL = "model"  # drawn by a model: a draft model, a 4-bit copy or the distilled head


@dataclass
class Draft:
    tokens: torch.Tensor  # [k] proposed ids, k ≤ γ (k may be 0: nothing to propose)
    probs: torch.Tensor  # [k, V] q_i, exactly the distribution token i was drawn from
    forwards: int  # draft-model forward passes spent
    logits: list[torch.Tensor] | None = None  # the raw logits [1, V] behind each q_i, where a model drew them (views)
    # tokens a draft model read to catch up before its first draft step: 1 or 2 in a steady run, the whole prompt
    # on its first call, all plain-decoded tokens after adaptive γ's plain steps (that time is no draft step's)
    caught_up: int = 0
    source: str = field(kw_only=True)  # BY_LOOKUP or BY_MODEL: which part of the drafter filled it
    # A token tree: the parent of every token (an earlier token's index, or -1 for a child of the sequence), each
    # drawn from its row of probs given its earlier siblings (drafters/tree.py). None: a chain, [-1, 0, 1, ..].
    parents: list[int] | None = field(default=None, kw_only=True)
    # A draft of another tokenizer (cross_vocab.py): per token, the share of the draft's own distribution on the
    # tokens both vocabularies hold, the only ones it may propose. None for a draft of the target's tokenizer.
    shared_mass: list[float] | None = field(default=None, kw_only=True)
    # ... and the draft's own tokens as it wrote them (their text, in its own tokenization), for the aligned view
    own_texts: list[str] | None = field(default=None, kw_only=True)

    @property
    def tree_parents(self) -> list[int]:
        """The parents of every token, a chain's included."""
        return list(range(-1, self.tokens.numel() - 1)) if self.parents is None else list(self.parents)


class Drafter(Protocol):
    """What the engine, the pipeline and adaptive γ use of a drafter, and nothing else (no attribute is probed)."""

    name: str
    costless: bool  # proposing costs next to nothing beside a model forward (so adaptive γ may propose first)
    # seconds spent so far in forwards the drafter runs itself, outside the models the pipeline times (the distilled
    # head's); 0 for a drafter whose forwards are a pipeline model's (the draft model's) or that runs none (lookup)
    forward_seconds: float
    # Why propose() takes no TreeShape, as a clause ("prompt lookup copies one continuation"); "" when it drafts
    # token trees. The one statement of a drafter's tree capability: drafters/kinds.py reads it before any model
    # loads (from the class a kind builds) and on the drafter actually built.
    chains_only: str

    def begin(self) -> None: ...

    def propose(
        self,
        sequence: list[int],
        gamma: int,
        standardize: Callable[[torch.Tensor], torch.Tensor],
        generator: torch.Generator,
        tree: TreeShape | None = None,
    ) -> Draft:
        """Up to γ tokens for the sequence: a chain, or with `tree` a token tree of that shape (a drafter whose
        `chains_only` says why not refuses one, with refuse_tree)."""
        ...


def refuse_tree(drafter) -> ValueError:
    """The one sentence that refuses a token tree to a drafter that drafts chains only (its chains_only says why)."""
    reason = drafter.chains_only
    return ValueError(f"{reason[:1].upper()}{reason[1:]}: a token tree needs a draft model of the target's own "
                      f"tokenizer (the {drafter.name!r} drafter drafts chains only)")


def empty_draft(vocab_size: int, source: str) -> Draft:
    """Nothing to propose this round."""
    return Draft(torch.empty(0, dtype=torch.long), torch.empty(0, vocab_size), 0, source=source)


def common_prefix_length(first: list[int], second: list[int]) -> int:
    """How many leading ids two sequences share: [1, 2, 3], [1, 2, 4] -> 2."""
    length = 0
    for a, b in zip(first, second):
        if a != b:
            break
        length += 1
    return length
