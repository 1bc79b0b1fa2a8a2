"""tree_metrics.py and the tree numbers in metrics, figures, the CLI's output, the engine counters and the stats: exact
values on a hand-built tree trace, invariants on seeded fake-engine tree runs, and chain runs unchanged."""

import dataclasses
import io
import json
from contextlib import redirect_stdout

import pytest

from specviz.analysis.counters import TREE_VOCABULARY, VOCABULARY, engine_counters, vocabulary_markdown
from specviz.analysis.metrics import DEFINITIONS, summarize
from specviz.analysis.tree_metrics import node_budget, node_depths, rank_counts, summarize_tree
from specviz.config import DecodeConfig
from specviz.core import theory
from specviz.decoding import engine
from specviz.trace import ACCEPTED, REJECTED, Trace
from specviz.views import figures
from specviz.views.cli_output import json_summary, print_summary
from specviz.views.stats_text import stats_markdown
from tests.builders import hand_built_tree_trace
from tests.fakes import fake_pipeline


def test_the_hand_built_tree_in_numbers():
    tree = summarize_tree(hand_built_tree_trace())
    assert (tree.rounds, tree.drafted_nodes, tree.draft_levels) == (3, 10, 6)
    assert tree.draft_nodes_per_round == pytest.approx(10 / 3)
    assert (tree.accepted_tokens, tree.levels_tested, tree.sibling_tests) == (2, 3, 5)
    assert tree.accepted_path_per_round == pytest.approx(2 / 3) and tree.alpha == pytest.approx(2 / 3)
    assert (tree.tested_per_depth, tree.accepted_per_depth) == ([2, 1, 0], [1, 1, 0])  # depth 1: both rounds
    assert tree.acceptance_by_depth == [0.5, 1.0, None]
    assert (tree.tests_per_rank, tree.accepted_per_rank) == ([3, 2], [1, 1])  # 1st: nodes 0, 2 | 0; 2nd: 3 | 1
    assert tree.acceptance_by_sibling_rank == [pytest.approx(1 / 3), 0.5]
    assert tree.is_tree and node_budget(hand_built_tree_trace()) == 5
    assert node_depths(hand_built_tree_trace().rounds[0]) == [1, 1, 2, 2, 3]


def test_the_docstring_example_alone():
    trace = hand_built_tree_trace()
    trace.rounds = trace.rounds[:1]
    tree = summarize_tree(trace)
    assert (tree.drafted_nodes, tree.accepted_tokens, tree.levels_tested, tree.alpha) == (5, 2, 2, 1.0)
    assert tree.acceptance_by_depth[:2] == [1.0, 1.0] and tree.acceptance_by_sibling_rank == [0.5, 1.0]


def test_summarize_reads_a_tree_alpha_over_depth_levels():
    trace = hand_built_tree_trace()
    metrics = summarize(trace)
    assert metrics.alpha == pytest.approx(2 / 3)  # 2 accepted / 3 levels tested, not / 5 sibling tests
    assert (metrics.tested_positions, metrics.accepted_tokens, metrics.drafted_tokens) == (3, 2, 10)
    assert metrics.alpha_per_position == [0.5, 1.0, None] == summarize_tree(trace).acceptance_by_depth
    assert metrics.draft_nodes_per_round == pytest.approx(10 / 3)
    assert metrics.tokens_per_round == pytest.approx(5 / 3)  # still emitted tokens ÷ rounds
    assert metrics.draft_acceptance_rate == pytest.approx(2 / 10)  # vLLM's: every node drafted counts
    assert metrics.mean_acceptance_length == pytest.approx(1 + 2 / 2)
    assert metrics.speedup_predicted == pytest.approx(theory.speedup_over_rounds(2 / 3, [3, 3, 0], metrics.c))  # no v(k)


def test_every_tree_number_has_a_definition():
    for key in ("draft_nodes_per_round", "alpha_tree", "acceptance_by_depth", "acceptance_by_sibling_rank"):
        assert DEFINITIONS[key].formula and DEFINITIONS[key].counts
    assert DEFINITIONS["draft_nodes_per_round"].formula == "drafted nodes ÷ rounds"
    assert DEFINITIONS["alpha_tree"].formula == "accepted tokens ÷ depth levels tested"


def _run(**settings) -> Trace:
    config = DecodeConfig(**{"gamma": 3, "max_new_tokens": 40, "chat": False, "temperature": 1.0, "seed": 11,
                             **settings})
    return engine.run_speculative(fake_pipeline(4), "ab", config)


