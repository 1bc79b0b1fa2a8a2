"""The "Theory" tab: E and the speedup over α, γ and c, with the reference configurations, Chen et al.'s round cost,
the execution trace of Leviathan et al.'s Figure 5, the oracle γ and the token-tree section (token_trees.py). A red
dot marks the last live run. Callbacks only translate between widgets and the labs' pure functions."""

from __future__ import annotations

import gradio as gr

from specviz.analysis.metrics import estimate_verify_cost, summarize
from specviz.app.callbacks import lab_callback, refused
from specviz.app.tabs.token_trees import tree_theory_section, tree_theory_views
from specviz.core.theory import extend_verify_cost
from specviz.labs.theory import calculator, calculator_figures, execution_trace_figures, oracle_gamma, oracle_gamma_figures
from specviz.labs.theory.execution_trace import PICTURE_TOKENS


def _live_point(trace, verify_cost) -> tuple[tuple | None, bool]:
    """The last live run as (α, c, γ, speedup) for the red dot, and whether that speedup is the theory's: the measured
    one where the run was compared with plain decoding, else what the theory gives its α, γ and c. (None, False)
    without a run."""
    if trace is None or not trace.rounds:
        return None, False
    metrics = summarize(trace)
    alpha, c, gamma = min(max(metrics.alpha, 0.0), 1.0), max(metrics.c, 0.0), int(trace.config["gamma"])
    if metrics.speedup_measured is not None:
        return (alpha, c, gamma, metrics.speedup_measured), False
    if metrics.speedup_predicted is not None:  # the live tab's predicted speedup (speedup.py), the same number
        return (alpha, c, gamma, metrics.speedup_predicted), True
    values = calculator.readout(alpha, gamma, c, verify_cost=verify_cost)
    return (alpha, c, gamma, values["speedup_with_verify_cost"] or values["speedup"]), True


def axis_gammas(gamma: int, best_gamma: int, live_gamma: int | None = None) -> int:
    """How far the γ axes reach: 16, or further to show the chosen γ, the best γ and the live run's γ (at most the
    64 the best γ is searched over)."""
    return min(max(16, gamma, best_gamma, live_gamma or 1), calculator.MAX_GAMMA_SEARCHED)


@lab_callback
def theory_views(alpha, gamma, c, use_measured_cost, trace):
    verify_cost = None
    if use_measured_cost:
        if trace is None or not trace.rounds:
            raise refused("No live run yet: run one on the first tab to measure v(k), or untick the box.")
        verify_cost = extend_verify_cost(estimate_verify_cost(trace), 64)
    values = calculator.readout(float(alpha), int(gamma), float(c), verify_cost=verify_cost)
    aware = values["speedup_with_verify_cost"]
    best, searched = values["best_gamma"], calculator.MAX_GAMMA_SEARCHED
    best_text = f"γ ≥ **{best}** (the search stops at {searched})" if best == searched else f"γ = **{best}**"
    text = (f"**What-if, at the sliders' α, γ and c:** **E[tokens per iteration] = {values['expected_tokens']:.3f}** · "
            f"speedup E/(γc+1) = "
            f"**{values['speedup']:.3f}×**" + (f" · with measured v(k): **{aware:.3f}×**" if aware is not None else "")
            + f"\n\nWhat-if: best {best_text} ({values['best_speedup']:.3f}×, {values['cost_model']}) · "
            f"operations factor {values['operations_factor']:.3f} (ĉ = c) · viable (α > c): "
            f"**{'yes' if values['viable'] else 'no'}** · γ = 1 guarantee (1+α)/(1+c) = {values['gamma_one_bound']:.3f}×")
    point, theoretical = _live_point(trace, verify_cost)
    reach = axis_gammas(int(gamma), best, point[2] if point else None)
    if point is not None:
        metrics = summarize(trace)
        interval = ("" if metrics.speedup_low is None else
                    f" ({metrics.speedup_low:.2f}–{metrics.speedup_high:.2f}, its 95% interval)")
        text += ("\n\nRed dot: your last live run, at " + (
            f"its predicted speedup, {point[3]:.2f}× (tick *compare with plain decoding* there to measure it)."
            if theoretical else f"its measured speedup, {point[3]:.2f}×{interval}."))
    live_r_prime = None  # r′ = tokens per round ÷ (γ + 1) of the last live run, for Chen et al. 2023's round-cost model
    if trace is not None and trace.rounds:
        live_r_prime = summarize(trace).tokens_per_round / (int(trace.config["gamma"]) + 1)
    return (text, calculator_figures.speedup_heatmap(float(c), verify_cost, point, max_gamma=reach, theoretical=theoretical),
            calculator_figures.speedup_curves(float(c), verify_cost=verify_cost, measured=point, max_gamma=reach,
                                              theoretical=theoretical),
            calculator.chen_markdown(live_r_prime), execution_trace_figures.execution_trace_figure(float(alpha), float(c)),
            oracle_gamma.gain_sentence(float(alpha), float(c)),
            oracle_gamma_figures.oracle_gain_figure(float(alpha), float(c)))


