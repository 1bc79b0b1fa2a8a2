"""The tabs after the live one, in a lesson's order: each group a tab, its labs tabs inside it. LAB_TABS is the one
list of lab tabs: a new tab is one row here and a module beside this one whose `build(demo, trace_state, tab)` lays
out its contents and wires its own events. Callbacks only translate between widgets and the labs' pure functions."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import gradio as gr

from specviz.app.tabs import (
    course_exercises,
    glossary,
    losslessness,
    memory_bandwidth,
    round_anatomy,
    sampling_lab,
    simulated_models,
    theory,
    verification_rules,
    when_it_pays,
    you_are_the_drafter,
)
from specviz.app.tabs.lesson import lesson_tab, show_step

LIVE_TAB = "Watch it run"
LESSON, EXACT, FAST, YOURSELF, FILES, REFERENCE = ("Lesson", "Why it is exact", "Why it is fast", "Try it yourself",
                                                   "Runs & files", "Reference")
GROUPS = (LESSON, EXACT, FAST, YOURSELF, FILES, REFERENCE)  # after the live tab, in this order
GROUP_LEADS = {  # the one plain sentence each group opens with
    "Why it is exact": "Why the text is exactly what the large model alone would write: the acceptance test, the "
                       "correction, and the proof, each one you can run.",
    "Why it is fast": "Why checking several guesses costs about as much as writing one token, and when that stops "
                      "being true.",
    "Try it yourself": "Be the drafter yourself, or work the course's exercises with every step shown.",
    "Reference": "Every term the page uses, defined once, and the same counts in llama.cpp's and vLLM's words.",
}


@dataclass(frozen=True)
class LabTab:
    name: str  # the tab's title, which its modules are named after
    group: str  # the group (GROUPS) it sits in
    lead: str  # the one plain sentence it opens with, before its own notation
    build: Callable[[gr.Blocks, gr.State, gr.Tab], None]  # lays out its contents inside its Tab, wiring its events


LAB_TABS = (
    LabTab("Sampling lab", EXACT, "Draw speculative samples from distributions you type, and see that they come out as p "
                                  "says.",
           sampling_lab.build),
    LabTab("Verification rules", EXACT, "The exact rule against the shortcuts engines take: only the exact one keeps the "
                                        "large model's text.",
           verification_rules.build),
    LabTab("Losslessness", EXACT, "Run the real model many times and check that each token comes out as often as the model "
                                  "alone would write it.",
           losslessness.build),
    LabTab("Memory bandwidth", FAST, "Why one token costs as much as many: every step reads all the weights from memory.",
           memory_bandwidth.build),
    LabTab("Theory", FAST, "How many tokens a round yields, and how much faster that makes decoding, for any α, γ and c.",
           theory.build),
    LabTab("Round anatomy", FAST, "Where each round of the run spent its time, and why the measured speedup differs from the "
                                  "predicted one.",
           round_anatomy.build),
    LabTab("When it pays", FAST, "Measured machines side by side: where checking many tokens costs about one, it pays.",
           when_it_pays.build),
    LabTab("Simulated models", FAST, "Made-up models whose agreement you set exactly, run through the real engine.",
           simulated_models.build),
    LabTab("You are the drafter", YOURSELF, "Guess the next tokens yourself, and let the real model check them.",
           you_are_the_drafter.build),
    LabTab("Course exercises", YOURSELF, "The course's exercises, each worked step by step.",
           course_exercises.build),
    LabTab("Glossary", REFERENCE, "Every term the page uses, one line each.",
           glossary.build),
)
# Each group's labs, by name (open_tab in the browser tests reads this to find a lab).
TAB_GROUPS = {group: [tab.name for tab in LAB_TABS if tab.group == group] for group in GROUPS}


@contextmanager
def _group(name: str):
    """A group's tab: its plain sentence, then a wrapping tab bar for its labs, built inside."""
    with gr.Tab(name, id=name):
        gr.Markdown(GROUP_LEADS[name], elem_classes="sv-lead")
        with gr.Tabs(overflow_behavior="wrap"):
            yield


def build_lab_tabs(demo: gr.Blocks, trace_state: gr.State, files=None) -> None:
    """The tabs after the live tab, to be called inside its `gr.Tabs()`: the lesson, the labs in their groups
    (LAB_TABS), the Runs & files tab (`files()` builds it) and the reference."""
    with gr.Tab(LESSON, id=LESSON) as lesson:
        lesson_inputs, lesson_outputs = lesson_tab(demo, trace_state)
    lesson.select(show_step, lesson_inputs, lesson_outputs, queue=False)  # the run on the page may have changed
    for group in GROUPS[1:]:
        if group == FILES:
            with gr.Tab(FILES, id=FILES):
                if files is not None:
                    files()
            continue
        with _group(group):
            for lab in (tab for tab in LAB_TABS if tab.group == group):
                with gr.Tab(lab.name) as tab:
                    gr.Markdown(lab.lead, elem_classes="sv-lead")
                    lab.build(demo, trace_state, tab)
