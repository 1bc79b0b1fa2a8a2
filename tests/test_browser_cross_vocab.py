"""A real browser on the Verification rules tab's cross-vocabulary case: no model run is needed."""

import pytest

from tests.browser import error_badges, open_tab, screenshot_tab

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser")]


def test_the_cross_vocabulary_case_shows_both_rules_and_follows_the_slider(page, tmp_path):
    """Open the accordion, compare on the textbook case (naïve TV 0.2), move s to 1 (the two rules agree), then pick
    the nearly shared case: the slider moves to its s = 0.95 and the figure redraws."""
    from specviz.app.tabs.cross_vocab_case import TITLE
    from specviz.labs.verification_rules.cross_vocab import CASES

    open_tab(page, "Verification rules")
    accordion = page.locator("#sv-cross-vocab")
    accordion.get_by_text(TITLE, exact=True).click()
    page.get_by_role("button", name="Compare the exact and the naïve rule", exact=True).click()
    table = page.locator("#sv-cross-vocab-table")
    table.get_by_text("0.2000", exact=True).wait_for(timeout=60_000)
    rows = {row.locator("td").first.inner_text(): row.inner_text() for row in table.locator("tbody tr").all()}
    exact, naive = rows["renormalized q (exact)"], rows["the draft's own q (not renormalized)"]
    assert "0.4" in exact and "0.800" in exact and "0.0000" in exact and "follows p" in exact
    assert "1.000" in naive and "does NOT follow p" in naive
    accordion.locator(".js-plotly-plot").wait_for(timeout=60_000)
    assert "naïve TV = 0.200" in accordion.locator(".js-plotly-plot .gtitle").text_content()
    screenshot_tab(page, tmp_path, "lab-rules-cross-vocab.png")

    shared_mass = accordion.get_by_label("Shared mass s: the draft's own mass on tokens the target has")
    number = accordion.locator("input[type=number]").first
    number.fill("1")
    number.press("Enter")
    number.blur()
    accordion.locator(".js-plotly-plot .gtitle").get_by_text("naïve TV = 0.000", exact=False).wait_for(timeout=60_000)
    assert "loses nothing" in table.inner_text()

    accordion.get_by_label("Case (p and the draft's own q)").click()
    page.get_by_role("option", name=list(CASES)[2]).click()
    accordion.locator(".js-plotly-plot .gtitle").get_by_text("s = 0.95", exact=False).wait_for(timeout=60_000)
    assert number.input_value() == "0.95" and shared_mass.count() > 0 and error_badges(page) == 0
