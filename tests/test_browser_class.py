"""The class page in a real browser, as a teacher and a student meet the page: numbers never clamped, a refusal that stays
readable on the status line, a token's numbers on a tap, an offline hub pair refused at once, a gallery run that sets
the controls, and whole Glossary cells."""

import os
from pathlib import Path

import pytest

from tests.browser import (
    POLL_MS,
    choose_pair,
    error_badges,
    open_gallery_entry,
    open_live,
    open_settings,
    open_tab,
    row_count,
    run_with_the_draft_model,
    wait_for_done,
    wait_until_settled,
    words_broken,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser")]
OFFLINE_COPY = "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy"


def _status(page) -> str:
    return page.locator("#sv-status").inner_text()


def test_an_out_of_range_number_is_refused_on_the_status_line_and_nothing_runs(page):
    """Max new tokens 100000 stays 100000 in its box (a slider clamped it to 512 and ran that); Run says why on the
    status line, where it stays after the toast, and the previous run stays on the page."""
    run_with_the_draft_model(page, OFFLINE_COPY, max_new_tokens=8)  # a run to keep: its rows must stay
    rows = row_count(page)
    assert rows > 0
    box = page.get_by_label("Max new tokens").first
    box.fill("100000")
    box.press("Tab")
    page.get_by_role("button", name="Run", exact=True).click()
    sentence = "max_new_tokens must be a whole number from 1 to 8192, got 100000."
    page.wait_for_function(f"document.querySelector('#sv-status').innerText.includes({sentence!r})",
                           timeout=30_000, polling=POLL_MS)
    toast = page.locator(".toast-body").filter(has_text=sentence)
    toast.locator(".toast-close").click()  # the toast closed, as a person would: the status line keeps the sentence
    toast.wait_for(state="detached", timeout=10_000)
    assert _status(page).startswith("Not run:") and sentence in _status(page)
    assert box.input_value() == "100000" and row_count(page) == rows and error_badges(page, toasts=False) == 0
    box.fill("96")
    box.press("Tab")


def test_a_tap_on_a_token_shows_its_numbers_on_a_phone_and_a_tap_elsewhere_closes_them(page, app_url, tmp_path):
    phone = page.context.browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    small = phone.new_page()
    try:
        small.goto(app_url)
        small.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
        open_settings(small)
        box = small.get_by_label("Max new tokens").first
        box.fill("16")
        box.press("Tab")
        small.get_by_role("button", name="Run", exact=True).tap()
        wait_for_done(small, timeout_ms=120_000)
        token = small.locator("#sv-rows .sv-row .sv-tok[data-details]").first
        token.scroll_into_view_if_needed()
        token.tap()
        shown = token.evaluate("e => [document.activeElement === e, getComputedStyle(e, '::after').content]")
        assert shown[0] and "p(x) = " in shown[1], shown
        panel = token.evaluate("e => { const s = getComputedStyle(e, '::after'); return [s.position, s.bottom, s.width]; }")
        assert panel[0] == "fixed" and float(panel[2].removesuffix("px")) <= 390, panel  # on screen, at its foot
        small.screenshot(path=str(Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR", tmp_path)) / "phone-token-tapped.png"))
        small.locator("#sv-final").tap()
        assert not token.evaluate("e => document.activeElement === e")  # closed
        assert token.evaluate("e => getComputedStyle(e, '::after').content") in ("none", "normal")
    finally:
        phone.close()


def test_an_offline_hub_pair_is_refused_at_once_and_the_menu_goes_back(page):
    from specviz.app.pair_menu import PAIRS
    from specviz.models.loading import hub_model_at_hand

    hub = "gpt2-xl ← gpt2"
    if all(hub_model_at_hand(model) for model in PAIRS[hub]):
        pytest.skip("this machine reaches the Hugging Face hub (or has gpt2-xl cached): nothing to refuse")
    choose_pair(page, OFFLINE_COPY)
    choose_pair(page, hub)
    page.wait_for_function("document.querySelector('#sv-status').innerText.includes('needs internet')",
                           timeout=30_000, polling=POLL_MS)
    assert _status(page).startswith("Not available:") and "Starting" not in _status(page)
    page.wait_for_function("!document.querySelector('#sv-pair input').value.includes('gpt2')", timeout=10_000, polling=POLL_MS)
    assert "SmolLM2-135M ← its 4-bit copy" in page.locator("#sv-pair input").input_value()
    assert error_badges(page, toasts=False) == 0


def test_opening_a_gallery_run_sets_the_controls_to_its_settings(page):
    from specviz.app.pair_menu import PAIRS, pair_choices
    from specviz.app.request import RunRequest
    from specviz.views import gallery

    entry = next(entry for entry in gallery.entries() if entry.name == "4-coder-prose-t1")
    recorded = entry.trace()
    expected = RunRequest.from_config(recorded.config, recorded.prompt)
    open_live(page)
    open_gallery_entry(page, entry.name)
    page.wait_for_function("document.querySelector('#sv-status').innerText.includes('Recorded on')",
                           timeout=30_000, polling=POLL_MS)
    wait_until_settled(page)
    shown = {key: label for label, key in pair_choices()}
    assert expected.pair in PAIRS and page.locator("#sv-pair input").input_value() == shown[expected.pair]
    assert page.locator("textarea").first.input_value() == recorded.prompt
    for label, value in (("γ: tokens drafted per round", recorded.config["gamma"]),
                         ("Temperature (0 = greedy)", recorded.config["temperature"]), ("Seed", recorded.config["seed"])):
        assert float(page.get_by_label(label).first.input_value()) == float(value), label
    assert page.get_by_label(expected.drafter, exact=True).is_checked()
    choose_pair(page, OFFLINE_COPY)  # as the next test expects


def test_every_glossary_cell_is_whole(page):
    from specviz.labs import glossary

    open_tab(page, "Glossary")
    rows = page.locator("table").filter(has_text="Total variation distance").locator("tbody tr")
    rows.first.wait_for(timeout=30_000)
    cells = [row.locator("td").all_inner_texts() for row in rows.all()]
    assert len(cells) == len(glossary.GLOSSARY) and all(len(row) == 2 for row in cells)
    by_term = {row[0]: row[1] for row in cells}
    assert by_term["TVD"].endswith("the noise band shown beside it.")
    assert "D_LK(p, q) = Σₓ |p(x) − M(x)|" in by_term["D_LK"] and by_term["D_LK"].endswith("as a preset).")
    assert words_broken(page, "#sv-glossary") == []  # no term split mid-word ("iteratio n")


def test_no_term_breaks_mid_word_on_a_phone(page, app_url):
    phone = page.context.browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    small = phone.new_page()
    try:
        small.goto(app_url)
        small.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
        small.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length > 0", timeout=30_000, polling=POLL_MS)
        assert words_broken(small, "#sv-stats, #sv-headline, #sv-status") == []  # the recorded run's stats
        open_tab(small, "Glossary")
        small.locator("#sv-glossary table tbody tr").first.wait_for(timeout=30_000)
        assert words_broken(small, "#sv-glossary") == []
    finally:
        phone.close()
    open_live(page)


def test_a_tampered_trace_is_refused_in_a_sentence_and_the_page_keeps_its_run(page, tmp_path):
    """A saved trace with one rejected token's r lowered below its acceptance probability is refused under
    the Load button, naming the round and the field, and the rows on the page stay; the same trace untouched loads."""
    import json

    run_with_the_draft_model(page, OFFLINE_COPY, max_new_tokens=8)
    rows = row_count(page)
    with page.expect_download() as download:
        page.locator("#sv-download").click()
    saved = tmp_path / "run.json"
    download.value.save_as(saved)
    data = json.loads(saved.read_text(encoding="utf-8"))
    number, token = next((index + 1, token) for index, round_ in enumerate(data["rounds"])
                         for token in round_["tokens"] if token["kind"] == "rejected")
    token["uniform"] = token["accept_prob"] / 2
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(data), encoding="utf-8")
    open_tab(page, "Runs & files")
    page.locator("input[type=file]").first.set_input_files(str(tampered))
    note = page.locator("#sv-load-note")
    page.wait_for_function("document.querySelector('#sv-load-note').innerText.includes('Not loaded')",
                           timeout=30_000, polling=POLL_MS)
    assert f"tampered.json is not shown: the trace contradicts itself at round {number}, tokens[" in note.inner_text()
    assert ".uniform: r = " in note.inner_text()
    open_live(page)
    assert row_count(page) == rows and error_badges(page, toasts=False) == 0
    open_tab(page, "Runs & files")
    page.locator("input[type=file]").first.set_input_files(str(saved))
    page.wait_for_function("document.querySelector('#sv-load-note').innerText.includes('Loaded')",
                           timeout=30_000, polling=POLL_MS)
    assert "run.json" in note.inner_text()
    open_live(page)
