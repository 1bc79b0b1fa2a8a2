"""The Theory tab's token-tree section: widgets for depth, acceptance by sibling rank, node budget, v(k) and c, and
a callback that only translates them for labs/theory/token_trees.py (fields checked as the other labs check theirs)."""

from __future__ import annotations

import gradio as gr

from specviz.analysis.metrics import estimate_verify_cost
from specviz.app.callbacks import lab_callback, refused
from specviz.app.fields import lab_field, run_field
from specviz.core.theory import extend_verify_cost
from specviz.core.tree_shape import TREE_MARGIN
from specviz.decoding.tree_budget import sibling_acceptance
from specviz.labs.theory import token_trees

FLAT_CURVE, MEASURED_CURVE = "flat to k0, then linear", "measured in the last live run"
MAX_DEPTH, MAX_BUDGET, MAX_K0 = 16, 64, 64  # the sliders' ends: the live tab's γ, 4γ nodes, a GPU's flat part


def verify_curve(curve, k0, slope, trace, max_k: int):
    """The chosen v(k), and its name for the plot: the flat-then-linear line, or the last live run's v(k)."""
    if curve == FLAT_CURVE:
        return token_trees.flat_then_linear(k0, slope), f"flat to k0 = {k0}, slope {slope:g}"
    if curve != MEASURED_CURVE:
        raise refused(f"v(k) must be one of '{FLAT_CURVE}' or '{MEASURED_CURVE}', got {curve!r}.")
    measured = estimate_verify_cost(trace) if trace is not None and trace.rounds else None
    if measured is None:
        raise refused("No v(k) measured yet: run the live tab once (it times the target's forwards), "
                      f"or choose '{FLAT_CURVE}'.")
    return extend_verify_cost(measured, max_k), "measured in the last live run"


@lab_callback
def tree_theory_views(gamma, a_first, a_later, budget, curve, k0, slope, c, trace):
    gamma = run_field("gamma", gamma, 1, MAX_DEPTH)
    a_first = lab_field("a_1 (first child's acceptance)", a_first, 0, 1)
    a_later = lab_field("a_2 (later siblings' acceptance)", a_later, 0, 1)
    budget = lab_field("Node budget n", budget, 1, MAX_BUDGET, whole=True)
    k0 = lab_field("k0 (end of the flat part)", k0, 1, MAX_K0, whole=True)
    slope = lab_field("slope of v(k) past k0", slope, 0, 1)
    c = lab_field("c (draft forward / target forward)", c, 0, 1)
    verify_cost, cost_label = verify_curve(curve, k0, slope, trace, token_trees.largest_budget(gamma) + 1)
    view = token_trees.tree_view(gamma, a_first, a_later, budget, verify_cost, c)
    chosen, chain = view.chosen, view.chain
    shape = "no more nodes than γ: the chain of γ" if budget <= gamma else (
        f"{chosen.nodes} nodes over {chosen.levels} levels, {chosen.expand} node(s) expanded per level")
    if budget > chosen.budget:
        shape += f" (n = {budget} is past the {chosen.budget} = 4γ nodes best_shape considers: shown at {chosen.budget})"
    best = (f"n = **{view.best_budget}**, {view.gain:.3f}× the chain's tokens per unit time"
            if view.best_budget != gamma else "the chain of γ: " + _best_tree_sentence(view))
    text = (f"What-if, at the sliders' values: budget n = {budget} at depth γ = {gamma}: {shape}. "
            f"**E[tokens per round] = {chosen.tokens:.3f}** "
            f"against the chain's E(a_1, γ) = {chain.tokens:.3f}; a round costs {chosen.cost:.3f} target forwards "
            f"(chain {chain.cost:.3f}), so **{chosen.rate:.3f}×** plain decoding against the chain's "
            f"{chain.rate:.3f}×.\n\nWhat-if: best_shape on this v(k) ({cost_label}) and c = {c:g}: {best}.")
    measured = _measured_rates(trace)
    if measured:
        text += ("\n\nYour last live run drafted trees; acceptance by sibling rank there: " + ", ".join(
            f"a_{rank} = {rate:.2f}" for rank, rate in enumerate(measured[:3], start=1)) + ".")
    return text, token_trees.tokens_figure(view), token_trees.rate_figure(view, verify_cost, f"{cost_label}, c = {c:g}")


def _best_tree_sentence(view) -> str:
    """Why best_shape kept the chain: no tree is faster, or the fastest wins by less than the margin."""
    fastest = max(view.rows[1:], key=lambda row: (row.rate, -row.budget))
    gain = fastest.rate / view.chain.rate - 1
    if gain <= 0:
        return "no tree is faster"
    return f"the fastest tree (n = {fastest.budget}) is only {gain:.1%} faster, under the {TREE_MARGIN:.0%} margin"


def _measured_rates(trace) -> list[float]:
    """a_1, a_2, .. of the last live run when it drafted trees; [] for a chain run or none."""
    if trace is None or not any(round_.is_tree for round_ in trace.rounds):
        return []
    return sibling_acceptance(trace)


def tree_theory_section(trace_state: gr.State) -> tuple[list, list]:
    """The widgets, to be called inside the Theory tab; (inputs, outputs) for its load and select events."""
    gr.Markdown(token_trees.EXPLANATION, elem_id="sv-tree-theory")
    with gr.Row():
        gamma = gr.Slider(1, MAX_DEPTH, value=4, step=1, label="γ: tree depth")
        a_first = gr.Slider(0, 1, value=0.75, step=0.01, label="a_1: acceptance of the first child (α's role)")
        a_later = gr.Slider(0, 1, value=0.4, step=0.01, label="a_2: acceptance of a later sibling")
        budget = gr.Slider(1, MAX_BUDGET, value=8, step=1, label="n: node budget")
    with gr.Row():
        curve = gr.Radio([FLAT_CURVE, MEASURED_CURVE], value=FLAT_CURVE, label="v(k): target forward over k tokens")
        k0 = gr.Slider(1, MAX_K0, value=8, step=1, label="k0: v(k) = 1 up to here")
        slope = gr.Slider(0, 1, value=0.1, step=0.01, label="slope of v(k) past k0")
        c = gr.Slider(0, 1, value=0.05, step=0.005, label="c: draft forward / target forward")
    readout = gr.Markdown(elem_id="sv-tree-readout")
    with gr.Row():
        tokens_plot = gr.Plot(label="What-if: expected tokens per round against the node budget")
        rate_plot = gr.Plot(label="What-if: expected tokens per unit time against the node budget")
    inputs = [gamma, a_first, a_later, budget, curve, k0, slope, c, trace_state]
    outputs = [readout, tokens_plot, rate_plot]
    for widget in (gamma, a_first, a_later, budget, k0, slope, c):
        widget.release(tree_theory_views, inputs, outputs)
    curve.change(tree_theory_views, inputs, outputs)
    return inputs, outputs
