"""Token-tree rounds on the scripted models: every sampled round verifies the models' own p and q rows (top-k
children checked as if drawn from q do not: the negative control), greedy trees equal greedy decoding, the caches
keep only the accepted path, and a T = 1 tree run replays exactly while a tampered one is caught. In the slow tier,
whole sequences follow the target exactly (χ²) and the top-k children do not."""

import pytest
import torch

from specviz.config import DecodeConfig
from specviz.decoding import engine, plain
from specviz.decoding.replay import first_difference
from specviz.drafters import tree as tree_module
from specviz.trace import REJECTED, Trace
from tests.fakes import PROMPT, check_rounds_against_the_models, exact_sequence_probs, fake_pipeline
from tests.stats import fit

TREE = dict(tree=True, tree_budget=6)  # γ 2: up to 6 nodes, 2 deep, 2 children under each of the 3 likeliest nodes


def _sequence_counts(config: DecodeConfig, runs: int, vocab: int = 3) -> tuple[dict, dict, int]:
    exact = exact_sequence_probs(config, config.max_new_tokens, vocab)
    pipeline = fake_pipeline(vocab)
    counts, tree_rounds = dict.fromkeys(exact, 0), 0
    for seed in range(runs):
        trace = engine.run_speculative(pipeline, PROMPT, DecodeConfig(**{**config.to_dict(), "seed": seed}))
        counts[tuple(trace.token_ids)] += 1
        tree_rounds += sum(round_.is_tree for round_ in trace.rounds)
    return exact, counts, tree_rounds


SAMPLINGS = [dict(temperature=1.0), dict(temperature=0.7, top_k=2), dict(temperature=1.3, top_p=0.8)]
SAMPLING_IDS = ["T=1", "T=0.7 top-k 2", "T=1.3 top-p 0.8"]


@pytest.mark.slow  # hundreds of runs; the fast tier checks every sampling's rounds' rows (below) and verify_tree's law
def test_tree_sequences_follow_the_target_exactly():
    """One sampled χ² test of the tree engine, at T = 1."""
    runs = 800
    config = DecodeConfig(gamma=2, max_new_tokens=3, chat=False, **TREE, **SAMPLINGS[0])
    exact, counts, tree_rounds = _sequence_counts(config, runs)
    assert tree_rounds > runs  # most rounds drafted real trees
    p_value, distance = fit(exact, counts, runs)
    assert p_value > 0.001 and distance < 0.08


@pytest.mark.slow
def test_trees_with_prompt_lookup_s_branch_follow_the_target_exactly():
    runs = 1500
    config = DecodeConfig(gamma=2, max_new_tokens=4, chat=False, temperature=1.0, draft="ngram+model", **TREE)
    exact = exact_sequence_probs(config, config.max_new_tokens, 3)
    pipeline = fake_pipeline(3, drafter="ngram+model")
    counts = dict.fromkeys(exact, 0)
    for seed in range(runs):
        trace = engine.run_speculative(pipeline, PROMPT, DecodeConfig(**{**config.to_dict(), "seed": seed}))
        counts[tuple(trace.token_ids)] += 1
    p_value, distance = fit(exact, counts, runs)
    assert p_value > 0.001 and distance < 0.1


def test_prompt_lookup_s_copy_joins_the_tree_where_it_leaves_it():
    from specviz.core.sampling import one_hot
    from specviz.drafters.base import BY_LOOKUP, BY_MODEL, Draft
    from specviz.drafters.tree import main_line, with_branch

    tree = Draft(torch.tensor([5, 6, 7, 8]), torch.rand(4, 10), 2, source=BY_MODEL, parents=[-1, -1, 0, 0])
    copy = Draft(torch.tensor([5, 8, 9, 1]), one_hot(torch.tensor([5, 8, 9, 1]), 10), 0, source=BY_LOOKUP)
    merged = with_branch(tree, copy)  # 5 and 8 are the tree's own nodes 0 and 3; 9 and 1 hang under node 3
    assert merged.tokens.tolist() == [5, 6, 7, 8, 9, 1] and merged.parents == [-1, -1, 0, 0, 3, 4]
    assert torch.equal(merged.probs[4:], one_hot(torch.tensor([9, 1]), 10))
    assert main_line(merged.tokens.tolist(), merged.parents) == [5, 7]
    assert with_branch(tree, Draft(torch.tensor([5, 7]), one_hot(torch.tensor([5, 7]), 10), 0, source=BY_LOOKUP)) is tree


def _top_k_as_if_sampled(logits, draft_probs, count, greedy, generator):
    """The draft's top tokens as children, each said to be drawn from q itself (it was chosen, not drawn)."""
    ids = draft_probs.topk(count).indices.tolist()
    return ids, [draft_probs] * len(ids)


@pytest.mark.parametrize("sampling", SAMPLINGS, ids=SAMPLING_IDS)
def test_sampled_tree_rounds_verify_the_models_own_rows_and_emit_what_verify_chose(sampling):
    pipeline = fake_pipeline(4)
    for seed in range(2):
        config = DecodeConfig(gamma=3, max_new_tokens=16, chat=False, seed=seed, tree=True, tree_budget=9, **sampling)
        assert any(round_.is_tree for round_ in check_rounds_against_the_models(pipeline, PROMPT, config).rounds)


