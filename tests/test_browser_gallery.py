"""A real browser opens the gallery's recorded runs of the real Qwen2.5-Coder pair: one click, no model
loaded, and the page shows that run: its rows, its plots, its provenance, and for the draft of another tokenizer
the draft's own pieces over the target tokens they became."""

import pytest
from playwright.sync_api import expect

from specviz.trace import REJECTED
from specviz.views import gallery
from tests.browser import (
    POLL_MS,
    error_badges,
    open_gallery_entry,
    open_live,
    open_tab,
    plotted_rounds,
    row_count,
    screenshot_tab,
    wait_until_settled,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser")]

ENTRIES = {entry.name: entry for entry in gallery.entries()}


def _open(page, name: str):
    """Click the entry's button on the live tab; wait until the rows and the round plot show its rounds."""
    entry = ENTRIES[name]
    rounds = len(entry.trace().rounds)
    open_live(page)
    open_gallery_entry(page, name)
    page.wait_for_function(f"document.querySelectorAll('#sv-rows .sv-row').length == {rounds}", timeout=30_000, polling=POLL_MS)
    page.wait_for_function(f"[...document.querySelectorAll('.js-plotly-plot .gtitle')]"
                           f".some(e => e.textContent.includes('({rounds} rounds)'))", timeout=30_000, polling=POLL_MS)
    wait_until_settled(page)
    return entry, rounds


@pytest.mark.parametrize("name", ["3-coder-code-t1", "7-coder-smollm2-draft-t0"])
def test_a_recorded_real_run_opens_in_one_click_with_its_provenance(page, tmp_path, name):
    if name not in ENTRIES:
        pytest.fail(f"assets/gallery/{name}.json is missing: python -m scripts.gallery_runs {name}")
    entry, rounds = _open(page, name)
    assert row_count(page) == rounds and plotted_rounds(page, expect=rounds) == rounds  # the plots agree with the rows
    status = page.locator("#sv-status").inner_text()
    assert entry.title in status and "Recorded on" in status and "with no model" in status
    rejected = sum(token.kind == REJECTED for round_ in entry.trace().rounds for token in round_.tokens)
    assert page.locator("#sv-rows .sv-row .sv-rejected").count() == rejected > 0  # the real draft's real rejections
    assert entry.trace().text[:40].strip().split()[0] in page.locator("#sv-final").inner_text()
    if name.startswith("7-"):  # another tokenizer: aligned rows, the draft's own pieces above the target's tokens
        aligned = page.locator("#sv-rows .sv-aligned")
        assert aligned.count() > 0 and page.locator("#sv-rows .sv-align-own .sv-own").count() >= aligned.count()
        assert "across tokenizers" in page.locator("#sv-stats").inner_text()
    race = page.locator("#sv-race")  # every entry was compared with plain decoding: its race, from its own timings
    assert "The race" in race.inner_text() and race.locator(".sv-race-lane").count() == 2
    assert f"{entry.trace().baseline.wall_ms / 1e3:.1f} s" in race.locator(".sv-lane-plain").inner_text()
    assert error_badges(page) == 0
    screenshot_tab(page, tmp_path, f"gallery-{name}.png")
    # Round anatomy draws the opened run and repeats the live tab's speedup sentence (speedup.py) word for word
    live = next(line for line in page.locator("#sv-stats").inner_text().splitlines() if "speedup" in line)
    open_tab(page, "Round anatomy")
    page.get_by_role("button", name="Draw the live run", exact=True).click()
    # the page is shared by the module's tests: wait for this run's sentence, not an earlier run's summary
    expect(page.locator("#sv-anatomy-summary")).to_contain_text(live.strip(), timeout=60_000)
    assert "From predicted to measured" in page.locator("#sv-anatomy-summary").inner_text() and error_badges(page) == 0
