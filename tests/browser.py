"""Driving the launched app in a real browser (Debian's Chromium through Playwright), shared by the browser tests.

The `page` fixture (conftest.py) opens the app; these helpers do what a person does on it and check the screenshots."""

import os
import shutil
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# How often a wait_for_function checks the page, in ms. Playwright's default checks at every animation frame, and so
# keeps Chromium drawing 60 frames a second for as long as a run is waited for (0.2-0.3 of a core): a tenth of a
# second is as prompt for a person and draws a sixth as often.
POLL_MS = 100
# Counts the animation frames a page asks for (window.__frames), added before the page's own scripts run
FRAME_COUNTER = """window.__frames = 0; const request = window.requestAnimationFrame.bind(window);
window.requestAnimationFrame = (callback) => { window.__frames += 1; return request(callback); };"""
ACCEPTED_CHIP = (217, 242, 225)  # .sv-accepted's background in assets/specviz.css
PLOT_GREEN = (46, 158, 79)  # figures.GREEN: the bars of the α-per-position and tokens-per-round plots


def open_tab(page, name: str) -> None:
    """Click a tab by its name: a group of the top bar ("Why it is fast"), or a lab inside one ("Theory"), whose
    group is opened first (lab_tabs.TAB_GROUPS). The bars wrap: every tab shows, none sits in a "⋯" menu."""
    from specviz.app.tabs.groups import TAB_GROUPS

    group = next((group for group, labs in TAB_GROUPS.items() if name in labs), None)
    if group is not None:
        page.get_by_role("tab", name=group, exact=True).click()
    page.get_by_role("tab", name=name, exact=True).click()


def open_settings(page) -> None:
    """Unfold the live tab's settings (drafter, γ, temperature, tokens, seed, tree), folded when the page opens."""
    field = page.get_by_label("Max new tokens").first
    if not field.is_visible():
        page.locator("#sv-settings").get_by_text("Settings:", exact=False).first.click()
        field.wait_for(state="visible", timeout=10_000)


def open_live(page) -> None:
    from specviz.app.tabs.groups import LIVE_TAB

    page.get_by_role("tab", name=LIVE_TAB, exact=True).click()


def open_gallery_entry(page, name: str) -> None:
    """Open a recorded run from the Runs & files tab; the page then switches to the live tab, where it shows."""
    open_tab(page, "Runs & files")
    page.locator(f"#sv-gallery-{name}").click()
    page.locator("#sv-rows").wait_for(state="visible", timeout=30_000)


def choose_pair(page, name: str) -> None:
    """Pick a pair from the menu by its PAIRS key (the menu shows pair_choices' short label)."""
    from specviz.app.pair_menu import pair_choices

    shown = {key: label for label, key in pair_choices()}
    page.get_by_label("Model pair (target ← draft)").click()
    page.get_by_role("option", name=shown.get(name, name)).click()


def error_badges(page, toasts: bool = True) -> int:
    """Gradio's red "Error" marks on components (a failed or cancelled event), and error toasts unless toasts=False,
    as far as they show (a hidden status tracker keeps its marks in the page, out of sight)."""
    return page.evaluate("""toasts => [...document.querySelectorAll('span, div, p')]
        .filter(e => e.childElementCount == 0 && e.textContent.trim() == 'Error')
        .filter(e => e.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}))
        .filter(e => toasts || !e.closest('[class*=toast]')).length""", toasts)


def plotted_rounds(page, expect: int | None = None, timeout_ms: int = 20_000) -> int | None:
    """The round count the tokens-per-round plot's title gives ("Tokens per round (13 rounds)"); None if no run.
    With `expect`, first wait (up to timeout_ms) for the title to say that many: plotly draws after the update
    lands, later on a busy machine. The count read is returned either way, for the caller to assert."""
    import re

    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    if expect is not None:
        try:
            page.wait_for_function("n => [...document.querySelectorAll('.js-plotly-plot .gtitle')].some("
                                   "e => e.textContent.includes(`(${n} round`))", arg=expect, timeout=timeout_ms, polling=POLL_MS)
        except PlaywrightTimeout:
            pass  # the caller's assertion says what the page shows instead
    titles = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot .gtitle')].map(e => e.textContent)")
    counts = [int(match.group(1)) for title in titles if (match := re.search(r"\((\d+) rounds?\)", title))]
    return counts[0] if counts else None


def set_long_run(page) -> None:
    """A prompt and 512 new tokens: a run that goes on long enough to be stopped."""
    page.locator("textarea").first.fill("Write a long story about a dragon who learns to paint.")
    open_settings(page)
    max_tokens = page.get_by_label("Max new tokens").first
    max_tokens.fill("512")
    max_tokens.press("Enter")


def run_with_the_draft_model(page, pair: str, max_new_tokens: int = 48) -> None:
    """Reset, pick the pair and the draft model alone, run "Explain what a rainbow is." (48 tokens at most: enough
    rounds for every kind of token, and half the time of 96 with its comparison) and wait for the end."""
    open_live(page)  # the lab tests leave another tab open
    page.get_by_role("button", name="Reset", exact=True).click()
    choose_pair(page, pair)
    page.locator("textarea").first.fill("Explain what a rainbow is.")
    open_settings(page)
    max_tokens = page.get_by_label("Max new tokens").first  # the Stop tests leave it at 512
    max_tokens.fill(str(max_new_tokens))
    max_tokens.press("Enter")
    page.get_by_label("draft model", exact=True).check()
    page.get_by_role("button", name="Run", exact=True).click()
    wait_for_done(page, timeout_ms=120_000)  # the run and its comparison with plain decoding


