"""The "Seeds checked" tab: every figure the app quotes from the five seed documents, beside specviz's own value for
it, with a ✓ where the seed is right and, where it is not, the arithmetic that settles it. The rows are those of
specviz.labs.seed_rows (the figures the other tabs quote) and specviz.labs.seed_rows_course (seed 002's course: its
exercises, worked examples and project), shown in seed order."""

from __future__ import annotations

import gradio as gr

from specviz.app.callbacks import lab_callback
from specviz.labs.seed_checks import seed_report_markdown
from specviz.labs.seed_rows import SEED_ROWS
from specviz.labs.seed_rows_course import COURSE_ROWS

# Seed order; within a seed, the other tabs' figures first, then the course's in the course's order (sorted is stable)
SHOWN_ROWS = sorted(SEED_ROWS + COURSE_ROWS, key=lambda row: row.seed)

INTRO = ("specviz was written from five seed documents: a short explainer (000), a blog post on memory bandwidth and "
         "Chen et al.'s algorithm (001), a seven-lesson course on Leviathan et al. (002), an overview of batched "
         "verification (003) and a GPT-2 reimplementation with measured speedups (004). They are wrong in places. "
         "Each row below is one figure the app quotes: a short quote that finds it in the seed, the figure as the seed "
         "prints it, and the value specviz computes with the same function the app shows it with. ✓ means the seed's "
         "figure is the correct value at the precision the seed prints (161 for 161.2 is right; 2.12 for 2.1288 is "
         "not). A ✗ row gives the arithmetic that settles it. The course's exercises print no answer: their rows show "
         "— and specviz's answer, which the *Course exercises* tab works step by step; its project's Experiments 1-4 "
         "run on the *Simulated models* tab.")


@lab_callback
def seeds_view(only_wrong):
    return seed_report_markdown(SHOWN_ROWS, bool(only_wrong))


def seeds_tab() -> None:
    """The tab's widgets, to be called inside `with gr.Tab(...)`: the table is computed once, when the app is built."""
    gr.Markdown(INTRO)
    only_wrong = gr.Checkbox(False, label="Only the figures the seeds get wrong")
    table = gr.Markdown(seed_report_markdown(SHOWN_ROWS), elem_id="sv-seeds-table")
    only_wrong.change(seeds_view, only_wrong, table)
