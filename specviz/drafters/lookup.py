"""Prompt lookup (copy the continuation of the last n-gram's earlier match) and lookup-then-draft."""

from __future__ import annotations

import torch

from specviz.drafters.base import Draft, Drafter
from specviz.sampling import one_hot


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

    def __init__(self, lookup: PromptLookupDrafter, model: Drafter, name: str):
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
