"""A real browser on the launched app: Debian's Chromium driven by Playwright, as a person would use it."""

import os
import re
import shutil
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ACCEPTED_CHIP = (217, 242, 225)  # .sv-accepted's background in assets/specviz.css
PLOT_GREEN = (46, 158, 79)  # figures.GREEN: the bars of the α-per-position and tokens-per-round plots


@pytest.fixture(scope="module")
def page(app_url):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: install Debian's package 'chromium' (.ci/run does)")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="the Python package 'playwright' is not installed")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1700})
        page.goto(app_url)
        page.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
        yield page
        browser.close()


def _choose_pair(page, name: str) -> None:
    page.get_by_label("Model pair (target ← draft)").click()
    page.get_by_role("option", name=name).click()


def _run_with_the_draft_model(page, pair: str) -> None:
    """Reset, pick the pair and the draft model alone, run "Explain what a rainbow is." (96 tokens at most) and
    wait for the end."""
    page.get_by_role("tab", name="Live decoding", exact=True).click()  # the lab tests leave another tab open
    page.get_by_role("button", name="Reset", exact=True).click()
    _choose_pair(page, pair)
    page.locator("textarea").first.fill("Explain what a rainbow is.")
    max_tokens = page.get_by_label("Max new tokens").first  # the Stop tests leave it at 512
    max_tokens.fill("96")
    max_tokens.press("Enter")
    page.get_by_label("draft model", exact=True).check()
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function("document.querySelector('#sv-stats').innerText.includes('stopped by eos')"
                           " || document.querySelector('#sv-stats').innerText.includes('stopped by max_new_tokens')",
                           timeout=120_000)


def _row_count(page) -> int:
    return page.locator("#sv-rows .sv-row").count()


def _wait_until_settled(page) -> None:
    """Gradio marks a component .generating or .pending (an orange frame, faded) while an update is on its way."""
    page.wait_for_function("document.querySelectorAll('.generating, .pending').length == 0", timeout=60_000)
    page.wait_for_timeout(500)  # plotly redraws after the update lands


