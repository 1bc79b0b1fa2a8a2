"""The load test: a class's burst against the app (served here on scripted models, and, in the slow tier, the
launched app on the real model), its cross-talk check, and its goals, which must fail when they are not met."""

import html
import json

import pytest

from specviz.app.request import PROMPT_LOOKUP
from specviz.bench import loadtest, loadtest_report
from specviz.bench.loadtest_burst import Press
from tests.fake_app import CLASS_LANE, serving_fake_app

pytestmark = pytest.mark.xdist_group("app-clients")  # one worker: conftest.pytest_xdist_make_scheduler

KEY = "correct-horse-battery"


def _summary(capsys) -> tuple[dict, str]:
    captured = capsys.readouterr()  # the JSON, then whatever Gradio prints as the server closes
    return json.JSONDecoder().raw_decode(captured.out)[0], captured.err


@pytest.mark.slow  # an in-process server and a minute of presses
def test_a_burst_on_scripted_models_measures_every_student_and_the_teacher(capsys):
    """Mechanics, not speed (this machine may be busy): every press is served and its own, sees its place, gets a
    first row; a queue really forms; the teacher's two presses are timed; the goals table says each goal."""
    sessions = CLASS_LANE + 2  # two wait: a queue forms
    with serving_fake_app(SPECVIZ_TEACHER_KEY=KEY) as url:
        code = loadtest.main(["--url", url, "--teacher-key", KEY, "--sessions", str(sessions), "--window", "0",
                              "--drafter", PROMPT_LOOKUP, "--max-new-tokens", "12"])
    summary, table = _summary(capsys)
    assert (summary["runs"], summary["errors"], summary["crosstalk"], summary["place_not_seen"]) == (sessions, 0, 0, 0), \
        summary["error_messages"]
    assert 0 < summary["first_row_p50_s"] <= summary["first_row_p95_s"] <= summary["end_p50_s"] * 10
    assert summary["longest_queue"] >= 1  # some student waited, and saw it
    assert set(summary["teacher"]) == {"step", "run"} and all(entry["first_row_s"] for entry in summary["teacher"].values())
    assert summary["goals_met"]["memory"] is None and "not measured" in table  # no --pid: memory unmeasured
    assert code == (1 if False in summary["goals_met"].values() else 0)
    assert len(table.strip().split("\n")) == len(summary["goals_met"])  # one line a goal


def _press(place_s=0.3, first_row_s=2.0, own=True, error=None) -> Press:
    return Press("s", "p", 0, place_s=place_s, place=(1, 3, 9.0), first_row_s=first_row_s, end_s=5.0, own=own,
                 error=error)


def _goals(presses, rss_single=None, rss_after=None, teacher=None) -> dict:
    burst = {"presses": presses, "teacher": teacher or {}, "rss_after": rss_after}
    return loadtest_report.summarize(len(presses), 1, burst, {"first_row_s": 1.0, "rss": rss_single, "errors": []})


def test_each_goal_fails_when_it_is_not_met():
    assert set(_goals([_press(), _press()], 1000, 1050)["goals_met"].values()) == {True, None}  # no teacher: unmeasured
    assert _goals([_press(), _press(place_s=1.2)])["goals_met"]["queue_place"] is False
    assert _goals([_press(), _press(place_s=None)])["goals_met"]["queue_place"] is False  # never saw its place
    assert _goals([_press()], 1000, 1101)["goals_met"]["memory"] is False
    assert _goals([_press(own=False)])["goals_met"]["crosstalk"] is False
    failed = _goals([_press(), _press(error="session 1: AppError: queue full", own=None)])
    assert failed["goals_met"]["errors"] is False and failed["goals_met"]["all_served"] is False
    slow_teacher = {"step": _press(first_row_s=0.5), "run": _press(first_row_s=3.0)}
    assert _goals([_press(first_row_s=2.0)] * 3, teacher=slow_teacher)["goals_met"]["teacher"] is False
    unqueued = [Press("s", "p", 0, place_s=0.2, place=(0, 0, None), first_row_s=0.4, end_s=2.0, own=True)] * 3
    quiet = _goals(unqueued, teacher=slow_teacher)  # nobody waited: the lane had nobody to pass, so no verdict
    assert quiet["goals_met"]["teacher"] is None and not loadtest_report.failed(quiet)
    assert "no queue formed" in loadtest_report.goals(quiet)["teacher"]["measured"]
    assert loadtest_report.failed(failed) and not loadtest_report.failed(_goals([_press()]))


def test_a_trace_of_another_prompt_counts_as_crosstalk(tmp_path):
    trace = {"prompt": "somebody else's prompt", "config": {"seed": 3}, "text": "hi", "rounds": [{}], "token_ids": [1]}
    (tmp_path / "other.json").write_text(json.dumps(trace))
    result = ['<div class="sv-row">', html.escape("hi"), "", str(tmp_path / "other.json")]
    assert loadtest.is_own(result, "my prompt", 3) is False
    assert loadtest.is_own(result, "somebody else's prompt", 3) is True  # the check itself accepts a run's own
    assert loadtest.is_own(result, "somebody else's prompt", 4) is False


def test_bad_arguments_are_one_line_and_exit_2(capsys):
    assert loadtest.main(["--sessions", "0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.slow
def test_a_class_on_the_launched_app_is_served_with_no_crosstalk(app_server, capsys):
    """The real offline model: a small class at once (three sessions: one waits while the lane serves two), with
    memory read from the server's process."""
    url, process = app_server
    code = loadtest.main(["--url", url, "--pid", str(process.pid), "--sessions", "3", "--window", "0", "--runs", "2",
                          "--memory-runs", "6", "--max-new-tokens", "6"])
    summary, _ = _summary(capsys)
    assert (summary["sessions"], summary["runs"], summary["errors"], summary["crosstalk"]) == (3, 6, 0, 0), summary
    assert summary["place_not_seen"] == 0 and summary["rss_vs_single"] is not None
    assert set(summary["memory_runs"]) == {"5", "6"} and summary["rss_growth"] is not None
    assert code == (1 if False in summary["goals_met"].values() else 0)
