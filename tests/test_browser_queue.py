"""In a real browser, with the class's lane full (gradio_client students on the app served here on scripted
models): a Run that waits shows its place in the queue on the status line within a second, a refusal leaves no
"Error" mark there, and the teacher's Run, unlocked in the sidebar, shows rows while the students still wait."""

import os
import re
import time
from pathlib import Path

import pytest

from specviz.app import teacher
from specviz.bench.loadtest import session
from tests.browser import POLL_MS, error_badges
from tests.fake_app import CLASS_LANE, fake_request, serving_fake_app

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser")]
KEY = "correct-horse-battery"
STATUS = "#sv-status"


@pytest.fixture(scope="module")
def served(chromium):
    """(url, page): the app on scripted models with a teacher key, open in headless Chromium."""
    with serving_fake_app(SPECVIZ_TEACHER_KEY=KEY) as url:
        session(url).predict(*fake_request("warm up, warm up").api_args(), api_name="/run")  # Gradio learns a run's time
        page = chromium.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.get_by_role("button", name="Run", exact=True).wait_for(timeout=60_000)
        yield url, page
        page.close()


def _fill_the_class_lane(url: str, waiting: int):
    """CLASS_LANE long runs being served and `waiting` more queued behind them; returns their jobs."""
    students = [session(url) for _ in range(CLASS_LANE + waiting)]
    return [student.submit(*fake_request(f"student {number} says hello hello", seed=number, max_new_tokens=300).api_args(),
                           api_name="/run") for number, student in enumerate(students)]


def _screenshot(page, tmp_path: Path, name: str) -> None:
    page.screenshot(path=str(Path(os.environ.get("SPECVIZ_SCREENSHOT_DIR", tmp_path)) / name), full_page=False)


def test_a_waiting_run_shows_its_place_within_a_second_and_a_refusal_no_error_mark(served, tmp_path):
    url, page = served
    # A refusal first, while the class's lane is free (it queues there like any Run; behind the students' runs it
    # waited past 30 s in the full suite on 2 loaded cores): its toast, and no "Error" mark on the status line.
    page.locator("textarea").first.fill("   ")  # refused: an empty prompt
    page.get_by_role("button", name="Run", exact=True).click()
    page.get_by_text("prompt is empty", exact=False).first.wait_for(timeout=60_000)
    page.wait_for_timeout(1000)
    assert error_badges(page, toasts=False) == 0
    jobs = _fill_the_class_lane(url, waiting=2)
    time.sleep(1.0)  # the students are in
    page.locator("textarea").first.fill("A student's question, asked while the class waits.")
    page.get_by_role("button", name="Run", exact=True).click()
    place_line = page.locator(f"{STATUS} .progress-text").filter(has_text="queue:")
    place_line.wait_for(state="visible", timeout=10_000)  # drawn, not only in the page: a box with a size
    text = place_line.inner_text()
    box = place_line.bounding_box()
    _screenshot(page, tmp_path, "queue-place.png")
    assert box["height"] >= 8 and box["width"] >= 40, box
    # How soon it shows (within 1 s of pressing Run) is the load test's to measure, against the server (0.21 s at the
    # slowest for 30 students); here: it shows while the two students are still ahead (the place below)
    place = re.search(r"queue: (\d+)/(\d+)", text)
    assert place and 1 <= int(place[1]) <= int(place[2]), text  # behind the two students queued before it
    for job in jobs:
        job.cancel()
    page.get_by_role("button", name="Stop", exact=True).click()
    page.wait_for_function(f"!document.querySelector('{STATUS}').innerText.includes('queue:')", timeout=120_000, polling=POLL_MS)
    stopped = page.locator(".toast-body").filter(has_text="Stopped by you")  # before or after its first round
    stopped.wait_for(timeout=30_000)  # Stop says what it did; closed as a person would, since for 10 s the toast
    stopped.locator(".toast-close").click()  # lies over the sidebar's toggle, which the next test opens


def test_the_teacher_unlocks_the_lane_and_runs_ahead_of_the_class(served, tmp_path):
    url, page = served
    page.get_by_role("button", name="Toggle Sidebar").click()
    key_box = page.get_by_label("Teacher key")
    key_box.fill("not the key at all")
    page.get_by_role("button", name="Unlock", exact=True).click()
    page.get_by_text("That is not the teacher key", exact=False).wait_for(timeout=10_000)
    assert not page.get_by_role("button", name="Run (teacher)").is_visible()
    key_box.fill(KEY)
    page.get_by_role("button", name="Unlock", exact=True).click()
    page.get_by_text("Teacher's lane unlocked", exact=False).wait_for(timeout=10_000)
    assert key_box.input_value() == ""  # the key does not stay in the page
    page.get_by_role("button", name="Reset", exact=True).click()  # no rows left from the test before
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length == 0", timeout=30_000, polling=POLL_MS)
    jobs = _fill_the_class_lane(url, waiting=2)
    time.sleep(1.0)
    page.locator("textarea").first.fill("The teacher's example, on the projector.")
    page.get_by_role("button", name="Run (teacher)").click()
    page.wait_for_function("document.querySelectorAll('#sv-rows .sv-row').length >= 1",
                           timeout=30_000, polling=POLL_MS)  # its own
    waiting = [job.status().code.name for job in jobs].count("IN_QUEUE")
    _screenshot(page, tmp_path, "teacher-lane.png")
    for job in jobs:
        job.cancel()
    page.get_by_role("button", name="Stop", exact=True).click()
    assert waiting >= 1, "the teacher's run waited for the class"
    assert teacher.UNLOCKED.startswith("**Teacher's lane unlocked**")
