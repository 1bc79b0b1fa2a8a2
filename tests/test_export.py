"""export.py: a run as one self-contained HTML page that loads back as the same trace; the CLI's --html-out."""

import re

import pytest

from specviz.config import DecodeConfig
from specviz.decoding import engine
from specviz.trace import Trace
from specviz.views.export import markdown_lines_html, run_html, trace_from_text
from tests.fakes import fake_pipeline


@pytest.fixture(scope="module")
def trace():
    config = DecodeConfig(gamma=4, max_new_tokens=30, chat=False, temperature=1.0, seed=3)
    return engine.run_speculative(fake_pipeline(vocab_size=6), "abcab </script> & <b>", config)


@pytest.fixture(scope="module")
def exported(trace):
    """The run's page, built once for the module's checks of it (its plots take a while)."""
    return run_html(trace)


def test_the_page_holds_rows_stats_plots_and_loads_back_as_the_same_trace(trace, exported):
    page = exported
    assert page.count('class="sv-row"') == len(trace.rounds)  # one row per round, with its hover titles
    assert page.count("Plotly.newPlot") == 4 and "window.Plotly" in page  # the plots, plotly.js inlined once
    assert "α = " in page and "tokens per round" in page and "num_drafts" in page
    assert trace_from_text(page).to_json() == trace.to_json()  # the trace rides along, intact
    assert trace_from_text(trace.to_json()).to_json() == trace.to_json()  # trace JSON still loads


def test_the_page_needs_no_network(exported):
    page = exported
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=[\"']?(https?:)?//", page)  # nothing fetched


def test_the_prompt_cannot_break_out_of_the_page(exported):
    page = exported
    assert "abcab &lt;/script&gt; &amp; &lt;b&gt;" in page  # shown as text
    json_part = page.split('id="specviz-trace">', 1)[1]
    assert json_part.index("</script>") > json_part.index("<\\/script>")  # the JSON's own '</' cannot end the element


def test_other_html_is_refused_and_markdown_marks_become_tags():
    with pytest.raises(ValueError, match="holds no specviz trace"):
        trace_from_text("<html><body>hello</body></html>")
    assert markdown_lines_html("**a** and `b`\n\n*c* \\*d\\*") == "<p><b>a</b> and <code>b</code></p><p><i>c</i> *d*</p>"


def test_generate_writes_the_page(offline_target, tmp_path, capsys):
    from specviz.cli import main

    page = tmp_path / "run.html"
    assert main(["generate", "--prompt", "Count: one two three", "--max-new-tokens", "8", "--html-out", str(page)]) == 0
    trace = trace_from_text(page.read_text(encoding="utf-8"))
    assert isinstance(trace, Trace) and trace.prompt == "Count: one two three" and len(trace.token_ids) <= 8
    assert main(["replay", str(page)]) == 0  # the page is a trace file for replay too
    assert main(["generate", "--prompt", "x", "--html-out", str(tmp_path / "missing" / "x.html")]) == 2
    assert "--html-out" in capsys.readouterr().err


def test_the_toolbar_covers_no_title_in_the_page(exported):
    """Each plot's toolbar shows on hover, upright, in a right margin the plot keeps free for it."""
    import json

    page = exported
    assert page.count('"displayModeBar": "hover"') == 4 and '"displaylogo": false' in page
    layouts = [json.loads(match) for match in re.findall(r'"modebar":(\{[^}]*\})', page)]
    assert layouts and all(layout.get("orientation") == "v" for layout in layouts)
    assert re.findall(r'"margin":\{[^}]*"r":(\d+)', page) and all(
        int(r) >= 40 for r in re.findall(r'"margin":\{[^}]*"r":(\d+)', page))
