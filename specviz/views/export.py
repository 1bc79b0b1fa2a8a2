"""A run as one self-contained HTML page: the rows (hover a token for its numbers), the final text, the stats and
the four plots, with plotly's script inlined, so it opens with no server and no network. The trace itself rides
along as JSON in a <script type="application/json"> element, so the page loads back into the app or `replay`
like the trace JSON it was made from (`trace_from_text`).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from specviz import paths
from specviz.analysis.consistency import ContradictoryTrace, checked
from specviz.analysis.metrics import summarize
from specviz.trace import Trace, trace_text
from specviz.views import figures, render
from specviz.views.gallery import trace_data
from specviz.views.stats_text import stats_markdown

CSS = paths.ASSETS / "specviz.css"
TRACE_ELEMENT = "specviz-trace"
# plotly's toolbar shows on hover, upright in each plot's right margin (figures' template), so it covers no title
PLOT_CONFIG = {"displayModeBar": "hover", "displaylogo": False}
PAGE_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 24px auto; padding: 0 16px; color: #1f2937; }
.sv-page-plots { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
#sv-stats p { margin: 6px 0; } code { background: #f3f4f6; padding: 0 3px; border-radius: 3px; }
"""


def run_html(trace: Trace) -> str:
    """The whole page for a finished (or stopped) run."""
    metrics = summarize(trace)
    plots = figures.run_figures(trace, metrics) if trace.rounds else [figures.empty_figure("no rounds")]
    plot_html = "".join(  # plotly.js once, inline: no network
        '<div class="sv-page-plot">' + figure.to_html(full_html=False, include_plotlyjs=index == 0, config=PLOT_CONFIG)
        + "</div>" for index, figure in enumerate(plots))
    title = f"specviz: {trace.target_name} ← {trace.draft_name}"
    shown = ("gamma", "temperature", "top_k", "top_p", "seed", "max_new_tokens", "adaptive",
             *(("tree", "tree_budget") if trace.config.get("tree") else ()))  # a version-1 trace has no tree keys
    settings = ", ".join(f"{key} = {trace.config[key]}" for key in shown)
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title><style>{CSS.read_text(encoding='utf-8')}{PAGE_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>Prompt: <b>{html.escape(trace.prompt)}</b><br>{html.escape(settings)}</p>"
        f'<div id="sv-rows">{render.rows_html(trace)}</div>'
        f'<h2>Final text</h2><div id="sv-final">{render.final_text_html(trace)}</div>'
        f'<h2>Stats</h2><div id="sv-stats">{markdown_lines_html(stats_markdown(trace, metrics))}</div>'
        f'<div class="sv-page-plots">{plot_html}</div>'
        f'<p>Made by specviz. This page holds the whole trace: load it in the app (Load a trace) or run '
        f'<code>python -m specviz replay FILE</code>.</p>'
        f'<script type="application/json" id="{TRACE_ELEMENT}">{_script_safe(trace.to_json())}</script>'
        "</body></html>\n"
    )


def trace_from_file(path) -> Trace:
    """The trace a file holds, checked (trace_from_text); ValueError in one sentence that follows the file's name:
    "is not valid JSON (…)", "is not a specviz trace (…)", "contradicts itself at round 3, …"."""
    text = trace_text(path)
    try:
        return trace_from_text(text)
    except ContradictoryTrace as error:
        raise ValueError(f"is not shown: {error}") from None
    except (json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"is not valid JSON ({str(error)[:200]})") from None
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"is not a specviz trace ({str(error)[:300]})") from None


def trace_from_text(text: str) -> Trace:
    """A trace from trace JSON, a gallery entry or a page run_html wrote, checked to hold together before anything of
    it is drawn (analysis/consistency.py); ValueError (or json's error) otherwise."""
    if text.lstrip().startswith("<"):
        match = re.search(f'<script type="application/json" id="{TRACE_ELEMENT}">(.*?)</script>', text, re.DOTALL)
        if match is None:
            raise ValueError("an HTML file that holds no specviz trace")
        text = match.group(1)  # JSON reads the '<\\/' that _script_safe wrote as '</'

    return checked(Trace.from_dict(trace_data(json.loads(text))))  # a bare trace, or a gallery entry's (gallery.py)


def markdown_lines_html(markdown: str) -> str:
    """stats_text's Markdown (paragraphs with **bold**, *italic*, `code` and backslash escapes) as HTML."""
    paragraphs = []
    for paragraph in markdown.split("\n\n"):
        # stats_text escaped the trace's strings for HTML and backslashed Markdown's marks: undo only the backslashes
        parts = re.split(r"(\\.)", paragraph)
        marked = "".join(part[1] if part.startswith("\\") and len(part) == 2 else _marks(part) for part in parts)
        paragraphs.append(f"<p>{marked}</p>")
    return "".join(paragraphs)


def _marks(text: str) -> str:
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"\*(.+?)\*", r"<i>\1</i>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def _script_safe(text: str) -> str:
    """JSON inside <script>: '</' would end the element, so it becomes '<\\/' (still the same JSON)."""
    return text.replace("</", "<\\/")


def write_run_html(trace: Trace, path: str | Path) -> None:
    Path(path).write_text(run_html(trace), encoding="utf-8")

