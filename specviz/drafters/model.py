"""A draft model: a small causal LM of the target's vocabulary that samples γ tokens one forward at a time."""

from __future__ import annotations

import copy

import torch

from specviz.core.sampling import sample
from specviz.core.tree_shape import TreeShape
from specviz.drafters.base import BY_MODEL, Draft, common_prefix_length, empty_draft
from specviz.drafters.tree import grow, settle
from specviz.models.head_subset import subset_ids
from specviz.models.loading import LanguageModel

SINK = 4  # prompt tokens a draft window always keeps from the start: the chat template's head, an attention sink


def window_view(length: int, window: int) -> tuple[int, int]:
    """(head, cut): a draft window of `window` tokens over a prompt of `length` reads prompt[:head] + prompt[cut:],
    the first SINK tokens and the most recent window - SINK; (0, 0), the whole prompt, when it is no longer than the
    window or the window is 0. Whatever follows the prompt is read in full.

    >>> window_view(100, 10), window_view(8, 10), window_view(100, 0)
    ((4, 94), (0, 0), (0, 0))
    """
    if window <= 0 or length <= window:
        return 0, 0
    head = min(SINK, window)
    return head, length - (window - head)


class DraftModelDrafter:
    """A small causal LM that samples γ tokens autoregressively from its standardized distributions.

    Its KV cache always holds a prefix of the sequence. Each proposal first rolls the cache back to the longest
    prefix still valid (after a rejection, or the bonus token it never saw), then feeds only what is new.

    A `twin` is a target of the same architecture (the int4 drafter's): the draft then starts each sequence from
    a copy of the twin's cache instead of encoding the prompt a second time, and drafts nothing until the twin
    has encoded it.

    Two levers cut the draft's share of a round, both fixed at the first proposal after begin():
    - `window` (DecodeConfig.draft_window): the draft reads only a window of the prompt, the first SINK tokens and
      the most recent window - SINK, positions renumbered from 0 (it sees a shorter sequence), and everything after
      the prompt in full. Every use of the sequence here goes through that view (`_seen`). A twin's prompt cache
      comes for free, so a twin ignores the window.
    - `frequent` (DecodeConfig.draft_vocab): the draft's head scores only the `frequent` lowest ids (the frequency
      ranking), the prompt's and the EOS ids `ends` (models/head_subset.py); q is 0 outside them.
    Any draft state keeps the method exact, since q is whatever the draft sampled from: a shorter context or a
    smaller head changes how often drafts are accepted, never the output's distribution.
    """

    costless = False
    forward_seconds = 0.0  # its forwards are the draft model's, which the pipeline times
    chains_only = ""  # it grows token trees (drafters/tree.py)

    def __init__(self, model: LanguageModel, twin: LanguageModel | None = None, confidence: float = 0.0,
                 window: int = 0, frequent: int = 0, ends: list[int] | tuple[int, ...] = ()):
        self.model = model
        self.twin = twin
        self.confidence = confidence
        self.window = 0 if twin is not None else window  # prompt tokens the draft reads (0: all)
        self.frequent = frequent  # the lowest (most frequent) ids the head scores, with the prompt's and EOS; 0: all
        self.ends = list(ends)
        settings = [f"{name} {value}" for name, value in (("draft_window", self.window), ("draft_vocab", frequent)) if value]
        # c's draft step is timed once per name (calibration.step_times): a window or a head subset is a drafter of its own
        self.name = model.name + (f" ({', '.join(settings)})" if settings else "")
        self.cached_ids: list[int] = []  # what the model's cache holds: a prefix of the view (_seen)
        self.tree_tokens: list[int] = []  # the token-tree entries the model read last round (tree.settle)
        self.view: tuple[int, int] | None = None  # the window's (head, cut) of this sequence; None before it is fixed

    def begin(self) -> None:
        self.model.reset()
        self.cached_ids = []
        self.tree_tokens: list[int] = []  # the token-tree entries the model read last round (tree.settle)
        self.view = None
        if self.frequent:
            self.model.full_vocabulary()

    def propose(self, sequence, gamma, standardize, generator, tree: TreeShape | None = None) -> Draft:
        if self.view is None:  # the first proposal of this sequence: fix the window and the head subset
            self.view = window_view(len(sequence), self.window)
            if self.frequent:
                self.model.limit_vocabulary(subset_ids(self.frequent, sequence, self.ends, self.model.vocab_size))
        vocab = self.model.vocab_size
        if gamma == 0:
            return empty_draft(vocab, BY_MODEL)
        seen = self._seen(sequence)  # what the draft model reads of the sequence
        if self.twin is not None and not self.cached_ids:
            if self.twin.cached_length == 0:  # round 0: the target encodes the prompt alone, a plain step
                return empty_draft(vocab, BY_MODEL)
            self.model.cache, self.model.cached_length = copy.deepcopy(self.twin.cache), self.twin.cached_length
            self.cached_ids = list(seen[: self.twin.cached_length])  # a twin reads no window: seen is the sequence
        if self.model.tree_parents:  # last round's tree: keep the path the sequence took, drop the rest
            self.cached_ids = settle(self.model, self.tree_tokens, self.cached_ids, seen)
        # Roll back to the valid prefix; always re-feed at least the last token to get fresh logits.
        valid = min(common_prefix_length(self.cached_ids, seen), len(seen) - 1)
        self.model.crop(valid)
        new_ids = torch.tensor(seen[valid:], dtype=torch.long, device=self.model.device)
        logits = self.model.feed(new_ids, sync=False)  # [1, V]
        if tree is not None:
            return self._grown(seen, logits, tree.within(gamma), standardize, generator, len(new_ids))
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
        self.cached_ids = list(seen) + drafted[:-1].tolist()
        return Draft(drafted, torch.stack(probs), len(tokens), raw, caught_up=len(new_ids), source=BY_MODEL)

    def _seen(self, sequence: list[int]) -> list[int]:
        """The sequence as the draft model reads it: sequence[:head] + sequence[cut:] through the window, else all."""
        head, cut = self.view
        return sequence if cut == head else list(sequence[:head]) + list(sequence[cut:])

    def _grown(self, seen, logits, shape: TreeShape, standardize, generator, caught_up: int) -> Draft:
        """1. Draft a token tree of `shape` under the sequence the model read (`seen`), whose next-token logits
        [1, V] were just read."""
        grown = grow(self.model, logits, shape, standardize, generator)
        self.cached_ids, self.tree_tokens = list(seen), [grown.tokens[node] for node in grown.fed]
        return Draft(torch.tensor(grown.tokens, dtype=torch.long, device=self.model.device), torch.stack(grown.probs),
                     grown.forwards + 1, grown.logits, caught_up=caught_up, source=BY_MODEL, parents=grown.parents)

    def _unsure(self, logits: torch.Tensor, token: torch.Tensor) -> bool:
        """Whether the draft model gave its token less than `confidence`, by its own untempered distribution
        softmax(logits) (at T = 0 the standardized q is one-hot, so it cannot say how sure the draft was)."""
        return float(torch.softmax(logits[0].float(), dim=-1)[token]) < self.confidence
