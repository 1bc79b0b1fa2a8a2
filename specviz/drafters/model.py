"""A draft model: a small causal LM of the target's vocabulary that samples γ tokens one forward at a time."""

from __future__ import annotations

import copy

import torch

from specviz.drafters.base import BY_MODEL, Draft, common_prefix_length, empty_draft
from specviz.drafters.tree import TreeShape, grow, settle
from specviz.models.loading import LanguageModel
from specviz.sampling import sample


class DraftModelDrafter:
    """A small causal LM that samples γ tokens autoregressively from its standardized distributions.

    Its KV cache always holds a prefix of the sequence. Each proposal first rolls the cache back to the longest
    prefix still valid (after a rejection, or the bonus token it never saw), then feeds only what is new.

    A `twin` is a target of the same architecture (the int4 drafter's): the draft then starts each sequence from
    a copy of the twin's cache instead of encoding the prompt a second time, and drafts nothing until the twin
    has encoded it. Any draft state keeps the method exact, since q is whatever the draft sampled from.
    """

    costless = False
    forward_seconds = 0.0  # its forwards are the draft model's, which the pipeline times
    drafts_trees = True

    def __init__(self, model: LanguageModel, twin: LanguageModel | None = None, confidence: float = 0.0):
        self.model = model
        self.twin = twin
        self.confidence = confidence
        self.name = model.name
        self.cached_ids: list[int] = []
        self.tree_tokens: list[int] = []  # the token-tree entries the model read last round (tree.settle)

    def begin(self) -> None:
        self.model.reset()
        self.cached_ids = []
        self.tree_tokens: list[int] = []  # the token-tree entries the model read last round (tree.settle)

    def propose(self, sequence, gamma, standardize, generator, tree: TreeShape | None = None) -> Draft:
        vocab = self.model.vocab_size
        if gamma == 0:
            return empty_draft(vocab, BY_MODEL)
        if self.twin is not None and not self.cached_ids:
            if self.twin.cached_length == 0:  # round 0: the target encodes the prompt alone, a plain step
                return empty_draft(vocab, BY_MODEL)
            self.model.cache, self.model.cached_length = copy.deepcopy(self.twin.cache), self.twin.cached_length
            self.cached_ids = list(sequence[: self.twin.cached_length])
        if self.model.tree_parents:  # last round's tree: keep the path the sequence took, drop the rest
            self.cached_ids = settle(self.model, self.tree_tokens, self.cached_ids, sequence)
        # Roll back to the valid prefix; always re-feed at least the last token to get fresh logits.
        valid = min(common_prefix_length(self.cached_ids, sequence), len(sequence) - 1)
        self.model.crop(valid)
        new_ids = torch.tensor(sequence[valid:], dtype=torch.long, device=self.model.device)
        logits = self.model.feed(new_ids, sync=False)  # [1, V]
        if tree is not None:
            return self._grown(sequence, logits, tree.within(gamma), standardize, generator, len(new_ids))
        tokens, probs, raw = [], [], []
        # 1. Sample x_1..x_k (k ≤ γ) one at a time, keeping each q_i. x_k is sampled but never fed back. Without a
        #    confidence stop everything stays on the device: no host sync inside this loop (the engine
        #    synchronises once, after drafting); the stop reads q_i(x_i), one sync per drafted token.
        for step in range(gamma):
            if step > 0:
                logits = self.model.feed(tokens[-1], sync=False)
            raw.append(logits)  # kept by reference for the views (untempered q at T = 0); no copy here
            draft_probs = standardize(logits)[0]  # [V]
            tokens.append(sample(draft_probs, generator).view(1))
            probs.append(draft_probs)
            if self.confidence > 0 and self._unsure(logits, tokens[-1]):
                break
        drafted = torch.cat(tokens)  # [k]
        self.cached_ids = list(sequence) + drafted[:-1].tolist()
        return Draft(drafted, torch.stack(probs), len(tokens), raw, caught_up=len(new_ids), source=BY_MODEL)

    def _grown(self, sequence, logits, shape: TreeShape, standardize, generator, caught_up: int) -> Draft:
        """1. Draft a token tree of `shape` under the sequence, whose next-token logits [1, V] were just read."""
        grown = grow(self.model, logits, shape, standardize, generator)
        self.cached_ids, self.tree_tokens = list(sequence), [grown.tokens[node] for node in grown.fed]
        return Draft(torch.tensor(grown.tokens, dtype=torch.long, device=self.model.device), torch.stack(grown.probs),
                     grown.forwards + 1, grown.logits, caught_up=caught_up, source=BY_MODEL, parents=grown.parents)

    def _unsure(self, logits: torch.Tensor, token: torch.Tensor) -> bool:
        """Whether the draft model gave its token less than `confidence`, by its own untempered distribution
        softmax(logits) (at T = 0 the standardized q is one-hot, so it cannot say how sure the draft was)."""
        return float(torch.softmax(logits[0].float(), dim=-1)[token]) < self.confidence