@pytest.fixture(scope="module")
def tree_runs() -> list[Trace]:
    return [_run(tree=True, tree_budget=9), _run(tree=True, tree_budget=9, temperature=0.0),
            _run(tree=True, tree_budget=8, gamma=4, seed=3)]


@pytest.fixture(scope="module")
def chain_runs() -> list[Trace]:
    return [_run(), _run(temperature=0.0, gamma=4), _run(gamma=2, seed=5, temperature=0.7), _run(adaptive=True)]


def test_on_chains_every_tree_number_is_its_chain_counterpart(chain_runs):
    for trace in chain_runs:
        metrics, tree = summarize(trace), summarize_tree(trace)
        assert not tree.is_tree and node_budget(trace) is None
        assert tree.acceptance_by_depth == metrics.alpha_per_position
        assert (tree.tested_per_depth, tree.accepted_per_depth) == (metrics.reached_per_position,
                                                                    metrics.accepted_per_position)
        assert tree.alpha == metrics.alpha and tree.levels_tested == tree.sibling_tests == metrics.tested_positions
        assert tree.acceptance_by_sibling_rank == ([metrics.alpha] if metrics.tested_positions else [])
        assert tree.draft_levels == tree.drafted_nodes == metrics.drafted_tokens
        assert metrics.draft_nodes_per_round == tree.draft_nodes_per_round == pytest.approx(
            sum(r.drafted for r in trace.rounds) / len(trace.rounds))


def test_fake_engine_tree_runs_keep_the_counts_consistent(tree_runs):
    from specviz.decoding.tree_budget import sibling_acceptance

    for trace in tree_runs:
        metrics, tree = summarize(trace), summarize_tree(trace)
        tested = [t for r in trace.rounds for t in r.tokens if t.kind in (ACCEPTED, REJECTED)]
        assert tree.is_tree and node_budget(trace) == trace.config["tree_budget"]
        assert tree.sibling_tests == len(tested) > tree.levels_tested == metrics.tested_positions
        assert tree.levels_tested == sum(len({t.position for t in r.tokens if t in tested}) for r in trace.rounds)
        assert tree.tests_per_rank[0] == tree.levels_tested  # each tested level tried one first sibling
        assert tree.accepted_tokens == sum(r.accepted for r in trace.rounds) == metrics.accepted_tokens
        assert metrics.alpha == pytest.approx(tree.alpha) and metrics.alpha_per_position == tree.acceptance_by_depth
        assert metrics.draft_nodes_per_round == pytest.approx(tree.drafted_nodes / len(trace.rounds))
        assert metrics.tokens_per_round == pytest.approx(len(trace.token_ids) / len(trace.rounds))
        assert metrics.draft_acceptance_rate < tree.alpha  # width dilutes the engines' rate, not the tree's α
        assert tree.acceptance_by_sibling_rank == pytest.approx(sibling_acceptance(trace))  # the budget's reading
        assert rank_counts(Trace.from_json(trace.to_json()).rounds) == (tree.tests_per_rank, tree.accepted_per_rank)


def test_figures_build_for_chains_and_trees(chain_runs, tree_runs):
    for trace in [*chain_runs, *tree_runs]:
        metrics = summarize(trace)
        plots = figures.run_figures(trace, metrics)
        assert len(plots) == 4
        budget = [a.text for a in plots[2].layout.annotations if a.text.startswith("tree:")]
        if summarize_tree(trace).is_tree:
            assert budget == [f"tree: budget {trace.config['tree_budget']} nodes"]
            assert [bar.xaxis for bar in plots[0].data] == ["x", "x2"]  # by depth, by sibling rank
        else:
            assert budget == [] and plots[0].data[0].name == "α at position i"


def test_the_depth_and_rank_figure_draws_the_hand_built_counts():
    tree = summarize_tree(hand_built_tree_trace())
    figure = figures.acceptance_by_depth_and_rank_figure(tree.accepted_per_depth, tree.tested_per_depth,
                                                         tree.accepted_per_rank, tree.tests_per_rank, tree.alpha)
    by_depth, by_rank = figure.data
    assert list(by_depth.y) == [0.5, 1.0, 0] and list(by_depth.customdata) == ["1/2", "1/1", "0/0"]
    assert list(by_rank.y) == [pytest.approx(1 / 3), 0.5] and list(by_rank.customdata) == ["1/3", "1/2"]
    assert "accepted/tested = %{customdata}" in by_rank.hovertemplate
    assert figure.layout.shapes[0].y0 == pytest.approx(2 / 3) and "tree α = 0.667" in figure.layout.title.text


