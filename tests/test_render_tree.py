"""render.py on token-tree rounds: one column per depth, the accepted path (then the correction or bonus) on top,
every other sibling hanging under its depth (rejected in red, never tried in grey) with the count of its untested
descendants; tooltips with the sibling's turn; escaping; chains exactly as before; the exported page."""

import html
import re
import xml.etree.ElementTree as ET

import pytest

from specviz.config import DecodeConfig
from specviz.core.verify_tree import path_to
from specviz.decoding import engine
from specviz.trace import ACCEPTED, BONUS, CORRECTED, REJECTED, Round, Token, Trace
from specviz.views import export, render, render_tree
from tests.fakes import fake_pipeline

HOSTILE = "<img src=x onerror=alert(1)>"


def _tree_trace(temperature: float) -> Trace:
    return engine.run_speculative(fake_pipeline(4), "ab", DecodeConfig(
        gamma=3, max_new_tokens=24, chat=False, temperature=temperature, seed=11, tree=True, tree_budget=9))


def _parse(fragment: str) -> ET.Element:
    """The rows are well-formed markup (html.escape writes only XML's entities and &#x27;)."""
    return ET.fromstring(f"<root>{fragment}</root>")


def _classes(element: ET.Element) -> set[str]:
    return set(element.get("class", "").split())


def _columns(row: ET.Element) -> list[ET.Element]:
    return [child for child in row if "sv-depth" in _classes(child)]


def _hand_round() -> Round:
    """Root children 0, 1, 2: 0 rejected (node 6 below it), 1 accepted, 2 never tried. Node 1's children 3 (node 5
    below it) and 4 both rejected, so a correction ends the round at depth 2."""
    parents = [-1, -1, -1, 1, 1, 3, 0]
    texts = [HOSTILE, " cat", '"q"&<b>', " sat", "\n", " on", "<script>x</script>"]
    tokens = [Token(10, HOSTILE, REJECTED, 1, 0.2, 0.5, 0.9, 0.4, 0.3, node=0, parent=-1),
              Token(11, " cat", ACCEPTED, 1, 0.6, 0.3, 0.1, 1.0, 0.3, node=1, parent=-1),
              Token(13, " sat", REJECTED, 2, 0.1, 0.4, 0.7, 0.25, 0.5, node=3, parent=1),
              Token(14, "\n", REJECTED, 2, 0.05, 0.2, 0.95, 0.125, 0.5, node=4, parent=1),
              Token(20, " mat", CORRECTED, 2, 0.5, 0.1, overlap=0.5, parent=1)]
    return Round(0, 7, 1, tokens, 1.0, 2.0, 3, [10, 11, 12, 13, 14, 15, 16], texts, draft_parents=parents)


def test_a_hand_built_tree_hangs_each_sibling_under_its_depth():
    row = _parse(render.round_html(_hand_round()))[0]
    assert row.get("class") == "sv-row"  # rows still count as '<div class="sv-row">'
    assert "".join(row[0].itertext()) == "1 · path 1 of 7 nodes"
    first, second = _columns(row)
    assert (first.get("data-depth"), second.get("data-depth")) == ("1", "2")
    assert _classes(first[0]) >= {"sv-accepted"} and first[0].get("data-node") == "1"  # the path on top
    assert _classes(second[0]) >= {"sv-corrected"}
    under_first = [list(branch) for branch in first.find("span[@class='sv-branches']")]
    assert [(_classes(chips[0]) & {"sv-rejected", "sv-untested"}, chips[0].get("data-node")) for chips in under_first] \
        == [({"sv-rejected"}, "0"), ({"sv-untested"}, "2")]  # sibling order: tried and rejected, then never tried
    assert [chips[1].text for chips in under_first if len(chips) > 1] == ["+1"]  # node 6 under node 0
    under_second = [list(branch) for branch in second.find("span[@class='sv-branches']")]
    assert [chips[0].get("data-node") for chips in under_second] == ["3", "4"]
    assert [len(chips) for chips in under_second] == [2, 1] and under_second[0][1].text == "+1"  # node 5 under 3


