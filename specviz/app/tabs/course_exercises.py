"""The course's exercises (seed 002's seven lessons), and its hands-on project run exactly as written.

`course_tab()` builds the "Course exercises" tab: pick an exercise (or Lesson 2's worked example) and read its worked
answer, computed by specviz's own code. `course_project_section()` runs the project's Experiments 1-4 beside the
course's printed output; the Simulated models tab shows it. Callbacks only translate: the figures and the text come
from specviz.labs.course_exercises.exercises, course_project and course_project_text.
"""

from __future__ import annotations

import gradio as gr

from specviz.app.callbacks import lab_callback
from specviz.app.fields import run_field
from specviz.labs.course_exercises import exercises as course
from specviz.labs.course_exercises import project as course_project
from specviz.labs.course_exercises import project_text

COURSE_INTRO = (
    "The course on Leviathan et al. (2023) that specviz grew from ends each lesson with an *Apply* exercise. Pick one: "
    "the answer is worked with the same functions the other tabs run (the Theory tab's formulas, the Sampling lab's "
    "β and residual, the engine's verify step, the sampler's temperature and top-k). The course prints no answers; "
    "where its worked text has a figure that does not follow from its own inputs, the answer shows both and the "
    "arithmetic. The Sampling lab's preset menu has the course's pairs (Experiment 1, Lesson 3, Lesson 4), and the "
    "Simulated models tab runs its hands-on project exactly as written.")


@lab_callback
def exercise_view(title):
    return course.exercise_markdown(title)


@lab_callback
def project_view(seed):
    return project_text.project_markdown(run_field("seed", seed))


def course_tab() -> None:
    """The exercise picker and its worked answer; the first answer is drawn when the tab is built."""
    gr.Markdown(COURSE_INTRO)
    first = list(course.EXERCISES)[0]
    exercise = gr.Dropdown(list(course.EXERCISES), value=first, label="Exercise or worked example", elem_id="sv-exercise")
    answer = gr.Markdown(course.exercise_markdown(first), elem_id="sv-exercise-answer")
    exercise.change(exercise_view, exercise, answer)


def course_project_section() -> None:
    """Experiments 1-4 of the course's project, our run beside its printed "Expected Output", on a button."""
    gr.Markdown("The course's project code seeds `np.random.default_rng(42)`, builds its two models by rolling fixed "
                "vectors, and prints an *Expected Output*. Here its experiments run as written (its p and q, models, "
                "γ = 3, 5, 7, c = 0.02, 1000 rounds), and every printed figure is set beside what that code gives. "
                "Takes a few seconds.")
    with gr.Row():
        seed = gr.Number(course_project.PROJECT_SEED, label="Seed of the shared generator", precision=0, minimum=0)
        run_button = gr.Button("Run the course's experiments 1-4 as written", elem_id="sv-course-project-run")
    result = gr.Markdown(elem_id="sv-course-project")
    run_button.click(project_view, seed, result)


def build(demo: gr.Blocks, trace_state: gr.State, tab: gr.Tab) -> None:
    course_tab()
