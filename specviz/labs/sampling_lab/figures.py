"""plotly views of the sampling lab: numbers (or rejection.py's plain records) in, a go.Figure out."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from specviz.analysis.metrics import chi_square_test, total_variation
from specviz.labs.sampling_lab.rejection import MISTAKES, classical_rejection, overlap, tvd_noise
from specviz.views.figures import BLUE, GREEN, GREY, LAYOUT, ORANGE, RED, base_figure, plot_text


def overlap_figure(vocab: list[str], target_probs: list[float], draft_probs: list[float]) -> go.Figure:
    """p and q as overlaid bars, min(p, q) hatched (its total area is β), and classical rejection's envelope M·q.

    Japan preset: title "β = Σ min(p, q) = 0.900 · classical 1/M = 0.750 (M = 1.333)".
    """
    facts, classical = overlap(target_probs, draft_probs), classical_rejection(target_probs, draft_probs, vocab)
    vocab = [plot_text(word) for word in vocab]  # the user's words, shown literally
    figure = base_figure()
    figure.add_bar(x=vocab, y=list(target_probs), name="p (target)", marker_color=BLUE, opacity=0.55)
    figure.add_bar(x=vocab, y=list(draft_probs), name="q (draft)", marker_color=ORANGE, opacity=0.55)
    figure.add_bar(x=vocab, y=facts["min_probs"], name="min(p, q): area β", marker_color=GREEN, marker_pattern_shape="/",
                   opacity=0.9, hovertemplate="%{x}<br>min(p, q) = %{y:.3f}<extra></extra>")
    if classical["envelope"] is not None:
        figure.add_scatter(x=vocab, y=classical["envelope"], mode="lines+markers", name="M·q (classical envelope)",
                           line=dict(color=GREY, dash="dash", shape="hvh"), marker=dict(color=GREY))
        classical_text = f"classical 1/M = {classical['acceptance']:.3f} (M = {classical['bound']:.4g})"
    else:
        classical_text = "classical: no finite M (q = 0 where p > 0)"
    title = f"β = Σ min(p, q) = {facts['beta']:.3f} · {classical_text}"
    figure.update_layout(**LAYOUT, title=dict(text=title, font=dict(size=13)), barmode="overlay",
                         yaxis=dict(title="probability", rangemode="tozero"), xaxis=dict(title="token"))
    return figure


def step_figure(step_record: dict, vocab: list[str]) -> go.Figure:
    """One speculative sample (rejection.speculative_step's record): the drawn x, the test r against
    min(1, p(x)/q(x)) on the right, and when rejected the residual p′ and the corrected token.

    Left axes: q with x highlighted, p as ticks; right axes: the accept test on [0, 1], green when r < min(1, p/q), red otherwise.
    """
    step = step_record
    vocab = [plot_text(word) for word in vocab]  # the user's words, shown literally
    drafted = vocab[step["draft_token"]]
    figure = base_figure()
    figure.add_bar(x=vocab, y=step["draft_probs"], name="q (draft): x is drawn from it", marker_color=ORANGE,
                   marker_opacity=[1.0 if i == step["draft_token"] else 0.35 for i in range(len(vocab))])
    figure.add_scatter(x=vocab, y=step["target_probs"], mode="markers", name="p (target)",
                       marker=dict(color=BLUE, size=14, symbol="line-ew-open", line=dict(width=3, color=BLUE)))
    figure.add_annotation(x=drafted, y=step["draft_prob"], text=f"x = {drafted!r}", showarrow=True, arrowhead=2, ay=-30)
    if step["residual_probs"] is not None:
        figure.add_scatter(x=vocab, y=step["residual_probs"], mode="markers+lines", name="residual p′ = norm(max(0, p − q))",
                           marker=dict(color=RED, size=9, symbol="diamond"), line=dict(color=RED))
        corrected = step["corrected_token"]
        figure.add_annotation(x=vocab[corrected], y=step["residual_probs"][corrected], text=f"corrected: {vocab[corrected]!r}",
                              showarrow=True, arrowhead=2, ay=-30)
    verdict_color = GREEN if step["accepted"] else RED
    figure.add_bar(x=["min(1, p/q)"], y=[step["accept_prob"]], xaxis="x2", yaxis="y2", marker_color=GREEN, opacity=0.6,
                   name=f"min(1, p/q) = {step['accept_prob']:.3f}", width=0.5)
    figure.add_scatter(x=["min(1, p/q)"], y=[step["uniform"]], xaxis="x2", yaxis="y2", mode="markers",  # r: legend, title
                       marker=dict(color=verdict_color, size=16, symbol="line-ew-open", line=dict(width=4, color=verdict_color)),
                       name=f"r = {step['uniform']:.3f}")  # (a label beside the bar ran into it and the plot's edge)
    sign, outcome = ("<", "accepted") if step["accepted"] else ("≥", "rejected")
    title = (f"x = {drafted!r} (p = {step['target_prob']:.3f}, q = {step['draft_prob']:.3f}): "
             f"r = {step['uniform']:.3f} {sign} {step['accept_prob']:.3f} → {outcome}")
    if not step["accepted"]:
        corrected_text = vocab[step["corrected_token"]]
        title += f"<br><sup>corrected token {corrected_text!r} ~ p′ (normaliser 1 − β = {step['residual_mass']:.3f})</sup>"
    figure.update_layout(**LAYOUT, title=dict(text=title, font=dict(size=13)), barmode="overlay",
                         xaxis=dict(domain=[0, 0.68], title="token"), yaxis=dict(title="probability", range=[0, 1.05]),
                         xaxis2=dict(domain=[0.78, 1], anchor="y2"), yaxis2=dict(anchor="x2", range=[0, 1], title="accept test"))
    if not step["accepted"]:
        figure.update_layout(margin_t=75)
    return figure


def histogram_figure(vocab: list[str], counts: list[int], target_probs: list[float], mistake: str | None = None,
                     predicted_probs: list[float] | None = None) -> go.Figure:
    """Empirical frequencies of the sampler against p, with the χ² p-value and TVD in the title.

    A "common mistake" run is drawn in red and named in the title; `predicted_probs` (the variant's
    exact_output_distribution) adds the distribution the mistake really produces.
    """
    total = sum(counts)
    frequencies = [count / total for count in counts]
    statistic, dof, p_value = chi_square_test(counts, target_probs)
    tvd, noise = total_variation(frequencies, target_probs), tvd_noise(target_probs, total)
    figure = base_figure()
    figure.add_bar(x=vocab, y=frequencies, name="sampled frequency", marker_color=RED if mistake else GREEN, opacity=0.75,
                   text=[f"{count:,}" for count in counts], hovertemplate="%{x}<br>%{y:.4f} (%{text} samples)<extra></extra>")
    figure.add_scatter(x=vocab, y=list(target_probs), mode="markers", name="p (target)",
                       marker=dict(color=BLUE, size=14, symbol="line-ew-open", line=dict(width=3, color=BLUE)))
    if predicted_probs is not None and mistake:
        figure.add_scatter(x=vocab, y=list(predicted_probs), mode="markers", name="what this variant produces",
                           marker=dict(color=GREY, size=9, symbol="x"))
    within = "within noise" if tvd < 3 * noise else "beyond noise"
    shown_p = f"= {p_value:.3g}" if p_value > 0 or math.isinf(statistic) else "< 1e-300"  # gammaincc underflows to 0
    title = (f"{total:,} samples · χ² = {statistic:.4g} (dof {dof}), p-value {shown_p} · "
             f"TVD = {tvd:.4f} ({within}: ≈ {noise:.4f} from sampling alone)")
    if mistake:
        title = f"<span style='color:{RED}'>COMMON MISTAKE: {MISTAKES[mistake]}</span><br><sup>{title}</sup>"
    figure.update_layout(**LAYOUT, title=dict(text=title, font=dict(size=13)),
                         yaxis=dict(title="frequency", rangemode="tozero"), xaxis=dict(title="token"))
    if mistake:
        figure.update_layout(margin_t=75)
    return figure
