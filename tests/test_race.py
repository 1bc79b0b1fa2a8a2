"""The race (views/race.py): each lane's text appears at its run's own measured times, and the finish is the measured
speedup."""

import re

import pytest

from specviz.analysis.metrics import summarize
from specviz.analysis.speedup import run_wall_ms
from specviz.config import DecodeConfig
from specviz.decoding import comparison, engine
from specviz.views import race
from tests.fakes import FakeLanguageModel, fake_pipeline


@pytest.fixture(scope="module")
def trace():
    pipeline = fake_pipeline(5)
    pipeline.new_target = lambda: FakeLanguageModel(5, salt=1, name="target")
    run = comparison.compare(pipeline, "abcab", DecodeConfig(gamma=3, max_new_tokens=30, chat=False, temperature=0.0))
    # The scripted models take microseconds, as the machine's load lets them: fixed times as a real model's instead,
    # the rounds uneven, so that the lanes' timings are the test's own
    for index, round_ in enumerate(run.rounds):
        round_.draft_ms, round_.verify_ms, round_.record_ms = 20.0 + 5 * (index % 3), 60.0 + 10 * (index % 2), 1.0
    run.wall_ms = sum(r.draft_ms + r.verify_ms for r in run.rounds)
    run.record_ms = sum(r.record_ms for r in run.rounds)
    run.baseline.token_ms = [50.0 + 3 * (index % 4) for index in range(len(run.baseline.token_ms))]
    run.baseline.wall_ms = sum(run.baseline.token_ms)
    return run


def _delays(html: str, lane: str) -> list[float]:
    body = html.split(f'class="sv-race-lane {lane}"')[1].split('class="sv-race-lane')[0]
    return [float(value) for value in re.findall(r'sv-race-tok sv-race-show" style="animation-delay:([0-9.]+)s', body)]


def test_each_lane_shows_its_tokens_at_their_measured_times(trace):
    speculative, plain = race.lanes(trace)
    assert speculative.total_ms == pytest.approx(run_wall_ms(trace)) and plain.total_ms == trace.baseline.wall_ms
    assert [text for text, _ in plain.pieces] == trace.baseline.token_texts and plain.timed
    assert plain.pieces[-1][1] == pytest.approx(trace.baseline.wall_ms)  # the last plain token ends the plain run
    ends, elapsed = set(), 0.0  # a round's tokens appear together, when the round ended
    for round_ in trace.rounds:
        elapsed += round_.draft_ms + round_.verify_ms + round_.record_ms
        ends.add(round(elapsed, 6))
    assert {round(ms, 6) for _, ms in speculative.pieces} == ends
    assert "".join(text for text, _ in speculative.pieces) == "".join(t.text for r in trace.rounds for t in r.emitted)


def test_the_finish_delays_are_in_the_ratio_of_the_two_runs_times_and_the_result_is_the_measured_speedup(trace):
    html = race.race_html(trace)
    speculative, plain = _delays(html, "sv-lane-spec"), _delays(html, "sv-lane-plain")
    assert plain[-1] / speculative[-1] == pytest.approx(trace.baseline.wall_ms / run_wall_ms(trace), rel=0.01)
    metrics = summarize(trace)
    assert f"{metrics.speedup_measured:.2f}× ({metrics.speedup_low:.2f}–{metrics.speedup_high:.2f})" in html


def test_a_long_race_plays_faster_both_lanes_alike_and_says_so(trace):
    slow = trace.__class__(**{**trace.__dict__})
    slow.baseline = trace.baseline.__class__(**{**trace.baseline.__dict__})
    slow.baseline.token_ms = [ms + 1000.0 for ms in trace.baseline.token_ms]  # a plain run of 30 s and more
    slow.baseline.wall_ms = sum(slow.baseline.token_ms)
    html = race.race_html(slow)
    speed = slow.baseline.wall_ms / 1e3 / race.LONGEST_S
    assert f"played at {speed:.1f} times the pace they ran, both alike" in html
    assert _delays(html, "sv-lane-plain")[-1] == pytest.approx(race.LONGEST_S, abs=0.01)


def test_no_plain_run_no_race_and_text_is_escaped(trace):
    run = engine.run_speculative(fake_pipeline(5), "abcab", DecodeConfig(gamma=2, max_new_tokens=8, chat=False))
    assert race.race_html(run) == "" and race.lanes(None) is None
    tricky = trace.__class__(**{**trace.__dict__})
    tricky.baseline = trace.baseline.__class__(**{**trace.baseline.__dict__})
    tricky.baseline.token_texts = ["<b>"] * len(trace.baseline.token_ids)
    html = race.race_html(tricky)
    assert "&lt;b&gt;" in html and "<b>" not in html.split("The race</b>")[1]


def test_an_older_trace_without_token_times_spreads_its_tokens_evenly_and_says_so(trace):
    old = trace.__class__(**{**trace.__dict__})
    old.baseline = trace.baseline.__class__(**{**trace.baseline.__dict__})
    old.baseline.token_ms, old.baseline.after_round, old.baseline.token_texts = [], [], []
    speculative, plain = race.lanes(old)
    assert not plain.timed and [text for text, _ in plain.pieces] == [text for text, _ in speculative.pieces]
    steps = [b - a for (_, a), (_, b) in zip(plain.pieces, plain.pieces[1:])]
    assert max(steps) == pytest.approx(min(steps))
    assert "token times were not kept" in race.race_html(old)
