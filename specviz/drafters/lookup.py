"""Prompt lookup (copy the continuation of the last n-gram's earlier match) and lookup-then-draft."""

from __future__ import annotations

import torch

from specviz.core.sampling import one_hot
from specviz.drafters.acceptance import PositionalAcceptance
from specviz.drafters.base import BY_LOOKUP, Draft, Drafter, refuse_tree
from specviz.drafters.tree import main_line, with_branch

PRIOR = 0.5  # each source's acceptance before any evidence (as adaptive γ's prior for a draft model)
SOURCE_DECAY = 0.7  # per-round fading of both records (memory of about 3 rounds: a copied passage starts and ends)
TRACKED_POSITIONS = 64  # draft positions whose acceptance each source keeps (a longer draft counts as ending there)


class PromptLookupDrafter:
    """Prompt lookup decoding (Saxena 2023): copy what followed the earliest match of the
    context's last n-gram (longest n first).

    The search is transformers' own `PromptLookupCandidateGenerator`. The proposal is deterministic, so q is
    one-hot: a drafted x is accepted with probability p(x), and the residual is p with x removed, renormalized.
    """

    name = "ngram"
    costless = True
    forward_seconds = 0.0  # no model
    chains_only = "prompt lookup copies one continuation"

    def __init__(self, vocab_size: int, ngram_size: int = 3, eos_token_ids: list[int] | None = None):
        from transformers.generation.candidate_generator import PromptLookupCandidateGenerator

        eos = torch.tensor(eos_token_ids) if eos_token_ids else None
        self.vocab_size = vocab_size
        self.lookup = PromptLookupCandidateGenerator(
            eos_token_id=eos, max_matching_ngram_size=ngram_size, max_length=1 << 30
        )

    def begin(self) -> None:
        pass

    def propose(self, sequence, gamma, standardize, generator, tree=None) -> Draft:
        if tree is not None:
            raise refuse_tree(self)
        self.lookup.num_output_tokens = gamma
        context = torch.tensor(sequence, dtype=torch.long).view(1, -1)  # [1, n]
        candidates, _ = self.lookup.get_candidates(context)
        drafted = candidates[0, len(sequence):][:gamma]  # [k]
        probs = one_hot(drafted, self.vocab_size)  # [k, V], q = one-hot
        return Draft(drafted, probs, 0, source=BY_LOOKUP)


class LookupThenModelDrafter:
    """Prompt lookup where the context has a match and its record promises as much, a model drafter elsewhere.

    The two are good at different text: lookup when the answer copies the prompt or itself (extraction,
    translation, summaries, code edits), a trained draft when it does not. Each source keeps its own acceptance
    per draft position (acceptance.py), learnt from the tokens the sequence then holds: lookup's from every
    proposal (it is costless, so it proposes each round, sent or not), the model's from the drafts it sent. A
    round sends lookup's proposal when its expected accepted tokens are at least the model's for γ drafts (once the
    model has drafted a round), else asks the model. One estimate for both would let lookup's misses in prose cut
    the model's drafts short.

    The choice depends only on tokens already in the sequence, never on this round's target output, so the output
    still follows the target exactly, and a replay makes the same choices. q is whole either way: one-hot for a
    copied span, the draft's own distribution otherwise. The model drafter sees every token through the sequence it
    is given, so skipping it for a round costs it nothing.
    """

    costless = False

    def __init__(self, lookup: PromptLookupDrafter, model: Drafter, name: str):
        self.lookup, self.model, self.name = lookup, model, name
        self.chains_only = model.chains_only  # the model's rounds may be trees; lookup's are chains
        self._new_records()

    def _new_records(self) -> None:
        # The same prior for both, so that equal records compare equal (a tie sends lookup, which costs nothing,
        # once the model has drafted):
        # with prior weight 1 and fading, a rate never passes about 0.88, for either source.
        self.lookup_scores = PositionalAcceptance(TRACKED_POSITIONS, PRIOR, decay=SOURCE_DECAY)
        self.model_scores = PositionalAcceptance(TRACKED_POSITIONS, PRIOR, decay=SOURCE_DECAY)

    @property
    def forward_seconds(self) -> float:
        return self.model.forward_seconds

    def begin(self) -> None:
        self.lookup.begin()
        self.model.begin()
        self._new_records()

    def propose(self, sequence, gamma, standardize, generator, tree=None) -> Draft:
        self.lookup_scores.score(sequence)
        self.model_scores.score(sequence)
        copied = self.lookup.propose(sequence, gamma, standardize, generator)
        copied_ids = copied.tokens.tolist()
        self.lookup_scores.watch(len(sequence), copied_ids)
        if tree is not None:  # a token tree: the model's, with lookup's copy as one more branch (it costs nothing)
            draft = self.model.propose(sequence, gamma, standardize, generator, tree)
            self.model_scores.watch(len(sequence), main_line(draft.tokens.tolist(), draft.tree_parents))
            return with_branch(draft, copied)
        model_tried = self.model_scores.reached[0] > 0  # the model drafts first, so adaptive γ learns what it is worth
        if copied_ids and model_tried and (
                self.lookup_scores.expected_accepted(len(copied_ids)) >= self.model_scores.expected_accepted(gamma)):
            return copied
        draft = self.model.propose(sequence, gamma, standardize, generator, tree)
        self.model_scores.watch(len(sequence), draft.tokens.tolist())
        return draft
