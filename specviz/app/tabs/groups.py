"""The lab tabs of the app: the theory tab here, the others in their own modules (sampling_tab, simulated_tab,
course_tab, bandwidth_tab, lossless_tab, seeds_tab, ...). As in the live tab, callbacks only translate between
widgets and the labs' pure functions."""

from __future__ import annotations

from contextlib import contextmanager

import gradio as gr

from specviz.analysis.counters import vocabulary_markdown
from specviz.analysis.metrics import estimate_verify_cost, summarize
from specviz.app.callbacks import lab_callback, refused
from specviz.app.tabs.course_exercises import course_tab
from specviz.app.tabs.lesson import lesson_tab, show_step
from specviz.app.tabs.losslessness import lossless_tab
from specviz.app.tabs.memory_bandwidth import bandwidth_tab, bandwidth_view
from specviz.app.tabs.round_anatomy import anatomy_tab
from specviz.app.tabs.sampling_lab import overlap_view, sampling_tab
from specviz.app.tabs.simulated_models import simulated_tab
from specviz.app.tabs.token_trees import tree_theory_section, tree_theory_views
from specviz.app.tabs.verification_rules import follow_run, rules_tab
from specviz.app.tabs.when_it_pays import pays_view, when_it_pays_tab
from specviz.app.tabs.you_are_the_drafter import you_draft_tab
from specviz.core.theory import extend_verify_cost
from specviz.labs import glossary
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
    text = (f"**E[tokens per iteration] = {values['expected_tokens']:.3f}** · speedup E/(γc+1) = "
            f"**{values['speedup']:.3f}×**" + (f" · with measured v(k): **{aware:.3f}×**" if aware is not None else "")
            + f"\n\nbest {best_text} ({values['best_speedup']:.3f}×, {values['cost_model']}) · "
            f"operations factor {values['operations_factor']:.3f} (ĉ = c) · viable (α > c): "
            f"**{'yes' if values['viable'] else 'no'}** · γ = 1 guarantee (1+α)/(1+c) = {values['gamma_one_bound']:.3f}×")
    point, theoretical = _live_point(trace, verify_cost)
    reach = axis_gammas(int(gamma), best, point[2] if point else None)
    if point is not None:
        text += ("\n\nRed dot: your last live run, at " + (
            "the speedup the theory gives its α, γ and c (tick *compare with plain decoding* there to measure it)."
            if theoretical else "its measured speedup."))
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
    gr.Markdown("E = (1 − α^(γ+1))/(1 − α) tokens per iteration; S = E/(γc + 1) (Leviathan et al. 2023). Move the "
                "sliders. Once you have run the live tab, a red dot marks that run: at its measured speedup if it was "
                "compared with plain decoding, else at the speedup the theory gives its α, γ and c.")
    with gr.Row():
        # α and c start at T5-small drafting for T5-XXL (Leviathan et al. 2023, Table 2), the pair of their Figure 5
        alpha = gr.Slider(0, 0.99, value=0.75, step=0.01, label="α: acceptance rate")
        gamma = gr.Slider(1, 32, value=4, step=1, label="γ: drafted tokens per iteration")
        c = gr.Slider(0, 1, value=0.02, step=0.005, label="c: draft step cost / target step cost")
    measured_cost = gr.Checkbox(False, label="Cost model with the verify cost v(k) measured in the last live run "
                                             "(the CPU story); unticked: v(k) = 1 (the GPU story)")
    readout = gr.Markdown()
    with gr.Row():
        heatmap, curves = gr.Plot(label="Speedup over (α, γ)"), gr.Plot(label="Speedup against γ")
    gr.Markdown("**Reference configurations** (every value computed here; the T5 pairs are Leviathan et al.'s)")
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


LIVE_TAB = "Watch it run"
# The tabs after the live one, in a lesson's order: each group a tab, its labs tabs inside it (open_lab in the
# browser tests reads this to find a lab).
TAB_GROUPS = {
    "Lesson": [],
    "Why it is exact": ["Sampling lab", "Verification rules", "Losslessness"],
    "Why it is fast": ["Memory bandwidth", "Theory", "Round anatomy", "When it pays", "Simulated models"],
    "Try it yourself": ["You are the drafter", "Course exercises"],
    "Runs & files": [],
    "Reference": ["Glossary"],
}
GROUP_LEADS = {  # the one plain sentence each group opens with
    "Why it is exact": "Why the text is exactly what the large model alone would write: the acceptance test, the "
                       "correction, and the proof, each one you can run.",
    "Why it is fast": "Why checking several guesses costs about as much as writing one token, and when that stops "
                      "being true.",
    "Try it yourself": "Be the drafter yourself, or work the course's exercises with every step shown.",
    "Reference": "Every term the page uses, defined once, and the same counts in llama.cpp's and vLLM's words.",
}


