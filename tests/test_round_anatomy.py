"""Round anatomy (labs/round_anatomy/): the hand-built trace of test_metrics with known forward times."""

import pytest

from specviz.analysis import speedup
from specviz.labs.round_anatomy import anatomy, figures
from tests.builders import hand_built_trace


@pytest.fixture
def trace():
    trace = hand_built_trace()  # draft_ms 4, 2, 0, 3; verify_ms 10 each; plain step 10 ms (the baseline's)
    for round_, draft_forward in zip(trace.rounds, [3.0, 1.5, 0.0, 2.5]):
        round_.draft_forward_ms, round_.verify_forward_ms = draft_forward, 8.0
    return trace


def test_each_round_splits_into_forwards_and_overhead(trace):
    assert anatomy.round_parts(trace.rounds[1]) == {anatomy.DRAFT_FORWARDS: 1.5, anatomy.DRAFT_OVERHEAD: 0.5,
                                                    anatomy.VERIFY_FORWARD: 8.0, anatomy.VERIFY_OVERHEAD: 2.0}
    old = hand_built_trace().rounds[1]  # recorded before the split: all of it counts as forwards
    assert anatomy.round_parts(old)[anatomy.DRAFT_OVERHEAD] == anatomy.round_parts(old)[anatomy.VERIFY_OVERHEAD] == 0


def test_the_timeline_is_consecutive_and_plain_takes_one_step_per_token(trace):
    segments, plain = anatomy.timeline(trace, first=2, count=2)
    assert [s.round_number for s in segments] == [2] * 4 + [3] * 4
    for before, after in zip(segments, segments[1:]):
        assert after.start_ms == pytest.approx(before.start_ms + before.ms)
    assert [(number, start, ms) for number, start, ms in plain] == [(2, 0.0, 10.0), (2, 10.0, 10.0), (2, 20.0, 10.0),
                                                                    (3, 30.0, 10.0)]


def test_the_summary_leaves_out_round_one_and_prices_the_overhead(trace):
    facts = anatomy.summary(trace)
    # rounds 2-4: drafting 1.5 + 0 + 2.5 forwards and 0.5 + 0 + 0.5 overhead; verifying 3 × (8 + 2)
    assert facts["totals_ms"] == {anatomy.DRAFT_FORWARDS: 4.0, anatomy.DRAFT_OVERHEAD: 1.0,
                                  anatomy.VERIFY_FORWARD: 24.0, anatomy.VERIFY_OVERHEAD: 6.0}
    assert (facts["tokens"], facts["plain_ms"]) == (5, 50.0)  # 3 + 1 + 1 tokens at 10 ms each
    assert facts["verify_in_steps"] == pytest.approx(0.8) and facts["draft_in_steps"] == pytest.approx(0.2)
    text = anatomy.explanation(facts)
    assert "the plain run's median step" in text and "against plain steps" not in text  # one measured speedup only
    assert "Over rounds 2–4 (every round after round 1), 5 tokens" in text


def test_the_summary_shows_the_live_tabs_speedups_and_the_waterfall_between_them(trace):
    """The live tab's sentence, word for word, then the waterfall from predicted to measured in ms per token."""
    from specviz.analysis.metrics import summarize
    from specviz.views.stats_text import stats_markdown

    metrics = summarize(trace)
    text = anatomy.explanation(anatomy.summary(trace))
    line = next(line for line in stats_markdown(trace, metrics).split("\n\n") if "measured speedup" in line)
    assert line in text and "**2.00×**" in line
    # 8 tokens in 40 ms: 5.0 ms a token, against the plain run's 80 ms for 8: 10.0
    assert "= this run **5.0**." in text and "measured speedup is 10.0 ÷ 5.0 = **2.00×**" in text
    trace.baseline = None
    text = anatomy.explanation(anatomy.summary(trace))
    assert "measured speedup</abbr>: tick *compare with plain decoding*" in text and "predicted speedup</abbr> **" in text


def test_the_titles_state_exactly_the_rounds_each_covers(trace):
    """Timeline and summary may cover different rounds, but each names its own, and the summary's agree with its bar."""
    for _ in range(12):  # a run of 16 rounds: the timeline draws 12 of them, the summary 15
        trace.rounds.append(trace.rounds[1])
    emitted = {number: len(round_.emitted) for number, round_ in enumerate(trace.rounds, 1)}
    segments, plain = anatomy.timeline(trace, first=2)
    timeline_title = figures.timeline_figure(segments, plain, emitted).layout.title.text
    facts = anatomy.summary(trace)
    assert timeline_title.startswith("Rounds 2–13 of 16, measured")
    assert figures.totals_figure(facts).layout.title.text.startswith("Rounds 2–16: where the time went")
    assert "Over rounds 2–16 (every round after round 1)" in anatomy.explanation(facts)
    segments, plain = anatomy.timeline(trace, first=16)
    assert figures.timeline_figure(segments, plain, emitted).layout.title.text.startswith("Round 16 of 16")


def test_the_figures_draw_every_segment(trace):
    segments, plain = anatomy.timeline(trace)
    emitted = {number: len(round_.emitted) for number, round_ in enumerate(trace.rounds, 1)}
    figure = figures.timeline_figure(segments, plain, emitted)
    assert sum(len(bar.x) for bar in figure.data[:4]) == len(segments) and len(figure.data[4].x) == len(plain)
    assert "+3" in list(figure.data[2].text)  # round 1's verify segment says it produced 3 tokens
    facts = anatomy.summary(trace)
    totals = figures.totals_figure(facts)
    assert totals.layout.title.text == "Rounds 2–4: where the time went, beside plain steps for their tokens"
    bars = figures.waterfall_figure(facts["waterfall"]).data[0]
    names = [name for name, _ in facts["waterfall"].parts]
    assert set(names) <= set(speedup.PART_NOTES) and speedup.TOKENS_AS_FELL in names  # each part is defined
    assert list(bars.x) == ["predicted", *names, "this run"] and bars.y[-1] == pytest.approx(5.0)
    assert bars.y[0] + sum(bars.y[1:-1]) == pytest.approx(bars.y[-1])  # the parts add up from predicted to measured


def test_the_engine_records_forward_times_inside_each_round():
    from specviz.config import DecodeConfig
    from specviz.decoding import engine
    from tests.fakes import fake_pipeline

    trace = engine.run_speculative(fake_pipeline(vocab_size=6), "abcab", DecodeConfig(max_new_tokens=12, chat=False))
    for round_ in trace.rounds:
        assert 0 <= round_.draft_forward_ms <= round_.draft_ms + 1e-6
        assert 0 <= round_.verify_forward_ms <= round_.verify_ms + 1e-6  # the fakes keep no forward clock
