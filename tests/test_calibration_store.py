"""The calibration's timings kept between starts: a restarted process reads v(k) and c, times one step, rescales."""

import json

import pytest
import torch

from specviz.decoding import calibration_store
from specviz.decoding.calibration import calibrate
from tests.fakes import fake_pipeline


def test_a_restarted_process_reads_v_and_c_and_times_one_step():
    first = fake_pipeline(8)  # a fresh WeightsCache: a process of its own
    forwards = list(calibrate(first, "fake-target", 3))
    c = first.draft_step_ms / first.target_forward_ms[0]

    later = fake_pipeline(8)  # the next start, on the same machine and settings
    calibrate(later, "fake-target", 3)
    assert later.draft_model.forward_calls == 0  # c's steps were not timed again
    assert later.target.forward_calls <= 8  # the context, one warm-up and five timed steps: no v(k) sweep
    assert later.draft_step_ms / later.target_forward_ms[0] == pytest.approx(c)  # c as kept
    kept_v = [ms / forwards[1] for ms in forwards[1:]]
    assert [ms / later.target_forward_ms[1] for ms in later.target_forward_ms[1:]] == pytest.approx(kept_v)  # v(k) too


def test_kept_milliseconds_follow_this_starts_pace(tmp_path):
    path = tmp_path / "calibration.json"
    calibration_store.KeptTimings("key", lambda: 10.0, path).keep_forwards([10.0, 18.0, 25.0])
    kept = calibration_store.KeptTimings("key", lambda: 10.0, path)
    kept.keep_steps("draft", 4.0, 10.0)
    slower = calibration_store.KeptTimings("key", lambda: 20.0, path)  # the machine now runs at half the pace
    assert slower.forwards(3) == [20.0, 36.0, 50.0] and slower.steps("draft") == (8.0, 20.0)
    assert slower.forwards(4) is None and slower.steps("other draft") is None  # not kept: timed afresh
    assert "timed" in json.loads(path.read_text())["key"]
    aligned = calibration_store.KeptTimings("key", lambda: pytest.fail("timed again"), path)
    aligned.align(5.0)  # this process timed a step already: no new timing
    assert aligned.steps("draft") == (2.0, 5.0)


def test_timings_are_kept_per_machine_setting_and_can_be_turned_off(monkeypatch, tmp_path):
    key = calibration_store.machine_key("LlamaCppModel", "t", torch.device("cpu"), torch.float32)
    calibration_store.KeptTimings(key, lambda: 1.0).keep_forwards([1.0, 2.0])
    assert calibration_store.KeptTimings(key, lambda: 1.0).forwards(2) == [1.0, 2.0]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(threads + 1)
        other = calibration_store.machine_key("LlamaCppModel", "t", torch.device("cpu"), torch.float32)
    finally:
        torch.set_num_threads(threads)
    assert other != key and calibration_store.KeptTimings(other, lambda: 1.0).forwards(2) is None
    monkeypatch.setenv("SPECVIZ_CALIBRATION", "off")
    assert calibration_store.KeptTimings(key, lambda: 1.0).forwards(2) is None


def test_an_unreadable_file_is_as_if_nothing_were_kept(tmp_path):
    path = tmp_path / "calibration.json"
    path.write_text("{not json")
    assert calibration_store.KeptTimings("key", lambda: 1.0, path).forwards(1) is None
    calibration_store.KeptTimings("key", lambda: 1.0, path).keep_forwards([1.0])  # and it is written anew
    assert calibration_store.KeptTimings("key", lambda: 1.0, path).forwards(1) == [1.0]