def _screenshot_tab(page, tmp_path: Path, name: str) -> None:
    """Once the page has settled, a full-page screenshot into SPECVIZ_SCREENSHOT_DIR (else the test's tmp_path)."""
    _wait_until_settled(page)
    page.screenshot(path=str(Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR", tmp_path)) / name), full_page=True)


def _screenshot_showing_the_run(page, path: Path) -> None:
    """Screenshot the whole page and check the PNG shows this run: the page's full size, the accepted tokens' green
    chips (at least half their area on the page) and the plots' green bars (an empty plot has none)."""
    from PIL import Image  # a dependency of gradio

    _wait_until_settled(page)
    page.screenshot(path=str(path), full_page=True)
    with Image.open(path) as image:
        size, pixels = image.size, {colour: count for count, colour in image.convert("RGB").getcolors(1 << 24)}
    width, height = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
    assert size[0] == width and abs(size[1] - height) <= 2, (size, width, height)
    boxes = [chip.bounding_box() for chip in page.locator("#sv-rows .sv-row .sv-accepted").all()]
    chip_area = sum(box["width"] * box["height"] for box in boxes)
    assert pixels.get(ACCEPTED_CHIP, 0) >= 0.5 * chip_area > 0, (pixels.get(ACCEPTED_CHIP), chip_area)
    assert pixels.get(PLOT_GREEN, 0) > 10_000, pixels.get(PLOT_GREEN)


def test_example_then_run_shows_coloured_rows_and_four_plots(page, tmp_path):
    page.get_by_text("Repeat this sentence three times", exact=False).first.click()
    page.wait_for_function("document.querySelector('textarea').value.startsWith('Repeat this sentence')", timeout=10_000)
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_selector("#sv-rows .sv-row", timeout=120_000)
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 4", timeout=120_000)
    page.wait_for_function("document.querySelector('#sv-stats').innerText.includes('stopped by eos')"
                           " || document.querySelector('#sv-stats').innerText.includes('stopped by max_new_tokens')",
                           timeout=120_000)
    for kind in ("accepted", "rejected"):
        assert page.locator(f"#sv-rows .sv-row .sv-{kind}").count() > 0, kind
    assert page.locator("#sv-rows .sv-corrected, #sv-rows .sv-bonus").count() > 0
    green = page.locator("#sv-rows .sv-row .sv-accepted").first.evaluate("e => getComputedStyle(e).backgroundColor")
    struck = page.locator("#sv-rows .sv-row .sv-rejected").first.evaluate("e => getComputedStyle(e).textDecorationLine")
    assert green == "rgb(217, 242, 225)" and "line-through" in struck
    assert page.locator(".js-plotly-plot").count() >= 4
    _screenshot_showing_the_run(page, Path(os.environ.get("SPECVIZ_SCREENSHOT", tmp_path / "specviz.png")))


def test_stop_and_reset_end_a_long_run_and_the_next_run_works(page):
    """Stop keeps the rows decoded so far; Reset during a run clears them for good (the run it cancels must not
    bring them back)."""
    page.get_by_role("button", name="Reset", exact=True).click()
    page.locator("textarea").first.fill("Write a long story about a dragon who learns to paint.")
    max_tokens = page.get_by_label("Max new tokens").first
    max_tokens.fill("512")
    max_tokens.press("Enter")
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length >= 2", timeout=120_000)
    page.get_by_role("button", name="Stop", exact=True).click()
    time.sleep(2)
    stopped_at = _row_count(page)
    time.sleep(3)
    assert _row_count(page) == stopped_at < 300  # nothing more streams in
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length >= 2", timeout=120_000)
    page.get_by_role("button", name="Reset", exact=True).click()
    time.sleep(3)
    assert _row_count(page) == 0
    page.get_by_role("button", name="Step", exact=True).click()  # the worker is free again
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length == 1", timeout=120_000)


@pytest.mark.parametrize("delay_ms", [50, 100, 1000])
def test_stop_right_after_run_leaves_the_server_idle(page, app_server, delay_ms):
    """Stop 0.05 s, 0.1 s or 1 s after Run: before the run starts, while it loads, or once it decodes."""
    import psutil  # a dependency of accelerate

    from tests.conftest import cpu_seconds

    server = psutil.Process(app_server[1].pid)
    page.get_by_role("button", name="Reset", exact=True).click()
    page.locator("textarea").first.fill("Write a long story about a dragon who learns to paint.")
    max_tokens = page.get_by_label("Max new tokens").first
    max_tokens.fill("512")
    max_tokens.press("Enter")
    page.evaluate("""delay => {  // in the page itself, so the time between the clicks is exact
        const button = name => [...document.querySelectorAll('button')].find(b => b.innerText.trim() === name);
        button('Run').click();
        return new Promise(done => setTimeout(() => { button('Stop').click(); done(); }, delay));
    }""", delay_ms)
    time.sleep(1.0)  # the forward in flight ends
    assert cpu_seconds(server, over=2.0) < 0.5  # the model thread is idle again (a busy one uses 2 to 4 s)
    page.get_by_role("button", name="Step", exact=True).click()  # and the next run starts at once
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length == 1", timeout=30_000)


LAB_TABS = [  # tab, button to press (or None), text that must then appear in the tab
    ("Theory", None, "E[tokens per iteration]"),
    ("Sampling lab", "Sample N", "p-value"),
    ("Simulated models", "Run on the simulated models", "Simulated speedup"),
    ("Memory bandwidth", "Measure this machine (the offline target, k = 1..32 tokens)", "bandwidth-bound"),
    ("Losslessness", "Compare distributions", "40 runs ·"),
    ("Glossary", None, "β (beta)"),
]


@pytest.mark.parametrize("tab,button,expected", LAB_TABS)
def test_every_lab_tab_works_in_the_browser(page, tab, button, expected):
    page.get_by_role("tab", name=tab, exact=True).click()
    panel = page.locator("[role=tabpanel]:visible").last
    if tab == "Losslessness":
        runs = page.get_by_label("Runs").first
        runs.fill("40")
        runs.press("Enter")
    if button:
        page.get_by_role("button", name=button, exact=True).click()
    panel.get_by_text(expected, exact=False).first.wait_for(timeout=180_000)
    if tab != "Glossary":
        page.wait_for_function("[...document.querySelectorAll('[role=tabpanel]')].some(p => p.offsetParent !== null"
                               " && p.querySelectorAll('.js-plotly-plot').length > 0)", timeout=120_000)
    if tab == "Simulated models":
        assert page.locator("#sv-sim-rows .sv-row").count() > 0
    shots = os.environ.get("SPECVIZ_SCREENSHOT_DIR")
    if shots:
        _wait_until_settled(page)
        page.screenshot(path=str(Path(shots) / f"lab-{tab.lower().replace(' ', '-')}.png"), full_page=True)


def test_the_offline_pair_runs_with_the_distilled_draft(page, tmp_path):
    _run_with_the_draft_model(page, "Offline: SmolLM2-135M-Instruct (embedded)")  # the app opens on the 4-bit pair
    assert "← distilled" in page.locator("#sv-stats").inner_text()
    assert page.locator("#sv-rows .sv-row .sv-accepted").count() > 0  # drafts from the distilled head were accepted
    _screenshot_showing_the_run(page, Path(os.environ.get("SPECVIZ_SCREENSHOT_DISTILLED", tmp_path / "distilled.png")))


def test_the_offline_pair_runs_with_its_own_4bit_copy(page, tmp_path):
    _run_with_the_draft_model(page, "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy")
    assert "← int4" in page.locator("#sv-stats").inner_text()
    assert page.locator("#sv-rows .sv-row .sv-accepted").count() > 3 * page.locator("#sv-rows .sv-row .sv-rejected").count()
    _screenshot_showing_the_run(page, Path(os.environ.get("SPECVIZ_SCREENSHOT_INT4", tmp_path / "int4.png")))


def test_the_verification_rules_lab_on_a_real_t1_run(page, tmp_path):
    """A T = 1 run drafted by the 4-bit copy, then the rule lab at round 2, position 1 (round 1 is the prompt's
    plain step): the exact rule follows p, and at least one engine shortcut does not (χ² fails)."""
    page.get_by_role("tab", name="Live decoding", exact=True).click()
    page.get_by_role("button", name="Reset", exact=True).click()
    _choose_pair(page, "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy")
    page.locator("textarea").first.fill("Write one sentence about the sea.")
    for label, value in (("Max new tokens", "24"), ("Temperature (0 = greedy)", "1")):
        field = page.get_by_label(label).first
        field.fill(value)
        field.press("Enter")
    page.get_by_label("draft model", exact=True).check()
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function("/stopped by (eos|max_new_tokens)/.test(document.querySelector('#sv-stats').innerText)",
                           timeout=120_000)
    page.get_by_role("tab", name="Verification rules", exact=True).click()
    panel = page.locator("[role=tabpanel]:visible").last
    round_box = panel.get_by_label("Round").first
    round_box.fill("2")
    round_box.press("Enter")
    page.get_by_role("button", name="Compare the rules at this position", exact=True).click()
    table = page.locator("#sv-rules-table")
    table.get_by_text("exact", exact=True).wait_for(timeout=120_000)
    rows = {row.locator("td").first.inner_text(): row.inner_text() for row in table.locator("tbody tr").all()}
    assert "follows p" in rows["exact"] and "does not" not in rows["exact"]
    assert any("does not follow p" in text for rule, text in rows.items() if rule != "exact"), rows
    page.wait_for_function("[...document.querySelectorAll('[role=tabpanel]')].some(p => p.offsetParent !== null"
                           " && p.querySelectorAll('.js-plotly-plot').length > 0)", timeout=60_000)
    _screenshot_tab(page, tmp_path, "lab-verification-rules.png")


def test_the_exported_page_opens_offline_with_the_same_rows_and_numbers(page, tmp_path):
    """Export the run, open the file in a page that may fetch nothing, and compare it with the app."""
    _run_with_the_draft_model(page, "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy")
    rows, stats = _row_count(page), page.locator("#sv-stats").inner_text()
    page.get_by_role("button", name="Export page (HTML): rows, plots and stats in one file that opens offline").click()
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
    offline.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4", timeout=60_000)
    assert offline.locator("#sv-rows .sv-row").count() == rows and fetched == []
    alpha = re.search(r"α = [0-9.]+", stats).group()
    assert alpha in offline.locator("#sv-stats").inner_text()
    shots = Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR", tmp_path))
    offline.screenshot(path=str(shots / "exported-page.png"), full_page=True)
    offline.close()


def test_round_anatomy_draws_the_live_run(page, tmp_path):
    """After a run compared with plain decoding: the timeline, the totals and the sentences that explain them."""
    page.get_by_role("tab", name="Live decoding", exact=True).click()
    compare = page.get_by_label("Compare with plain decoding (measures the speedup)")
    compare.check()
    _run_with_the_draft_model(page, "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy")
    compare.uncheck()
    page.get_by_role("tab", name="Round anatomy", exact=True).click()
    page.get_by_role("button", name="Draw the live run", exact=True).click()
    summary = page.locator("#sv-anatomy-summary")
    summary.get_by_text("with no overhead at all", exact=False).wait_for(timeout=60_000)
    text = summary.inner_text()
    assert "A plain step costs" in text and "plain steps" in text and "Speedup against the same tokens" in text
    page.wait_for_function("[...document.querySelectorAll('[role=tabpanel]')].some(p => p.offsetParent !== null"
                           " && p.querySelectorAll('.js-plotly-plot').length >= 2)", timeout=60_000)
    _screenshot_tab(page, tmp_path, "lab-round-anatomy.png")


def test_you_are_the_drafter(page, tmp_path):
    """Start, pick the target's favourite, then type a proposal: the real target verifies both."""
    page.get_by_role("tab", name="You are the drafter", exact=True).click()
    page.get_by_role("button", name="Start", exact=True).click()
    picker = page.locator("#sv-you-picker")
    picker.locator("input[type=radio]").first.wait_for(timeout=120_000)
    picker.locator("input[type=radio]").first.check()
    page.get_by_role("button", name="Propose", exact=True).click()
    score = page.locator("#sv-you-score")
    score.get_by_text("Your α =", exact=False).wait_for(timeout=60_000)
    page.get_by_label("…or type your own proposal (up to 8 tokens)").fill(" Paris, and it is")
    page.get_by_role("button", name="Propose", exact=True).click()
    page.wait_for_function("document.querySelectorAll('#sv-you-rows .sv-row').length == 2", timeout=60_000)
    text = score.inner_text()
    assert "the real draft's α =" in text and "Last proposal:" in text
    assert page.locator("#sv-you-rows .sv-accepted, #sv-you-rows .sv-rejected").count() >= 2
    _screenshot_tab(page, tmp_path, "lab-you-are-the-drafter.png")


def test_the_seeds_lessons_show_in_the_theory_and_bandwidth_tabs(page, tmp_path):
    """Figure 5's execution trace and the oracle-γ bound (Theory), the corrected A100-40GB hierarchy (Memory bandwidth)."""
    page.get_by_role("tab", name="Theory", exact=True).click()
    page.locator("#sv-execution-trace .js-plotly-plot").wait_for(timeout=60_000)
    oracle = page.locator("#sv-oracle-gamma")
    oracle.get_by_text("oracle", exact=False).first.wait_for(timeout=60_000)
    assert "1.57" in oracle.inner_text() or "1.58" in oracle.inner_text()  # the grid's largest gain, "up to 60%"
    page.locator("#sv-execution-trace").scroll_into_view_if_needed()
    _wait_until_settled(page)
    page.locator("#sv-execution-trace").screenshot(path=str(Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR", tmp_path))
                                                        / "execution-trace.png"))
    page.get_by_role("tab", name="Memory bandwidth", exact=True).click()
    page.locator("#sv-hierarchy .js-plotly-plot").wait_for(timeout=60_000)
    caption = page.locator("#sv-hierarchy-caption").inner_text()
    assert "1,555 GB/s" in caption and "14.1 ms" in caption
    _screenshot_tab(page, tmp_path, "lab-memory-hierarchy.png")
