"""labs/theory/execution_trace.py and its figure (Leviathan et al. 2023, Figure 5): every row's length against the formula
N / E · (γc + 1), with E re-derived here by hand, and the blocks laid end to end."""

import math

import pytest

from specviz.labs.theory import execution_trace, execution_trace_figures
from specviz.views.figures import BLUE


def expected_tokens_by_hand(alpha, gamma):
    return sum(alpha**i for i in range(gamma + 1))


@pytest.mark.parametrize("alpha, c, tokens", [(0.75, 0.02, 40), (0.8, 0.04, 100), (0.5, 0.3, 7), (0.0, 0.1, 5),
                                              (1.0, 0.05, 16), (0.9, 0.0, 33)])
def test_rows_last_exactly_n_over_e_rounds_of_gamma_c_plus_1(alpha, c, tokens):
    rows = execution_trace.execution_trace(alpha, c, tokens)
    assert list(rows) == ["γ = 7", "γ = 3", "plain"]
    for gamma in (7, 3):
        blocks = rows[f"γ = {gamma}"]
        expected = expected_tokens_by_hand(alpha, gamma)
        assert execution_trace.row_end(blocks) == pytest.approx(tokens / expected * (gamma * c + 1))
        assert sum(block.tokens for block in blocks) == pytest.approx(tokens)
        targets = [block for block in blocks if block.kind == execution_trace.TARGET_STEP]
        assert len(targets) == math.ceil(tokens / expected - 1e-9)
        assert len(blocks) == len(targets) * (gamma + 1)  # γ draft steps before every target step
    assert execution_trace.row_end(rows["plain"]) == tokens
    assert len(rows["plain"]) == tokens


def test_blocks_are_laid_end_to_end_with_the_papers_widths():
    blocks = execution_trace.speculative_row(0.75, 7, 0.02, 40)  # E = 3.5996: 11 whole rounds and 0.11 of one
    for before, after in zip(blocks, blocks[1:]):
        assert after.start == pytest.approx(before.start + before.width)
    first_round = [block for block in blocks if block.round_number == 1]
    assert [block.kind for block in first_round] == [execution_trace.DRAFT_STEP] * 7 + [execution_trace.TARGET_STEP]
    assert [block.width for block in first_round] == pytest.approx([0.02] * 7 + [1.0])
    assert first_round[-1].tokens == pytest.approx((1 - 0.75**8) / 0.25)
    last = blocks[-1]
    assert last.round_number == 12
    assert last.width == pytest.approx(40 / ((1 - 0.75**8) / 0.25) - 11)  # the fraction of a round still needed


def test_alpha_1_fills_whole_rounds_of_gamma_plus_1_tokens():
    blocks = execution_trace.speculative_row(1.0, 7, 0.05, 16)
    assert [block.tokens for block in blocks if block.tokens] == [8.0, 8.0]
    assert execution_trace.row_end(blocks) == pytest.approx(2 * (7 * 0.05 + 1))


@pytest.mark.parametrize("alpha, c, tokens", [(1.5, 0.02, 40), (0.5, -0.1, 40), (0.5, 0.02, 0), (0.5, 0.02, 1001),
                                              (0.5, 0.02, 2.5), (0.5, 0.02, True), ("0.5", 0.02, 40)])
def test_bad_inputs_raise_value_error(alpha, c, tokens):
    with pytest.raises(ValueError):
        execution_trace.execution_trace(alpha, c, tokens)


def test_bad_gamma_raises():
    with pytest.raises(ValueError):
        execution_trace.execution_trace(0.5, 0.02, 40, gammas=(0,))


def test_figure_draws_draft_steps_blue_and_target_steps_purple_with_each_rows_time():
    figure = execution_trace_figures.execution_trace_figure(0.75, 0.02, tokens=40)
    drafts, targets = figure.data
    assert drafts.marker.color == BLUE and targets.marker.color == execution_trace_figures.PURPLE
    assert list(drafts.y).count("γ = 7") == 7 * 12 and list(drafts.y).count("γ = 3") == 3 * 15
    assert list(targets.y).count("plain") == 40
    assert targets.text[0] == "+3.6"  # E at γ = 7
    ends = {annotation.y: annotation.text for annotation in figure.layout.annotations}
    assert ends["γ = 7"] == f" {40 / 3.5996 * 1.14:.1f} steps ({40 / (40 / 3.5996 * 1.14):.2f}×)"
    assert ends["plain"] == " 40.0 steps (1.00×)"
    assert list(figure.layout.yaxis.categoryarray) == ["γ = 7", "γ = 3", "plain"]


def test_the_theory_tab_draws_the_trace_and_the_oracle_at_its_alpha_and_c():
    from specviz.app.tabs.theory import EXECUTION_TRACE_CAPTION, theory_views

    *_, trace_figure, oracle_sentence, oracle_figure = theory_views(0.6, 4, 0.1, False, None)
    assert trace_figure.layout.title.text == "What-if: 40 tokens at α = 0.60, c = 0.100"
    assert "α = 0.60, c = 0.100" in oracle_sentence and "1.572×" in oracle_sentence
    assert "α = 0.60, c = 0.100" in [trace.name for trace in oracle_figure.data]
    assert "Figure 5" in EXECUTION_TRACE_CAPTION and "40 tokens" in EXECUTION_TRACE_CAPTION
