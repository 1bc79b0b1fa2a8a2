"""A trace -> what the live tab shows: rows HTML, the final text, stats Markdown and the four plots.

Pure functions of plain data (render.py and figures.py do the drawing); no model, no callback state.
"""

from __future__ import annotations

import html

import gradio as gr
from gradio.components.plot import PlotData

from specviz import figures, render
from specviz.counters import engine_counters
from specviz.metrics import Metrics, estimate_verify_cost, summarize
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
    gamma = int(trace.config["gamma"])
    last = trace.rounds[-1]
    return (
        rows, final, stats,
        figures.alpha_per_position_figure(metrics.alpha_per_position, metrics.reached_per_position,
                                          metrics.accepted_per_position, metrics.alpha),
        figures.p_vs_q_figure(last, position or default_position(last)),
        figures.speedup_figure(metrics.alpha, metrics.c, measured_gamma(trace), metrics.speedup_measured,
                               estimate_verify_cost(trace)),
        figures.tokens_per_round_figure([len(r.emitted) for r in trace.rounds], metrics.alpha, gamma,
                                        [r.drafted for r in trace.rounds]),
        slider,
    )


def held_plots(outputs: tuple, trace: Trace) -> tuple:
    """The plots of `outputs` serialized once (Gradio passes PlotData through as is), and the round shown."""
    return (*(PlotData(type="plotly", plot=figure.to_json()) for figure in outputs[3:7]), len(trace.rounds))


def measured_gamma(trace: Trace) -> float:
    """The γ the run drafted with: the configured one, or the mean draft length of an adaptive run."""
    if trace.config.get("adaptive"):
        return sum(r.drafted for r in trace.rounds) / len(trace.rounds)
    return int(trace.config["gamma"])


def _engine_terms(trace: Trace) -> str:
    """The run in llama.cpp's and vLLM's counters (counters.py), for comparing with a server."""
    counts = engine_counters(trace)
    rate, length = counts["draft_acceptance_rate"], counts["mean_acceptance_length"]
    return (f"as engines count it: llama.cpp `draft_n` = {counts['draft_n']}, `draft_n_accepted` = "
            f"{counts['draft_n_accepted']} · vLLM `num_drafts` = {counts['num_drafts']}, `num_accepted_tokens_per_pos` = "
            f"{counts['num_accepted_tokens_per_pos']} · draft acceptance rate "
            f"{'–' if rate is None else f'{rate:.3f}'}, mean acceptance length {'–' if length is None else f'{length:.2f}'}")


def default_position(round_: Round) -> int:
    """The position where the round was decided: the rejection, or the bonus."""
    return round_.tokens[-1].position


def stats_markdown(trace: Trace, metrics: Metrics) -> str:
    per_position = " · ".join("–" if a is None else f"{a:.2f}" for a in metrics.alpha_per_position)
    lines = [
        f"**α = {metrics.alpha:.3f}** ({metrics.accepted_tokens}/{metrics.tested_positions} drafts accepted; "
        f"per position {per_position})",
        f"**{metrics.tokens_per_round:.2f} tokens per round**: {metrics.generated_tokens} tokens from "
        f"{metrics.target_calls} target calls",
        f"c = {metrics.c:.3f} = draft step {metrics.draft_step_ms:.1f} ms / target step {metrics.target_step_ms:.1f} ms "
        f"({C_BASIS[metrics.c_basis]}) · each round: draft {metrics.draft_ms_per_round:.1f} ms + verify "
        f"{metrics.verify_ms_per_round:.1f} ms, of which {metrics.overhead_ms_per_round:.1f} ms outside model forwards · "
        f"{metrics.tokens_per_s:.1f} tokens/s",
        f"theoretical speedup **{metrics.speedup_theoretical:.2f}×**"
        + (f" · measured **{metrics.speedup_measured:.2f}×** against plain decoding · {_sameness(trace, metrics)}"
           if metrics.speedup_measured is not None else " · tick *compare with plain decoding* to measure it"),
        _engine_terms(trace),
        f"{_plain(trace.target_name)} ← {_plain(trace.draft_name)} on **{_plain(trace.device)}** ({_plain(trace.dtype)}); "
        f"stopped by {_plain(trace.stop_reason) or '…'}",
    ]
    if trace.config.get("adaptive"):
        lengths = [round_.drafted for round_ in trace.rounds]
        lines.insert(3, f"adaptive γ ≤ {trace.config['gamma']}: {sum(lengths) / len(lengths):.2f} drafts per round on average, "
                        f"{lengths.count(0)} of {len(lengths)} rounds were plain steps (drafting would not have paid)")
    return "\n\n".join(lines)


C_BASIS = {  # where c's target step came from (metrics.step_costs)
    "baseline": "target step: the plain run's median step",
    "calibrated": "target step timed once per model and device",
    "verify": "target step: this run's median verify forward",
}


def _sameness(trace: Trace, metrics: Metrics) -> str:
    """Whether the speculative output equals the plain run's, and what that means at this temperature."""
    if float(trace.config.get("temperature", 0)) == 0:
        return ("identical output: yes, as greedy decoding must give" if metrics.identical else
                "identical output: NO: at T = 0 it must be the same, so this is a bug (or float noise between "
                "batched and single-token forwards); please report it")
    return ("identical output: not expected at T > 0. Both texts are samples from the target's distribution, drawn "
            "with different random numbers, so they differ; the *Losslessness* tab checks that the distributions "
            "are the same")


def _plain(text) -> str:
    """A string from a trace shown as literal text in Markdown: HTML escaped, Markdown's marks backslashed."""
    escaped = html.escape(str(text), quote=True)
    return "".join("\\" + char if char in "\\`*_[]()|~!" else char for char in escaped)


def select_position(trace: Trace | None, round_number, position):
    """Redraw p vs q for the chosen round (1-based) and draft position."""
    if trace is None or not trace.rounds:
        return figures.empty_figure("No run yet"), gr.update()
    round_ = trace.rounds[min(max(int(round_number), 1), len(trace.rounds)) - 1]
    last_position = round_.tokens[-1].position
    chosen = min(max(int(position or last_position), 1), last_position)
    return figures.p_vs_q_figure(round_, chosen), gr.update(maximum=max(int(trace.config["gamma"]) + 1, 2))


def follow_latest_position(trace: Trace | None):
    """After a run the position slider points at where the last round was decided."""
    if trace is None or not trace.rounds:
        return gr.update()
    return gr.update(value=default_position(trace.rounds[-1]), maximum=int(trace.config["gamma"]) + 1)
