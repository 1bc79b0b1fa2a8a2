"""The "Verification rules" tab: the exact rule against the shortcuts engines take, on the live run's real p and q."""

from __future__ import annotations

import gradio as gr

from specviz.analysis.metrics import summarize
from specviz.app import worker
from specviz.app.callbacks import load_pipeline, quiet_refusals, refused
from specviz.app.estimates import announced
from specviz.app.fields import lab_field
from specviz.app.tabs.cross_vocab_case import cross_vocab_case
from specviz.config import DecodeConfig
from specviz.labs.sampling_lab import rejection
from specviz.labs.verification_rules import figures, on_run
from specviz.labs.verification_rules import rules as verification_rules
from specviz.trace import Trace

LIVE = "the live run (round and position below)"
INTRO = (
    "Which rule does an engine really run, and is its output still the target's? Each rule decides whether a drafted "
    "token passes and what replaces it. The bars show the distribution of the token the position **emits** under "
    "each rule, and the χ² test samples the rule itself: only the exact rule, min(1, p/q) with the residual "
    "norm(max(0, p − q)), emits p. Argmax match is what engines run at T = 0; lenient, typical (Medusa) and top-k "
    "acceptance pass more drafts and drift from p. The round and position open where the run's draft and target agree "
    "least; after a greedy run the lab reads the untempered (T = 1) distributions, where the rules part."
)


def _live_distributions(trace: Trace | None) -> tuple[on_run.RunDistributions, object]:
    if trace is None or not trace.rounds:
        raise refused("No run yet: press Run on the live tab (temperature 1 shows the rules apart), or pick a preset.")
    pipeline = load_pipeline(DecodeConfig.from_dict(trace.config))
    try:
        return worker.call(on_run.run_distributions, pipeline, trace), pipeline.tokenizer
    except ValueError as error:
        raise refused(_sentence(error)) from None


def _sentence(error: Exception) -> str:
    text = str(error)
    return f"{text[:1].upper()}{text[1:]}."


def which_p_and_q(trace: Trace, untempered: bool) -> str:
    """Which p and q the lab reads off the live run, in words."""
    config = trace.config
    if untempered:
        return ("p and q: the target's and the draft model's untempered (T = 1) softmax at each position; the run was "
                "greedy (T = 0), where its own p and q are one-hot at the argmax and every rule agrees")
    limits = "".join(f", {name} {config[name]}" for name, off in (("top_k", 0), ("top_p", 1.0))
                     if config.get(name, off) != off)
    return (f"p and q: the target's and the draft model's distributions as the run sampled them (T = {config['temperature']}"
            f"{limits}); where lookup copied a round, the draft model's q stands in for lookup's one-hot q")


def follow_run(trace, round_number, position):
    """When the tab opens: keep the round and position if the live run tested them, else move them to the tested draft
    where the draft and target agree least (on_run.most_disputed: the rules part there, even after a greedy run),
    or leave them empty while there is no run."""
    found = on_run.most_disputed(trace)
    if found is None:
        return gr.update(value=None), gr.update(value=None)
    tested = dict(on_run.tested_positions(trace))
    try:
        if int(position) in tested.get(int(round_number), []):
            return gr.update(), gr.update()
    except (TypeError, ValueError):
        pass
    return gr.update(value=found[0]), gr.update(value=found[1])


def _live_position(trace, round_number, position):
    """(p, q, token label, where) at a tested position of the live run; an empty round or position means the first."""
    if trace is None or not trace.rounds:
        _live_distributions(trace)  # refuses: no run yet
    first = on_run.first_tested(trace)
    if first is None:
        raise refused("This run tested no drafts (every round was a plain step): run with a draft model.")
    if round_number in (None, "", 0):  # an empty box: the first tested draft
        round_number, position = first[0], first[1] if position in (None, "", 0) else position
    round_number = lab_field("Round", round_number, 1, 10**6, whole=True)
    position = first[1] if position in (None, "", 0) else lab_field("Draft position", position, 1, 64, whole=True)
    try:
        index = on_run.generated_index(trace, round_number, position)
    except ValueError as error:
        raise refused(_sentence(error)) from None
    distributions, tokenizer = _live_distributions(trace)  # checked first: this loads the run's models
    label = lambda token_id: tokenizer.decode([token_id])  # noqa: E731
    where = f"round {round_number}, position {position}" + (" (untempered T = 1 p and q)" if distributions.untempered else "")
    note = which_p_and_q(trace, distributions.untempered) + "."
    return distributions.target_rows[index], distributions.draft_rows[index], label, where, note


