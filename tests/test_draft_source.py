"""Every drafter says which of its parts filled a Draft (Draft.source), and adaptive γ learns a draft model's
acceptance from the model's drafts only, by that source, not by whether the round ran a draft forward."""

import pytest
import torch

from specviz.core.sampling import Standardizer
from specviz.decoding.adaptive import AdaptiveGamma, RoundTiming
from specviz.drafters.base import BY_LOOKUP, BY_MODEL, Draft
from tests.fakes import fake_pipeline


def _propose(drafter, sequence, gamma=3) -> Draft:
    return drafter.propose(sequence, gamma, Standardizer(0.0, 0, 1.0), torch.Generator().manual_seed(0))


def test_draft_has_no_default_source():
    with pytest.raises(TypeError):
        Draft(torch.empty(0, dtype=torch.long), torch.empty(0, 4), 0)  # every drafter must say which part drafted


@pytest.mark.parametrize("kind, source", [("ngram", BY_LOOKUP), ("model", BY_MODEL)])
def test_each_drafter_marks_its_drafts(kind, source):
    drafter = fake_pipeline(8, drafter=kind).drafter
    drafter.begin()
    assert _propose(drafter, [1, 2, 3, 1, 2]).source == source


def test_lookup_then_draft_passes_on_the_source_of_the_part_it_sent():
    drafter = fake_pipeline(8, drafter="ngram+model").drafter
    drafter.begin()
    first = _propose(drafter, [1, 2, 3, 1, 2])
    assert first.source == BY_MODEL and first.forwards > 0  # the model drafts first, to earn its record
    sequence, sources = [1, 2, 3, 1, 2], []
    for _ in range(6):  # the text repeats itself: lookup's copies come true and it is sent
        draft = _propose(drafter, sequence)
        sources.append(draft.source)
        assert (draft.source == BY_LOOKUP) == (draft.forwards == 0)
        sequence = sequence + [3, 1, 2]
    assert BY_LOOKUP in sources


def _timing(source, forwards) -> RoundTiming:
    return RoundTiming(draft_ms=2.0 * forwards, draft_forwards=forwards, verify_ms=10.0, fed=4, caught_up=1,
                       source=source)


@pytest.mark.parametrize("source, forwards, learns", [
    (BY_MODEL, 3, True),
    (BY_LOOKUP, 0, False),  # lookup's copy, sent instead of the model's draft: the model's k does not learn from it
    (BY_MODEL, 0, True),  # the source decides, not the forward count
    (BY_LOOKUP, 3, False),
    (None, 0, False),  # nothing drafted (a plain step)
])
def test_adaptive_gamma_learns_the_models_acceptance_from_its_drafts_only(source, forwards, learns):
    controller = AdaptiveGamma(max_gamma=4)
    before = controller.acceptance()
    controller.observe([1, 2, 3], [0.0, 0.0, 0.0], _timing(source, forwards))  # every draft rejected
    assert (controller.acceptance() != before) == learns


def test_the_first_round_is_learnt_whatever_drafted_it():
    controller = AdaptiveGamma(max_gamma=4)
    before = controller.acceptance()
    controller.observe([1, 2, 3], [0.0], None)  # round 0 passes no timing (it also encoded the prompt)
    assert controller.acceptance() != before
