"""A real browser on the launched app's lab tabs, each used as a person would."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from specviz.app.tabs.groups import LAB_TABS
from tests.browser import (
    POLL_MS,
    choose_pair,
    error_badges,
    open_live,
    open_tab,
    run_with_the_draft_model,
    screenshot_tab,
    wait_for_done,
    wait_until_settled,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser")]


OWN_TEST = {  # the lab tabs used at length by a test of their own below
    "Verification rules": "test_the_verification_rules_lab_on_a_real_t1_run",
    "Round anatomy": "test_round_anatomy_draws_the_live_run",
    "You are the drafter": "test_you_are_the_drafter",
    "Memory bandwidth": "test_the_seeds_lessons_show_in_the_theory_and_bandwidth_tabs",  # its 27 s measurement
}
CHECKS = {  # every other lab tab: the button to press (or None) and the text that must then appear in the tab
    "Theory": (None, "E[tokens per iteration]"),
    "When it pays": (None, "It pays"),  # the recorded regimes' verdicts, drawn when the tab opens
    "Sampling lab": ("Sample N", "p-value"),
    "Simulated models": ("Run on the simulated models", "Simulated speedup"),
    "Losslessness": ("Compare distributions", "40 runs ·"),
    "Glossary": (None, "β (beta)"),
    "Course exercises": (None, "Worked answer"),  # the first exercise's answer, drawn when the app is built
}
NO_PLOT_TABS = {"Glossary", "Course exercises"}  # tabs of text and tables only


@pytest.mark.parametrize("tab", [tab.name for tab in LAB_TABS if tab.name not in OWN_TEST])  # the app's own list
def test_every_lab_tab_works_in_the_browser(page, tab):
    assert tab in CHECKS, f"a new lab tab, {tab!r}: give it a check in CHECKS (or a test of its own: OWN_TEST)"
    button, expected = CHECKS[tab]
    open_tab(page, tab)
    panel = page.locator("[role=tabpanel]:visible").last
    if tab == "Losslessness":
        runs = page.get_by_label("Runs").first
        runs.fill("40")
        runs.press("Enter")
    if button:
        page.get_by_role("button", name=button, exact=True).click()
    panel.get_by_text(expected, exact=False).first.wait_for(timeout=180_000)
    if tab not in NO_PLOT_TABS:
        page.wait_for_function("[...document.querySelectorAll('[role=tabpanel]')].some(p => p.offsetParent !== null"
                               " && p.querySelectorAll('.js-plotly-plot').length > 0)", timeout=120_000, polling=POLL_MS)
    if tab == "Simulated models":
        assert page.locator("#sv-sim-rows .sv-row").count() > 0
    shots = os.environ.get("SPECVIZ_SCREENSHOT_DIR")
    if shots:
        wait_until_settled(page)
        page.screenshot(path=str(Path(shots) / f"lab-{tab.lower().replace(' ', '-')}.png"), full_page=True)


def test_the_verification_rules_lab_on_a_real_t1_run(page, tmp_path):
    """A T = 1 run drafted by the 4-bit copy, then the rule lab at round 2, position 1 (round 1 is the prompt's
    plain step): the exact rule follows p, and at least one engine shortcut does not (χ² fails)."""
    open_live(page)
    page.get_by_role("button", name="Reset", exact=True).click()
    choose_pair(page, "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy")
    page.locator("textarea").first.fill("Write one sentence about the sea.")
    for label, value in (("Max new tokens", "24"), ("Temperature (0 = greedy)", "1")):
        field = page.get_by_label(label).first
        field.fill(value)
        field.press("Enter")
    page.get_by_label("draft model", exact=True).check()
    page.get_by_role("button", name="Run", exact=True).click()
    wait_for_done(page, timeout_ms=120_000)  # the run and its comparison with plain decoding
    open_tab(page, "Verification rules")
    panel = page.locator("[role=tabpanel]:visible").last
    round_box = panel.get_by_label("Round").first
    round_box.fill("2")
    round_box.press("Enter")
    page.get_by_role("button", name="Compare the rules at this position", exact=True).click()
    table = page.locator("#sv-rules-table")
    table.get_by_text("exact", exact=True).wait_for(timeout=120_000)
    rows = {row.locator("td").first.inner_text(): row.inner_text() for row in table.locator("tbody tr").all()}
    assert "follows p" in rows["exact"] and "does not" not in rows["exact"]
    assert any("does NOT follow p" in text for rule, text in rows.items() if rule != "exact"), rows
    page.wait_for_function("[...document.querySelectorAll('[role=tabpanel]')].some(p => p.offsetParent !== null"
                           " && p.querySelectorAll('.js-plotly-plot').length > 0)", timeout=60_000, polling=POLL_MS)
    screenshot_tab(page, tmp_path, "lab-verification-rules.png")


def test_round_anatomy_draws_the_live_run(page, tmp_path):
    """After a run compared with plain decoding: the timeline, the totals and the sentences that explain them."""
    open_live(page)
    compare = page.get_by_label("Compare with plain decoding (measures the speedup)")
    compare.check()
    run_with_the_draft_model(page, "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy")
    page.wait_for_function("document.querySelector('#sv-stats').innerText.includes('measured speedup ')",
                           timeout=120_000, polling=POLL_MS)  # the plain run follows the rows
    live = next(line for line in page.locator("#sv-stats").inner_text().splitlines() if "measured speedup" in line)
    compare.uncheck()
    open_tab(page, "Round anatomy")
    page.get_by_role("button", name="Draw the live run", exact=True).click()
    summary = page.locator("#sv-anatomy-summary")
    expect(summary).to_contain_text(live.strip(), timeout=60_000)  # the live tab's two speedups, the same sentence
    text = summary.inner_text()
    assert "A plain step costs" in text and "From predicted to measured" in text and "against plain steps" not in text
    page.wait_for_function("[...document.querySelectorAll('[role=tabpanel]')].some(p => p.offsetParent !== null"
                           " && p.querySelectorAll('.js-plotly-plot').length >= 2)", timeout=60_000, polling=POLL_MS)
    screenshot_tab(page, tmp_path, "lab-round-anatomy.png")


def test_you_are_the_drafter(page, tmp_path):
    """Start, pick the target's favourite, then type a proposal: the real target verifies both."""
    open_tab(page, "You are the drafter")
    page.get_by_role("button", name="Start", exact=True).click()
    picker = page.locator("#sv-you-picker")
    picker.locator("input[type=radio]").first.wait_for(timeout=120_000)
    picker.locator("input[type=radio]").first.check()
    page.get_by_role("button", name="Propose", exact=True).click()
    score = page.locator("#sv-you-score")
    score.get_by_text("Your acceptance rate =", exact=False).wait_for(timeout=60_000)
    page.get_by_label("…or type your own proposal (up to 8 tokens)").fill(" Paris, and it is")
    page.get_by_role("button", name="Propose", exact=True).click()
    page.wait_for_function("document.querySelectorAll('#sv-you-rows .sv-row').length == 2", timeout=60_000, polling=POLL_MS)
    text = score.inner_text()
    assert "the real draft's mean overlap β̄ =" in text and "Last proposal:" in text
    assert page.locator("#sv-you-rows .sv-accepted, #sv-you-rows .sv-rejected").count() >= 2
    screenshot_tab(page, tmp_path, "lab-you-are-the-drafter.png")


