"""plotly and Markdown views of the cross-vocabulary case (labs/verification_rules/cross_vocab.py): what the exact rule and the
naïve mapping emit when the draft's tokenizer differs from the target's. No gradio here."""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.analysis.metrics import SIGNIFICANCE
from specviz.labs.verification_rules.cross_vocab import EXACT, NAIVE, CrossVocabOutcome
from specviz.labs.verification_rules.figures import rule_verdict
from specviz.views.figures import BLUE, GREEN, GREY, RED, base_figure, plot_text

LACKED = "tokens the target lacks"  # the extra bar: the draft's mass 1 − s that can never be proposed
RULE_COLOURS = {EXACT: GREEN, NAIVE: RED}
SHORT_NAMES = {EXACT: "exact", NAIVE: "naïve"}


def cross_vocab_figure(target_probs, q_draft_on_target, tokens: list[str],
                       outcomes: list[CrossVocabOutcome]) -> go.Figure:
    """Grouped bars over the target's tokens plus one LACKED bar: p, the draft's own q (its lost mass 1 − s on the
    LACKED bar), the renormalized q that x is drawn from, and what each rule emits; the title gives both distances."""
    shared = float(sum(float(value) for value in q_draft_on_target))
    labels = [*(plot_text(token) for token in tokens), LACKED]
    figure = base_figure()

    def bars(values, lacked: float = 0.0) -> list[float]:  # [V + 1]: the V target tokens, then LACKED
        return [*(float(value) for value in values), lacked]

    figure.add_bar(x=labels, y=bars(target_probs), name="p (target)", marker_color=BLUE)
    figure.add_bar(x=labels, y=bars(q_draft_on_target, 1.0 - shared), name="the draft's own q", marker_color=GREY,
                   opacity=0.6)
    figure.add_bar(x=labels, y=bars(float(value) / shared for value in q_draft_on_target),
                   name="q renormalized over shared tokens (x is drawn from it)", marker_color=GREY,
                   marker_pattern_shape="/", opacity=0.8)
    for outcome in outcomes:
        name = SHORT_NAMES[outcome.rule]
        figure.add_bar(x=labels, y=bars(outcome.emitted.tolist()), name=f"emitted: {outcome.rule}",
                       marker_color=RULE_COLOURS[outcome.rule], opacity=0.85,
                       hovertemplate=f"{name} rule emits<br>%{{x}}: %{{y:.3f}}<extra></extra>")
    distances = " · ".join(f"{SHORT_NAMES[outcome.rule]} TV = {outcome.distance:.3f}" for outcome in outcomes)
    figure.update_layout(barmode="group", title=f"What each rule emits, s = {shared:.2f}: {distances}",
                         xaxis_title="token", yaxis_title="probability", height=380,
                         legend=dict(orientation="h", y=-0.3))
    return figure


def cross_vocab_table(outcomes: list[CrossVocabOutcome], chi_square: dict[str, tuple], samples: int) -> str:
    """One Markdown row per rule: s, P(accept), the total-variation distance to p and the sampled χ² verdict."""
    lines = [f"| rule | s | P(accept) | TV distance to p | χ² of {samples:,} samples against p | verdict (χ² p-value "
             f"against {SIGNIFICANCE:g}) |", "|---|---|---|---|---|---|"]
    for outcome in outcomes:
        statistic, dof, p_value = chi_square[outcome.rule]
        lines.append(f"| {outcome.rule} | {outcome.shared_mass:.2f} | {outcome.accept_prob:.3f} | "
                     f"{outcome.distance:.4f} | {statistic:.1f} on {dof} dof | "
                     f"{rule_verdict(outcome.distance, p_value, samples)} |")
    exact, naive = (next(o for o in outcomes if o.rule == rule) for rule in (EXACT, NAIVE))
    if naive.distance < 1e-9 and naive.shared_mass >= 1 - 1e-9:
        return "\n".join(lines) + ("\n\nAt s = 1 the draft loses nothing: its own q is the renormalized q, and both "
                                   "rules are the exact rule.")
    return "\n".join(lines) + (
        f"\n\nThe naïve rule is told q_D(x) = {naive.shared_mass:.2f} × q(x), so it accepts with probability "
        f"{naive.accept_prob:.3f} instead of {exact.accept_prob:.3f}, and what it emits is {naive.distance:.4f} away "
        "from p in total variation; the exact rule's distance is 0 at any s.")
