"""counters.py: the hand-built trace of test_metrics in llama.cpp's and vLLM's counters, every number known."""

import pytest

from specviz.analysis.counters import VOCABULARY, engine_counters, vocabulary_markdown
from tests.builders import hand_built_trace


def test_the_hand_built_run_in_engine_counters():
    counts = engine_counters(hand_built_trace())
    # rounds drafted 4, 2, 0 and 3 tokens and accepted 2, 2, 0 and 0: 9 drafted, 4 accepted, 3 drafting rounds
    assert (counts["draft_n"], counts["draft_n_accepted"]) == (9, 4)
    assert (counts["num_drafts"], counts["num_draft_tokens"], counts["num_accepted_tokens"]) == (3, 9, 4)
    assert counts["num_accepted_tokens_per_pos"] == [2, 2, 0, 0]
    assert counts["draft_acceptance_rate"] == pytest.approx(4 / 9)  # below α = 4/6: two drafts were never tested
    assert counts["mean_acceptance_length"] == pytest.approx(1 + 4 / 3)


def test_a_run_without_drafts_has_no_rates():
    trace = hand_built_trace()
    trace.rounds = [trace.rounds[2]]  # the plain step only
    counts = engine_counters(trace)
    assert counts["num_drafts"] == counts["draft_n"] == 0
    assert counts["draft_acceptance_rate"] is None and counts["mean_acceptance_length"] is None


def test_the_vocabulary_table_names_every_counter_tools_rely_on():
    table = vocabulary_markdown()
    for name in ("draft_n", "draft_n_accepted", "num_drafts", "num_draft_tokens", "num_accepted_tokens",
                 "num_accepted_tokens_per_pos"):
        assert f"`{name}`" in table or f"`{name} " in table
    assert table.count("\n") == len(VOCABULARY) + 1


def test_docs_engines_md_holds_the_table_the_app_shows():
    from pathlib import Path

    assert vocabulary_markdown() in (Path(__file__).parent.parent / "docs" / "engines.md").read_text(encoding="utf-8")


def test_the_vocabulary_quotes_the_definitions_it_shares_with_the_stats():
    from specviz.analysis.metrics import DEFINITIONS

    relations = {row["specviz"]: row["relation"] for row in VOCABULARY}
    assert relations["α (per-token acceptance rate)"].startswith(DEFINITIONS["alpha"].formula)
    assert relations["mean acceptance length"] == "1 + accepted drafts ÷ drafting rounds"
    assert relations["tokens per round"].startswith(DEFINITIONS["tokens_per_round"].formula)