LAB_LEADS = {  # the one plain sentence each lab opens with, before its own notation
    "Sampling lab": "Draw speculative samples from distributions you type, and see that they come out as p says.",
    "Verification rules": "The exact rule against the shortcuts engines take: only the exact one keeps the large "
                          "model's text.",
    "Losslessness": "Run the real model many times and check that each token comes out as often as the model "
                    "alone would write it.",
    "Memory bandwidth": "Why one token costs as much as many: every step reads all the weights from memory.",
    "Theory": "How many tokens a round yields, and how much faster that makes decoding, for any α, γ and c.",
    "Round anatomy": "Where each round of the run spent its time, and why the measured speedup differs from the "
                     "predicted one.",
    "When it pays": "Measured machines side by side: where checking many tokens costs about one, it pays.",
    "Simulated models": "Made-up models whose agreement you set exactly, run through the real engine.",
    "You are the drafter": "Guess the next tokens yourself, and let the real model check them.",
    "Course exercises": "The course's exercises, each worked step by step.",
    "Glossary": "Every term the page uses, one line each.",
}


@contextmanager
def _lab(name: str):
    """A lab's tab inside its group, opening with its plain sentence (LAB_LEADS); yields the Tab."""
    with gr.Tab(name) as tab:
        gr.Markdown(LAB_LEADS[name], elem_classes="sv-lead")
        yield tab


@contextmanager
def _group(name: str):
    """A group's tab: its plain sentence, then a wrapping tab bar for its labs (TAB_GROUPS[name], built inside)."""
    with gr.Tab(name, id=name):
        gr.Markdown(GROUP_LEADS[name], elem_classes="sv-lead")
        with gr.Tabs(overflow_behavior="wrap"):
            yield


def build_lab_tabs(demo: gr.Blocks, trace_state: gr.State, files=None) -> None:
    """The tabs after the live tab, to be called inside its `gr.Tabs()`: the lesson, the labs in their groups
    (TAB_GROUPS), the Runs & files tab (`files()` builds it) and the reference. Initial views load with the page."""
    with gr.Tab("Lesson", id="Lesson") as lesson:
        lesson_inputs, lesson_outputs = lesson_tab(demo, trace_state)
    lesson.select(show_step, lesson_inputs, lesson_outputs, queue=False)  # the run on the page may have changed
    with _group("Why it is exact"):
        with _lab("Sampling lab"):
            sampling_inputs, sampling_outputs = sampling_tab()
        with _lab("Verification rules") as rules:
            rules_where = rules_tab(trace_state)
        with _lab("Losslessness"):
            lossless_tab()
    # Round and position move to the live run's draft where the rules part most when the tab opens
    rules.select(follow_run, [trace_state, *rules_where], list(rules_where), queue=False)
    with _group("Why it is fast"):
        with _lab("Memory bandwidth"):
            bandwidth_inputs, bandwidth_outputs = bandwidth_tab()
        with _lab("Theory") as theory:
            _, theory_inputs, theory_outputs = theory_tab(trace_state)
            tree_inputs, tree_outputs = tree_theory_section(trace_state)
        with _lab("Round anatomy"):
            anatomy_tab(trace_state)
        with _lab("When it pays") as pays:
            pays_inputs, pays_outputs = when_it_pays_tab(trace_state)
        with _lab("Simulated models"):
            simulated_tab()
    # Redrawn when the tab is opened, so the last live run's point shows (a change listener on the trace state
    # would make Gradio hash the whole trace on every streamed update).
    theory.select(theory_views, theory_inputs, theory_outputs)
    theory.select(tree_theory_views, tree_inputs, tree_outputs)
    pays.select(pays_view, pays_inputs, pays_outputs)  # redrawn on opening: the live run joins the regimes
    with _group("Try it yourself"):
        with _lab("You are the drafter"):
            you_draft_tab()
        with _lab("Course exercises"):
            course_tab()
    with gr.Tab("Runs & files", id="Runs & files"):
        if files is not None:
            files()
    with _group("Reference"):
        with _lab("Glossary"):
            gr.Markdown(glossary.glossary_markdown(), elem_id="sv-glossary")
            gr.Markdown("### Engine vocabulary: specviz's figures in llama.cpp's and vLLM's counters\n\n"
                        "A run's stats panel and `generate --json` (`engine_counters`) give these counts, to set "
                        "beside your server's.\n\n" + vocabulary_markdown())
            gr.Markdown(SOURCES_NOTE)
    demo.load(theory_views, theory_inputs, theory_outputs)
    demo.load(tree_theory_views, tree_inputs, tree_outputs)
    demo.load(overlap_view, sampling_inputs, sampling_outputs)
    demo.load(bandwidth_view, bandwidth_inputs, bandwidth_outputs)


SOURCES_NOTE = (
    "### Where the figures come from\n\nspecviz was written from three articles (*Accelerating LLM Inference: "
    "Speculative Decoding*; *Speculative decoding for LLM inference*; *Implementing LLM Speculative Sampling in "
    "Under 100 Lines of Code*), an overview of batched verification, and the course *Fast Inference from "
    "Transformers via Speculative Decoding*. Every figure the app quotes from them is checked against specviz's own "
    "code in `docs/sources-checked.md`, with the arithmetic wherever a source is wrong.")
