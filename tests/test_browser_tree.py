"""A real browser on the launched app: token trees on the live tab, as a person would use them."""

import os
import re
from pathlib import Path

import pytest

from tests.browser import POLL_MS, choose_pair, error_badges, open_live, plotted_rounds, row_count, wait_until_settled

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser")]

OWN_COPY = "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy"  # its draft is a model: it can grow trees
FINISHED = ("/stopped by (eos|max_new_tokens)/.test(document.querySelector('#sv-stats').innerText)"
            " && document.querySelector('#sv-status').innerText.startsWith('Done')")


def _settings(page, pair: str, temperature: str, max_new_tokens: str, tree_budget: str = "0") -> None:
    open_live(page)
    page.get_by_role("button", name="Reset", exact=True).click()
    choose_pair(page, pair)
    page.locator("textarea").first.fill("Write a Python function that checks whether a number is prime.")
    for label, value in (("Max new tokens", max_new_tokens), ("Temperature (0 = greedy)", temperature),
                         ("Tree budget", tree_budget)):
        box = page.get_by_label(label).first
        box.fill(value)
        box.press("Enter")


def _rounds_said(page) -> tuple[int, int]:
    """The rounds the status line and the stats' tree line report ("Done: 24 tokens in 7 rounds", "(40 nodes /
    7 rounds")."""
    status, stats = page.locator("#sv-status").inner_text(), page.locator("#sv-stats").inner_text()
    return (int(re.search(r"in (\d+) rounds?", status).group(1)),
            int(re.search(r"\d+ nodes / (\d+) rounds", stats).group(1)))


def test_a_tree_run_draws_trees_with_plots_and_stats_of_the_same_rounds(page, tmp_path):
    """The 4-bit pair at T = 1 with Token tree ticked: tree rows (a column per depth, other siblings hanging under
    it), the tree hint, the acceptance-by-depth-and-rank plot, the stats' tree line; rounds agree everywhere."""
    # 8 nodes: with 0, a machine whose verify cost grows from γ + 1 tokens on affords only the chain's 4
    _settings(page, OWN_COPY, "1", "24", tree_budget="8")
    page.locator("#sv-tree input").check()
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function(FINISHED, timeout=120_000, polling=POLL_MS)
    wait_until_settled(page)
    rows = row_count(page)
    assert rows >= 2 and error_badges(page) == 0
    assert page.locator("#sv-rows .sv-tree-hint").count() == 1
    tree_rows = page.locator("#sv-rows .sv-row:has(.sv-tree-label)").count()
    assert tree_rows >= 1 and page.locator("#sv-rows .sv-row .sv-depth").count() >= tree_rows
    assert page.locator("#sv-rows .sv-depth .sv-branches .sv-branch .sv-tok").count() >= tree_rows  # siblings hang
    assert plotted_rounds(page, expect=rows) == rows and _rounds_said(page) == (rows, rows)
    stats = page.locator("#sv-stats").inner_text()
    assert "α (tree) = " in stats and re.search(r"tree: [0-9.]+ draft nodes per round \(.*budget 8.*acceptance by depth",
                                                  stats)
    titles = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot .gtitle')].map(e => e.textContent)")
    assert any(title.startswith("Acceptance by depth and by sibling rank") for title in titles), titles
    # each tree row's label counts the nodes the row draws: the path, and every sibling and "+n" under it
    for row in page.locator("#sv-rows .sv-row:has(.sv-tree-label)").all():
        path, nodes = map(int, re.search(r"path (\d+) of (\d+) nodes", row.locator(".sv-tree-label").inner_text()).groups())
        drawn = row.locator(".sv-depth > .sv-accepted").count() + row.locator(".sv-branch > .sv-tok:first-child").count()
        hidden = sum(int(text.strip("+")) for text in row.locator(".sv-hidden-count").all_inner_texts())
        assert row.locator(".sv-depth > .sv-accepted").count() == path and drawn + hidden == nodes, (path, nodes)
    page.screenshot(path=str(Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR", tmp_path)) / "tree-run.png"), full_page=True)


def test_a_tree_with_prompt_lookup_is_refused_and_the_rows_stay(page):
    """Prompt lookup drafts one continuation: Run with Token tree ticked says so in a toast and on the status line,
    and the previous run's rows, plots and stats stay, with no red "Error" marks; unticked, the same settings run."""
    _settings(page, OWN_COPY, "0", "12")
    page.get_by_label("prompt lookup (n-gram)").check()
    page.locator("#sv-tree input").uncheck()
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function(FINISHED, timeout=120_000, polling=POLL_MS)
    wait_until_settled(page)
    rows, stats = row_count(page), page.locator("#sv-stats").inner_text()
    page.locator("#sv-tree input").check()
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("copies one continuation: a token tree needs a draft model", exact=False).first.wait_for(
        timeout=30_000)
    page.wait_for_timeout(1000)
    assert error_badges(page, toasts=False) == 0 and row_count(page) == rows and plotted_rounds(page, expect=rows) == rows
    # the same run's stats (the stats box also holds Gradio's hidden status tracker, whose text innerText reads)
    assert page.locator("#sv-stats").inner_text().replace("Error", "").strip() == stats.strip()
    status = page.locator("#sv-status").inner_text().replace("Error", "").strip()  # the refusal stays readable there
    assert status.startswith("Not run:") and "a token tree needs a draft model" in status
    page.locator("#sv-tree input").uncheck()  # the page still works: one Step decodes a round of a new run
    page.get_by_role("button", name="Step", exact=True).click()
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length == 1", timeout=60_000, polling=POLL_MS)
    page.get_by_label("lookup, else draft model").check()  # as the next module expects the pair's default
