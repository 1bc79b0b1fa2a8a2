"""The live tab's token-tree settings (RunRequest.tree / tree_budget): what a run asks for, and refusals in words."""

import pytest

from specviz.app.policy import Policy
from specviz.app.request import DRAFT_MODEL, LOOKUP_THEN_DRAFT, OFFLINE_PAIR, PROMPT_LOOKUP, RunRequest

OWN_COPY = "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy"  # a pair whose draft is a model: it can grow trees


def test_a_tree_request_becomes_a_tree_config():
    config = RunRequest(pair=OWN_COPY, drafter=DRAFT_MODEL, tree=True, tree_budget=9).to_config(Policy())
    assert config.tree and config.tree_budget == 9
    assert RunRequest(pair=OWN_COPY, drafter=LOOKUP_THEN_DRAFT, tree=True).to_config(Policy()).tree_budget == 0
    assert not RunRequest().to_config(Policy()).tree


@pytest.mark.parametrize("changes, sentence", [
    (dict(drafter=PROMPT_LOOKUP), "copies one continuation: a token tree needs a draft model"),
    (dict(pair=OFFLINE_PAIR), "the 'distilled' drafter drafts chains only"),
    (dict(adaptive=True), "adaptive γ chooses chain lengths"),
    (dict(tree_budget=65), "tree_budget must be a whole number from 0 to 64"),
    (dict(tree_budget="many"), "tree_budget must be a whole number"),
    (dict(tree="yes"), "tree must be true or false"),
])
def test_a_tree_that_cannot_run_is_refused_in_words(changes, sentence):
    request = RunRequest(**{"pair": OWN_COPY, "drafter": DRAFT_MODEL, "tree": True, **changes})
    with pytest.raises(ValueError, match=sentence):
        request.to_config(Policy())
