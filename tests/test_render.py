"""render.py: rows of kinds, visible whitespace, and escaping of every model- or user-produced string."""

from pathlib import Path

from specviz.config import DecodeConfig
from specviz.decoding import engine
from specviz.trace import Round, Token, TopToken, Trace
from specviz.views import render
from tests.fakes import fake_pipeline

HOSTILE = "<img src=x onerror=alert(1)>"


def _trace_with(text: str) -> Trace:
    tokens = [Token(5, text, "accepted", 1, 0.9, 0.8, 0.1, 1.0, 0.85, [TopToken(5, text, 0.9)], [TopToken(5, text, 0.8)]),
              Token(6, "\n<b>", "rejected", 2, 0.1, 0.6, 0.7, 0.1667, 0.4),
              Token(7, " ok", "corrected", 2, 0.5, 0.1, overlap=0.4)]
    round_ = Round(0, 3, 1, tokens, 1.0, 2.0, 3, [5, 6, 8], [text, "\n<b>", "&x"])
    return Trace(config={"gamma": 3}, prompt=HOSTILE, prompt_token_count=3, target_name=HOSTILE, draft_name="ngram",
                 device="cpu", dtype="float32", rounds=[round_], token_ids=[5, 7], text=text + " ok")


def test_a_tapped_token_can_show_what_its_hover_title_says():
    """A phone has no hover: each tested token is focusable by a tap (tabindex) and carries its title's text as
    data-details, which the page's CSS shows while it has the focus."""
    import re

    page = render.rows_html(_trace_with("hi there"))
    tokens = re.findall(r'<span class="sv-tok sv-(?:accepted|rejected|corrected|bonus)" title="([^"]*)" '
                        r'data-details="([^"]*)" tabindex="0"', page)
    assert len(tokens) >= 3 and all(title == details for title, details in tokens)
    css = (Path(__file__).resolve().parent.parent / "assets" / "specviz.css").read_text(encoding="utf-8")
    assert ".sv-tok[data-details]:focus::after { content: attr(data-details);" in css


def test_every_string_is_escaped():
    trace = _trace_with(HOSTILE)
    page = render.rows_html(trace) + render.final_text_html(trace)
    assert "<img" not in page and "<b>" not in page
    assert "&lt;img" in page and "onerror=alert(1)&gt;" in page
    assert "&amp;x" in page  # the untested draft's text too


def test_rows_carry_kind_classes_tooltips_and_visible_whitespace():
    page = render.rows_html(_trace_with("hi there"))
    assert page.count('class="sv-tok sv-accepted"') == 2  # legend + token
    assert 'sv-tok sv-rejected" title=' in page and 'sv-tok sv-corrected" title=' in page
    assert "sv-untested" in page  # the third draft was never tested
    assert '<span class="sv-ws">·</span>' in page and '<span class="sv-ws">↵</span>' in page
    assert "r = 0.7000 ≥ min(1, p/q) = 0.1667" in page
    assert "q(x) = 0.6000" in page and "β = Σ min(p, q) = 0.4000" in page
    assert "1 · 1/3" in page


def test_empty_and_real_traces_render():
    assert "No run yet" in render.rows_html(None)
    pipeline = fake_pipeline(vocab_size=5)
    trace = engine.run_speculative(pipeline, "abc", DecodeConfig(gamma=3, max_new_tokens=20, chat=False, temperature=1.0))
    page = render.rows_html(trace)
    assert page.count('<div class="sv-row">') == len(trace.rounds)
    assert page.count("sv-tok sv-") - 4 >= sum(len(r.tokens) for r in trace.rounds)  # 4 legend chips
    assert render.rows_html(trace, last=2).count('<div class="sv-row">') == min(2, len(trace.rounds))


def test_plots_and_stats_show_hostile_text_literally():
    """plotly reads some HTML in labels and titles, and Markdown reads both HTML and its own marks."""
    from specviz.analysis.metrics import summarize
    from specviz.labs.sampling_lab import figures as rejection_figures
    from specviz.views import figures
    from specviz.views.stats_text import stats_markdown

    trace = _trace_with(HOSTILE)
    trace.rounds[0].tokens[2].text = HOSTILE  # the correction, named under the p-vs-q plot
    trace.rounds[0].tokens[2].target_top = [TopToken(9, HOSTILE, 0.5)]
    figure = figures.p_vs_q_figure(trace.rounds[0], 1).to_json() + figures.p_vs_q_figure(trace.rounds[0], 2).to_json()
    unwrapped = figure.replace("\\u003cbr\\u003e", " ")  # the lines under the plot are cut at spaces
    assert "<img" not in figure and "&lt;img src=x onerror=alert(1)&gt;" in unwrapped
    vocab = [HOSTILE, "<b>bold</b>", "ok"]
    lab = (rejection_figures.overlap_figure(vocab, [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]).to_json()
           + rejection_figures.step_figure(_rejected_step(), vocab).to_json())
    assert "<img" not in lab and "<b>bold" not in lab and "&lt;b&gt;bold" in lab
    trace.draft_name = "[click](javascript:alert(1))"
    stats = stats_markdown(trace, summarize(trace))
    assert "<img" not in stats and "](javascript" not in stats and "&lt;img" in stats


def _rejected_step() -> dict:
    from specviz.labs.sampling_lab.rejection import speculative_step

    step = speculative_step([0.2, 0.4, 0.4], [0.6, 0.2, 0.2], uniforms=[0.1, 0.9, 0.75])  # x = 0 drawn, then rejected
    assert not step["accepted"]
    return step


def test_the_rows_show_what_the_model_reads_collapsed_and_escaped():
    pipeline = fake_pipeline(8)
    trace = engine.run_speculative(pipeline, "abc<b>", DecodeConfig(gamma=2, max_new_tokens=4, chat=False))
    assert trace.templated_prompt == pipeline.tokenizer.decode(pipeline.tokenizer("abc<b>")["input_ids"])
    trace.templated_prompt = "<|im_start|>system\nYou are <b>helpful</b><|im_end|>"
    rows = render.rows_html(trace)
    assert '<details class="sv-prompt"><summary>What the model reads' in rows
    assert "You are &lt;b&gt;helpful&lt;/b&gt;" in rows and "<b>" not in rows
    assert rows.index("sv-prompt") < rows.index('class="sv-row"')  # above the rounds: streaming only appends


def test_a_round_that_drafted_nothing_says_why_it_is_a_lone_token():
    first = Round(0, 0, 0, [Token(5, "Hi", "bonus", 1, 0.9)], 0.0, 2.0, 0)
    later = Round(3, 0, 0, [Token(6, " x", "bonus", 1, 0.7)], 0.0, 2.0, 0)
    drafted = _trace_with("hi").rounds[0]
    assert "prompt read: the target's first token" in render.round_html(first)
    assert 'class="sv-note" title="Round 1: the target reads the prompt' in render.round_html(first)
    assert "nothing drafted: the target's own token" in render.round_html(later)
    assert "sv-note" not in render.round_html(drafted)
    from pathlib import Path

    assert ".sv-note {" in (Path(__file__).parents[1] / "assets" / "specviz.css").read_text()  # styled, not bare
