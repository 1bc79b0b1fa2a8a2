"""Drafters: anything that proposes up to γ tokens together with q, the distribution each was drawn from.

The interface is two methods, as in transformers' candidate generators:
- `begin()` starts a new sequence;
- `propose(sequence, gamma, standardize, generator)` returns a `Draft` for the text so far.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Callable, Protocol

import torch

from .models import LanguageModel
from .sampling import one_hot, sample


@dataclass
class Draft:
    tokens: torch.Tensor  # [k] proposed ids, k ≤ γ (k may be 0: nothing to propose)
    probs: torch.Tensor  # [k, V] q_i, exactly the distribution token i was drawn from
    forwards: int  # draft-model forward passes spent


class Drafter(Protocol):
    name: str
    costless: bool  # proposing costs next to nothing beside a model forward (so adaptive γ may propose first)

    def begin(self) -> None: ...

    def propose(
        self,
        sequence: list[int],
        gamma: int,
        standardize: Callable[[torch.Tensor], torch.Tensor],
        generator: torch.Generator,
    ) -> Draft: ...


class DraftModelDrafter:
    """A small causal LM that samples γ tokens autoregressively from its standardized distributions.

    Its KV cache always holds a prefix of the sequence. Each proposal first rolls the cache back to the longest
    prefix still valid (after a rejection, or the bonus token it never saw), then feeds only what is new.

    A `twin` is a target of the same architecture (the int4 drafter's): the draft then starts each sequence from
    a copy of the twin's cache instead of encoding the prompt a second time, and drafts nothing until the twin
    has encoded it. Any draft state keeps the method exact, since q is whatever the draft sampled from.
    """

    costless = False

    def __init__(self, model: LanguageModel, twin: LanguageModel | None = None):
        self.model = model
        self.twin = twin
        self.name = model.name
        self.cached_ids: list[int] = []

    def begin(self) -> None:
        self.model.reset()
        self.cached_ids = []

    def propose(self, sequence, gamma, standardize, generator) -> Draft:
        vocab = self.model.vocab_size
        if gamma == 0:
            return Draft(torch.empty(0, dtype=torch.long), torch.empty(0, vocab), 0)
        if self.twin is not None and not self.cached_ids:
            if self.twin.cached_length == 0:  # round 0: the target encodes the prompt alone, a plain step
                return Draft(torch.empty(0, dtype=torch.long), torch.empty(0, vocab), 0)
            self.model.cache, self.model.cached_length = copy.deepcopy(self.twin.cache), self.twin.cached_length
            self.cached_ids = list(sequence[: self.twin.cached_length])
        # Roll back to the valid prefix; always re-feed at least the last token to get fresh logits.
        valid = min(_common_prefix_length(self.cached_ids, sequence), len(sequence) - 1)
        self.model.crop(valid)
        new_ids = torch.tensor(sequence[valid:], dtype=torch.long, device=self.model.device)
        tokens, probs = [], []
        logits = self.model.feed(new_ids, sync=False)  # [1, V]
        # 1. Sample x_1..x_γ one at a time, keeping each q_i. x_γ is sampled but never fed back. Everything stays
        #    on the device: no host sync inside this loop (the engine synchronises once, after drafting).
        for step in range(gamma):
            if step > 0:
                logits = self.model.feed(tokens[-1], sync=False)
            draft_probs = standardize(logits)[0]  # [V]
            tokens.append(sample(draft_probs, generator).view(1))
            probs.append(draft_probs)
        drafted = torch.cat(tokens)  # [γ]
        self.cached_ids = list(sequence) + drafted[:-1].tolist()
        return Draft(drafted, torch.stack(probs), gamma)


class FeatureDrafter:
    """The distilled draft (feature_draft.py): reads the target's last hidden states instead of re-reading text.

    Its cache holds pairs (h_j, x_{j+1}), with x_j too for a draft that reads the current token, for every position
    whose state h_j the target has computed. Each proposal first feeds the pairs the last verification made true
    (accepted tokens and the correction), then drafts γ tokens, each step feeding its own predicted state with the
    token it just drew. Until the target has encoded the prompt there is no state to read, so the first round drafts
    nothing.
    """

    costless = False

    def __init__(self, draft, target: LanguageModel, name: str):
        from transformers import DynamicCache

        self.draft = draft  # feature_draft.FeatureDraft
        self.target = target  # a LanguageModel created with keep_features=True
        self.name = name
        self.new_cache = lambda: DynamicCache(config=draft.config)
        self.cache = None
        self.true_pairs = 0  # pairs in the cache built from the target's own states (never from predictions)
        self.forward_seconds = 0.0

    def begin(self) -> None:
        self.cache = self.new_cache()
        self.true_pairs = 0

    def propose(self, sequence, gamma, standardize, generator) -> Draft:
        vocab, device = self.target.vocab_size, self.target.device
        known = self.target.cached_length  # states h_0..h_{known-1} exist
        if gamma == 0 or known != len(sequence) - 1 or self.target.features is None:
            return Draft(torch.empty(0, dtype=torch.long), torch.empty(0, vocab), 0)
        started = time.perf_counter()
        # Roll back the pairs fed from predicted states, then feed the pairs j = true_pairs..n-2 made true since.
        predicted_pairs = self.cache.get_seq_length() - self.true_pairs
        if predicted_pairs > 0:
            self.cache.crop(-predicted_pairs)
        first, last = self.true_pairs, len(sequence) - 1
        features = self.target.features[first:last].unsqueeze(0)  # [1, n, H]
        ids = torch.tensor(sequence[first:], dtype=torch.long, device=device).view(1, -1)  # [1, n + 1]
        predicted = self._step(features, ids[:, 1:], first, ids[:, :-1])  # [1, n, H]
        self.true_pairs = last
        state = predicted[:, -1:]  # [1, 1, H]: ĥ for the position after the sequence
        head_ids = self.draft.head_ids  # [S]
        tokens, probs = [], []
        for step in range(gamma):
            if step > 0:  # pair (ĥ, x̂): the predicted state stands in for the one the target has not computed
                current = tokens[-2] if step > 1 else ids[0, -1]  # x_j, the token read at that position
                state = self._step(state, tokens[-1].view(1, 1), last + step - 1, current.view(1, 1))
            # The warpers over the S head logits give what they give over all V with -inf outside the head, at
            # a twelfth of the work; q is then 0 outside the head's support.
            head_probs = standardize(self.draft.head_logits(state[0]))[0]  # [S]
            tokens.append(head_ids[sample(head_probs, generator)].view(1))
            probs.append(torch.zeros(vocab, device=device).index_copy_(0, head_ids, head_probs))  # [V]
        self.forward_seconds += time.perf_counter() - started
        return Draft(torch.cat(tokens), torch.stack(probs), gamma)

    def _step(self, features: torch.Tensor, next_ids: torch.Tensor, first_position: int,
              current_ids: torch.Tensor) -> torch.Tensor:
        from .feature_draft import causal_mask

        count = next_ids.shape[1]
        positions = torch.arange(first_position, first_position + count, device=next_ids.device).view(1, -1)
        mask = causal_mask(count, first_position + count, next_ids.device) if count > 1 else None
        with torch.inference_mode():
            return self.draft(features.to(self.draft.fc.weight.dtype), next_ids, positions, self.cache, mask,
                              current_ids)


class PromptLookupDrafter:
    """Prompt lookup decoding (Saxena 2023): copy what followed the earliest match of the
    context's last n-gram (longest n first).

    The search is transformers' own `PromptLookupCandidateGenerator`. The proposal is deterministic, so q is
    one-hot: a drafted x is accepted with probability p(x), and the residual is p with x removed, renormalized.
    """

    name = "ngram"
    costless = True

    def __init__(self, vocab_size: int, ngram_size: int = 3, eos_token_ids: list[int] | None = None):
        from transformers.generation.candidate_generator import PromptLookupCandidateGenerator

        eos = torch.tensor(eos_token_ids) if eos_token_ids else None
        self.vocab_size = vocab_size
        self.lookup = PromptLookupCandidateGenerator(
            eos_token_id=eos, max_matching_ngram_size=ngram_size, max_length=1 << 30
        )

    def begin(self) -> None:
        pass

    def propose(self, sequence, gamma, standardize, generator) -> Draft:
        self.lookup.num_output_tokens = gamma
        context = torch.tensor(sequence, dtype=torch.long).view(1, -1)  # [1, n]
        candidates, _ = self.lookup.get_candidates(context)
        drafted = candidates[0, len(sequence):][:gamma]  # [k]
        probs = one_hot(drafted, self.vocab_size)  # [k, V], q = one-hot
        return Draft(drafted, probs, 0)


class LookupThenModelDrafter:
    """Prompt lookup where the context has a match, a model drafter everywhere else.

    The two are good at different text: lookup when the answer copies the prompt or itself (extraction,
    translation, summaries, code edits), a trained draft when it does not. Each round uses one of them, so q is
    whole: one-hot for a copied span, the draft's own distribution otherwise. The model drafter sees every token
    through the sequence it is given, so skipping it for a round costs it nothing.
    """

    costless = False

    def __init__(self, lookup: PromptLookupDrafter, model: "FeatureDrafter | DraftModelDrafter", name: str):
        self.lookup, self.model, self.name = lookup, model, name

    @property
    def forward_seconds(self) -> float:
        return getattr(self.model, "forward_seconds", 0.0)

    def begin(self) -> None:
        self.lookup.begin()
        self.model.begin()

    def propose(self, sequence, gamma, standardize, generator) -> Draft:
        copied = self.lookup.propose(sequence, gamma, standardize, generator)
        if len(copied.tokens) > 0:
            return copied
        return self.model.propose(sequence, gamma, standardize, generator)


def _common_prefix_length(first: list[int], second: list[int]) -> int:
    length = 0
    for a, b in zip(first, second):
        if a != b:
            break
        length += 1
    return length
