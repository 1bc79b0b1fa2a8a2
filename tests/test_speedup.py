"""One measured speedup, one predicted, and the waterfall between them (speedup.py), the same on every surface."""

import json

import pytest

from specviz.analysis import speedup
from specviz.analysis.metrics import summarize
from specviz.labs.round_anatomy import anatomy as round_anatomy
from specviz.views.cli_output import json_summary, speedup_lines
from specviz.views.export import run_html
from specviz.views.stats_text import stats_markdown
from tests.builders import scripted_trace


def test_the_measured_speedup_is_this_runs_rate_over_the_plain_runs():
    trace = scripted_trace()
    # 18 tokens in 6 × (3 + 21.5) + 20 + 6 recording = 173 ms, against 18 × 30 ms
    assert speedup.run_wall_ms(trace) == pytest.approx(173.0)
    assert speedup.measured_speedup(trace) == pytest.approx(540 / 173)
    assert summarize(trace).speedup_measured == pytest.approx(540 / 173)
    trace.baseline = None
    assert speedup.measured_speedup(trace) is None


def test_the_waterfall_walks_from_the_prediction_to_the_measurement_in_named_parts():
    trace = scripted_trace()
    reconciled = speedup.waterfall(trace)
    alpha = 12 / 18  # 2 of every 3 drafts accepted, the third tested and rejected
    expected = 1 + alpha + alpha**2 + alpha**3  # E(α, 3)
    assert reconciled.predicted == pytest.approx(expected / (3 * 0.1 + 1.75))  # Σ E ÷ Σ (k c + v(k + 1))
    assert summarize(trace).speedup_predicted == pytest.approx(reconciled.predicted)
    parts = dict(reconciled.parts)
    assert parts[speedup.DRAFTING] == pytest.approx(0.0)  # 3 ms of drafting is exactly 3 × c × 10 ms
    assert parts[speedup.VERIFYING] == pytest.approx(0.0)  # every verify forward costs exactly v(4) steps
    assert parts[speedup.PROMPT] == pytest.approx(20 / 18)
    assert parts[speedup.OUTSIDE] == pytest.approx((6 * 4 + 6) / 18)  # accept/reject and recording
    assert parts[speedup.TOKENS_AS_FELL] == pytest.approx(10 * 6 * 2.05 / 18 - 10 * 2.05 / expected)
    assert reconciled.predicted_ms + sum(parts.values()) == pytest.approx(reconciled.measured_ms)
    assert reconciled.measured == pytest.approx(speedup.measured_speedup(trace))


def test_every_surface_shows_the_same_two_speedups():
    trace = scripted_trace()
    metrics = summarize(trace)
    measured, predicted = f"**{metrics.speedup_measured:.2f}×**", f"**{metrics.speedup_predicted:.2f}×**"
    live = stats_markdown(trace, metrics)
    anatomy = round_anatomy.explanation(round_anatomy.summary(trace))
    page = run_html(trace)  # the HTML export, and a gallery entry's page
    for surface in (live, anatomy):
        assert measured in surface and predicted in surface
    assert f"measured speedup</abbr> <b>{metrics.speedup_measured:.2f}×</b>" in page
    summary = json.loads(json.dumps(json_summary(trace, metrics)))
    assert summary["speedup_measured"] == pytest.approx(metrics.speedup_measured)
    assert summary["speedup_waterfall"]["measured"] == pytest.approx(metrics.speedup_measured)
    assert summary["speedup_predicted"] == pytest.approx(metrics.speedup_predicted)
    assert summary["baseline_tokens_per_s"] == pytest.approx(1e3 / 30) and summary["backend"] == "transformers"
    terminal = "\n".join(speedup_lines(trace, metrics))
    assert f"measured {metrics.speedup_measured:.2f}x" in terminal and f"predicted {metrics.speedup_predicted:.2f}x" in terminal
    assert live.count(">measured speedup</abbr>") == live.count(">predicted speedup</abbr>") == 1  # each named once
    assert "theoretical speedup" not in live and "against plain steps" not in live + anatomy


def test_round_anatomy_says_so_when_a_run_without_a_plain_run_ran_slower_than_when_it_was_calibrated():
    """No plain run timed in turn: c and v(k) come from the calibration, and a machine that has since slowed shows."""
    trace = scripted_trace()
    trace.baseline = None
    assert "a busy machine" not in round_anatomy.waterfall_line(round_anatomy.summary(trace))
    _slow_every_forward(trace, 4.0)
    line = round_anatomy.waterfall_line(round_anatomy.summary(trace))
    assert "a busy machine" in line and f"= this run **{speedup.waterfall(trace).measured_ms:.1f}**" in line


def test_a_run_timed_in_turn_with_its_plain_run_predicts_from_its_own_forwards_however_slow_the_machine():
    """Every forward four times slower, the plain run's too: the prediction moves with them, not with the calibration."""
    trace = scripted_trace()
    before = speedup.waterfall(trace).predicted
    _slow_every_forward(trace, 4.0)
    trace.baseline.step_ms, trace.baseline.wall_ms = 4 * trace.baseline.step_ms, 4 * trace.baseline.wall_ms
    assert speedup.waterfall(trace).predicted == pytest.approx(before)
    assert "a busy machine" not in round_anatomy.waterfall_line(round_anatomy.summary(trace))


def _slow_every_forward(trace, factor: float) -> None:
    for round_ in trace.rounds:
        round_.draft_ms, round_.verify_forward_ms = factor * round_.draft_ms, factor * round_.verify_forward_ms
        round_.verify_ms = round_.verify_forward_ms + 4.0
    trace.wall_ms = sum(round_.draft_ms + round_.verify_ms for round_ in trace.rounds)
