"""The Lesson tab: labs/lesson.py's steps one at a time, with Back and Next, on the run the page shows."""

from __future__ import annotations

import gradio as gr

from specviz.app.callbacks import lab_callback
from specviz.labs import lesson


@lab_callback
def show_step(index, trace):
    """Step `index` (0-based) on the page's run: its heading, sentences, view, and Back/Next enabled where they go."""
    index = int(index)
    step = lesson.step(index, trace)
    last = len(lesson.STEPS) - 1
    return (index, f"### Step {index + 1} of {last + 1}: {step.title}", step.text,
            gr.update(value=step.figure, visible=step.figure is not None),
            gr.update(value=step.rows or "", visible=step.rows is not None),
            gr.update(interactive=index > 0), gr.update(interactive=index < last))


def lesson_tab(demo: gr.Blocks, trace_state: gr.State):
    """The tab's widgets, inside `with gr.Tab("Lesson")`; returns (inputs, outputs) of show_step at the current step,
    so the tab can redraw it when opened (the run on the page may have changed)."""
    gr.Markdown("Seven short steps through speculative decoding, each with one view: the views that show a run use "
                "the one on *Watch it run*.", elem_classes="sv-lead")
    index = gr.State(0)
    first = lesson.step(0, None)  # it needs no run: the page opens on it
    heading = gr.Markdown(f"### Step 1 of {len(lesson.STEPS)}: {first.title}", elem_id="sv-lesson-heading")
    with gr.Row(elem_id="sv-lesson-nav"):
        back = gr.Button("Back", min_width=80, interactive=False, elem_id="sv-lesson-back")
        forward = gr.Button("Next", variant="primary", min_width=80, elem_id="sv-lesson-next")
    text = gr.Markdown(first.text, elem_id="sv-lesson-text")
    plot = gr.Plot(first.figure, show_label=False, elem_id="sv-lesson-plot")
    rows = gr.HTML(visible=False, elem_id="sv-lesson-rows")
    outputs = [index, heading, text, plot, rows, back, forward]
    back.click(lambda at, trace: show_step(max(int(at) - 1, 0), trace), [index, trace_state], outputs, queue=False)
    forward.click(lambda at, trace: show_step(min(int(at) + 1, len(lesson.STEPS) - 1), trace), [index, trace_state],
                  outputs, queue=False)
    return [index, trace_state], outputs
