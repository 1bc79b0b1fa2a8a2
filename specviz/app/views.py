"""A trace -> what the live tab shows: rows HTML, the final text, stats Markdown and the four plots.

Pure functions of plain data (render.py and figures.py do the drawing); no model, no callback state.
"""

from __future__ import annotations

import gradio as gr
from gradio.components.plot import PlotData

from specviz import figures, render
from specviz.metrics import summarize
from specviz.stats_text import stats_markdown
from specviz.trace import Round, Trace


def views(trace: Trace | None, held: tuple | None = None, position: int | None = None) -> tuple:
    """(rows, final text, stats, α plot, p-vs-q plot, speedup plot, histogram, round slider) for a trace.

    While streaming, `held` gives the last four plots (as PlotData) and round number to send again unchanged:
    Gradio then sends nothing for them, where gr.skip() or gr.update() would make it rebuild each component.
    """
    if trace is None or not trace.rounds:
        empty = figures.empty_figure("Run, Step or load a trace to see this plot")
        return (render.rows_html(None), render.final_text_html(None), "", empty, empty, empty, empty,
                gr.update(minimum=1, maximum=2, value=1))
    rows, final = render.rows_html(trace), render.final_text_html(trace)
    metrics = summarize(trace)
    stats = stats_markdown(trace, metrics)
    if held is not None:
        return rows, final, stats, *held
    slider = gr.update(minimum=1, maximum=max(len(trace.rounds), 2), value=len(trace.rounds), step=1)
    return (rows, final, stats, *figures.run_figures(trace, metrics, position), slider)


def held_plots(outputs: tuple, trace: Trace) -> tuple:
    """The plots of `outputs` serialized once (Gradio passes PlotData through as is), and the round shown."""
    return (*(PlotData(type="plotly", plot=figure.to_json()) for figure in outputs[3:7]), len(trace.rounds))


def default_position(round_: Round) -> int:
    """Where p vs q opens on a round: its last tested draft (the rejection, or the last accepted one: p and q both
    there), or the one token of a round that drafted nothing (figures.default_position)."""
    return figures.default_position(round_)


def select_position(trace: Trace | None, round_number, position):
    """Redraw p vs q for the chosen round (1-based) and draft position."""
    if trace is None or not trace.rounds:
        return figures.empty_figure("No run yet"), gr.update()
    round_ = trace.rounds[min(max(int(round_number), 1), len(trace.rounds)) - 1]
    last_position = round_.tokens[-1].position
    chosen = min(max(int(position or default_position(round_)), 1), last_position)
    return figures.p_vs_q_figure(round_, chosen), gr.update(maximum=max(int(trace.config["gamma"]) + 1, 2))


def follow_latest_position(trace: Trace | None):
    """After a run the position slider points at the last round's last tested draft (a position with a q)."""
    if trace is None or not trace.rounds:
        return gr.update()
    return gr.update(value=default_position(trace.rounds[-1]), maximum=int(trace.config["gamma"]) + 1)
