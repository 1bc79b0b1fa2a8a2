"""The "Verification rules" tab: the exact rule against the shortcuts engines take, on the live run's real p and q."""

from __future__ import annotations

import gradio as gr

from specviz.app import worker
from specviz.app.callbacks import load_pipeline
from specviz.config import DecodeConfig
from specviz.labs import rejection, rules_on_run, verification_rules, verification_rules_figures
from specviz.trace import Trace

LIVE = "the live run (round and position below)"
INTRO = (
    "Which rule does an engine really run, and is its output still the target's? Each rule decides whether a drafted "
    "token passes and what replaces it. The bars show the distribution of the token the position **emits** under "
    "each rule, and the χ² test samples the rule itself: only the exact rule, min(1, p/q) with the residual "
    "norm(max(0, p − q)), emits p. Argmax match is what engines run at T = 0; lenient, typical (Medusa) and top-k "
    "acceptance pass more drafts and drift from p. Run the live tab at temperature 1 first (at T = 0 the lab uses "
    "the untempered distributions)."
)


def _number(value, name: str, low: float, high: float, integer: bool = False) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise gr.Error(f"{name} must be a number, got {value!r:.40}.") from None
    if not low <= number <= high or (integer and number != int(number)):
        raise gr.Error(f"{name} must be {'a whole number ' if integer else ''}from {low:g} to {high:g}, got {value!r:.40}.")
    return int(number) if integer else number


def _live_distributions(trace: Trace | None) -> tuple[rules_on_run.RunDistributions, object]:
    if trace is None:
        raise gr.Error("No run yet: press Run on the live tab (temperature 1 shows the rules apart), or pick a preset.")
    pipeline = load_pipeline(DecodeConfig.from_dict(trace.config))
    try:
        return worker.call(rules_on_run.run_distributions, pipeline, trace), pipeline.tokenizer
    except ValueError as error:
        raise gr.Error(f"{str(error)[:1].upper()}{str(error)[1:]}.") from error


def position_view(trace, source, round_number, position, lenience, top_k, samples):
    lenience = _number(lenience, "Lenience l", 0.05, 1.0)
    top_k = _number(top_k, "k", 1, 1000, integer=True)
    samples = _number(samples, "Samples", 100, 200_000, integer=True)
    if source == LIVE:
        distributions, tokenizer = _live_distributions(trace)
        try:
            index = rules_on_run.generated_index(trace, _number(round_number, "Round", 1, 10**6, True),
                                                 _number(position, "Draft position", 1, 64, True))
        except ValueError as error:
            raise gr.Error(f"{str(error)[:1].upper()}{str(error)[1:]}.") from error
        p, q = distributions.target_rows[index], distributions.draft_rows[index]
        label = lambda token_id: tokenizer.decode([token_id])  # noqa: E731
        where = f"round {int(round_number)}, position {int(position)}" + (
            " (greedy run: untempered T = 1 distributions)" if distributions.untempered else "")
    elif source in rejection.PRESETS:
        preset = rejection.PRESETS[source]
        p, q, vocab = preset["target_probs"], preset["draft_probs"], preset["vocab"]
        label, where = vocab.__getitem__, f"preset: {source}"
    else:
        raise gr.Error(f"Choose the live run or one of the presets, got {source!r:.60}.")
    outcomes = verification_rules.outcomes(p, q, lenience=lenience, top_k=top_k)
    chi_square = verification_rules.chi_square_by_rule(p, q, samples=samples, seed=0)
    figure = verification_rules_figures.position_figure(p, q, outcomes, label, f"What each rule emits · {where}")
    return figure, verification_rules_figures.position_table(outcomes, chi_square, samples)


def run_view(trace, lenience, top_k):
    lenience = _number(lenience, "Lenience l", 0.05, 1.0)
    top_k = _number(top_k, "k", 1, 1000, integer=True)
    distributions, _ = _live_distributions(trace)
    tested = [rules_on_run.generated_index(trace, number, token.position)
              for number, round_ in enumerate(trace.rounds, 1) for token in round_.tokens
              if token.kind in ("accepted", "rejected")]
    if not tested:
        raise gr.Error("This run tested no drafts (every round was a plain step).")
    totals = verification_rules.along_trace(distributions.target_rows[tested], distributions.draft_rows[tested],
                                            lenience=lenience, top_k=top_k)
    note = " (greedy run: untempered T = 1 distributions)" if distributions.untempered else ""
    return (verification_rules_figures.run_figure(totals, len(tested)),
            verification_rules_figures.run_table(totals, len(tested)) + note)


def rules_tab(trace_state: gr.State) -> None:
    gr.Markdown(INTRO)
    with gr.Row():
        source = gr.Dropdown([LIVE, *rejection.PRESETS], value=LIVE, label="p and q from")
        round_number = gr.Number(1, precision=0, label="Round", minimum=1)
        position = gr.Number(1, precision=0, label="Draft position", minimum=1)
    with gr.Row():
        lenience = gr.Slider(0.1, 1.0, value=verification_rules.LENIENCE, step=0.05, label="Lenience l (lenient rule)")
        top_k = gr.Number(verification_rules.TOP_K_SIZE, precision=0, label="k (top-k match)", minimum=1)
        samples = gr.Number(20_000, precision=0, label="Samples for the χ² test", minimum=100)
    with gr.Row():
        at_position = gr.Button("Compare the rules at this position", variant="primary")
        over_run = gr.Button("Compare over the whole run")
    figure = gr.Plot(label="What each rule emits")
    table = gr.Markdown(elem_id="sv-rules-table")
    at_position.click(position_view, [trace_state, source, round_number, position, lenience, top_k, samples],
                      [figure, table], api_name="rules_at_position")
    over_run.click(run_view, [trace_state, lenience, top_k], [figure, table], api_name="rules_over_run")
