"""The Verification rules tab's cross-vocabulary case: its figure and table (labs/verification_rules/cross_vocab_figures.py), the
sampled rules (cross_vocab.py beside it) and the tab's callback (app/tabs/cross_vocab_case.py), no model and no browser."""

import re

import gradio as gr
import pytest
import torch

from specviz.analysis.metrics import chi_square_test
from specviz.labs.verification_rules import cross_vocab
from specviz.labs.verification_rules.cross_vocab import (
    CASES,
    EXACT,
    NAIVE,
    at_shared_mass,
    chi_square_by_rule,
    cross_vocab_outcomes,
)
from specviz.labs.verification_rules.cross_vocab_figures import LACKED, cross_vocab_figure, cross_vocab_table

TEXTBOOK, HALF, NEARLY = CASES  # the three cases, in the menu's order
P = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
Q_OWN = torch.tensor([0.2, 0.2, 0.0], dtype=torch.float64)  # the docstring's draft: 0.6 on tokens the target lacks


def _title_distances(figure) -> dict[str, float]:
    """{"exact": TV, "naïve": TV} as the figure's title gives them."""
    return {name: float(value) for name, value in re.findall(r"(exact|naïve) TV = ([0-9.]+)", figure.layout.title.text)}


def _table_rows(table: str) -> dict[str, list[str]]:
    """rule -> its row's cells."""
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines() if line.startswith("| ")]
    return {row[0]: row[1:] for row in cells[1:]}


def test_the_figure_has_p_both_qs_both_rules_and_the_lost_mass_as_its_own_bar():
    outcomes = cross_vocab_outcomes(P, Q_OWN)
    figure = cross_vocab_figure(P, Q_OWN, ["a", "b", "c"], outcomes)
    bars = {trace.name: list(trace.y) for trace in figure.data}
    assert list(figure.data[0].x) == ["a", "b", "c", LACKED] and figure.layout.barmode == "group"
    assert bars["p (target)"] == pytest.approx([0.5, 0.3, 0.2, 0.0])
    assert bars["the draft's own q"] == pytest.approx([0.2, 0.2, 0.0, 0.6])  # 1 − s on the tokens the target lacks
    assert bars["q renormalized over shared tokens (x is drawn from it)"] == pytest.approx([0.5, 0.5, 0.0, 0.0])
    assert bars[f"emitted: {EXACT}"] == pytest.approx([0.5, 0.3, 0.2, 0.0])  # p
    assert bars[f"emitted: {NAIVE}"] == pytest.approx([0.5, 0.5, 0.0, 0.0])  # the docstring's (0.5, 0.5, 0)
    assert _title_distances(figure) == {"exact": 0.0, "naïve": 0.2} and "s = 0.40" in figure.layout.title.text


@pytest.mark.parametrize("name", list(CASES))
def test_the_title_and_the_table_give_the_closed_forms_distances(name):
    case = CASES[name]
    outcomes = cross_vocab_outcomes(case["target_probs"], case["q_draft_on_target"])
    figure = cross_vocab_figure(case["target_probs"], case["q_draft_on_target"], case["tokens"], outcomes)
    shown = _title_distances(figure)
    assert shown["exact"] == pytest.approx(outcomes[0].distance, abs=5e-4) and shown["exact"] == 0.0
    assert shown["naïve"] == pytest.approx(outcomes[1].distance, abs=5e-4) and shown["naïve"] > 0
    rows = _table_rows(cross_vocab_table(outcomes, chi_square_by_rule(case["target_probs"], case["q_draft_on_target"],
                                                                      samples=2_000), 2_000))
    for outcome in outcomes:
        shared, accept, distance = (float(cell) for cell in rows[outcome.rule][:3])
        assert (shared, accept, distance) == pytest.approx((outcome.shared_mass, outcome.accept_prob, outcome.distance),
                                                           abs=5e-3)


def test_at_shared_mass_keeps_the_shape_and_refuses_an_empty_or_overfull_draft():
    assert at_shared_mass([0.2, 0.2, 0.0], 0.8).tolist() == pytest.approx([0.4, 0.4, 0.0])
    for bad in (0.0, 1.2):
        with pytest.raises(ValueError, match="shared mass"):
            at_shared_mass([0.2, 0.2, 0.0], bad)


