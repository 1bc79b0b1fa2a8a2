"""Speculative and plain decoding timed in turn (decoding/comparison.py), and the measured speedup's interval and the
machine's load that come of it (analysis/speedup.py, decoding/machine_load.py)."""

import dataclasses
import json

import pytest

from specviz.analysis import speedup
from specviz.analysis.metrics import summarize
from specviz.config import DecodeConfig
from specviz.decoding import comparison, engine, machine_load, plain
from specviz.trace import ACCEPTED, BONUS, CORRECTED, REJECTED, Baseline, Round, Token, Trace
from specviz.views.stats_text import headline, measurement_words
from tests.fakes import FakeLanguageModel, fake_pipeline

PROMPT = "abcab"


def _in_turn_pipeline(vocab_size: int = 5, drafter: str = "model"):
    """The scripted pair, with a second cache over the target for plain decoding, as build_pipeline makes one."""
    pipeline = fake_pipeline(vocab_size, drafter=drafter)
    pipeline.new_target = lambda: FakeLanguageModel(vocab_size, salt=1, name="target")
    return pipeline


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_plain_decoding_goes_in_turn_with_the_rounds_and_gives_what_it_gives_alone(temperature):
    """After each round the plain run catches up to the tokens the rounds emitted; its text is the plain run's alone."""
    config = DecodeConfig(gamma=3, max_new_tokens=40, chat=False, temperature=temperature, seed=5)
    pipeline = _in_turn_pipeline()
    rounds, trace = [], None
    for round_, trace in comparison.compared_decode(pipeline, PROMPT, config):
        rounds.append(round_)
        caught_up = len(trace.baseline.token_ids)  # every trace carries the plain run so far
        assert caught_up == len(trace.token_ids) or trace.baseline.token_ids[-1] in pipeline.eos_ids or trace.stop_reason
    baseline = trace.baseline
    alone = plain.baseline_decode(_in_turn_pipeline(), PROMPT, config)
    assert baseline.token_ids == alone.token_ids  # its own generator and its own cache: nothing shared with the rounds
    assert len(baseline.token_ms) == len(baseline.after_round) == len(baseline.token_ids)
    assert sum(baseline.token_ms) == pytest.approx(baseline.wall_ms)
    emitted = 0
    for round_ in rounds:  # the plain tokens after round r reach, at most, the rounds' tokens so far
        emitted += len(round_.emitted)
        decoded = sum(1 for index in baseline.after_round if index <= round_.index)
        assert decoded == min(emitted, len(baseline.token_ids)) or round_ is rounds[-1]
    assert baseline.after_round == sorted(baseline.after_round)
    if temperature == 0:
        assert trace.token_ids == baseline.token_ids
    assert pipeline.plain_target() is not pipeline.target
    assert trace.cores >= 1


def test_a_pipeline_with_one_cache_decodes_plainly_after_the_last_round():
    """A pipeline built by hand has no second cache: both runs on one would overwrite each other's entries."""
    config = DecodeConfig(gamma=2, max_new_tokens=20, chat=False, temperature=0.0)
    pipeline = fake_pipeline(5)
    assert pipeline.plain_target() is pipeline.target
    trace = comparison.compare(pipeline, PROMPT, config)
    assert trace.token_ids == trace.baseline.token_ids and trace.baseline.after_round == []
    assert speedup.speedup_interval(trace) is None  # nothing paired: no interval
    assert summarize(trace).speedup_measured is not None


def test_warm_up_runs_the_plain_path_on_its_own_cache_too():
    pipeline = _in_turn_pipeline()
    config = DecodeConfig(gamma=2, max_new_tokens=12, chat=False)
    plain_model = pipeline.plain_target()
    comparison.warm_up(pipeline, config)
    assert plain_model.tokens_fed > 0


def test_the_machine_load_is_other_processes_busy_ticks_over_the_wall_time():
    start = machine_load.CpuLoad(machine_ticks=5_000, own_ticks=1_000, wall_s=100.0)
    assert machine_load.CpuLoad(5_400, 1_200, 102.0).others_busy_cores(start, ticks_per_s=100) == pytest.approx(1.0)
    assert machine_load.CpuLoad(5_100, 1_150, 102.0).others_busy_cores(start, ticks_per_s=100) == 0.0  # never < 0
    assert machine_load.CpuLoad(5_001, 1_000, 100.05).others_busy_cores(start, ticks_per_s=100) is None  # too short
    now = machine_load.CpuLoad.read()
    assert now is None or (now.machine_ticks >= now.own_ticks >= 0)


# ---------------------------------------------------------------- the interval, on hand-built timings


