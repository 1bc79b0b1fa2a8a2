"""plotly and Markdown views of the verification-rule lab: verification_rules' numbers in, figures and tables out."""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go

from specviz.analysis.metrics import SIGNIFICANCE, chi_square_verdict
from specviz.labs.verification_rules import rules
from specviz.views.figures import BLUE, GREEN, GREY, ORANGE, RED, base_figure, plot_text

RULE_COLOURS = {rules.EXACT: GREEN, rules.ARGMAX: RED, rules.LENIENT: ORANGE, rules.TYPICAL: "#8e44ad",
                rules.TOP_K: "#16a085"}
SHOWN_TOKENS = 8  # the most likely tokens under p or q; the rest of the vocabulary is one "other" bar


def shown_tokens(target_probs, draft_probs, label: Callable[[int], str] = str) -> tuple[list[int], list[str]]:
    """Ids of the tokens worth a bar (p's and q's top ones, by p then q), and their labels."""
    p, q = rules._distribution(target_probs), rules._distribution(draft_probs)
    order = list(dict.fromkeys([*p.topk(min(SHOWN_TOKENS, p.numel())).indices.tolist(),
                                *q.topk(min(SHOWN_TOKENS // 2, q.numel())).indices.tolist()]))
    labels = [plot_text(label(index)) for index in order]
    return order, labels


def position_figure(target_probs, draft_probs, outcomes: list[rules.RuleOutcome], label: Callable[[int], str] = str,
                    title: str = "") -> go.Figure:
    """p, q and each rule's emitted distribution over the most likely tokens, plus one bar for all the others."""
    ids, labels = shown_tokens(target_probs, draft_probs, label)
    labels = [*labels, "other"]
    figure = base_figure()

    def bars(probs):
        probs = rules._distribution(probs)
        chosen = [float(probs[index]) for index in ids]
        return [*chosen, max(0.0, 1.0 - sum(chosen))]

    figure.add_bar(x=labels, y=bars(target_probs), name="p (target)", marker_color=BLUE)
    figure.add_bar(x=labels, y=bars(draft_probs), name="q (draft)", marker_color=GREY, opacity=0.6)
    for outcome in outcomes:
        figure.add_bar(x=labels, y=bars(outcome.emitted), name=f"emitted: {outcome.rule}",
                       marker_color=RULE_COLOURS[outcome.rule], opacity=0.85,
                       hovertemplate=f"{outcome.rule}<br>%{{x}}: %{{y:.3f}}<extra></extra>")
    figure.update_layout(barmode="group", title=title or "What each rule emits at this position, against p",
                         xaxis_title="token", yaxis_title="probability", legend=dict(orientation="h", y=-0.25))
    return figure


def position_table(outcomes: list[rules.RuleOutcome], chi_square: dict[str, tuple], samples: int) -> str:
    """One Markdown row per rule: acceptance, distance from p, and the sampled χ² verdict against SIGNIFICANCE."""
    lines = [f"| rule | P(accept) | TVD(emitted, p) | χ² of {samples:,} samples against p | verdict (χ² p-value against "
             f"{SIGNIFICANCE:g}) |", "|---|---|---|---|---|"]
    for outcome in outcomes:
        statistic, dof, p_value = chi_square[outcome.rule]
        verdict = rule_verdict(outcome.distance, p_value, samples)
        lines.append(f"| {outcome.rule} | {outcome.accept_prob:.3f} | {outcome.distance:.4f} | "
                     f"{statistic:.1f} on {dof} dof | {verdict} |")
    return "\n".join(lines) + (f"\n\nA χ² p-value of at least {SIGNIFICANCE:g} is read as following p; below it, the "
                               "emitted tokens do not follow p (an exact rule falls below it 1 time in 1,000 by chance).")


def rule_verdict(distance: float, p_value: float, samples: int) -> str:
    """The χ² verdict every lab gives (metrics.chi_square_verdict), then the closed form's reading of it: a small drift
    can pass a test of too few samples, and an exact rule fails one test in 1,000 by chance.
    rule_verdict(0.0, 0.0173, 20_000) -> '**p-value 0.0173 ≥ 0.001: follows p**: lossless'."""
    said, lossless = f"**{chi_square_verdict(p_value)}**", distance < 1e-9
    if p_value >= SIGNIFICANCE:
        return said + (": lossless" if lossless else
                       f", yet drifts: {samples:,} samples are too few to see a TVD of {distance:.4f}")
    return said + (" by chance (1 run in 1,000): the closed form emits p" if lossless else "")


def run_figure(totals: dict[str, dict[str, float]], positions: int) -> go.Figure:
    """Each rule's acceptance (its mean P(accept)) and drift (mean TVD of what it emits from p) over a run."""
    figure = base_figure()
    names = list(totals)
    figure.add_bar(x=names, y=[totals[name]["alpha"] for name in names], name="P(accept) under the rule: the mean",
                   marker_color=[RULE_COLOURS[name] for name in names])
    figure.add_bar(x=names, y=[totals[name]["drift"] for name in names], name="drift: mean TVD(emitted, p)",
                   marker_color=GREY, marker_pattern_shape="/")
    figure.update_layout(barmode="group", title=f"Over the run's {positions} tested positions: more acceptance, "
                         "bought with drift from p", yaxis_title="", legend=dict(orientation="h", y=-0.2))
    return figure


def run_table(totals: dict[str, dict[str, float]], positions: int) -> str:
    lines = ["| rule | mean P(accept) under the rule | mean TVD(emitted, p) |", "|---|---|---|"]
    lines += [f"| {name} | {values['alpha']:.3f} | {values['drift']:.4f} |" for name, values in totals.items()]
    return f"Over {positions} tested positions:\n\n" + "\n".join(lines)