@announced("rules at a position", outputs=2, text_at=1)
def position_view(trace, source, round_number, position, lenience, top_k, samples):
    lenience = lab_field("Lenience l", lenience, 0.05, 1.0)
    top_k = lab_field("k", top_k, 1, 1000, whole=True)
    samples = lab_field("Samples", samples, 100, 200_000, whole=True)
    if source == LIVE:
        p, q, label, where, note = _live_position(trace, round_number, position)
    elif source in rejection.PRESETS:
        preset = rejection.PRESETS[source]
        p, q, vocab = preset["target_probs"], preset["draft_probs"], preset["vocab"]
        label, where, note = vocab.__getitem__, f"preset: {source}", ""
    else:
        raise refused(f"Choose the live run or one of the presets, got {source!r:.60}.")
    outcomes = verification_rules.outcomes(p, q, lenience=lenience, top_k=top_k)
    chi_square = verification_rules.chi_square_by_rule(p, q, samples=samples, seed=0)
    figure = figures.position_figure(p, q, outcomes, label, f"What each rule emits · {where}")
    table = figures.position_table(outcomes, chi_square, samples)
    return figure, table + (f"\n\n{note}" if note else "")


@announced("rules over the run", outputs=2, text_at=1)
def run_view(trace, lenience, top_k):
    lenience = lab_field("Lenience l", lenience, 0.05, 1.0)
    top_k = lab_field("k", top_k, 1, 1000, whole=True)
    distributions, _ = _live_distributions(trace)
    tested = [on_run.generated_index(trace, number, position)
              for number, positions in on_run.tested_positions(trace) for position in positions]
    if not tested:
        raise refused("This run tested no drafts (every round was a plain step): run with a draft model.")
    totals = verification_rules.along_trace(distributions.target_rows[tested], distributions.draft_rows[tested],
                                            lenience=lenience, top_k=top_k)
    return (figures.run_figure(totals, len(tested)),
            figures.run_table(totals, len(tested)) + "\n\n"
            + alpha_comparison(trace, totals, distributions.untempered))


def alpha_comparison(trace: Trace, totals: dict, untempered: bool) -> str:
    """The live run's α beside this lab's mean overlap β̄, each named with the p and q it comes from."""
    metrics = summarize(trace)
    lab_alpha = totals[verification_rules.EXACT]["alpha"]
    live = (f"**The live run's α = {metrics.alpha:.3f}** ({metrics.accepted_tokens}/{metrics.tested_positions} tested "
            "drafts accepted), counted with the p and q the run used")
    if untempered:
        return (f"{live}: at T = 0 those are one-hot, so a draft passes exactly when its argmax is the target's. "
                f"**This lab's mean overlap β̄ = {lab_alpha:.3f}**: the mean of β = Σ min(p, q) over the same positions, "
                "the acceptance the exact rule expects with the untempered (T = 1) p and q, where a draft the target "
                "ranks second still passes in part. "
                "The two answer different questions, so they differ.")
    return (f"{live}. **This lab's mean overlap β̄ = {lab_alpha:.3f}**: the mean of β = Σ min(p, q) over the same "
            "positions, the same p and q, the acceptance the run expected; the run's count differs from it by "
            "sampling noise (and where lookup copied a round, its one-hot q). " + which_p_and_q(trace, False) + ".")


def rules_tab(trace_state: gr.State) -> tuple:
    """The tab's widgets; returns (round, position), which build_lab_tabs moves to a tested draft when the tab opens."""
    gr.Markdown(INTRO)
    with gr.Row():
        source = gr.Dropdown([LIVE, *rejection.PRESETS], value=LIVE, label="p and q from")
        # No `minimum`: an empty box sends 0, which means "the first tested" here (Gradio would refuse it first)
        round_number = gr.Number(None, precision=0, label="Round (empty: the first that tested a draft)",
                                 placeholder="the first tested")
        position = gr.Number(None, precision=0, label="Draft position", placeholder="the first tested")
    with gr.Row():
        lenience = gr.Slider(0.1, 1.0, value=verification_rules.LENIENCE, step=0.05, label="Lenience l (lenient rule)")
        top_k = gr.Number(verification_rules.TOP_K_SIZE, precision=0, label="k (top-k match)", minimum=1)
        samples = gr.Number(20_000, precision=0, label="Samples for the χ² test", minimum=100)
    with gr.Row():
        at_position = gr.Button("Compare the rules at this position", variant="primary")
        over_run = gr.Button("Compare over the whole run")
    figure = gr.Plot(label="What each rule emits")
    table = gr.Markdown(elem_id="sv-rules-table")
    at_position.click(quiet_refusals(position_view), [trace_state, source, round_number, position, lenience, top_k,
                                                      samples], [figure, table], api_name="rules_at_position")
    over_run.click(quiet_refusals(run_view), [trace_state, lenience, top_k], [figure, table], api_name="rules_over_run")
    cross_vocab_case()  # an accordion: a draft with another tokenizer, verified with the renormalized and the naïve q
    return round_number, position


def build(demo: gr.Blocks, trace_state: gr.State, tab: gr.Tab) -> None:
    """The tab's contents; on opening, round and position move to the live run's draft where the rules part most."""
    where = rules_tab(trace_state)
    tab.select(follow_run, [trace_state, *where], list(where), queue=False)
