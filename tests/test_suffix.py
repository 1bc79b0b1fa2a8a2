"""Suffix drafting (drafters/suffix.py): the index counts every continuation, the draft follows the most frequent
one while its empirical frequency holds, q is one-hot, and greedy speculative decoding with it is plain decoding."""

import pytest
import torch

from specviz.config import SUFFIX_DRAFTER, DecodeConfig, DrafterSpec
from specviz.core.tree_shape import TreeShape
from specviz.drafters import kinds
from specviz.drafters.base import BY_LOOKUP
from specviz.drafters.suffix import SuffixDrafter, SuffixIndex


def propose(sequence, gamma=8, **settings):
    return SuffixDrafter(vocab_size=50, **settings).propose(sequence, gamma, None, None)


def test_the_index_counts_every_substring_up_to_its_depth():
    index = SuffixIndex(depth=3)
    index.extend([5, 6, 5, 6, 7])
    assert index.root.children[5].count == 2 and index.root.children[6].count == 2
    assert index.root.children[5].children[6].count == 2  # "5 6" twice
    assert index.root.children[5].children[6].children[5].count == 1  # "5 6 5" once
    assert not index.root.children[5].children[6].children[5].children  # depth 3: nothing longer
    assert index.continuations(index.suffix_node(1)) == {}  # "7" never occurred before its end
    assert index.continuations(index.suffix_node(2)) == {}  # nor "6 7"
    assert len(index.open) == 2  # the suffixes of length 1 and 2 can still grow


def test_a_repeating_text_is_drafted_whole_and_q_is_one_hot():
    draft = propose([1, 2, 3, 4, 1, 2, 3, 4, 1, 2], gamma=5)
    assert draft.tokens.tolist() == [3, 4, 1, 2]  # as far as the earlier occurrence went: nothing followed it yet
    assert draft.source == BY_LOOKUP and draft.forwards == 0
    assert torch.equal(draft.probs, torch.nn.functional.one_hot(draft.tokens, 50).float())


def test_the_most_frequent_continuation_wins_and_a_branch_stops_the_draft():
    # "1 2" was followed by 3 three times and by 4 once: 3 is drafted (3/4); then "1 2 3" was followed by 9 twice and
    # by 8 once, so the next step's frequency 2/3 brings the product to 0.5; then 5 or 6 (1/2 each), 0.25
    sequence = [1, 2, 3, 9, 5, 1, 2, 3, 9, 6, 1, 2, 4, 7, 1, 2, 3, 8, 0, 1, 2]
    assert propose(sequence, min_probability=0.4).tokens.tolist() == [3, 9]
    assert propose(sequence, min_probability=0.6).tokens.tolist() == [3]
    assert propose(sequence, min_probability=0.8).tokens.numel() == 0
    assert propose(sequence, gamma=3, min_probability=0.2).tokens.tolist() == [3, 9, 5]  # a tie goes to the lower id


def test_the_longest_ending_that_occurred_before_is_matched():
    # "7 1 2" occurred once, followed by 5; "1 2" alone is followed more often by 3
    sequence = [1, 2, 3, 1, 2, 3, 7, 1, 2, 5, 0, 7, 1, 2]
    assert propose(sequence, gamma=1).tokens.tolist() == [5]


def test_nothing_is_drafted_without_an_earlier_match():
    assert propose([1, 2, 3, 4, 5]).tokens.numel() == 0
    assert propose([]).tokens.numel() == 0
    assert propose([1, 2, 1, 2], gamma=0).tokens.numel() == 0


def test_each_round_indexes_only_the_new_tokens_and_a_new_run_starts_afresh():
    drafter = SuffixDrafter(vocab_size=50)
    drafter.propose([1, 2, 3, 1, 2], 4, None, None)
    index = drafter.index
    drafter.propose([1, 2, 3, 1, 2, 3, 4], 4, None, None)
    assert drafter.index is index and index.tokens == [1, 2, 3, 1, 2, 3, 4]
    drafter.propose([9, 9, 9], 4, None, None)  # not a continuation: indexed from scratch
    assert drafter.index.tokens == [9, 9, 9]
    drafter.begin()
    assert drafter.index.tokens == []