def reference_rows() -> list[list]:
    rows = []
    for row in calculator.reference_table():
        rows.append([row.get("name") or "", row["alpha"], row["gamma"], row["c"], round(row["expected_tokens"], 4),
                     round(row["speedup"], 4), row["best_gamma"], round(row["best_speedup"], 4),
                     round(row["gamma_one_bound"], 4), round(row["operations_factor"], 4),
                     "" if row.get("paper_measured_speedup") is None else row["paper_measured_speedup"]])
    return rows


EXECUTION_TRACE_CAPTION = (
    f"**Execution trace** (Leviathan et al. 2023, Figure 5), expected from the α and c above: {PICTURE_TOKENS} tokens "
    "decoded with "
    "γ = 7, with γ = 3 and plainly. Blue blocks are draft steps (c of a target step each), purple ones target steps. "
    "Every round is drawn as yielding its expected E = (1 − α^(γ+1))/(1 − α) tokens (written on its target step), "
    "so a row lasts N/E · (γc + 1) target steps, its last round drawn in part. At c = 0.02 the draft steps are "
    "slivers: raise c to see them. The paper's picture also has the "
    "encoder calls of its encoder-decoder models; the *Round anatomy* tab draws this picture measured on a live run.")
REFERENCE_HEADERS = ["pair", "α", "γ", "c", "E", "speedup", "best γ", "speedup at best γ", "γ=1 bound", "operations",
                     "paper measured"]


def theory_tab(trace_state: gr.State) -> tuple:
    gr.Markdown("A what-if calculator: E = (1 − α^(γ+1))/(1 − α) tokens per iteration; S = E/(γc + 1) "
                "(Leviathan et al. 2023), at the α, γ and c you set. Move the sliders. Once you have run the live tab, "
                "a red dot marks that run: at its measured speedup if it was compared with plain decoding, else at its "
                "predicted speedup.")
    with gr.Row():
        # α and c start at T5-small drafting for T5-XXL (Leviathan et al. 2023, Table 2), the pair of their Figure 5
        alpha = gr.Slider(0, 0.99, value=0.75, step=0.01, label="α (what-if): acceptance rate")
        gamma = gr.Slider(1, 32, value=4, step=1, label="γ: drafted tokens per iteration")
        c = gr.Slider(0, 1, value=0.02, step=0.005, label="c: draft step cost / target step cost")
    measured_cost = gr.Checkbox(False, label="Cost model with the verify cost v(k) measured in the last live run "
                                             "(the CPU story); unticked: v(k) = 1 (the GPU story)")
    readout = gr.Markdown()
    with gr.Row():
        heatmap = gr.Plot(label="What-if: speedup over (α, γ)")
        curves = gr.Plot(label="What-if: speedup against γ")
    gr.Markdown("**Recorded configurations, as what-ifs** (every value computed here from the recorded α, γ and c; the "
                "T5 pairs are Leviathan et al.'s)")
    gr.Dataframe(value=reference_rows(), headers=REFERENCE_HEADERS, interactive=False, wrap=True)
    chen = gr.Markdown(calculator.chen_markdown(), elem_id="sv-chen")
    gr.Markdown(EXECUTION_TRACE_CAPTION)
    execution = gr.Plot(label="Execution trace: γ = 7, γ = 3 and plain (Leviathan et al. 2023, Figure 5)",
                        elem_id="sv-execution-trace")
    oracle_text = gr.Markdown(elem_id="sv-oracle-gamma")
    oracle_plot = gr.Plot(label="Oracle γ against the best fixed γ")
    inputs = [alpha, gamma, c, measured_cost, trace_state]
    outputs = [readout, heatmap, curves, chen, execution, oracle_text, oracle_plot]
    for widget in (alpha, gamma, c):
        widget.release(theory_views, inputs, outputs)
    measured_cost.change(theory_views, inputs, outputs)
    return alpha, inputs, outputs


def build(demo: gr.Blocks, trace_state: gr.State, tab: gr.Tab) -> None:
    """The tab's contents, drawn on page load and redrawn when the tab is opened, so the last live run's point shows
    (a change listener on the trace state would make Gradio hash the whole trace on every streamed update)."""
    _, theory_inputs, theory_outputs = theory_tab(trace_state)
    tree_inputs, tree_outputs = tree_theory_section(trace_state)
    for views, inputs, outputs in ((theory_views, theory_inputs, theory_outputs),
                                   (tree_theory_views, tree_inputs, tree_outputs)):
        tab.select(views, inputs, outputs)
        demo.load(views, inputs, outputs)