def wait_for_done(page, timeout_ms: int = 240_000) -> None:
    """Wait for the status line's "Done" (a run to its end, its comparison with plain decoding included): the stats
    panel already says "stopped by" for the recorded run a fresh page opens on."""
    page.wait_for_function("document.querySelector('#sv-status').innerText.startsWith('Done')",
                           timeout=timeout_ms, polling=POLL_MS)


def words_broken(page, selector: str) -> list[str]:
    """The words (runs of letters and digits) inside `selector` that the page splits across two lines: a term broken
    mid-word ("iteratio n"). A break at a space, a hyphen or a slash is a line break, not this."""
    return page.evaluate("""selector => { const broken = [];
        for (const root of document.querySelectorAll(selector)) {
            const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
            while (walker.nextNode()) {
                const node = walker.currentNode, words = /[\\p{L}\\p{N}]+/gu;
                let match;
                while ((match = words.exec(node.textContent))) {
                    const range = document.createRange();
                    range.setStart(node, match.index);
                    range.setEnd(node, match.index + match[0].length);
                    const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
                    if (lines.size > 1) broken.push(match[0]);
                }
            }
        }
        return broken; }""", selector)


def row_count(page) -> int:
    return page.locator("#sv-rows .sv-row").count()


def wait_until_settled(page, timeout_ms: int = 240_000) -> None:
    """Gradio marks a component .generating or .pending (an orange frame, faded) while an update is on its way. A lab
    button's work takes up to about 135 s on a fast 2-core machine and more on a slower one (an AVX2-only VM timed out
    at 60 s), so the wait is as long as the lab tests' other waits."""
    page.wait_for_function("document.querySelectorAll('.generating, .pending').length == 0", timeout=timeout_ms, polling=POLL_MS)
    page.wait_for_timeout(500)  # plotly redraws after the update lands


def screenshot_tab(page, tmp_path: Path, name: str) -> None:
    """Once the page has settled, a full-page screenshot into SPECVIZ_SCREENSHOT_DIR (else the test's tmp_path)."""
    wait_until_settled(page)
    page.screenshot(path=str(Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR", tmp_path)) / name), full_page=True)


def screenshot_showing_the_run(page, path: Path) -> None:
    """Screenshot the whole page and check the PNG shows this run: the page's full size, the accepted tokens' green
    chips (at least half their area on the page) and the plots' green bars (an empty plot has none)."""
    from PIL import Image  # a dependency of gradio

    wait_until_settled(page)
    page.screenshot(path=str(path), full_page=True)
    with Image.open(path) as image:
        size, pixels = image.size, {colour: count for count, colour in image.convert("RGB").getcolors(1 << 24)}
    width, height = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
    assert size[0] == width and abs(size[1] - height) <= 2, (size, width, height)
    boxes = [chip.bounding_box() for chip in page.locator("#sv-rows .sv-row .sv-accepted").all()]
    chip_area = sum(box["width"] * box["height"] for box in boxes)
    assert pixels.get(ACCEPTED_CHIP, 0) >= 0.5 * chip_area > 0, (pixels.get(ACCEPTED_CHIP), chip_area)
    assert pixels.get(PLOT_GREEN, 0) > 10_000, pixels.get(PLOT_GREEN)


# Every figure followed by "×", and every value given as α, that the visible tab panels show, each with the words
# around it: its paragraph, list item or table row, or for a plot its title and legend, and the label of the
# component it sits in. The checks read those words for "what-if", "recorded" or "simulated".
FIGURES_SHOWN = r"""() => {
    const found = [], visible = e => e.checkVisibility({checkOpacity: true, checkVisibilityCSS: true});
    const label = e => { const block = e.closest('.block'); if (!block) return '';
        const own = block.querySelector('[data-testid=block-label], label, .label-wrap'); return own ? own.innerText : ''; };
    for (const panel of document.querySelectorAll('[role=tabpanel]')) {
        if (!visible(panel)) continue;
        const walker = document.createTreeWalker(panel, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            const node = walker.currentNode, text = node.textContent, parent = node.parentElement;
            if (!parent || !visible(parent) || !/[×α]/.test(text)) continue;
            const plot = parent.closest('.js-plotly-plot');
            const row = parent.closest('tr'), table = row && row.closest('table');  // a row: with its table's caption
            const before = table ? [...(table.closest('.prose, .md') || document).querySelectorAll('p')]
                .filter(p => p.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING) : [];
            const caption = before.length ? before[before.length - 1].innerText : '';
            const around = plot ? [...plot.querySelectorAll('.gtitle, .legendtext')].map(t => t.textContent).join(' | ')
                : (parent.closest('p, li, tr, .sv-race-result, .sv-race-head, h1, h2, h3, h4') || parent).innerText
                  + ' ' + caption;
            found.push({text: text, around: around, label: label(parent)});
        }
    }
    return found; }"""
QUALIFIERS = ("what-if", "recorded", "simulated")  # words that say a figure is not this run's


def qualified(figure: dict) -> bool:
    """Whether the words around a figure, or its component's label, say it is a what-if, recorded or simulated."""
    words = (figure["around"] + " " + figure["label"]).lower()
    return any(word in words for word in QUALIFIERS)