def test_tooltips_give_the_numbers_and_the_sibling_turn():
    round_ = _hand_round()
    page = render.round_html(round_)
    columns = render_tree.tree_columns(round_)
    turns = {column.token.node: column.turn for column in columns if column.token.node is not None}
    turns.update({branch.node: branch.turn for column in columns for branch in column.branches})
    titles = {token.node: render.token_tooltip(token, turns[token.node]) for token in round_.tokens if token.node is not None}
    assert all(html.escape(title, quote=True) in page for title in titles.values())  # the titles drawn
    titles[2] = render_tree.untested_tooltip(columns[0].branches[1], columns[0])
    assert html.escape(titles[2], quote=True) in page
    assert titles[0].splitlines() == [
        "rejected draft at depth 1 (node 0)",
        "its turn: sibling 1 of 3 at depth 1; P is the target p (no sibling before it)",
        f"token 10: {HOSTILE!r}", "p(x) = 0.2000", "q(x) = 0.5000", "r = 0.9000 ≥ min(1, P(x)/q(x)) = 0.4000",
        "β = Σ min(p, q) = 0.3000"]
    assert "its turn: sibling 2 of 3 at depth 1; P is the target after the residual of the siblings before it" \
        in titles[1] and "r = 0.1000 < min(1, P(x)/q(x)) = 1.0000" in titles[1]
    assert "sibling 2 of 2 at depth 2" in titles[4] and "r = 0.9500 ≥ min(1, P(x)/q(x)) = 0.1250" in titles[4]
    assert "never tested" in titles[2] and "sibling 3 of 3: sibling 2 was accepted first" in titles[2]
    correction = render.token_tooltip(round_.tokens[-1], columns[-1].turn)
    assert correction.startswith("correction from norm(max(0, P − q)) at depth 2\nafter all 2 siblings at depth 2")
    assert "q(x) = 0.1000" in correction
    chain_token = round_.tokens[0]
    assert render.token_tooltip(chain_token).splitlines()[0] == "rejected draft at position 1"  # chains: as before
    assert "min(1, p/q) = 0.4000" in render.token_tooltip(chain_token)


def test_every_string_of_a_tree_is_escaped():
    page = render.rows_html(Trace(config={"tree": True}, prompt="p", prompt_token_count=1, target_name="t",
                                  draft_name="d", device="cpu", dtype="float32", rounds=[_hand_round()]))
    assert "<img" not in page and "<script" not in page and "<b>" not in page
    assert "&lt;img" in page and "&lt;script&gt;x&lt;/script&gt;" in page  # node 6: only in its parent's "+1" title
    assert "&quot;q&quot;&amp;&lt;b&gt;" in page  # the untried sibling's own text
    _parse(page)  # and the markup stays well-formed


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_every_tested_node_stands_in_its_column_with_its_kind(temperature):
    trace = _tree_trace(temperature)
    trees = [round_ for round_ in trace.rounds if round_.is_tree]
    assert len(trees) >= 5 and any(round_.accepted >= 2 for round_ in trees)
    for round_ in trees:
        row = _parse(render.round_html(round_))[0]
        columns = {int(column.get("data-depth")): column for column in _columns(row)}
        for token in round_.tokens:
            column = columns[token.position]
            if token.node is None:  # the correction or bonus: on top of the last column
                assert token.position == round_.accepted + 1 and max(columns) == token.position
                assert _classes(column[0]) >= {"sv-tok", f"sv-{token.kind}"} and token.kind in (CORRECTED, BONUS)
                assert ("the accepted path ends at a leaf" in column[0].get("title")) == (token.kind == BONUS)
                continue
            (chip,) = [element for element in column.iter() if element.get("data-node") == str(token.node)]
            assert _classes(chip) >= {"sv-tok", f"sv-{token.kind}"}
            assert (chip is column[0]) == (token.kind == ACCEPTED)  # rejected ones hang in the branches below
            assert f"p(x) = {token.target_prob:.4f}" in chip.get("title")


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_untested_nodes_are_greyed_or_counted_exactly_once(temperature):
    for round_ in (round_ for round_ in _tree_trace(temperature).rounds if round_.is_tree):
        row = _parse(render.round_html(round_))[0]
        tested = {token.node for token in round_.tokens if token.node is not None}
        shown = {int(element.get("data-node")) for element in row.iter() if element.get("data-node")}
        greyed = {int(element.get("data-node")) for element in row.iter()
                  if "sv-untested" in _classes(element) and element.get("data-node")}
        assert greyed == shown - tested
        counted = 0
        for branch in row.iter("span"):
            if "sv-branch" in _classes(branch) and len(branch) == 2:
                node = int(branch[0].get("data-node"))
                below = [other for other in range(round_.drafted) if other != node
                         and node in path_to(round_.draft_parents, other)]
                assert branch[1].text == f"+{len(below)}" and "sv-untested" in _classes(branch[1])
                counted += len(below)
        assert len(greyed) + counted == round_.drafted - len(tested)  # every node: tested, greyed or counted