def test_a_token_tree_is_refused_in_words():
    with pytest.raises(ValueError, match="Suffix drafting follows one continuation"):
        SuffixDrafter(vocab_size=50).propose([1, 2, 1], 4, None, None, tree=TreeShape(depth=3, branch=2, expand=1, budget=6))


def test_the_kind_is_a_row_named_in_the_draft_grammar():
    spec = DrafterSpec.parse(SUFFIX_DRAFTER)
    assert spec.kind == SUFFIX_DRAFTER and spec.model is None and str(spec) == "suffix"
    assert kinds.KINDS[SUFFIX_DRAFTER].drafter is SuffixDrafter and not kinds.KINDS[SUFFIX_DRAFTER].trees
    assert "'suffix'" in kinds.help_text()
    with pytest.raises(ValueError):
        DrafterSpec.parse("ngram+suffix")  # two lookups: the first must be followed by a draft model
    DecodeConfig(draft=SUFFIX_DRAFTER, backend="llama.cpp").validate()


@pytest.mark.slow
def test_greedy_speculative_decoding_with_suffix_drafts_is_plain_decoding():
    from specviz.config import OFFLINE_MODEL
    from specviz.decoding import engine, plain
    from specviz.decoding.pipeline import build_pipeline
    from specviz.models import offline

    if offline.installed_gguf() is None:
        pytest.skip(offline.INSTALL_COMMAND)
    config = DecodeConfig(target=OFFLINE_MODEL, draft=SUFFIX_DRAFTER, gamma=6, max_new_tokens=48).validate()
    prompt = "Repeat after me three times: the quick brown fox jumps over the lazy dog."
    pipeline = build_pipeline(config)
    trace = engine.run_speculative(pipeline, prompt, config)
    assert trace.token_ids == plain.baseline_decode(pipeline, prompt, config).token_ids
    assert sum(round_.accepted for round_ in trace.rounds) > 0  # the repeats were drafted and accepted


def test_suffix_drafting_can_copy_before_a_draft_model():
    spec = DrafterSpec.parse("suffix+offline:Qwen2.5-Coder-0.5B-Instruct")
    assert spec.lookup_first and spec.first == SUFFIX_DRAFTER and spec.model == "offline:Qwen2.5-Coder-0.5B-Instruct"
    assert str(spec) == "suffix+offline:Qwen2.5-Coder-0.5B-Instruct" and str(spec.without_lookup()) == spec.model
    assert DrafterSpec.parse("ngram+int4").first == "ngram"
    assert "'suffix+DRAFT'" in kinds.help_text()
    for wrong in ("suffix+ngram", "suffix+suffix", "ngram+suffix", "suffix+"):
        with pytest.raises(ValueError):
            DrafterSpec.parse(wrong)


@pytest.mark.slow
def test_suffix_first_builds_suffix_drafting_before_the_model_and_stays_exact():
    from specviz.config import OFFLINE_MODEL
    from specviz.decoding import engine, plain
    from specviz.decoding.pipeline import build_pipeline
    from specviz.drafters.lookup import LookupThenModelDrafter
    from specviz.models import offline

    if offline.installed_gguf() is None:
        pytest.skip(offline.INSTALL_COMMAND)
    config = DecodeConfig(target=OFFLINE_MODEL, draft="suffix+int4", gamma=4, max_new_tokens=32).validate()
    pipeline = build_pipeline(config)
    assert isinstance(pipeline.drafter, LookupThenModelDrafter) and isinstance(pipeline.drafter.lookup, SuffixDrafter)
    prompt = "Count from one to ten in words, then again."
    trace = engine.run_speculative(pipeline, prompt, config)
    assert trace.token_ids == plain.baseline_decode(pipeline, prompt, config).token_ids