def _paired_trace(round_ms: list[float], plain_token_ms: list[list[float]], drafted: int = 3) -> Trace:
    """Rounds that each drafted `drafted` and emitted len(plain_token_ms[r]) tokens in round_ms[r] ms, each followed by
    plain tokens of the given ms."""
    rounds = []
    for index, (ms, block) in enumerate(zip(round_ms, plain_token_ms)):
        emitted = len(block)
        kinds = [ACCEPTED] * (emitted - 1) + ([BONUS] if emitted == drafted + 1 else [REJECTED, CORRECTED])
        tokens = [Token(index, "t", kind, position + 1, 0.5, 0.5, 0.1, 1.0) for position, kind in enumerate(kinds)]
        rounds.append(Round(index, drafted, min(emitted - 1, drafted), tokens, draft_ms=ms * 0.2, verify_ms=ms * 0.8,
                            draft_forwards=drafted, verify_forward_ms=ms * 0.7, record_ms=0.0))
    token_ms = [ms for block in plain_token_ms for ms in block]
    after = [index for index, block in enumerate(plain_token_ms) for _ in block]
    total = len(token_ms)
    return Trace(DecodeConfig(gamma=drafted).to_dict(), "p", 4, "t", "d", "cpu", "float32", rounds,
                 token_ids=list(range(total)), wall_ms=sum(round_ms), record_ms=0.0,
                 baseline=Baseline("", list(range(total)), sum(token_ms), 10.0, token_ms, after), cores=2)


def test_a_steady_machine_gives_a_narrow_interval_about_the_measured_speedup():
    blocks = [[10.0] * (1 + index % 4) for index in range(16)]  # 1..4 tokens a round, 10 ms a plain token
    trace = _paired_trace([20.0] * 16, blocks)
    interval = speedup.speedup_interval(trace)
    measured = speedup.measured_speedup(trace)
    assert interval.low == pytest.approx(measured) and interval.high == pytest.approx(measured)  # no noise: no width
    assert interval.pairs == 16


def test_drift_that_slows_both_runs_alike_leaves_the_interval_narrow_and_jitter_widens_it():
    """A machine that halves its speed midway slows each round and the plain tokens after it alike: the paired times
    agree, so the interval stays narrow. Noise that hits one run and not the other widens it."""
    slow = [1.0 if index < 8 else 2.0 for index in range(16)]
    blocks = [[10.0 * factor] * 3 for factor in slow]
    drifted = _paired_trace([20.0 * factor for factor in slow], blocks)
    interval = speedup.speedup_interval(drifted)
    assert interval.high - interval.low < 1e-9 and interval.low == pytest.approx(1.5)
    jitter = [1.0, 1.6, 0.8, 1.3, 0.9, 1.7, 1.0, 0.7] * 2  # the rounds alone were slowed, at random
    jittered = _paired_trace([20.0 * factor for factor in jitter], [[10.0] * 3] * 16)
    wide = speedup.speedup_interval(jittered)
    assert wide.low < speedup.measured_speedup(jittered) < wide.high
    assert wide.high - wide.low > 0.2
    assert speedup.speedup_interval(dataclasses.replace(jittered, rounds=jittered.rounds[:3])) is None  # too few


def test_the_words_say_the_interval_the_machines_load_and_when_the_interval_includes_one():
    jitter = [1.0, 2.6, 0.5, 2.3, 0.6, 2.7, 1.0, 0.4] * 2
    trace = _paired_trace([25.0 * factor for factor in jitter], [[10.0] * 3] * 16)
    trace.others_busy_cores = 0.9
    metrics = summarize(trace)
    assert metrics.busy and metrics.speedup_low < 1.0 < metrics.speedup_high
    words = measurement_words(metrics, trace.cores)
    assert words.startswith(f"{metrics.speedup_measured:.2f}× ({metrics.speedup_low:.2f}–{metrics.speedup_high:.2f})")
    assert "the machine was busy: other programs kept 0.9 of its 2 cores busy" in words
    assert "The interval includes 1×" in words
    line = headline(trace, metrics)
    assert f"({metrics.speedup_low:.2f}–{metrics.speedup_high:.2f})" in line and "the machine was busy" in line
    assert "not clearly faster or slower than plain decoding" in line and "faster**" not in line  # no claim
    few = summarize(dataclasses.replace(trace, rounds=trace.rounds[:3]))
    assert "**" not in headline(trace, few).split(" · ")[0] and "faster" not in headline(trace, few).split(" · ")[0]
    trace.others_busy_cores = 0.05
    quiet = summarize(trace)
    assert not quiet.busy and "a quiet machine" in measurement_words(quiet) and "busy" not in headline(trace, quiet)


