"""Choosing a tree's budget from measured costs and acceptance (tree_budget.py): Sequoia's f(T) under the positional
model, the chain as its branch-1 case, and the budget a run records so that it replays."""

import dataclasses

import pytest

from specviz.config import DecodeConfig
from specviz.core.tree_shape import (
    TreeCosts,
    TreeShape,
    best_shape,
    chosen_probability,
    expected_path,
    measured_budget,
    shape_for,
)
from specviz.decoding import engine
from specviz.decoding.replay import first_difference
from specviz.decoding.tree_budget import choose_budget, sibling_acceptance
from tests.fakes import fake_pipeline

FLAT_THEN_STEEP = [100.0] * 12 + [100.0 + 40 * step for step in range(1, 40)]  # v(k) in ms: flat to 12 tokens


def test_a_chain_expects_the_geometric_sum():
    path, nodes, levels = expected_path(TreeShape(depth=4, branch=1, expand=1, budget=4), [0.5])
    assert path == pytest.approx(0.5 + 0.25 + 0.125 + 0.0625) and (nodes, levels) == (4, 4)


def test_siblings_add_the_chance_that_the_first_was_rejected():
    """Two children under the root, one level: a_1 + (1 - a_1)·a_2."""
    path, nodes, _ = expected_path(TreeShape(depth=1, branch=2, expand=1, budget=2), [0.6, 0.5])
    assert path == pytest.approx(0.6 + 0.4 * 0.5) and nodes == 2
    assert chosen_probability(3, [0.6, 0.5]) == pytest.approx(0.4 * 0.5 * 0.5)  # ranks past the vector use the last


def test_a_tree_pays_where_verifying_is_flat_and_drafts_are_unsure():
    costs = TreeCosts(FLAT_THEN_STEEP, [10.0] * 4)
    unsure = best_shape(4, costs, [0.6, 0.3, 0.2])
    assert unsure.shape is not None and unsure.gain > 1.05
    assert unsure.shape == shape_for(4, unsure.shape.budget)
    sure = best_shape(4, costs, [0.98, 0.1])  # the draft is nearly always right: alternatives are wasted nodes
    assert sure.shape is None and sure.gain == 1.0
    steep = best_shape(4, TreeCosts([100.0 * k for k in range(1, 40)], [10.0] * 4), [0.6, 0.3, 0.2])
    assert steep.shape is None  # every node costs a full forward: nothing is spare


def test_the_flat_rule_without_an_acceptance_record():
    assert measured_budget(4, FLAT_THEN_STEEP) == 11  # v(12) is still v(5)'s
    assert measured_budget(4, [100.0] * 3) == 4  # not measured far enough: a chain


def _hand_round():
    from specviz.trace import Round, Token

    def token(kind, node, parent, depth):
        return Token(token_id=node, text="x", kind=kind, position=depth, target_prob=0.5, node=node, parent=parent)

    tokens = [token("rejected", 0, -1, 1), token("accepted", 1, -1, 1), token("accepted", 3, 1, 2),
              token("rejected", 4, 3, 3), token("rejected", 5, 3, 3)]
    tokens.append(Token(token_id=9, text="y", kind="corrected", position=3, target_prob=0.5, parent=3))
    return Round(index=1, drafted=6, accepted=2, tokens=tokens, draft_ms=0, verify_ms=0, draft_forwards=3,
                 draft_parents=[-1, -1, 0, 1, 3, 3])


def test_sibling_acceptance_counts_each_rank_s_tests():
    class Holder:
        rounds = [_hand_round()]

    assert sibling_acceptance(Holder()) == pytest.approx([1 / 3, 1 / 2])  # rank 1: 0, 3, 4 tried; rank 2: 1, 5


def test_a_run_records_the_budget_it_chose_and_replays_with_it():
    pipeline = fake_pipeline(4)
    pipeline.target_forward_ms, pipeline.draft_step_ms = FLAT_THEN_STEEP, 10.0
    config = DecodeConfig(gamma=3, max_new_tokens=16, chat=False, temperature=1.0, seed=4, tree=True)
    assert choose_budget(pipeline, config) == measured_budget(3, FLAT_THEN_STEEP)  # no earlier tree run on this pair
    trace = engine.run_speculative(pipeline, "ab", config)
    assert trace.config["tree_budget"] == measured_budget(3, FLAT_THEN_STEEP)
    assert first_difference(trace, fake_pipeline(4)) is None  # the replay's pipeline measured nothing
    again = engine.run_speculative(pipeline, "ab", config)  # now with this run's acceptance by sibling rank
    assert again.config["tree_budget"] == choose_budget(pipeline, config) >= 3
    greedy = dataclasses.replace(config, temperature=0.0)  # acceptance at T = 1 says nothing of T = 0
    assert choose_budget(pipeline, greedy) == measured_budget(3, FLAT_THEN_STEEP)
    stopping = dataclasses.replace(config, draft_confidence=0.6)  # a draft stop: depths the model cannot foresee
    assert choose_budget(pipeline, stopping) == measured_budget(3, FLAT_THEN_STEEP)
