"""The live tab's queue, shown, and the teacher's lane: the app served in this process on scripted models
(tests/fake_app.py), driven through gradio_client, which gets the same queue messages as the page."""

import time

import pytest

from specviz.app import policy, teacher
from specviz.bench.loadtest import is_own, session
from tests.fake_app import CLASS_LANE, fake_request, serving_fake_app

pytestmark = pytest.mark.xdist_group("app-clients")  # one worker: conftest.pytest_xdist_make_scheduler

KEY = "correct-horse-battery"
LANE_ENDPOINTS = {"/run", "/step", "/teacher_run", "/teacher_step"}


@pytest.fixture(scope="module")
def app_url():
    with serving_fake_app(SPECVIZ_TEACHER_KEY=KEY) as url:
        session(url).predict(*fake_request("warm up, warm up").api_args(), api_name="/run")  # timed once
        yield url


def _built(monkeypatch, key):
    """The app built with SPECVIZ_TEACHER_KEY = key (None: unset), not launched."""
    from specviz.app.ui import build_app

    if key is None:
        monkeypatch.delenv("SPECVIZ_TEACHER_KEY", raising=False)
    else:
        monkeypatch.setenv("SPECVIZ_TEACHER_KEY", key)
    return build_app()


def test_run_and_step_show_their_queue_place_on_the_status_line_and_the_teacher_has_a_lane(monkeypatch):
    demo = _built(monkeypatch, KEY)
    config = demo.get_config_file()
    status = next(component["id"] for component in config["components"]
                  if component.get("props", {}).get("elem_id") == "sv-status")
    lanes = {"/" + dependency["api_name"]: dependency for dependency in config["dependencies"]
             if "/" + str(dependency["api_name"]) in LANE_ENDPOINTS}
    assert set(lanes) == LANE_ENDPOINTS
    for name, dependency in lanes.items():  # "hidden" showed a waiting student nothing at all
        assert (dependency["show_progress"], dependency["show_progress_on"]) == ("minimal", [status]), name
    functions = {"/" + str(function.api_name): function for function in demo.fns.values()}
    assert {(functions[name].concurrency_id, functions[name].concurrency_limit) for name in ("/teacher_run",
            "/teacher_step")} == {(teacher.TEACHER_LANE, 1)}
    assert functions["/run"].concurrency_id != teacher.TEACHER_LANE
    assert functions["/teacher_unlock"].queue is False  # the key is checked at once, however long the queue
    assert "sidebar" in {component["type"] for component in config["components"]}


def test_without_a_key_there_is_no_teacher_lane_and_a_short_key_stops_the_app(monkeypatch):
    config = _built(monkeypatch, None).get_config_file()
    assert not {str(dependency["api_name"]) for dependency in config["dependencies"]} & {"teacher_run", "teacher_step",
                                                                                          "teacher_unlock"}
    assert "sidebar" not in {component["type"] for component in config["components"]}
    with pytest.raises(ValueError, match="at least 12 characters"):  # build_teacher_lane reads it first
        policy.teacher_key({"SPECVIZ_TEACHER_KEY": "short-key"})
    assert policy.teacher_key({"SPECVIZ_TEACHER_KEY": "  "}) is None


def test_a_wrong_or_missing_key_unlocks_nothing(app_url):
    client = session(app_url)
    request = fake_request("abc abc abc")
    with pytest.raises(Exception, match="needs the teacher key"):  # never unlocked: refused before any model work
        client.predict(*request.api_args(), api_name="/teacher_step")
    for wrong in ("", "correct-horse", KEY.upper(), KEY + "x"):
        assert client.predict(wrong, api_name="/teacher_unlock")[0] == teacher.WRONG_KEY
        with pytest.raises(Exception, match="needs the teacher key"):
            client.predict(*request.api_args(), api_name="/teacher_run")
    assert client.predict(KEY, api_name="/teacher_unlock")[0] == teacher.UNLOCKED
    assert is_own(client.predict(*request.api_args(), api_name="/teacher_run"), request.prompt, request.seed)
    assert client.predict("a guess", api_name="/teacher_unlock")[0] == teacher.WRONG_KEY  # a wrong key locks it again
    with pytest.raises(Exception, match="needs the teacher key"):
        client.predict(*request.api_args(), api_name="/teacher_run")


def _wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_waiting_runs_learn_their_place_and_the_teacher_goes_ahead_of_them(app_url):
    students = [session(app_url) for _ in range(CLASS_LANE + 2)]
    teacher_client = session(app_url)
    assert teacher_client.predict(KEY, api_name="/teacher_unlock")[0] == teacher.UNLOCKED
    # 96 tokens: the lane's runs outlast the teacher's Step by seconds on a loaded machine, so the class still waits
    jobs = [student.submit(*fake_request(f"student {number} says hello hello", seed=number, max_new_tokens=96).api_args(),
                           api_name="/run") for number, student in enumerate(students)]
    places = {}

    def every_student_knows_where_it_stands() -> bool:
        for number, job in enumerate(jobs):
            status = job.status()
            if number not in places and (status.code.name == "IN_QUEUE" and status.rank is not None
                                         or status.code.name in ("PROCESSING", "ITERATING", "FINISHED")):
                places[number] = (status.code.name, status.rank, status.queue_size, status.eta)
        return len(places) == len(jobs)

    _wait_for(every_student_knows_where_it_stands)
    queued = [place for place in places.values() if place[0] == "IN_QUEUE"]
    assert len(queued) >= len(jobs) - CLASS_LANE - 1, places  # the class lane serves CLASS_LANE at once
    assert all(size > rank >= 0 and eta is not None for _, rank, size, eta in queued), queued  # place and estimate
    teacher_request = fake_request("the teacher steps in", max_new_tokens=24)
    step = teacher_client.submit(*teacher_request.api_args(), api_name="/teacher_step")
    step.result()
    still_waiting = [job.status().code.name for job in jobs].count("IN_QUEUE")
    assert still_waiting >= 1, "the teacher's Step waited for the whole class"
    run = teacher_client.submit(*teacher_request.api_args(), api_name="/teacher_run")
    _wait_for(lambda: any('<div class="sv-row">' in str(output[0]) for output in run.outputs()))
    assert [job.status().code.name for job in jobs].count("IN_QUEUE") >= 1, "the teacher's Run waited for the class"
    assert is_own(run.result(), teacher_request.prompt, teacher_request.seed)
    for number, job in enumerate(jobs):
        assert is_own(job.result(), f"student {number} says hello hello", number)