def test_without_the_load_the_page_gives_the_plain_tokens_spread_and_no_verdict():
    """A quiet VM's plain tokens spread as far as a busy one's: where the load was not read, no busy or quiet."""
    trace = _paired_trace([20.0] * 16, [[10.0, 25.0, 6.0]] * 16)
    assert trace.others_busy_cores is None and speedup.machine_busy(trace) is None
    metrics = summarize(trace)
    words = measurement_words(metrics)
    assert f"plain tokens varied by {speedup.plain_spread(trace):.0%}" in words
    assert "busy" not in words and "quiet" not in words


def test_the_interval_and_the_load_travel_in_the_cli_json():
    from specviz.views.cli_output import json_summary

    trace = _paired_trace([20.0 * f for f in [1.0, 1.3, 0.9, 1.1] * 4], [[10.0] * 3] * 16)
    trace.others_busy_cores = 0.1
    summary = json.loads(json.dumps(json_summary(trace, summarize(trace))))
    low, high = summary["speedup_interval"]
    assert low <= summary["speedup_measured"] <= high and summary["busy"] is False
    assert summary["others_busy_cores"] == 0.1 and summary["cores"] == 2 and summary["plain_spread"] == 0.0


def test_a_compared_run_on_the_scripted_pair_has_an_interval_that_holds_its_measured_speedup():
    config = DecodeConfig(gamma=3, max_new_tokens=48, chat=False, temperature=1.0, seed=3)
    trace = comparison.compare(_in_turn_pipeline(), PROMPT, config)
    metrics = summarize(trace)
    assert metrics.speedup_low <= metrics.speedup_measured <= metrics.speedup_high
    assert metrics.speedup_predicted > 0 and metrics.c_basis == "baseline"


def test_the_engine_records_each_rounds_recording_time_and_they_sum_to_the_runs():
    trace = engine.run_speculative(fake_pipeline(4), PROMPT, DecodeConfig(gamma=2, max_new_tokens=12, chat=False))
    assert all(round_.record_ms is not None and round_.record_ms >= 0 for round_ in trace.rounds)
    assert sum(round_.record_ms for round_ in trace.rounds) == pytest.approx(trace.record_ms)


def test_a_run_stopped_midway_is_measured_over_what_both_runs_decoded():
    """Stop after three rounds: the plain run has caught up to the same tokens, so the page still has a measured
    speedup, its interval and its prediction, and the race waits for a stop reason."""
    from specviz.trace import USER_STOP
    from specviz.views import race

    config = DecodeConfig(gamma=3, max_new_tokens=60, chat=False, temperature=0.0, seed=2)
    decoding = comparison.compared_decode(_in_turn_pipeline(), PROMPT, config)
    for _ in range(5):
        _, trace = next(decoding)
    decoding.close()
    assert not trace.stop_reason and trace.baseline.token_ids == trace.token_ids
    metrics = summarize(trace)
    assert metrics.speedup_measured is not None and metrics.speedup_predicted is not None
    assert metrics.speedup_low <= metrics.speedup_measured <= metrics.speedup_high
    assert race.race_html(trace) == ""  # still running: no race yet
    trace.stop_reason = USER_STOP  # what the page marks a stopped run with
    assert "The race" in race.race_html(trace)


def test_a_run_of_too_few_rounds_says_why_it_has_no_interval():
    trace = _paired_trace([20.0, 22.0, 21.0], [[10.0] * 3] * 3)
    metrics = summarize(trace)
    assert metrics.speedup_measured is not None and metrics.speedup_low is None
    assert "(no interval: 3 rounds, too few to tell)" in measurement_words(metrics)


def test_a_run_stopped_midway_keeps_the_machines_load_so_far(monkeypatch):
    """Stop ends the generator between rounds: the trace the page shows then already carries the load read so far,
    so a stopped run on a busy machine still says it was busy."""
    loads = [machine_load.CpuLoad(1_000 + 300 * i, 100 + 100 * i, 10.0 + i) for i in range(60)]  # 2 cores busy
    reads = iter(loads)
    monkeypatch.setattr(machine_load.CpuLoad, "read", classmethod(lambda cls: next(reads)))
    pipeline = fake_pipeline(5)
    pipeline.new_target = lambda: FakeLanguageModel(5, salt=1, name="target")  # plain decoding in turn
    for _, trace in comparison.compared_decode(pipeline, "abcab", DecodeConfig(gamma=2, max_new_tokens=30, chat=False)):
        break  # Stop after the first round
    assert not trace.stop_reason and trace.baseline is not None and trace.cores >= 1
    assert trace.others_busy_cores == pytest.approx(loads[1].others_busy_cores(loads[0]))
    assert trace.others_busy_cores > 1