def test_chain_rounds_render_exactly_as_before():
    """A golden chain row, as render.py drew it before trees; a tree run's legend adds one hint line."""
    tokens = [Token(5, "a b", ACCEPTED, 1, 0.9, 0.8, 0.1, 1.0, 0.85, node=0),
              Token(6, "<x>", REJECTED, 2, 0.1, 0.6, 0.7, 0.1667, 0.4, node=1, parent=0),
              Token(7, "\n", CORRECTED, 2, 0.5, 0.1, overlap=0.4, parent=0)]
    chain = Round(2, 3, 1, tokens, 1.0, 2.0, 3, [5, 6, 8], ["a b", "<x>", "&"], draft_parents=[-1, 0, 1])
    assert not chain.is_tree
    drawn = render.round_html(chain)
    assert drawn.count('tabindex="0"') == 3  # each token opens its numbers on a tap (test_render.py), as before else
    assert re.sub(r' data-details="[^"]*" tabindex="0"', "", drawn) == (
        '<div class="sv-row"><span class="sv-label">3 · 1/3</span>'
        '<span class="sv-tok sv-accepted" title="accepted draft at position 1&#10;token 5: &#x27;a b&#x27;&#10;'
        'p(x) = 0.9000&#10;q(x) = 0.8000&#10;r = 0.1000 &lt; min(1, p/q) = 1.0000&#10;β = Σ min(p, q) = 0.8500" '
        'data-round="2" data-position="1">a<span class="sv-ws">·</span>b</span>'
        '<span class="sv-tok sv-rejected" title="rejected draft at position 2&#10;token 6: &#x27;&lt;x&gt;&#x27;&#10;'
        'p(x) = 0.1000&#10;q(x) = 0.6000&#10;r = 0.7000 ≥ min(1, p/q) = 0.1667&#10;β = Σ min(p, q) = 0.4000" '
        'data-round="2" data-position="2">&lt;x&gt;</span>'
        '<span class="sv-tok sv-corrected" title="correction from norm(max(0, p − q)) at position 2&#10;token 7: '
        '&#x27;\\n&#x27;&#10;p(x) = 0.5000&#10;q(x) = 0.1000&#10;β = Σ min(p, q) = 0.4000" data-round="2" '
        'data-position="2"><span class="sv-ws">↵</span></span>'
        '<span class="sv-tok sv-untested" title="drafted, never tested">&amp;</span></div>'.replace("&#10;", "\n"))
    chains = engine.run_speculative(fake_pipeline(4), "ab", DecodeConfig(gamma=3, max_new_tokens=12, chat=False))
    assert render.rows_html(chains).startswith(render.LEGEND_HTML + "<details")  # no tree hint
    assert "sv-depth" not in render.rows_html(chains) and "sv-tree-hint" in render.rows_html(_tree_trace(1.0))


def test_the_exported_page_draws_the_trees_and_loads_back():
    trace = _tree_trace(1.0)
    page = export.run_html(trace)
    assert page.count('<div class="sv-row">') == len(trace.rounds)
    assert 'class="sv-branch"' in page and "sv-depth" in page and "sv-tree-hint" in page
    assert ".sv-branch::before" in page  # the tree's CSS is inlined too
    loaded = export.trace_from_text(page)
    assert loaded == trace and loaded.to_json() == trace.to_json()
