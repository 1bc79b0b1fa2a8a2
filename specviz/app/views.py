"""A trace -> what the live tab shows: rows HTML, the race, the final text, stats Markdown and the four plots.

Pure functions of plain data (render.py and figures.py do the drawing); no model, no callback state. Every live-tab
callback answers with a `LiveView`: its outputs by name, in one place, instead of a positional tuple.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import gradio as gr
from gradio.components.plot import PlotData

from specviz.analysis.metrics import summarize
from specviz.trace import Round, Trace
from specviz.views import figures, render
from specviz.views.race import race_html
from specviz.views.stats_text import headline, stats_markdown

PLOTS = ("alpha_plot", "pq_plot", "speedup_plot", "histogram_plot")


def _keep() -> dict:
    return gr.skip()  # what a field left unset sends: the page keeps what it shows


@dataclass
class LiveView:
    """What a live-tab callback sends, by name; a field left unset keeps what the page shows. ui.py wires each
    name to its widget, in this order (`names()`): the HTTP API's outputs, less the trace state (rows first,
    the trace file last, as API callers read them)."""

    rows: Any = field(default_factory=_keep)  # HTML: one row of coloured tokens per round
    final_text: Any = field(default_factory=_keep)  # HTML: the generated text
    stats: Any = field(default_factory=_keep)  # Markdown: the run's numbers, each with its definition
    headline: Any = field(default_factory=_keep)  # Markdown beside the rows: the speedup, α, rejections in one line
    alpha_plot: Any = field(default_factory=_keep)
    pq_plot: Any = field(default_factory=_keep)
    speedup_plot: Any = field(default_factory=_keep)
    histogram_plot: Any = field(default_factory=_keep)
    round_slider: Any = field(default_factory=_keep)  # p vs q's round: its range follows the run
    status: Any = field(default_factory=_keep)  # Markdown beside the Run button: loading stage, progress, stopped
    trace: Any = field(default_factory=_keep)  # the session's Trace (gr.State), which the lab tabs read
    # HTML under the rows: plain against speculative decoding (race.py); after the older outputs, so that API callers
    # who read them by position find them where they were
    race: Any = field(default_factory=_keep)
    download: Any = field(default_factory=_keep)  # the trace's JSON file, offered once a run has ended

    @staticmethod
    def names() -> list[str]:
        return [item.name for item in dataclasses.fields(LiveView)]

    def values(self) -> tuple:
        """The values in `names()` order: what a Gradio callback returns for outputs wired in that order."""
        return tuple(getattr(self, name) for name in self.names())


def views(trace: Trace | None, held: dict | None = None, position: int | None = None) -> LiveView:
    """Everything the page shows of `trace` (rows, final text, stats, the four plots, the round slider, the
    trace state), all of the same rounds. `held`: the plots and round slider to send again unchanged while
    streaming (held_plots); Gradio then sends nothing for them, where gr.skip() would make it rebuild each one."""
    if trace is None or not trace.rounds:
        empty = figures.empty_figure("Run, Step or load a trace to see this plot")
        return LiveView(rows=render.rows_html(None), race="", final_text=render.final_text_html(None), stats="", headline="",
                        **dict.fromkeys(PLOTS, empty), round_slider=gr.update(minimum=1, maximum=2, value=1),
                        trace=None)
    metrics = summarize(trace)
    view = LiveView(rows=render.rows_html(trace), race=race_html(trace, metrics), final_text=render.final_text_html(trace),
                    stats=stats_markdown(trace, metrics), headline=headline(trace, metrics), trace=trace)
    if held is not None:
        return dataclasses.replace(view, **held)
    plots = figures.run_figures(trace, metrics, position)
    slider = gr.update(minimum=1, maximum=max(len(trace.rounds), 2), value=len(trace.rounds), step=1)
    return dataclasses.replace(view, **dict(zip(PLOTS, plots)), round_slider=slider)


def held_plots(view: LiveView) -> dict:
    """The plots of `view` serialized once (Gradio passes PlotData through as is), and its round slider: what
    views(trace, held) sends again while the rows stream on."""
    plots = {name: PlotData(type="plotly", plot=getattr(view, name).to_json()) for name in PLOTS}
    return {**plots, "round_slider": view.round_slider["value"]}  # a plain value: Gradio sends nothing new


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
