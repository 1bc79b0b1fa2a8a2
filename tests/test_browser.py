"""A real browser on the launched app, as a person would use it: runs, Stop and Reset, export."""

import os
import re
import time
from pathlib import Path

import pytest

from specviz.words import count
from tests.browser import (
    POLL_MS,
    choose_pair,
    error_badges,
    open_live,
    open_settings,
    open_tab,
    plotted_rounds,
    row_count,
    run_with_the_draft_model,
    screenshot_showing_the_run,
    set_long_run,
    wait_for_done,
    wait_until_settled,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser")]


def test_example_then_run_shows_coloured_rows_and_four_plots(page, tmp_path):
    # the distilled pair: on this example the 4-bit copy and lookup agree with the target almost everywhere (no red)
    choose_pair(page, "Offline: SmolLM2-135M-Instruct (embedded)")
    page.get_by_text("Repeat this sentence three times", exact=False).first.click()
    page.wait_for_function("document.querySelector('textarea').value.startsWith('Repeat this sentence')",
                           timeout=10_000, polling=POLL_MS)
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_selector("#sv-rows .sv-row", timeout=120_000)
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 4", timeout=120_000, polling=POLL_MS)
    wait_for_done(page, timeout_ms=120_000)  # the run and its comparison with plain decoding
    for kind in ("accepted", "rejected"):
        assert page.locator(f"#sv-rows .sv-row .sv-{kind}").count() > 0, kind
    assert page.locator("#sv-rows .sv-corrected, #sv-rows .sv-bonus").count() > 0
    green = page.locator("#sv-rows .sv-row .sv-accepted").first.evaluate("e => getComputedStyle(e).backgroundColor")
    struck = page.locator("#sv-rows .sv-row .sv-rejected").first.evaluate("e => getComputedStyle(e).textDecorationLine")
    assert green == "rgb(217, 242, 225)" and "line-through" in struck
    assert page.locator(".js-plotly-plot").count() >= 4
    screenshot_showing_the_run(page, Path(os.environ.get("SPECVIZ_SCREENSHOT", tmp_path / "specviz.png")))


def _assert_the_page_tells_one_story(page) -> None:
    """After a Stop: no "Error" mark anywhere, the plots of the same rounds as the rows, and the page says stopped."""
    wait_until_settled(page)
    rows = row_count(page)
    assert error_badges(page) == 0
    assert plotted_rounds(page, expect=rows or None) == (rows or None), (plotted_rounds(page), rows)
    status = page.locator("#sv-status").inner_text()
    assert status.startswith("Stopped by you"), status
    if "before the first round" not in status:  # rows of this run: the stats say so too
        assert f"after {count(rows, 'round')}" in status and "stopped by you" in page.locator("#sv-stats").inner_text()


def test_stop_mid_run_keeps_the_run_and_reset_clears_it(page, tmp_path):
    """Stop keeps the rows decoded so far, with plots and stats of the same rounds and no error marks; Reset during
    a run clears the page for good (the run it cancels must not bring rows back)."""
    page.get_by_role("button", name="Reset", exact=True).click()
    set_long_run(page)
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length >= 8", timeout=120_000, polling=POLL_MS)
    page.get_by_role("button", name="Stop", exact=True).click()
    page.wait_for_function("document.querySelector('#sv-status').innerText.startsWith('Stopped by you')",
                           timeout=10_000, polling=POLL_MS)
    stopped_at = row_count(page)
    _assert_the_page_tells_one_story(page)
    assert page.get_by_text("Stopped by you after", exact=False).count() >= 2  # the status line and a toast
    page.screenshot(path=str(Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR", tmp_path)) / "stopped-mid-run.png"),
                    full_page=True)
    time.sleep(2)
    assert row_count(page) == stopped_at < 300  # nothing more streams in
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length >= 2", timeout=120_000, polling=POLL_MS)
    page.get_by_role("button", name="Reset", exact=True).click()
    time.sleep(3)
    assert row_count(page) == 0 and plotted_rounds(page) is None and error_badges(page) == 0
    assert page.locator("#sv-stats").inner_text().strip() == ""
    page.get_by_role("button", name="Step", exact=True).click()  # the worker is free again
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length == 1", timeout=120_000, polling=POLL_MS)


@pytest.mark.parametrize("delay_ms", [50, 100, 1000])
def test_stop_right_after_run_leaves_the_server_idle_and_the_page_whole(page, app_server, delay_ms):
    """Stop 0.05 s, 0.1 s or 1 s after Run: before the run starts, while it loads, or once it decodes. The server
    goes idle, and the page shows either this run's rounds, stopped, or the previous run with a line saying
    nothing new was decoded; never an error mark or plots of other rounds than the rows."""
    import psutil  # a dependency of accelerate

    from tests.conftest import AT_REST, comes_to_rest

    server = psutil.Process(app_server[1].pid)
    set_long_run(page)
    page.get_by_role("button", name="Run", exact=True).click()  # a previous run on the page, then stopped
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length >= 2", timeout=120_000, polling=POLL_MS)
    page.get_by_role("button", name="Stop", exact=True).click()
    page.wait_for_function("document.querySelector('#sv-status').innerText.startsWith('Stopped by you')",
                           timeout=10_000, polling=POLL_MS)
    page.evaluate("""delay => {  // in the page itself, so the time between the clicks is exact
        const button = name => [...document.querySelectorAll('button')].find(b => b.innerText.trim() === name);
        button('Run').click();
        return new Promise(done => setTimeout(() => { button('Stop').click(); done(); }, delay));
    }""", delay_ms)
    seconds = comes_to_rest(server)  # the forward in flight ends: the model thread is idle again
    assert seconds[-1] < AT_REST, seconds
    _assert_the_page_tells_one_story(page)
    assert row_count(page) >= 1  # this run's rounds, or the previous run's: never an emptied page
    page.get_by_role("button", name="Step", exact=True).click()  # and the next run starts at once
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length == 1", timeout=30_000, polling=POLL_MS)


def test_the_offline_pair_runs_with_the_distilled_draft(page, tmp_path):
    run_with_the_draft_model(page, "Offline: SmolLM2-135M-Instruct (embedded)")  # the app opens on the 4-bit pair
    assert "← distilled" in page.locator("#sv-stats").inner_text()
    assert page.locator("#sv-rows .sv-row .sv-accepted").count() > 0  # drafts from the distilled head were accepted
    screenshot_showing_the_run(page, Path(os.environ.get("SPECVIZ_SCREENSHOT_DISTILLED", tmp_path / "distilled.png")))


def test_the_offline_pair_runs_with_its_own_4bit_copy(page, tmp_path):
    run_with_the_draft_model(page, "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy")
    assert "← int4" in page.locator("#sv-stats").inner_text()
    assert page.locator("#sv-rows .sv-row .sv-accepted").count() > 3 * page.locator("#sv-rows .sv-row .sv-rejected").count()
    screenshot_showing_the_run(page, Path(os.environ.get("SPECVIZ_SCREENSHOT_INT4", tmp_path / "int4.png")))


def test_the_exported_page_opens_offline_with_the_same_rows_and_numbers(page, tmp_path):
    """Export the run, open the file in a page that may fetch nothing, and compare it with the app."""
    run_with_the_draft_model(page, "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy")
    rows, stats = row_count(page), page.locator("#sv-stats").inner_text()
    open_tab(page, "Runs & files")  # export, load and the gallery have a tab of their own
    page.get_by_role("button", name="Export the run as one page (HTML)").click()
    link = page.locator("#sv-exported a").first
    link.wait_for(timeout=60_000)
    with page.expect_download() as download:
        link.click()
    exported = tmp_path / "exported.html"
    download.value.save_as(exported)
    offline = page.context.browser.new_page(viewport={"width": 1300, "height": 1600})
    fetched = []
    offline.route("**/*", lambda route: (fetched.append(route.request.url), route.abort()) if not route.request.url.startswith(
        "file:") else route.continue_())
    offline.goto(exported.as_uri())
    offline.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4",
                              timeout=60_000, polling=POLL_MS)
    assert offline.locator("#sv-rows .sv-row").count() == rows and fetched == []
    alpha = re.search(r"α = [0-9.]+", stats).group()
    assert alpha in offline.locator("#sv-stats").inner_text()
    shots = Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR", tmp_path))
    offline.screenshot(path=str(shots / "exported-page.png"), full_page=True)
    offline.close()
    open_live(page)  # as the next test expects


ROOM_LEFT = """label => { const box = document.querySelector('#sv-pair input');
    const style = getComputedStyle(box), pen = document.createElement('canvas').getContext('2d');
    pen.font = style.font; return box.clientWidth - parseFloat(style.paddingLeft)
    - parseFloat(style.paddingRight) - pen.measureText(label).width; }"""  # px a label leaves in the pair menu


def test_every_pair_label_fits_the_menu_on_a_phone_whatever_its_ending(page):
    """At 390×844 each pair's label, with each ending it can have ("· offline", "· from the hub", "· not installed",
    "· needs internet"), fits the closed menu: the ending is what says where the pair is."""
    from specviz.app.pair_menu import FROM_HUB, MENU_LABELS, NOT_INSTALLED, OFFLINE_SUFFIX

    labels = [*MENU_LABELS.values(), *(label.removesuffix(OFFLINE_SUFFIX) + ending for label in MENU_LABELS.values()
                                       if label.endswith(OFFLINE_SUFFIX) for ending in (FROM_HUB, NOT_INSTALLED))]
    phone = page.context.browser.new_page(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    try:
        phone.goto(page.url)
        phone.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
        room = {label: phone.evaluate(ROOM_LEFT, label) for label in labels}
        assert min(room.values()) >= 0, room
    finally:
        phone.close()


def test_each_pair_label_fits_the_menu_and_the_qwen_pair_sets_its_preset(page):
    """Every pair's label fits the menu at 1366×768 (none cut off); choosing the Qwen2.5-Coder pair sets γ 12 and the
    draft stop 0.6 on the page, with the reason under the menu; going back sets γ 4 and no stop. Where llama.cpp is
    offered, choosing it sets that backend's preset (adaptive γ up to 4) and transformers sets γ 12 back."""
    from specviz.app.pair_menu import CODER_PAIR, OFFLINE_PAIR, pair_choices, refusal

    shown = {key: label for label, key in pair_choices()}  # "· not installed" on a pair whose parts are missing here
    small = page.context.browser.new_page(viewport={"width": 1366, "height": 768})
    try:
        small.goto(page.url)
        small.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
        open_settings(small)  # γ, the draft stop and the backend are in the folded settings
        for key in shown:
            width_left = small.evaluate(ROOM_LEFT, shown[key])
            assert width_left >= -1, (key, width_left)  # every label fits, a hub pair's "needs internet" too
            if refusal(key) is not None:
                continue  # offline, a hub pair (or a GGUF only the hub has) is refused on choosing (test_browser_class)
            choose_pair(small, key)
            small.wait_for_function(f"document.querySelector('#sv-pair input').value == {shown[key]!r}", polling=POLL_MS)
            scroll, client = small.evaluate("() => { const box = document.querySelector('#sv-pair input');"
                                            " return [box.scrollWidth, box.clientWidth]; }")
            assert scroll <= client, (key, scroll, client)
            gamma, stop = small.get_by_label("γ: tokens drafted per round").first, small.get_by_label(
                "Draft stop: end a draft after a token the draft gave less than this (0 = off)").first
            if key in (CODER_PAIR, OFFLINE_PAIR):
                expected = ("12", "0.6") if key == CODER_PAIR else ("4", "0")
                small.wait_for_function("([a, b]) => [...document.querySelectorAll('input[type=number]')]"
                                        ".some(i => i.value == a)", arg=list(expected), polling=POLL_MS)
                assert (gamma.input_value(), stop.input_value()) == expected, key
        choose_pair(small, CODER_PAIR)
        small.wait_for_function("document.querySelector('#sv-pair').innerText.includes("
                                "'Preset: γ 12 with a draft stop of 0.6')",  # the reason, under the menu
                                timeout=10_000, polling=POLL_MS)
        backend = small.locator("#sv-backend")
        if backend.is_visible():  # the llama.cpp bindings are installed: the pair's preset there is another
            adaptive = small.get_by_label("Adaptive γ", exact=False).first
            backend.get_by_label("llama.cpp").check()
            small.wait_for_function("document.querySelector('#sv-pair').innerText.includes("
                                    "'Preset on llama.cpp: adaptive γ up to 4 with a draft stop of 0.6')",
                                    timeout=10_000, polling=POLL_MS)
            # the transformers preset as it was left: llama.cpp's preset
            assert (gamma.input_value(), stop.input_value(), adaptive.is_checked()) == ("4", "0.6", True)
            backend.get_by_label("transformers").check()
            small.wait_for_function("document.querySelector('#sv-pair').innerText.includes('Preset: γ 12')",
                                    timeout=10_000, polling=POLL_MS)
            assert (gamma.input_value(), adaptive.is_checked()) == ("12", False)
            gamma.fill("7")  # a γ the user set stays when the backend changes
            gamma.press("Enter")
            backend.get_by_label("llama.cpp").check()
            small.wait_for_function("document.querySelector('#sv-pair').innerText.includes('Preset on llama.cpp')",
                                    timeout=10_000, polling=POLL_MS)
            small.wait_for_timeout(500)
            assert (gamma.input_value(), adaptive.is_checked()) == ("7", False)
    finally:
        small.close()


def test_a_refused_run_says_why_in_a_toast_and_leaves_the_page_as_it_was(page):
    """Bad input: one sentence in a toast, and nothing else changes: no red "Error" marks on the rows, text or
    status, and the previous run stays on the page."""
    run_with_the_draft_model(page, "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy")
    rows, stats = row_count(page), page.locator("#sv-stats").inner_text()
    choose_pair(page, "Custom")
    page.get_by_label("Target id or folder").fill("/etc")
    page.get_by_label("Draft id or folder").fill("/etc")
    page.get_by_role("button", name="Run", exact=True).click()
    try:  # the refusal's sentence stays on the status line once its toast has faded
        page.wait_for_function("document.querySelector('#sv-status').innerText.includes("
                               "'is neither a hub id nor a folder inside the models directory')", timeout=30_000, polling=POLL_MS)
    except Exception as error:
        raise AssertionError(f"status: {page.locator('#sv-status').inner_text()!r}") from error
    page.wait_for_timeout(1000)
    assert error_badges(page, toasts=False) == 0
    # the same run's stats (the stats box also holds Gradio's hidden status tracker, whose text innerText reads)
    assert row_count(page) == rows and page.locator("#sv-stats").inner_text().replace("Error", "").strip() == stats
    choose_pair(page, "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy")  # as the next test expects