def test_the_seeds_lessons_show_in_the_theory_and_bandwidth_tabs(page, tmp_path):
    """Figure 5's execution trace and the oracle-γ bound (Theory), the corrected A100-40GB hierarchy (Memory bandwidth)."""
    open_tab(page, "Theory")
    page.locator("#sv-execution-trace .js-plotly-plot").wait_for(timeout=60_000)
    oracle = page.locator("#sv-oracle-gamma")
    oracle.get_by_text("oracle", exact=False).first.wait_for(timeout=60_000)
    assert "1.57" in oracle.inner_text() or "1.58" in oracle.inner_text()  # the grid's largest gain, "up to 60%"
    page.locator("#sv-execution-trace").scroll_into_view_if_needed()
    wait_until_settled(page)
    page.locator("#sv-execution-trace").screenshot(path=str(Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR", tmp_path))
                                                        / "execution-trace.png"))
    open_tab(page, "Memory bandwidth")
    page.locator("#sv-hierarchy .js-plotly-plot").wait_for(timeout=60_000)
    caption = page.locator("#sv-hierarchy-caption").inner_text()
    assert "1,555 GB/s" in caption and "14.1 ms" in caption
    screenshot_tab(page, tmp_path, "lab-memory-hierarchy.png")


COURSE_PROJECT = "The course's own experiments 1-4, exactly as written, beside its printed output"  # the accordion


def test_the_course_exercises_project_and_seed_table(page, tmp_path):
    """Seed 002's course and the seed table as a student meets them: Lesson 5's exercise worked (both drafts pass,
    n = 2), the course's Experiments 1-4 run as written (E = 2.952 at γ = 3, where the course prints 2.68), and the
    seed table's row for seed 001's A100 bandwidth (1,935 GB/s printed, 1,555 GB/s right), with no error anywhere."""
    open_tab(page, "Course exercises")
    page.get_by_label("Exercise or worked example").click()
    page.get_by_role("option", name="Lesson 5 exercise: one round with γ = 2", exact=True).click()
    answer = page.locator("#sv-exercise-answer")
    answer.get_by_text("n = 2", exact=True).wait_for(timeout=60_000)
    assert "B, A and then one token" in answer.inner_text()
    assert error_badges(page) == 0
    screenshot_tab(page, tmp_path, "course-exercises-lesson-5.png")

    open_tab(page, "Simulated models")
    page.get_by_text(COURSE_PROJECT, exact=True).click()
    page.get_by_role("button", name="Run the course's experiments 1-4 as written", exact=True).click()
    project = page.locator("#sv-course-project")
    project.get_by_text("2.952", exact=False).first.wait_for(timeout=120_000)
    assert "Experiment 4" in project.inner_text()
    assert error_badges(page) == 0
    screenshot_tab(page, tmp_path, "simulated-course-project.png")