def test_sampling_each_rule_follows_its_closed_form_and_only_the_exact_one_follows_p():
    for rule, outcome in zip((EXACT, NAIVE), cross_vocab_outcomes(P, Q_OWN)):
        counts = cross_vocab.sample_emitted(P, Q_OWN, rule, 20_000, torch.Generator().manual_seed(3))
        assert counts.dtype == torch.float64 and counts.sum() == 20_000
        assert chi_square_test(counts, outcome.emitted)[2] > 0.001
    chi_square = chi_square_by_rule(P, Q_OWN, samples=20_000, seed=0)
    assert chi_square[EXACT][2] > 0.001 and chi_square[NAIVE][2] < 1e-12  # the naïve rule never emits 'c'
    with pytest.raises(ValueError, match="one shape"):
        cross_vocab.sample_emitted(P, Q_OWN, "lenient", 10, torch.Generator())


def test_the_slider_moves_the_naive_distance_to_zero_and_never_the_exact_one():
    from specviz.app.tabs.cross_vocab_case import cross_vocab_view

    naive_distances = []
    for shared_mass in (0.1, 0.3, 0.5, 0.7, 0.9, 1.0):
        figure, table = cross_vocab_view(HALF, shared_mass)
        rows = _table_rows(table)
        assert float(rows[EXACT][0]) == pytest.approx(shared_mass) and float(rows[EXACT][2]) == 0.0
        outcomes = cross_vocab_outcomes(CASES[HALF]["target_probs"],
                                        at_shared_mass(CASES[HALF]["q_draft_on_target"], shared_mass))
        assert outcomes[0].distance < 1e-12  # the exact rule emits p at any s, up to float error
        assert _title_distances(figure)["naïve"] == pytest.approx(outcomes[1].distance, abs=5e-4)
        naive_distances.append(outcomes[1].distance)
        assert ("loses nothing" in table) == (shared_mass == 1.0)
    # Up to s = 0.5 the naïve rule accepts every draft here (q_D ≤ p): it emits the draft's q, 0.4 from p; above, less
    assert all(earlier >= later - 1e-12 for earlier, later in zip(naive_distances, naive_distances[1:]))
    assert naive_distances[0] == pytest.approx(0.4) and naive_distances[3] < 0.2 and naive_distances[-1] < 1e-12


def test_nearly_shared_the_naive_error_is_small_but_real():
    from specviz.app.tabs.cross_vocab_case import cross_vocab_view

    _, table = cross_vocab_view(NEARLY, 0.95)
    distance = float(_table_rows(table)[NAIVE][2])
    assert 0.001 < distance < 0.05


@pytest.mark.parametrize("name,shared_mass,sentence", [
    (TEXTBOOK, 1.5, "Shared mass s must be a number from 0.05 to 1, got 1.5."),
    (TEXTBOOK, 0, "Shared mass s must be a number from 0.05 to 1, got 0."),
    (TEXTBOOK, "lots", "Shared mass s must be a number from 0.05 to 1, got 'lots'."),
    ("a case of my own", 0.5, "Choose one of the cross-vocabulary cases, got 'a case of my own'."),
])
def test_bad_input_is_one_quiet_sentence(name, shared_mass, sentence):
    from specviz.app.callbacks import Refusal
    from specviz.app.tabs.cross_vocab_case import cross_vocab_view

    with pytest.raises(gr.Error) as refusal:
        cross_vocab_view(name, shared_mass)
    assert refusal.value.message == sentence
    assert isinstance(refusal.value, Refusal) and refusal.value.print_exception is False  # no traceback in the log


def test_choosing_a_case_moves_the_slider_to_its_own_shared_mass():
    from specviz.app.tabs.cross_vocab_case import case_shared_mass

    assert case_shared_mass(TEXTBOOK)["value"] == pytest.approx(0.4)
    assert case_shared_mass(NEARLY)["value"] == pytest.approx(0.95)


@pytest.mark.slow
def test_the_tab_holds_the_accordion_and_its_endpoint():
    from specviz.app.tabs.cross_vocab_case import TITLE
    from specviz.app.ui import build_app

    demo = build_app()
    accordions = [block for block in demo.blocks.values() if isinstance(block, gr.Accordion) and block.label == TITLE]
    assert len(accordions) == 1 and accordions[0].open is False
    assert "rules_cross_vocab" in {function.api_name for function in demo.fns.values()}