def test_negative_control_top_k_children_checked_as_if_drawn_from_q_fail_the_row_check(monkeypatch):
    monkeypatch.setattr(tree_module, "pick_children", _top_k_as_if_sampled)
    config = DecodeConfig(gamma=3, max_new_tokens=16, chat=False, temperature=1.0, tree=True, tree_budget=9)
    with pytest.raises(AssertionError, match="q of node"):
        check_rounds_against_the_models(fake_pipeline(4), PROMPT, config)


@pytest.mark.slow
def test_top_k_children_checked_as_if_drawn_from_q_leave_the_target_law(monkeypatch):
    """The negative control: the draft's top-2 tokens as children, each tested with q itself (not the distribution
    it was really drawn from, which is one-hot: it was chosen, not drawn). The same test must fail."""
    monkeypatch.setattr(tree_module, "pick_children", _top_k_as_if_sampled)
    runs = 400
    config = DecodeConfig(gamma=2, max_new_tokens=3, chat=False, temperature=1.0, **TREE)
    exact, counts, _ = _sequence_counts(config, runs)
    p_value, distance = fit(exact, counts, runs)
    assert p_value < 1e-6 and distance > 0.1


@pytest.mark.parametrize("drafter", ["model", "ngram+model"])
@pytest.mark.parametrize("gamma, budget", [(1, 3), (3, 9), (5, 24)])
def test_greedy_trees_equal_greedy_decoding(gamma, budget, drafter):
    pipeline = fake_pipeline(vocab_size=5, drafter=drafter)
    config = DecodeConfig(gamma=gamma, max_new_tokens=40, chat=False, tree=True, tree_budget=budget)
    trace = engine.run_speculative(pipeline, "abcab", config)
    assert trace.token_ids == plain.baseline_decode(pipeline, "abcab", config).token_ids
    lookup_nodes = gamma if drafter == "ngram+model" else 0  # prompt lookup's branch comes on top of the budget
    assert all(round_.drafted <= budget + lookup_nodes for round_ in trace.rounds)
    assert any(round_.is_tree for round_ in trace.rounds)
    assert sum(token.kind == REJECTED for round_ in trace.rounds for token in round_.tokens) > 0  # siblings were tried


def test_the_caches_keep_only_the_accepted_path():
    pipeline = fake_pipeline(vocab_size=4)
    config = DecodeConfig(gamma=3, max_new_tokens=30, chat=False, temperature=1.0, seed=3, tree=True, tree_budget=10)
    prompt_ids = [ord(ch) % 4 for ch in PROMPT]
    for round_, trace in engine.speculative_decode(pipeline, PROMPT, config):
        held = prompt_ids + trace.token_ids
        assert pipeline.target.tokens == held[:-1] and pipeline.target.tree_tokens == []  # all but the newest token
        assert pipeline.draft_model.tokens == held[: len(pipeline.draft_model.tokens)]  # a prefix, then its tree
        assert len(round_.draft_parents) == round_.drafted
        path = [token.node for token in round_.tokens if token.kind == "accepted"]
        assert all(round_.draft_parents[node] == parent for parent, node in zip([-1, *path], path))


def test_a_t1_tree_run_replays_exactly_and_a_tampered_one_is_caught():
    config = DecodeConfig(gamma=3, max_new_tokens=24, chat=False, temperature=1.0, seed=11, tree=True, tree_budget=9)
    trace = Trace.from_json(engine.run_speculative(fake_pipeline(4), PROMPT, config).to_json())
    assert any(round_.is_tree for round_ in trace.rounds)
    assert first_difference(trace, fake_pipeline(4)) is None
    tampered = Trace.from_json(trace.to_json())
    changed = next(round_ for round_ in tampered.rounds if round_.is_tree)
    changed.draft_parents = list(range(-1, changed.drafted - 1))  # claim the tree was a chain
    mismatch = first_difference(tampered, fake_pipeline(4))
    assert mismatch is not None and mismatch.round_index == changed.index


def test_a_tree_needs_a_drafter_that_drafts_trees():
    config = DecodeConfig(gamma=3, max_new_tokens=8, chat=False, draft="ngram", tree=True, tree_budget=9)
    with pytest.raises(ValueError, match="drafts chains only"):
        engine.run_speculative(fake_pipeline(4, drafter="ngram"), PROMPT, config)
    with pytest.raises(ValueError, match="adaptive γ"):
        DecodeConfig(tree=True, adaptive=True).validate()


def test_the_draft_stop_ends_a_tree_s_unsure_paths_and_keeps_it_exact():
    """DecodeConfig.draft_confidence: a node the draft gave less than it is not expanded (its siblings stay)."""
    pipeline = fake_pipeline(vocab_size=5)
    common = dict(gamma=5, max_new_tokens=40, chat=False, tree=True, tree_budget=20)
    free = engine.run_speculative(pipeline, "abcab", DecodeConfig(**common))
    stopped = engine.run_speculative(pipeline, "abcab", DecodeConfig(**common, draft_confidence=0.6))
    assert stopped.token_ids == free.token_ids == plain.baseline_decode(pipeline, "abcab", DecodeConfig(**common)).token_ids
    nodes = [sum(round_.drafted for round_ in trace.rounds) / len(trace.rounds) for trace in (free, stopped)]
    assert nodes[1] < nodes[0]
