"""The Theory tab's token-tree section: Sequoia's expected path against the chain's E, the budget best_shape picks
marked on the figure, and the fields refused in the other labs' words."""

import gradio as gr
import pytest

from specviz.core import theory
from specviz.core.tree_shape import TREE_MARGIN, TreeCosts, TreeShape, best_shape, expected_path
from specviz.labs.theory import token_trees


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.75, 0.9, 1.0])
@pytest.mark.parametrize("gamma", [1, 4, 7])
def test_the_chain_is_leviathans_e(alpha, gamma):
    """a_1 = α and a budget of γ: the chain of γ, whose tokens per round are E(α, γ), whatever a_2."""
    tokens, nodes, levels, shape = token_trees.tokens_per_round(gamma, gamma, [alpha, 0.5])
    assert tokens == pytest.approx(theory.expected_tokens(alpha, gamma))
    assert (nodes, levels, shape.branch) == (gamma, gamma, 1)


def test_a_hand_computed_tree():
    """γ = 2, budget 4, a = (0.8, 0.5): children 0.8 and 0.2·0.5 = 0.1 at depth 1, the same under the 0.8 node."""
    tokens, nodes, levels, _ = token_trees.tokens_per_round(2, 4, [0.8, 0.5])
    assert (nodes, levels) == (4, 2)
    assert tokens == pytest.approx(1 + 0.8 + 0.1 + 0.8 * 0.8 + 0.8 * 0.1)


@pytest.mark.parametrize("accept", [[0.75, 0.4], [0.5, 0.5], [0.9, 0.1], [0.2, 0.8]])
@pytest.mark.parametrize("depth", [1, 3, 6])
def test_more_siblings_never_lower_the_expected_path(depth, accept):
    """The same depth and expansion with one more child under each expanded node: every old node keeps its path
    probability and the new ones add to it."""
    paths = [expected_path(TreeShape(depth=depth, branch=branch, expand=2, budget=10_000), accept)[0]
             for branch in (1, 2, 3, 4)]
    assert all(later >= earlier - 1e-12 for earlier, later in zip(paths, paths[1:]))


@pytest.mark.parametrize("accept", [[0.75, 0.4], [0.6, 0.3], [0.95, 0.9]])
@pytest.mark.parametrize("gamma", [2, 4, 8])
def test_past_the_chain_a_larger_budget_never_lowers_the_expected_tokens(gamma, accept):
    """From the chain's γ nodes up, shape_for's trees only grow: the main line always reaches depth γ and every extra
    node is a sibling or a child added to the tree before."""
    tokens = [token_trees.tokens_per_round(gamma, budget, accept)[0] for budget in range(gamma, 4 * gamma + 1)]
    assert tokens[0] == pytest.approx(theory.expected_tokens(accept[0], gamma))
    assert all(later >= earlier - 1e-12 for earlier, later in zip(tokens, tokens[1:]))


def test_the_chains_rate_is_the_verify_cost_aware_speedup():
    verify = token_trees.flat_then_linear(3, 0.2)
    view = token_trees.tree_view(5, 0.7, 0.4, 12, verify, 0.05)
    assert view.chain.cost == pytest.approx(5 * 0.05 + verify(6))
    assert view.chain.rate == pytest.approx(theory.speedup_with_verify_cost(0.7, 5, 0.05, verify))


@pytest.mark.parametrize("gamma, a_first, a_later, c, k0, slope", [
    (4, 0.75, 0.4, 0.05, 8, 0.1), (4, 0.75, 0.4, 0.2, 8, 0.1), (8, 0.6, 0.3, 0.05, 8, 0.1),
    (3, 0.9, 0.1, 0.0, 64, 0.0), (6, 0.5, 0.5, 0.3, 1, 1.0)])
def test_the_figures_marked_budget_is_best_shapes(gamma, a_first, a_later, c, k0, slope):
    verify = token_trees.flat_then_linear(k0, slope)
    view = token_trees.tree_view(gamma, a_first, a_later, 7, verify, c)
    costs = TreeCosts([verify(k) for k in range(1, 4 * gamma + 2)], [c] * 4)
    choice = best_shape(gamma, costs, [a_first, a_later])
    assert view.best_budget == (choice.shape.budget if choice.shape is not None else gamma)
    star = next(trace for trace in token_trees.rate_figure(view, verify, "flat").data if trace.name.startswith("best_shape"))
    assert list(star.x) == [view.best_budget]
    best_row = view.rows[view.best_budget - gamma]
    assert list(star.y) == pytest.approx([best_row.rate])
    tree_rates = [row.rate for row in view.rows[1:]]  # a tree is picked only as the fastest, by the margin
    if view.best_budget != gamma:
        assert best_row.rate == pytest.approx(max(tree_rates)) and best_row.rate >= view.chain.rate * (1 + TREE_MARGIN)


