"""The first screens, in a real browser: what a projector (1366×768) and a phone (390×844) show before any
model loads (Run, Stop and the status line in view on both), after Run, and in the guided lesson; and, after that
default Run, every tab's main button with its defaults. They open pages of their own (the shared `page` fixture starts
from a cleared page): the first visitor's page then walks the lesson, and the page of the default Run the tabs.
Screenshots go to SPECVIZ_SCREENSHOT_DIR (docs/screenshots) when set."""

import os
import re
from pathlib import Path

import pytest

from specviz.app.tabs.groups import LIVE_TAB, TAB_GROUPS
from specviz.app.tabs.runs_and_files import FIRST_SCREEN
from specviz.labs import lesson
from specviz.trace import CORRECTED, REJECTED
from specviz.views import gallery
from tests.browser import (
    FIGURES_SHOWN,
    FRAME_COUNTER,
    POLL_MS,
    error_badges,
    open_live,
    open_tab,
    plotted_rounds,
    qualified,
    wait_for_done,
    wait_until_settled,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser")]
PROJECTOR, PHONE = {"width": 1366, "height": 768}, {"width": 390, "height": 844}


def _open(page, app_url, viewport, mobile=False):
    context = page.context.browser.new_context(viewport=viewport, is_mobile=mobile, has_touch=mobile)
    context.add_init_script(FRAME_COUNTER)
    fresh = context.new_page()
    fresh.goto(app_url)
    fresh.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
    return context, fresh


def _comes_to_rest(page, within_s: int = 10) -> bool:
    """Whether the page, its animations done, stops asking for frames within `within_s` seconds: a second with at most
    one frame. (Gradio 6.31's orphaned loading timer asked for 60 a second for good; assets/orphan-timer.js.)"""
    for _ in range(within_s):
        before = page.evaluate("window.__frames")
        page.wait_for_timeout(1_000)
        if page.evaluate("window.__frames") - before <= 1:
            return True
    return False


def _shot(page, tmp_path, name: str, full_page: bool = False) -> None:
    wait_until_settled(page)
    page.screenshot(path=str(Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR", tmp_path)) / name), full_page=full_page)


def _on_screen(page, locator, height: int) -> dict:
    """The element's box, checked to lie whole within the first screen: its place in the page, not in a viewport
    that a focus change may have scrolled (once by a third of a pixel, which put the Run button at y = -0.34)."""
    box = locator.bounding_box()
    assert box is not None, locator
    top = box["y"] + page.evaluate("window.scrollY")
    assert round(top) >= 0 and round(top + box["height"]) <= height, (box, top)
    return box


@pytest.fixture(scope="module")
def first_visit(page, app_url):
    """A projector's page opened afresh, where nothing was pressed: the first visitor's test reads it, then the
    lesson walks its steps on it (a page load is the browser tests' largest cost: docs/results.md)."""
    context, fresh = _open(page, app_url, PROJECTOR)
    yield fresh
    context.close()


def _buttons_and_status_on_screen(page, height: int) -> None:
    """Run, Stop and the line that says what a run is doing lie on the first screen, before any scrolling."""
    for element in (page.get_by_role("button", name="Run", exact=True), page.get_by_role("button", name="Stop", exact=True),
                    page.locator("#sv-status")):
        _on_screen(page, element, height)


def test_a_first_visitor_sees_a_real_recorded_run_with_rejections_before_any_model_loads(first_visit, tmp_path):
    entry = next(entry for entry in gallery.entries() if entry.name == FIRST_SCREEN)
    recorded = entry.trace()
    kinds = [token.kind for round_ in recorded.rounds for token in round_.tokens]
    fresh = first_visit
    fresh.wait_for_function("document.querySelector('#sv-status').innerText.includes('Recorded, not live')",
                            timeout=30_000, polling=POLL_MS)
    wait_until_settled(fresh)
    _buttons_and_status_on_screen(fresh, PROJECTOR["height"])
    rounds = len(recorded.rounds)
    assert fresh.locator("#sv-rows .sv-row").count() == rounds == plotted_rounds(fresh, expect=rounds)
    assert fresh.locator("#sv-rows .sv-row .sv-rejected").count() == kinds.count(REJECTED) >= 3
    assert fresh.locator("#sv-rows .sv-row .sv-corrected").count() == kinds.count(CORRECTED) >= 3
    assert fresh.locator("#sv-headline").inner_text().startswith("Recorded")  # labelled as recorded, twice
    assert fresh.locator("#sv-rows .sv-row .sv-rejected >> nth=0").bounding_box()["y"] < PROJECTOR["height"]
    assert error_badges(fresh) == 0
    _shot(fresh, tmp_path, "first-screen.png")
    assert _comes_to_rest(fresh)


@pytest.fixture(scope="module")
def after_default_run(page, app_url):
    """A projector's page opened afresh, where Run was pressed with every default: the first screen after it is
    checked, then every tab's main button is pressed on it (one page load and one default run for both)."""
    context, fresh = _open(page, app_url, PROJECTOR)
    fresh.get_by_role("button", name="Run", exact=True).click()
    wait_for_done(fresh, timeout_ms=300_000)  # a first Run also loads the pair and times its steps once
    wait_until_settled(fresh)
    yield fresh
    context.close()


def test_after_run_the_projectors_first_screen_holds_the_buttons_rows_speedup_and_alpha_plot(after_default_run, tmp_path):
    """The default live run at 1366×768: Run/Step/Stop, the rows (with at least three rejections and their
    corrections in 64 tokens), the measured speedup and the α-per-position plot all on the first screen."""
    fresh = after_default_run
    open_live(fresh)  # where the run shows, should another test have opened a lab tab first
    for name in ("Run", "Step", "Stop"):
        _on_screen(fresh, fresh.get_by_role("button", name=name, exact=True), PROJECTOR["height"])
    _on_screen(fresh, fresh.locator("#sv-rows .sv-row").first, PROJECTOR["height"])
    headline = _on_screen(fresh, fresh.locator("#sv-headline"), PROJECTOR["height"])
    assert "measured" in fresh.locator("#sv-headline").inner_text() and headline["height"] > 10
    plot = _on_screen(fresh, fresh.locator("#sv-alpha-plot .js-plotly-plot"), PROJECTOR["height"])
    assert plot["height"] > 200
    rejected, corrected = (fresh.locator(f"#sv-rows .sv-row .sv-{kind}").count() for kind in ("rejected", "corrected"))
    tokens = int(fresh.locator("#sv-status").inner_text().split(":")[1].split()[0])
    assert rejected >= 3 and corrected >= 1 and tokens == 64, (rejected, corrected, tokens)
    assert f"{rejected} rejection" in fresh.locator("#sv-headline").inner_text()  # the headline agrees with the rows
    assert error_badges(fresh) == 0
    _shot(fresh, tmp_path, "projector-after-run.png")
    _shot(fresh, tmp_path, "finished-run.png", full_page=True)


def _inside(inner: dict, outer: dict, slack: float = 1.0) -> bool:
    return (inner["x"] >= outer["x"] - slack and inner["y"] >= outer["y"] - slack
            and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
            and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + slack)


def _apart(a: dict, b: dict) -> bool:
    return (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"] or a["y"] + a["height"] <= b["y"]
            or b["y"] + b["height"] <= a["y"])


def test_on_a_phone_every_tab_shows_the_rows_follow_the_buttons_and_the_plots_are_whole(page, app_url, tmp_path):
    context, fresh = _open(page, app_url, PHONE, mobile=True)
    try:
        fresh.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length > 0", timeout=30_000, polling=POLL_MS)
        wait_until_settled(fresh)
        _buttons_and_status_on_screen(fresh, PHONE["height"])
        for tab in (LIVE_TAB, *TAB_GROUPS):  # the bar wraps: no tab folded into a "⋯" menu
            assert fresh.get_by_role("tab", name=tab, exact=True).is_visible(), tab
        assert fresh.locator(".overflow-menu").count() == 0 or not fresh.locator(".overflow-menu").first.is_visible()
        buttons = fresh.get_by_role("button", name="Run", exact=True).bounding_box()
        rows = fresh.locator("#sv-rows .sv-row").first.bounding_box()
        headline = fresh.locator("#sv-headline").bounding_box()
        # after the buttons come only the status line and the folded settings' one line, then the rows
        assert buttons["y"] < rows["y"] < buttons["y"] + 320 and rows["y"] < headline["y"], (buttons, rows, headline)
        for plot in fresh.locator(".js-plotly-plot").all():
            plot.scroll_into_view_if_needed()
            frame = plot.bounding_box()
            title, legend = plot.locator(".gtitle"), plot.locator(".legend")
            if title.count():
                assert _inside(title.first.bounding_box(), frame), "a plot title is clipped"
            if legend.count():
                box = legend.first.bounding_box()
                assert _inside(box, frame), "a legend runs out of its plot"
                for axis in plot.locator(".xtitle, .ytitle, .xtick, .ytick").all():
                    axis_box = axis.bounding_box()
                    assert axis_box is None or _apart(box, axis_box), "a legend lies over an axis"
        assert error_badges(fresh) == 0
        fresh.evaluate("window.scrollTo(0, 0)")
        _shot(fresh, tmp_path, "phone-view.png")
    finally:
        context.close()


def test_the_lesson_walks_its_steps_forward_and_back(first_visit, tmp_path):
    fresh = first_visit
    fresh.wait_for_function("document.querySelector('#sv-status').innerText.includes('Recorded')",
                            timeout=30_000, polling=POLL_MS)
    fresh.get_by_role("tab", name="Lesson", exact=True).click()
    heading = fresh.locator("#sv-lesson-heading")
    for number, make in enumerate(lesson.STEPS, start=1):
        title = make(None).title
        fresh.wait_for_function(f"document.querySelector('#sv-lesson-heading').innerText.includes("
                                f"'Step {number} of {len(lesson.STEPS)}')", timeout=30_000, polling=POLL_MS)
        wait_until_settled(fresh)
        assert title in heading.inner_text()
        shown = fresh.locator("#sv-lesson-plot .js-plotly-plot, #sv-lesson-rows .sv-row")
        assert shown.count() > 0 and shown.first.is_visible(), number  # each step has its one view
        assert len(fresh.locator("#sv-lesson-text").inner_text()) > 100 and error_badges(fresh) == 0
        if number in (2, 3):
            _shot(fresh, tmp_path, f"lesson-step-{number}.png")
        if number < len(lesson.STEPS):
            fresh.get_by_role("button", name="Next", exact=True).click()
    assert not fresh.get_by_role("button", name="Next", exact=True).is_enabled()
    fresh.get_by_role("button", name="Back", exact=True).click()
    fresh.wait_for_function("document.querySelector('#sv-lesson-heading').innerText.includes("
                            f"'Step {len(lesson.STEPS) - 1} of')", timeout=30_000, polling=POLL_MS)
    assert error_badges(fresh) == 0


ERRORS_SHOWN = ("[...document.querySelectorAll('.toast-body.error')].length"
                " + [...document.querySelectorAll('*')].filter(e => e.childElementCount == 0 && e.offsetParent !== null"
                " && e.innerText && e.innerText.trim() == 'Error').length")  # Gradio's red toasts and "Error" badges
DEFAULT_BUTTONS = [  # tab, its main buttons (pressed in order, with the tab's defaults), what each tab then shows
    ("Theory", [], "#sv-oracle-gamma", "Oracle γ"),
    ("Sampling lab", ["Draw one speculative sample", "Sample N"], "[role=tabpanel]:visible", "follows p"),
    ("Verification rules", ["Compare the rules at this position"], "#sv-rules-table", "follows p"),
    ("Verification rules", ["Compare over the whole run"], "#sv-rules-table", "The live run's α"),
    ("Round anatomy", ["Draw the live run"], "#sv-anatomy-summary", "round"),
    ("When it pays", [], "#sv-pays-verdicts", "this run"),  # the live run joins the recorded regimes
    ("You are the drafter", ["Start"], "#sv-you-score", "Your acceptance rate will appear here"),
    ("Simulated models", ["Run on the simulated models"], "[role=tabpanel]:visible", "Simulated speedup"),
    ("Memory bandwidth", ["Measure this machine (the offline target, k = 1..32 tokens)"], "[role=tabpanel]:visible",
     "bandwidth-bound"),
    # Losslessness's Compare (200 runs by default, 52 s) is pressed with 40 runs in test_browser_labs.py
    ("Losslessness", [], "[role=tabpanel]:visible", "against the target itself"),
    ("Glossary", [], "[role=tabpanel]:visible", "β (beta)"),
    ("Course exercises", [], "#sv-exercise-answer", "Worked answer"),
]


def test_after_a_fresh_run_every_tabs_main_button_works_with_its_defaults(after_default_run):
    """A new visitor's page: Run with every default, then each tab's main button as it opens. No red "Error" toast
    or badge anywhere, and each tab shows its output (screenshots in SPECVIZ_SCREENSHOT_DIR, when set)."""
    page = after_default_run
    assert page.evaluate(ERRORS_SHOWN) == 0
    shots = os.environ.get("SPECVIZ_SCREENSHOT_DIR")
    for tab, buttons, where, expected in DEFAULT_BUTTONS:
        open_tab(page, tab)
        page.wait_for_timeout(300)  # the tab's select event (the rules lab moves to the first tested draft)
        for button in buttons:
            page.get_by_role("button", name=button, exact=True).click()
            wait_until_settled(page)
        page.locator(where).last.get_by_text(expected, exact=False).first.wait_for(timeout=240_000)
        wait_until_settled(page)
        assert page.evaluate(ERRORS_SHOWN) == 0, f"an error shows after {tab}: {buttons}"
        if tab == "Memory bandwidth":  # its measurement is drawn (test_browser_labs.py leaves this tab to this one)
            assert page.locator("[role=tabpanel]:visible .js-plotly-plot").count() > 0
        if shots:
            page.screenshot(path=str(Path(shots) / f"defaults-{tab.lower().replace(' ', '-')}"
                                     f"{'-run' if 'whole run' in ' '.join(buttons) else ''}.png"), full_page=True)


SPEEDUP = re.compile(r"(\d+(?:\.\d+)?)×(?!\s*\d)")  # a figure followed by × (not a product: 100 × 70 ms)
ALPHA = re.compile(r"(?<![\w(])α\s*(?:=|:)?\s*\**\s*(\d?\.\d+)")  # a value given as α (not α_i, not "α per")


def _run_figures(page) -> dict:
    """The run's measured speedup, its interval, its one prediction and its α, as its stats panel gives them."""
    stats = page.locator("#sv-stats").inner_text()
    measured = re.search(r"measured speedup\s+([\d.]+)×\s+\(([\d.]+)–([\d.]+)\)", stats)
    predicted = re.search(r"predicted speedup\s+([\d.]+)×", stats)
    alpha = re.search(r"α = ([\d.]+)", stats)
    assert measured and predicted and alpha, stats[:400]
    return {"speedups": [float(value) for value in (*measured.groups(), predicted.group(1))], "alpha": float(alpha.group(1))}


def _tabs_and_lesson_steps(page):
    """Open the live tab, every lab and every lesson step in turn, yielding each one's name once it has settled."""
    open_live(page)
    yield LIVE_TAB
    for group, labs in TAB_GROUPS.items():
        for tab in labs or [group]:
            open_tab(page, tab)
            page.wait_for_timeout(300)
            wait_until_settled(page)
            yield tab
            if tab == "Lesson":
                for step in range(2, len(lesson.STEPS) + 1):
                    page.locator("#sv-lesson-next").click()
                    wait_until_settled(page)
                    yield f"Lesson step {step}"


def test_every_speedup_and_alpha_a_run_shows_is_its_own_or_says_what_if_or_recorded(after_default_run):
    """After the default run, every figure followed by × on every tab (and every lesson step) is the run's measured
    speedup, an end of its interval, its one prediction or 1×, or stands in words that say it is a what-if, recorded
    or simulated; and every value given as α is the run's one α, or is so qualified."""
    page = after_default_run
    run = _run_figures(page)
    wrong, seen = [], 0
    for tab in _tabs_and_lesson_steps(page):
        for figure in page.evaluate(FIGURES_SHOWN):
            for match in SPEEDUP.finditer(figure["text"]):
                seen += 1
                value = float(match.group(1))
                if not qualified(figure) and not any(abs(value - own) < 0.006 for own in (*run["speedups"], 1.0)):
                    wrong.append((tab, match.group(0), figure["around"][:120], figure["label"][:60]))
            for match in ALPHA.finditer(figure["text"]):
                value = float(match.group(1))
                if not qualified(figure) and abs(value - run["alpha"]) > 0.0051:
                    wrong.append((tab, match.group(0), figure["around"][:120], figure["label"][:60]))
    assert seen >= 5 and not wrong, wrong


def _race_finish_ms(page) -> dict:
    """Press Race again and time, in the page, when each lane's finish line and the result appear."""
    return page.evaluate("""() => new Promise(done => {
        const race = document.querySelector('#sv-race'), flip = race.querySelector('.sv-race-flip');
        const lanes = [...race.querySelectorAll('.sv-race-finish')], seen = {}, start = performance.now();
        flip.click();
        const look = () => {
            lanes.forEach((lane, index) => { if (!(index in seen) && getComputedStyle(lane).opacity === '1')
                seen[index] = performance.now() - start; });
            if (Object.keys(seen).length === lanes.length || performance.now() - start > 30000) done(seen);
            else setTimeout(look, 10);
        };
        setTimeout(look, 30);
    })""")


def test_the_race_finishes_in_the_ratio_of_the_two_runs_times_on_a_projector_and_a_phone(after_default_run, page,
                                                                                          app_url, tmp_path):
    """The default run's race: the plain lane's text finishes after the speculative one's in the ratio of their
    measured times (within 5%), its last line is the measured speedup, and on a phone the lanes stack in its width."""
    fresh = after_default_run
    open_live(fresh)
    race = fresh.locator("#sv-race")
    race.scroll_into_view_if_needed()
    ends = [int(re.search(r"--sv-race-end:(\d+)", style).group(1))
            for style in race.locator(".sv-race-clock").evaluate_all("clocks => clocks.map(c => c.getAttribute('style'))")]
    finish = _race_finish_ms(fresh)
    assert len(finish) == 2, finish
    assert finish["1"] / finish["0"] == pytest.approx(ends[1] / ends[0], rel=0.05), (finish, ends)
    run = _run_figures(fresh)
    assert f"{run['speedups'][0]:.2f}× ({run['speedups'][1]:.2f}–{run['speedups'][2]:.2f})" in race.inner_text()
    _shot(fresh, tmp_path, "race-projector.png")
    context, phone = _open(page, app_url, PHONE, mobile=True)
    try:
        phone.get_by_role("button", name="Run", exact=True).tap()
        wait_for_done(phone, timeout_ms=300_000)
        lanes = phone.locator("#sv-race .sv-race-lane")
        lanes.first.scroll_into_view_if_needed()
        first, second = lanes.nth(0).bounding_box(), lanes.nth(1).bounding_box()
        assert second["y"] >= first["y"] + first["height"] - 1  # stacked, the plain lane under the speculative one
        assert first["x"] >= 0 and first["x"] + first["width"] <= PHONE["width"]
        phone.wait_for_timeout(min(max(ends), 12_000) + 500)  # the race played to its end (12 s at most: race.LONGEST_S)
        _shot(phone, tmp_path, "race-phone.png")
    finally:
        context.close()
