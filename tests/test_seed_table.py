"""The seed table: each row's quote is in its seed, specviz computes the correct value, the ✓/✗ is the seed's figure
read against that value, and where the seed is wrong the app's table shows both figures and the arithmetic."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.sources import checks
from tests.sources.checks import NO_FIGURE, figures_agree, format_value, seed_summary, seed_table_markdown
from tests.sources.rows import SEED_ROWS
from tests.sources.rows_course import COURSE_ROWS

SEEDS = Path(__file__).resolve().parents[1].parent / "shared" / "seeds"


ROWS = SEED_ROWS + COURSE_ROWS
IDS = [f"{row.seed}:{row.what[:40]}" for row in ROWS]


def _normalised(text: str) -> str:
    return " ".join(text.split())


def _seed_text(seed: str) -> str:
    if not SEEDS.is_dir():
        pytest.skip(f"the seed documents are not here ({SEEDS}); CI has them")
    paths = sorted(SEEDS.glob(f"{seed}_*.txt"))
    assert len(paths) == 1, f"expected one seed file {seed}_*.txt in {SEEDS}, found {paths}"
    return _normalised(paths[0].read_text(encoding="utf-8"))


def _equal(actual, expected) -> bool:
    """Floats to 1e-9 (relative), tuples item by item, anything else exactly."""
    if isinstance(expected, tuple):
        return isinstance(actual, tuple) and len(actual) == len(expected) and all(map(_equal, actual, expected))
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        return isinstance(actual, int | float) and math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-12)
    return actual == expected


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_quote_is_in_its_seed(row):
    assert len(row.where.split()) <= 14, "a quote locates the figure: a dozen words at most"
    assert _normalised(row.where) in _seed_text(row.seed)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_specviz_computes_the_correct_value(row):
    assert _equal(row.specviz_value(), row.expected), (row.specviz_value(), row.expected)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_the_tick_is_the_seed_figure_read_against_the_correct_value(row):
    if row.seed_value == NO_FIGURE:  # an exercise the seed leaves unanswered: nothing to be wrong about
        assert row.agrees
    else:
        assert row.agrees == figures_agree(row.seed_value, row.expected)
    assert bool(row.settles) == (not row.agrees), "the arithmetic is given exactly where the seed is wrong"


def test_the_app_table_shows_both_figures_and_the_arithmetic_where_the_seed_is_wrong():
    table = seed_table_markdown(ROWS)
    lines = table.splitlines()
    assert len(lines) == len(ROWS) + 2
    for row, line in zip(ROWS, lines[2:]):
        assert row.seed_value in line and row.specviz_figure() in line
        if not row.agrees:
            assert "✗" in line and " ".join(row.settles.split()) in line
            assert row.specviz_figure() != row.seed_value


def test_the_known_errors_of_the_seeds_readme_each_have_a_wrong_row():
    wrong = {(row.seed, row.seed_value) for row in SEED_ROWS if not row.agrees}
    assert {("000", "accept if r > p(x)/q(x)"), ("001", "16"), ("001", "2"), ("001", "1935 GB/s"), ("001", "40MB"),
            ("001", "11.4 ms"), ("001", "161"), ("001", "q(x), the draft's"), ("004", "7B")} <= wrong


def test_figures_are_read_as_the_seed_rounds_them():
    assert figures_agree("2.46", 2.4630) and not figures_agree("2.12x", 2.1288)
    assert figures_agree("14.1ms", 0.0141) and not figures_agree("11.4 ms", 22e9 / 1555e9)
    assert figures_agree("[0, 0.05, 0.05, 0]", (0.0, 0.05, 0.05, 0.0))
    assert not figures_agree("[0, 0.05, 0.05, 0]", (0.0, 0.05, 0.05))
    assert figures_agree("is, stock, girl, cherry", ("is", "stock", "girl", "cherry"))
    assert not figures_agree(NO_FIGURE, 0.9)
    assert format_value(1555e9, "GB/s") == "1555 GB/s" and format_value(0.6, "%") == "60%"


def test_the_summary_counts_rows_per_seed():
    summary = seed_summary(SEED_ROWS)
    assert summary.startswith(f"{len(SEED_ROWS)} figures checked (*Accelerating LLM Inference")
    assert f"wrong in {sum(not row.agrees for row in SEED_ROWS)} of them" in summary


def test_the_tab_can_show_only_the_seeds_errors():
    everything, errors = checks.seed_report_markdown(ROWS), checks.seed_report_markdown(ROWS, only_wrong=True)
    assert everything.splitlines()[0] == errors.splitlines()[0] == seed_summary(ROWS)
    error_lines = [line for line in errors.splitlines() if "| ✓ |" in line or "| ✗ |" in line]
    assert len(error_lines) == sum(not row.agrees for row in ROWS) and all("| ✗ |" in line for line in error_lines)


@pytest.mark.slow  # it computes all 131 rows (about 9 s)
def test_the_sources_document_is_current():
    """docs/sources-checked.md is the table as the code computes it now (python -m tests.sources.doc writes it)."""
    from tests.sources.doc import DOCUMENT, document

    assert DOCUMENT.read_text(encoding="utf-8") == document(), "run: python -m tests.sources.doc"
