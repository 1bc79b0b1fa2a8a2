"""The stats' tree line says what a person would otherwise puzzle over: rounds over the node budget
(prompt lookup's copy joined the tree) and Token tree ticked with no tree drawn (the budget bought a chain)."""

import dataclasses

from specviz.analysis.metrics import summarize
from specviz.trace import BONUS, Round
from specviz.views.stats_text import stats_markdown
from tests.builders import hand_built_tree_trace, tree_round, tree_token


def _stats(trace) -> str:
    return stats_markdown(trace, summarize(trace))


def test_rounds_over_the_budget_are_said_to_be_prompt_lookups_copy():
    trace = hand_built_tree_trace()  # budget 5, two rounds of 5 nodes
    assert "(10 nodes / 3 rounds, budget 5)" in _stats(trace)
    trace.config["tree_budget"] = 4
    assert "budget 4; 2 of them drafted more: prompt lookup's copy joined the tree)" in _stats(trace)


def _chain_round(index: int) -> Round:
    """A chain of 3 accepted drafts and a bonus."""
    tokens = [tree_token("accepted", depth, depth - 1, depth - 2) for depth in (1, 2, 3)] + [tree_token(BONUS, 4, None, 2)]
    return tree_round(index, 3, 3, tokens, [-1, 0, 1])


def test_a_tree_ticked_that_drew_only_chains_says_why():
    trace = hand_built_tree_trace()  # γ = 3
    trace.rounds = [_chain_round(0), _chain_round(1)]
    trace.token_ids = [token.token_id for round_ in trace.rounds for token in round_.emitted]
    trace.config["tree_budget"] = 3  # what this machine afforded: no more than γ
    stats = _stats(trace)
    assert "**tree**: none drawn: a budget of 3 nodes buys no more than the chain of γ = 3" in stats
    assert "draft nodes per round" not in stats
    trace.config["tree_budget"] = 6
    assert "**tree**: none drawn: no round's draft gave a node a sibling" in _stats(trace)
    chain = dataclasses.replace(trace, config={**trace.config, "tree": False})
    assert "**tree**" not in _stats(chain)
