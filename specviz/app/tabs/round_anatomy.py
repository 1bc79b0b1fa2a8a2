"""The "Round anatomy" tab: the live run's rounds as a measured timeline above plain decoding of the same tokens."""

from __future__ import annotations

import gradio as gr

from specviz.labs.round_anatomy import anatomy as round_anatomy
from specviz.labs.round_anatomy import figures

INTRO = ("Where does a run's time go? Each round is drawn as measured: the draft model's forwards, the rest of "
         "drafting, the target's one verify forward, then the accept/reject step and bookkeeping. Below, the plain "
         "decoder spends one target step per token. A run can accept almost everything and still be slow: this "
         f"shows why. The timeline draws {round_anatomy.TIMELINE_ROUNDS} rounds from the first one you choose; the "
         "summary covers every round after round 1. The waterfall walks from the predicted speedup to the measured one "
         "(tick *compare with plain decoding* on the live tab to measure it), naming each part of the gap.")


def anatomy_view(trace, first):
    if trace is None or not trace.rounds:
        raise gr.Error("No run yet: press Run on the live tab, then come back.")
    try:
        first = int(first)
    except (TypeError, ValueError):
        raise gr.Error(f"The first round must be a whole number, got {first!r:.40}.") from None
    if not 1 <= first <= len(trace.rounds):
        raise gr.Error(f"The run has rounds 1 to {len(trace.rounds)}; got {first}.")
    segments, plain = round_anatomy.timeline(trace, first)
    emitted = {number: len(round_.emitted) for number, round_ in enumerate(trace.rounds, 1)}
    facts = round_anatomy.summary(trace)
    return (figures.timeline_figure(segments, plain, emitted), figures.totals_figure(facts),
            figures.waterfall_figure(facts["waterfall"]), round_anatomy.explanation(facts))


def anatomy_tab(trace_state: gr.State) -> None:
    gr.Markdown(INTRO)
    with gr.Row():
        first = gr.Number(2, precision=0, label="First round shown (round 1 also encodes the prompt)", minimum=1)
        draw = gr.Button("Draw the live run", variant="primary")
    timeline = gr.Plot(label="The rounds drawn, measured (the title says which)")
    totals = gr.Plot(label="Every round after round 1")
    reconciled = gr.Plot(label="From the predicted to the measured speedup, in ms per token")
    summary = gr.Markdown(elem_id="sv-anatomy-summary")
    draw.click(anatomy_view, [trace_state, first], [timeline, totals, reconciled, summary], api_name="round_anatomy")


def build(demo: gr.Blocks, trace_state: gr.State, tab: gr.Tab) -> None:
    anatomy_tab(trace_state)
