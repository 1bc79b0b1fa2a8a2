"""`generate --tree` / `--tree-budget N`: token trees from the command line, refused in words where they cannot run."""

import json

import pytest

from specviz import cli
from specviz.config import DecodeConfig
from specviz.decoding.calibration import calibration_sizes


def _config(*extra):
    return cli.config_from_args(cli.build_parser().parse_args(["generate", "--prompt", "hi", *extra]))


def test_the_flags_ask_for_trees():
    assert not _config().tree
    assert _config("--tree").tree and _config("--tree").tree_budget == 0
    budgeted = _config("--tree-budget", "9")
    assert budgeted.tree and budgeted.tree_budget == 9


def test_v_k_is_measured_as_far_as_the_tree_may_reach():
    assert calibration_sizes(DecodeConfig(gamma=4)) == 5
    assert calibration_sizes(DecodeConfig(gamma=4, tree=True)) == 9
    assert calibration_sizes(DecodeConfig(gamma=4, tree=True, tree_budget=12)) == 13


def test_refusals_are_one_line(capsys):
    assert cli.main(["generate", "--prompt", "hi", "--tree-budget", "-1"]) != 0
    assert "tree_budget must be a whole number from 0 to 64" in capsys.readouterr().err
    assert cli.main(["generate", "--prompt", "hi", "--tree", "--adaptive"]) != 0
    assert "adaptive γ chooses chain lengths" in capsys.readouterr().err


@pytest.mark.slow
def test_a_greedy_tree_run_on_the_offline_target_is_the_target_s_own_text(offline_target, capsys):
    assert cli.main(["generate", "--prompt", "Write a Python function that checks whether a number is prime.",
                     "--tree", "--tree-budget", "12", "--max-new-tokens", "32", "--baseline", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)  # a set budget: a measured one follows this machine's load
    assert summary["identical"] is True and summary["tree_drawn"] is True
    assert summary["draft_nodes_per_round"] > 4 and "acceptance_by_sibling_rank" in summary