def test_tokens_per_round_can_set_a_tree_beside_a_chain():
    figure = figures.tokens_per_round_figure([3, 1, 1], 2 / 3, 3, [3, 3, 0], other=[2, 1, 1, 4])
    tree_bars, chain_bars, theory_line = figure.data
    assert list(tree_bars.y) == [2, 0, 1, 0] and list(chain_bars.y) == [2, 1, 0, 1]
    assert tree_bars.name == "tree (3 rounds)" and chain_bars.name == "chain (4 rounds)"
    assert theory_line.name == "theory" and figure.layout.barmode == "group"
    assert figure.layout.title.text == "Tokens per round: tree 1.67, chain 2.00"
    alone = figures.tokens_per_round_figure([3, 1, 1], 2 / 3, 3, [3, 3, 0])
    assert [item.name for item in alone.data] == ["rounds seen", "theory"]


def test_the_json_summary_and_the_terminal_name_the_tree_numbers(chain_runs, tree_runs):
    for trace in (chain_runs[0], tree_runs[0]):
        metrics, is_tree = summarize(trace), summarize_tree(trace).is_tree
        summary = json.loads(json.dumps(json_summary(trace, metrics)))
        keys = list(summary)
        assert keys.index("draft_nodes_per_round") == keys.index("tokens_per_round") + 1
        assert ("acceptance_by_depth" in summary) == ("acceptance_by_sibling_rank" in summary) == is_tree
        assert summary.get("tree_drawn", False) == is_tree
        printed = io.StringIO()
        with redirect_stdout(printed):
            print_summary(trace, metrics)
        tree_lines = [line for line in printed.getvalue().splitlines() if line.startswith("tree: ")]
        assert len(tree_lines) == is_tree
    tree = summarize_tree(tree_runs[0])
    assert summary["acceptance_by_sibling_rank"] == tree.acceptance_by_sibling_rank
    assert tree_lines[0].startswith(f"tree: {tree.draft_nodes_per_round:.2f} nodes drafted per round, path "
                                    f"{tree.accepted_path_per_round:.2f} per round; acceptance by depth ")
    assert ", by sibling rank " in tree_lines[0]


def test_a_tree_run_that_drew_only_chains_says_why_in_the_json_and_on_the_terminal(chain_runs):
    trace = chain_runs[0]
    asked = dataclasses.replace(trace, config={**trace.config, "tree": True, "tree_budget": trace.config["gamma"]})
    metrics = summarize(asked)
    summary = json_summary(asked, metrics)
    assert summary["tree_drawn"] is False and summary["acceptance_by_sibling_rank"] == [metrics.alpha]
    printed = io.StringIO()
    with redirect_stdout(printed):
        print_summary(asked, metrics)
    assert f"tree: none drawn: a budget of {trace.config['gamma']} nodes buys no more than the chain" in printed.getvalue()


def test_engine_counters_count_nodes_and_the_accepted_path(chain_runs):
    counts, tree = engine_counters(hand_built_tree_trace()), summarize_tree(hand_built_tree_trace())
    assert (counts["num_draft_tokens"], counts["drafted_nodes"], counts["num_accepted_tokens"]) == (10, 10, 2)
    assert (counts["n_drafted"], counts["n_accept"], counts["accepted_path_length"]) == (6, 2, 2)  # 6: two depth-3 trees
    assert counts["draft_acceptance_rate"] == pytest.approx(0.2) and tree.draft_levels == 6
    assert "n_drafted" not in engine_counters(chain_runs[0])
    table = vocabulary_markdown(TREE_VOCABULARY)
    assert "llama.cpp speculative example" in table and "`num_draft_tokens`" in table and "`n_accept`" in table
    assert table.count("\n") == len(TREE_VOCABULARY) + 1 and vocabulary_markdown() == vocabulary_markdown(VOCABULARY)


def test_the_stats_name_the_tree_numbers_only_for_a_tree(chain_runs):
    trace = hand_built_tree_trace()
    text = stats_markdown(trace, summarize(trace))
    assert "**tree**: **3.33 " in text and "(10 nodes / 3 rounds, budget 5)" in text
    assert "accepted path 0.67 per round" in text and "0.50 · 1.00 · —" in text
    assert "by sibling rank</abbr> 0.33 · 0.50 (1/3 · 1/2)" in text
    assert "(2 accepted / 3 depth levels tested, 5 sibling tests)" in text and "8 nodes off the accepted path" in text
    assert "`n_drafted` = 6 (depth levels)" in text
    chain = stats_markdown(chain_runs[0], summarize(chain_runs[0]))
    assert "**tree**" not in chain and "sibling" not in chain and "draft nodes per round" not in chain
