"""Lookup-then-draft chooses its source each round from each source's own record on this text."""

import torch

from specviz.core.sampling import one_hot
from specviz.drafters.base import BY_LOOKUP, BY_MODEL, Draft
from specviz.drafters.lookup import LookupThenModelDrafter

VOCAB = 8


class Scripted:
    """Proposes the same ids every time, counting its calls."""

    costless, forward_seconds, chains_only = False, 0.0, "a scripted double drafts chains"

    def __init__(self, ids: list[int], forwards: int):
        self.ids, self.forwards, self.calls = ids, forwards, 0

    def begin(self) -> None:
        pass

    def propose(self, sequence, gamma, standardize, generator, tree=None) -> Draft:
        self.calls += 1
        ids = torch.tensor(self.ids[:gamma], dtype=torch.long)
        return Draft(ids, one_hot(ids, VOCAB), self.forwards, source=BY_MODEL if self.forwards else BY_LOOKUP)


def _sent_sources(truth: list[int], rounds: int = 8) -> tuple[list[str], Scripted]:
    """Each round the drafter proposes, then the sequence goes on with `truth` (as if the target wrote it)."""
    lookup, model = Scripted([1, 2, 3], forwards=0), Scripted([4, 5, 6], forwards=3)
    drafter = LookupThenModelDrafter(lookup, model, "ngram+model")
    drafter.begin()
    sequence, sources = [7, 7], []
    for _ in range(rounds):
        draft = drafter.propose(sequence, 3, None, None)
        sources.append("model" if draft.forwards else "lookup")
        sequence += truth
    return sources, model


def test_lookup_is_sent_once_its_proposals_come_true():
    sources, model = _sent_sources(truth=[1, 2, 3])
    assert sources == ["model"] + ["lookup"] * 7  # the model drafts first; then lookup's record is the better
    assert model.calls == 1  # the model is not run in rounds that copy


def test_the_model_keeps_drafting_where_lookup_keeps_missing():
    sources, model = _sent_sources(truth=[4, 5, 6])
    assert sources == ["model"] * 8 and model.calls == 8


def test_a_source_that_starts_missing_loses_the_rounds_to_the_other():
    lookup, model = Scripted([1, 2, 3], forwards=0), Scripted([4, 5, 6], forwards=3)
    drafter = LookupThenModelDrafter(lookup, model, "ngram+model")
    drafter.begin()
    sequence = [7, 7]
    for truth in ([1, 2, 3], [1, 2, 3], [1, 2, 3], [4, 5, 6], [4, 5, 6], [4, 5, 6], [4, 5, 6]):
        drafter.propose(sequence, 3, None, None)
        sequence += truth  # lookup was right three times, then the text changed
    assert drafter.propose(sequence, 3, None, None).forwards == 3  # lookup's record faded below the model's
    drafter.begin()  # a new sequence forgets both records
    assert drafter.lookup_scores.rates()[0] == drafter.model_scores.rates()[0] == 0.5
