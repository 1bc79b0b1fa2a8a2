"""plotly views of the losslessness lab: first-token histograms against p, and the lenience trade-off."""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.analysis.metrics import total_variation
from specviz.labs.losslessness.checks import DistributionCheck, first_token_counts, noise_band, tvd_to_exact
from specviz.views.figures import BLUE, GREY, LAYOUT, ORANGE, RED, base_figure, plot_text

SHOWN_TOKENS = 12


def distribution_figure(check: DistributionCheck) -> go.Figure:
    """p of the first token (exact, one forward) against its frequency in speculative and plain runs."""
    speculative, plain = first_token_counts(check.speculative), first_token_counts(check.plain)
    runs = max(check.runs, 1)
    ranked = sorted(set(check.exact_first) | set(speculative) | set(plain),
                    key=lambda token: -max(check.exact_first.get(token, 0), speculative[token] / runs, plain[token] / runs))
    shown = ranked[:SHOWN_TOKENS]
    labels = [f"{plot_text(repr(check.texts.get(token, str(token)))[1:-1]) or '∅'} ({token})" for token in shown]
    figure = base_figure()
    figure.add_bar(x=labels, y=[check.exact_first.get(token, 0) for token in shown], name="p (exact, target)",
                   marker_color=BLUE, opacity=0.45)
    figure.add_bar(x=labels, y=[speculative[token] / runs for token in shown], name="speculative", marker_color=ORANGE)
    figure.add_bar(x=labels, y=[plain[token] / runs for token in shown], name="plain target sampling", marker_color=GREY)
    tvd = tvd_to_exact(speculative, check.exact_first)
    band = noise_band(check.exact_first, check.runs)
    verdict = "within sampling noise" if tvd <= band else "OUTSIDE sampling noise"
    marker = "" if check.lenience == 1 else f" · lenience {check.lenience}: NOT lossless"
    figure.update_layout(**LAYOUT, barmode="group",
                         title=dict(text=f"First token over {check.runs} runs: TVD(speculative, p) = {tvd:.3f}, "
                                         f"noise band {band:.3f}, {verdict}{marker}", font=dict(size=13)),
                         yaxis=dict(title="probability / frequency"), xaxis=dict(title="token (id)"))
    return figure


def sequence_tvd(check: DistributionCheck) -> tuple[float, float]:
    """TVD between the speculative and plain first-`tokens` sequences, and the two-sample noise band of the
    first token (a lower bound on the band for sequences, which spread over more outcomes)."""
    return total_variation(check.speculative, check.plain), noise_band(check.exact_first, check.runs, two_samples=True)


def lenience_figure(rows: list[dict]) -> go.Figure:
    """The acceptance of these runs and the drift from p (TVD) against lenience, with the noise band: the price of a
    faster, inexact test."""
    leniences = [row["lenience"] for row in rows]
    figure = base_figure()
    figure.add_scatter(x=leniences, y=[row["alpha"] for row in rows], mode="lines+markers", name="acceptance of these runs",
                       marker=dict(color=BLUE, size=9))
    figure.add_scatter(x=leniences, y=[row["tvd_to_p"] for row in rows], mode="lines+markers",
                       name="TVD(first token, p)", marker=dict(color=RED, size=9), yaxis="y2")
    figure.add_scatter(x=leniences, y=[row["noise_band"] for row in rows], mode="lines", name="noise band",
                       line=dict(color=GREY, dash="dot"), yaxis="y2")
    figure.update_layout(**LAYOUT, title="Lenience trades exactness for acceptance (1 = exact)",
                         xaxis=dict(title="lenience l (accept with min(1, p / (l·q)))", autorange="reversed"),
                         yaxis=dict(title="acceptance", range=[0, 1.05]),
                         yaxis2=dict(title="TVD from p", overlaying="y", side="right", rangemode="tozero"))
    return figure
