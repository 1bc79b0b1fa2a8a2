"""The "When it pays" tab: recorded regimes side by side (float32 weights, 4-bit weights on llama.cpp, a GPU), the
live run beside them, and the two acceptance rules on the live run's own p and q (labs/when_it_pays/)."""

from __future__ import annotations

import gradio as gr

from specviz.labs.when_it_pays import regimes as when_it_pays
from specviz.labs.when_it_pays.figures import payoff_figure, verify_cost_figure

INTRO = ("Speculative decoding pays where checking γ + 1 tokens costs about what one token costs: where a forward is "
         "bound by reading the weights, not by arithmetic. The same pair on the same CPU can be either: float32 weights "
         "are read in full for every forward, while llama.cpp's 4-bit kernels unpack each weight again for every "
         "token. Requantizing the shipped Q4_K_M to Q4_0, which llama.cpp repacks for its batched kernels, makes every "
         "step faster, but each further token checked still adds about half a step on the AVX-512 machine below (the "
         "two files' rows). Each regime was measured on the machine it names; run the live tab to add your own.")


def regimes_markdown(regimes: list[when_it_pays.Regime]) -> str:
    lines = []
    for regime in regimes:
        kind = "" if regime.is_live else "Recorded regime: "
        lines.append(f"{kind}**{regime.name}** ({regime.pair}; {regime.machine}, {regime.date}; one step "
                     f"{regime.step_ms:.1f} ms): {when_it_pays.verdict(regime)} *Measured by:* {regime.source}")
    return "\n\n".join(lines)


def rules_markdown(trace) -> str:
    rules = when_it_pays.live_rules(trace) if trace is not None else None
    if rules is None:
        return "Run the live tab at T > 0 to compare the two acceptance rules on its own p and q."
    greedy = (" At T = 0 both distributions are one-hot, so the two rules agree: run at T = 1 to see them part."
              if rules["temperature"] == 0 else "")
    return (f"**The two acceptance rules on the live run's {rules['positions']} tested drafts** (T = "
            f"{rules['temperature']:g}): rejection sampling accepts a draft with probability β = Σ min(p, q), "
            f"**{rules['rejection_sampling']:.3f}** on average; matching a draw from p (llama.cpp's and mlx-lm's rule) "
            f"with Σ p·q, **{rules['matching']:.3f}**. Both keep the output exact; matching accepts less often." + greedy)


def pays_view(trace):
    regimes = when_it_pays.load_regimes()
    live = when_it_pays.live_regime(trace)
    shown = regimes + ([live] if live is not None else [])
    return (verify_cost_figure(shown), payoff_figure(shown), regimes_markdown(shown), rules_markdown(trace))


def when_it_pays_tab(trace_state: gr.State) -> tuple[list, list]:
    """The tab's widgets; returns (inputs, outputs) for pays_view, which the tab redraws when opened."""
    gr.Markdown(INTRO)
    with gr.Row():
        verify_cost = gr.Plot(label="v(k): the cost of checking k tokens")
        payoff = gr.Plot(label="What-if: predicted speedup at every γ")
    verdicts = gr.Markdown(elem_id="sv-pays-verdicts")
    rules = gr.Markdown(elem_id="sv-pays-rules")
    return [trace_state], [verify_cost, payoff, verdicts, rules]


def build(demo: gr.Blocks, trace_state: gr.State, tab: gr.Tab) -> None:
    """The tab's contents, redrawn on opening: the live run joins the recorded regimes."""
    inputs, outputs = when_it_pays_tab(trace_state)
    tab.select(pays_view, inputs, outputs)
