"""The guided lesson: speculative decoding in seven steps, for a teacher with a class (the app's Lesson tab).

Each step is a title, two or three plain sentences, and one view built from the other labs: a plot, or the run's
rows. The views that show a run read the run on the page (the live run, or the recorded one the page opens on), so
the numbers in the sentences are that run's own. No gradio here: the tab (app/tabs/lesson.py) only shows a Step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specviz.analysis.metrics import summarize
from specviz.labs.memory_bandwidth import bandwidth
from specviz.labs.memory_bandwidth.figures import roofline_figure
from specviz.labs.sampling_lab import figures as rejection_figures
from specviz.labs.sampling_lab import rejection
from specviz.labs.theory import token_trees
from specviz.labs.when_it_pays import regimes as when_it_pays
from specviz.labs.when_it_pays.figures import payoff_figure
from specviz.trace import Trace
from specviz.views import figures, render
from specviz.words import count

JAPAN = "The Japan ... (textbook)"  # the textbook pair of rejection.PRESETS
NO_RUN = "Run the prompt on *Watch it run* first: this step shows that run."


@dataclass(frozen=True)
class Step:
    """One step as the tab shows it: a title, its sentences (Markdown), and one view, a figure or rows of HTML."""

    title: str
    text: str
    figure: object = None  # a plotly Figure, or None
    rows: str | None = None  # the run's rows (render.rows_html), or None


def _rejections(trace: Trace) -> list[tuple[int, int]]:
    """(round index, draft position) of every rejected draft in the run, in order."""
    return [(round_.index, token.position) for round_ in trace.rounds for token in round_.tokens
            if token.kind == "rejected"]


def slow(trace: Trace | None) -> Step:
    preset = bandwidth.PRESETS[bandwidth.OPENING_PRESET]
    read_ms = bandwidth.weight_read_seconds(preset["params"], preset["bytes_per_param"],
                                            preset["bandwidth_bytes_per_s"]) * 1e3
    crossover = bandwidth.crossover_batch(preset["bytes_per_param"], preset["bandwidth_bytes_per_s"],
                                          preset["flops_per_s"])
    return Step("Why one token at a time is slow",
                f"To write one token, a model reads every one of its weights from memory. On an {bandwidth.OPENING_PRESET}"
                f" card an 11-billion-parameter model takes **{read_ms:.1f} ms** just to read them, while the "
                f"arithmetic for one token takes a small fraction of that. Up to about **{crossover:.0f} tokens** at "
                "once cost the same read (the flat line below): that spare room is what speculative decoding uses.",
                figure=roofline_figure(**preset, name=bandwidth.OPENING_PRESET))


def guess(trace: Trace | None) -> Step:
    if trace is None or not trace.rounds:
        return Step("Guess and verify", NO_RUN)
    metrics = summarize(trace)
    return Step("Guess and verify",
                f"A small model guesses γ = {trace.config['gamma']} tokens; the large one scores all of them in **one** "
                "pass and keeps the guesses it agrees with (green). At the first one it rejects (red, struck) it "
                "writes its own token instead (blue), and the next round starts from there. This run made "
                f"{count(metrics.generated_tokens, 'token')} in {count(metrics.target_calls, 'pass', 'passes')} of the "
                "large model.",
                rows=render.rows_html(trace))


def rule(trace: Trace | None) -> Step:
    if trace is None or not trace.rounds:
        return Step("The acceptance rule", NO_RUN)
    found = _rejections(trace)
    round_index, position = found[0] if found else (len(trace.rounds) - 1,
                                                   figures.default_position(trace.rounds[-1]))
    where = f"round {round_index + 1}, position {position}"
    greedy = float(trace.config.get("temperature", 1)) == 0
    return Step("The acceptance rule",
                "For each guess x the large model gives p(x) and the small one gave q(x). The guess is kept when a "
                "random r in [0, 1) is below min(1, p(x)/q(x)): always when the large model likes it at least as "
                f"much, otherwise with probability p/q. Below, {where} of this run"
                + (", its first rejection." if found else ".")
                + (" This run was greedy (T = 0): p and q are all on one token each, so a guess passes exactly when "
                   "it is the large model's own first choice; the dashes show both at T = 1." if greedy else ""),
                figure=figures.p_vs_q_figure(trace.rounds[round_index], position))


def correction(trace: Trace | None) -> Step:
    preset = rejection.PRESETS[JAPAN]
    step = rejection.speculative_step(preset["target_probs"], preset["draft_probs"], uniforms=[0.1, 0.9, 0.75])
    return Step("The correction",
                "After a rejection the large model does not simply take its own favourite: it draws from "
                "norm(max(0, p − q)), the part of its distribution the small model under-guessed. Guesses kept plus "
                "corrections drawn this way give exactly p, so the text follows the large model's distribution. "
                f"Below, the textbook's \"The Japan ...\": the guess \"{preset['vocab'][step['draft_token']]}\" fails r = "
                f"{step['uniform']:.2f} ≥ {step['accept_prob']:.2f} and the correction is "
                f"\"{preset['vocab'][step['corrected_token']]}\".",
                figure=rejection_figures.step_figure(step, preset["vocab"]))


def tokens(trace: Trace | None) -> Step:
    if trace is None or not trace.rounds:
        return Step("Tokens per round", NO_RUN)
    metrics = summarize(trace)
    gamma = int(trace.config["gamma"])
    return Step("Tokens per round",
                f"Every round yields between 1 and γ + 1 = {gamma + 1} tokens: the guesses kept, plus the large "
                f"model's own. If each guess is kept with probability α, a round yields (1 − α^(γ+1))/(1 − α) on "
                f"average. This run: α = {metrics.alpha:.2f}, **{metrics.tokens_per_round:.2f} tokens per round**; the "
                "line is what the theory predicts for that α.",
                figure=figures.tokens_per_round_figure([len(r.emitted) for r in trace.rounds], metrics.alpha, gamma,
                                                       [r.drafted for r in trace.rounds]))


def pays(trace: Trace | None) -> Step:
    regimes = when_it_pays.load_regimes()
    live = when_it_pays.live_regime(trace) if trace is not None else None
    cheapest = min(regimes, key=lambda regime: regime.verify_cost.get(5, float("inf")))
    dearest = max(regimes, key=lambda regime: regime.verify_cost.get(5, 0.0))
    widths = sorted(k for k in live.verify_cost if k > 1) if live is not None else []
    this_run = ("" if not widths else
                f" This run checked {widths[-1]} tokens in {live.verify_cost[widths[-1]]:.2f} one-token passes.")
    return Step("When it pays, and when it does not",
                "A round costs γ guesses plus one pass that checks γ + 1 tokens. Where a pass is bound by reading "
                f"weights, checking 5 tokens costs about one pass ({cheapest.verify_cost[5]:.2f} one-token passes with "
                f"{cheapest.name}, recorded); where it is bound by arithmetic it costs several "
                f"({dearest.verify_cost[5]:.2f} with {dearest.name}, recorded).{this_run} Each curve below is what a "
                "machine's measured costs predict at every γ (a what-if): above 1 speculative decoding pays, below "
                "it loses.",
                figure=payoff_figure(regimes + ([live] if live is not None else [])))


TREE_BUDGET = 12  # the lesson's tree: 12 nodes
SIBLING_ACCEPT = 0.4  # what-if: the chance a second or third choice is kept where the first was not


def trees(trace: Trace | None) -> Step:
    """A what-if at this run's γ and α (else γ = 4, α = 0.7): the tokens a round of 12 nodes would yield."""
    if trace is not None and trace.rounds:
        metrics = summarize(trace)
        gamma, alpha = int(trace.config["gamma"]), min(max(metrics.alpha, 0.05), 0.95)
        ran = (f"This run drafted a line of up to γ = {gamma} and made **{metrics.tokens_per_round:.2f} tokens per "
               "round**. ")
    else:
        gamma, alpha, ran = 4, 0.7, ""
    budget = max(TREE_BUDGET, gamma)
    view = token_trees.tree_view(gamma, alpha, SIBLING_ACCEPT, budget, token_trees.flat_then_linear(16, 0.05), 0.05)
    return Step("Trees: several guesses per round",
                "Instead of one line of guesses, the small model can propose a tree: its second and third choices "
                "at each position too. The large model checks every branch in the same one pass, and the longest "
                f"branch it accepts wins. {ran}What-if, at α = {alpha:.2f} for a first choice and {SIBLING_ACCEPT} for "
                f"a later one: with γ = {gamma} and {budget} nodes, a round would yield **{view.chosen.tokens:.2f}** "
                f"tokens on average against a single line's {view.chain.tokens:.2f}.",
                figure=token_trees.tokens_figure(view))


STEPS: list[Callable[[Trace | None], Step]] = [slow, guess, rule, correction, tokens, pays, trees]


def step(index: int, trace: Trace | None) -> Step:
    """Step `index` (0-based) of the lesson, on `trace` (the run on the page, or None)."""
    if not 0 <= index < len(STEPS):
        raise ValueError(f"the lesson has steps 1 to {len(STEPS)}, not {index + 1}")
    return STEPS[index](trace)
