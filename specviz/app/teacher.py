"""The teacher's lane: a Run and a Step for the projector that never wait behind the class's queue.

Gradio queues each event listener in a lane (its `concurrency_id`) that serves `concurrency_limit` events at once.
The class's Run waits in one lane (SPECVIZ_CONCURRENCY at once), so with 30 students the 30th waits for the
runs ahead of it. With SPECVIZ_TEACHER_KEY set, the page gets a sidebar, "Teacher", closed at first. The key typed
there (a password field: it never shows on the projector or in the address bar) unlocks two more buttons, Run
and Step on TEACHER_LANE, a lane of their own that serves one event at a time. They take the live tab's settings
and draw into its views, as Run and Step do; Stop and Reset stop them too.

Without the key nothing unlocks: a wrong or empty key gets WRONG_KEY and the buttons stay hidden, and the lane's
callbacks check the session's unlock again, so a direct API call without it is refused with NOT_UNLOCKED (it
never reaches the model). Without SPECVIZ_TEACHER_KEY there is no sidebar and no teacher endpoint at all.

All model work shares one thread (worker.py), which runs one round at a time for every session, so a teacher's
run interleaves round by round with the runs being served, instead of waiting for whole runs to end.
"""

from __future__ import annotations

import gradio as gr

from specviz.app.callbacks import quiet_refusals, refused
from specviz.app.live import pressed, run, step
from specviz.app.policy import is_teacher_key, teacher_key
from specviz.app.progress import JobSlot, queue_shown
from specviz.app.views import follow_latest_position

TEACHER_LANE = "teacher"  # the Gradio concurrency_id of the teacher's Run and Step: one event at a time
UNLOCKED = ("**Teacher's lane unlocked** for this tab: the two buttons below run with the settings of the live tab "
            "and start at once, however many runs the class has queued.")
WRONG_KEY = "**That is not the teacher key.** Nothing was unlocked; the class's Run and Step work as before."
NOT_UNLOCKED = "The teacher's lane needs the teacher key: unlock it in the Teacher sidebar, or use Run and Step."


def unlock(given):
    """The Unlock button: whether this tab is unlocked, the line to show, the lane's buttons shown or hidden, and
    the key box emptied (the key does not stay in the page)."""
    if is_teacher_key(given):
        return True, UNLOCKED, gr.update(visible=True), gr.update(value="")
    return False, WRONG_KEY, gr.update(visible=False), gr.update(value="")


def teacher_run(unlocked, slot=None, previous=None, **controls):
    """live.run on the teacher's lane, for a tab that unlocked it; refused otherwise. Its model work goes ahead of
    the class's on the model thread (worker.ModelThread)."""
    if unlocked is not True:
        raise refused(NOT_UNLOCKED)
    yield from run(_ahead(slot), previous, **controls)


def teacher_step(unlocked, session, slot=None, **controls):
    """live.step on the teacher's lane, for a tab that unlocked it; refused otherwise; ahead of the class too."""
    if unlocked is not True:
        raise refused(NOT_UNLOCKED)
    yield from step(session, _ahead(slot), **controls)


def _ahead(slot: JobSlot | None) -> JobSlot:
    """The tab's job slot, its next job marked to go ahead (JobSlot.start unmarks it: the tab's own Run stays in line)."""
    slot = slot or JobSlot()
    slot.ahead = True
    return slot


def build_teacher_lane(live, step_state: gr.State, job_state: gr.State, gpu) -> None:
    """With SPECVIZ_TEACHER_KEY set: the Teacher sidebar and its events (live: ui.LiveTab; gpu: ZeroGPU's decorator,
    or none). A key that is set but too short stops the app at start (policy.teacher_key says why)."""
    if teacher_key() is None:
        return
    unlocked = gr.State(False)  # per tab: set only by `unlock` with the right key
    with gr.Sidebar(label="Teacher", open=False, position="right", elem_id="sv-teacher"):
        gr.Markdown("### Teacher\nYour Run and Step on the projector, ahead of the class's queue.")
        key = gr.Textbox(label="Teacher key", type="password", max_lines=1, elem_id="sv-teacher-key")
        unlock_button = gr.Button("Unlock")
        message = gr.Markdown(elem_id="sv-teacher-message")
        with gr.Row(visible=False) as buttons:
            run_button = gr.Button("Run (teacher)", variant="primary", min_width=60)
            step_button = gr.Button("Step (teacher)", min_width=60)
    unlock_outputs = [unlocked, message, buttons, key]  # never queued: it answers at once, even mid-burst
    unlock_button.click(unlock, key, unlock_outputs, queue=False, api_name="teacher_unlock")
    key.submit(unlock, key, unlock_outputs, queue=False, api_visibility="private")
    lane = {"concurrency_id": TEACHER_LANE, "concurrency_limit": 1, **queue_shown(live.outputs["status"])}
    controls, outputs = live.controls, list(live.outputs.values())
    run_event = run_button.click(gpu(quiet_refusals(teacher_run)), [unlocked, job_state, live.outputs["trace"]],
                                 inputs_kwargs=controls, preprocess=False, outputs=outputs, api_name="teacher_run",
                                 **lane)
    run_event.then(follow_latest_position, live.outputs["trace"], live.position_slider, queue=False)
    run_button.click(pressed, job_state, step_state, queue=False)  # a Step after a Run starts afresh
    step_button.click(pressed, job_state, None, queue=False)
    step_button.click(gpu(quiet_refusals(teacher_step)), [unlocked, step_state, job_state], inputs_kwargs=controls,
                      preprocess=False, outputs=[*outputs, step_state], api_name="teacher_step", **lane)