def test_both_figures_draw_the_chain_and_the_budget_asked_for():
    view = token_trees.tree_view(4, 0.75, 0.4, 10, token_trees.flat_then_linear(8, 0.1), 0.05)
    tokens = token_trees.tokens_figure(view)
    assert list(tokens.data[0].x) == list(range(4, 17))
    chain = next(trace for trace in tokens.data if trace.name.startswith("chain: E = "))
    assert list(chain.y) == pytest.approx([theory.expected_tokens(0.75, 4)] * 2)  # the chain's E, a level
    assert any(trace.name == "your n = 10" for trace in tokens.data)
    rate = token_trees.rate_figure(view, token_trees.flat_then_linear(8, 0.1), "flat")
    assert rate.data[0].yaxis == "y2" and rate.data[0].y[3] == pytest.approx(1.0) and rate.data[0].y[4] > 1.0  # v(8), v(9)


def test_a_budget_past_four_per_level_is_held_at_the_largest_best_shape_considers():
    view = token_trees.tree_view(2, 0.75, 0.4, 20, token_trees.flat_then_linear(8, 0.1), 0.05)
    assert view.rows[-1].budget == 8 and view.chosen.budget == 8
    assert [row.budget for row in view.rows] == list(range(2, 9))
    assert token_trees.tokens_per_round(2, 20, [0.75, 0.4]) == token_trees.tokens_per_round(2, 8, [0.75, 0.4])


def test_the_explanation_cites_the_papers_and_the_exact_rule():
    text = token_trees.EXPLANATION
    for name in ("Sequoia", "Chen et al. 2024", "SpecInfer", "Miao et al. 2024", "EAGLE-2", "Li et al. 2024",
                 "Jeon et al. 2024", "norm(max(0, P − q))", "(1 − a_1^(γ+1))/(1 − a_1)", f"{TREE_MARGIN:.0%}"):
        assert name in text


VIEW_ARGUMENTS = dict(gamma=4, a_first=0.75, a_later=0.4, budget=8, curve="flat to k0, then linear", k0=8, slope=0.1,
                      c=0.05, trace=None)


@pytest.mark.parametrize("change, sentence", [
    (dict(gamma=0), "gamma must be a whole number from 1 to 16, got 0."),
    (dict(gamma="four"), "gamma must be a whole number from 1 to 16, got 'four'."),
    (dict(a_first=1.5), "a_1 (first child's acceptance) must be a number from 0 to 1, got 1.5."),
    (dict(a_later=None), "a_2 (later siblings' acceptance) must be a number from 0 to 1, got None."),
    (dict(budget=2.5), "Node budget n must be a whole number from 1 to 64, got 2.5."),
    (dict(k0=0), "k0 (end of the flat part) must be a whole number from 1 to 64, got 0."),
    (dict(slope=float("nan")), "slope of v(k) past k0 must be a number from 0 to 1, got nan."),
    (dict(c=-0.1), "c (draft forward / target forward) must be a number from 0 to 1, got -0.1."),
    (dict(curve="measured in the last live run"), "No v(k) measured yet: run the live tab once"),
])
def test_the_fields_are_refused_in_the_other_labs_words(change, sentence):
    from specviz.app.callbacks import Refusal
    from specviz.app.tabs.token_trees import tree_theory_views

    with pytest.raises(gr.Error) as refusal:
        tree_theory_views(*{**VIEW_ARGUMENTS, **change}.values())
    assert refusal.value.message.startswith(sentence), refusal.value.message
    assert isinstance(refusal.value, Refusal)  # one log line, no traceback


def test_the_view_reads_out_the_chain_and_the_best_budget():
    from specviz.app.tabs.token_trees import tree_theory_views

    text, tokens, rate = tree_theory_views(*VIEW_ARGUMENTS.values())
    assert f"E(a_1, γ) = {theory.expected_tokens(0.75, 4):.3f}" in text and "best_shape" in text
    assert isinstance(tokens, type(rate))
    text, _, _ = tree_theory_views(*{**VIEW_ARGUMENTS, "budget": 2}.values())
    assert "the chain of γ" in text
    text, _, _ = tree_theory_views(*{**VIEW_ARGUMENTS, "budget": 40}.values())
    assert "n = 40 is past the 16 = 4γ nodes" in text


def test_the_view_says_why_the_chain_was_kept():
    from specviz.app.tabs.token_trees import tree_theory_views

    steep = {**VIEW_ARGUMENTS, "k0": 1, "slope": 1.0}  # every node costs a whole target forward
    text, _, _ = tree_theory_views(*steep.values())
    assert "the chain of γ: no tree is faster" in text
    close = {**VIEW_ARGUMENTS, "a_first": 0.9, "a_later": 0.3, "k0": 7, "slope": 0.2}  # a sure draft: siblings add little
    text, _, _ = tree_theory_views(*close.values())
    assert "the fastest tree (n = 6) is only 1.4% faster, under the 3% margin" in text
