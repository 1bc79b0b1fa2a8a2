"""figures.py: the data drawn match the trace and the theory."""

import copy
import statistics

import pytest
import torch

from specviz.analysis.metrics import estimate_verify_cost, summarize
from specviz.config import DecodeConfig
from specviz.core import theory
from specviz.decoding import engine, plain
from specviz.views import figures
from tests.builders import hand_built_trace
from tests.fakes import fake_pipeline


@pytest.fixture(scope="module")
def trace():
    pipeline = fake_pipeline(vocab_size=6)
    config = DecodeConfig(gamma=4, max_new_tokens=60, chat=False, temperature=1.0, seed=11)
    result = engine.run_speculative(pipeline, "abcab", config)
    result.baseline = plain.baseline_decode(pipeline, "abcab", config)
    return result


def test_alpha_figure_matches_metrics(trace):
    m = summarize(trace)
    figure = figures.alpha_per_position_figure(m.alpha_per_position, m.reached_per_position, m.accepted_per_position, m.alpha)
    bars = figure.data[0]
    assert list(bars.x) == [1, 2, 3, 4]
    assert list(bars.y) == [a or 0 for a in m.alpha_per_position]
    assert list(bars.text) == [f"{a}/{r}" for a, r in zip(m.accepted_per_position, m.reached_per_position)]


def test_p_vs_q_bars_are_the_recorded_top_lists(trace):
    round_ = next(r for r in trace.rounds if any(t.kind == "corrected" for t in r.tokens))
    rejected = next(t for t in round_.tokens if t.kind == "rejected")
    figure = figures.p_vs_q_figure(round_, rejected.position)
    by_name = {trace_.name: trace_ for trace_ in figure.data}
    p_bars, q_bars = by_name["p (target)"], by_name["q (draft)"]
    target = {repr(e.text)[1:-1]: e.prob for e in rejected.target_top}
    for label, value in zip(p_bars.x, p_bars.y):
        assert value == pytest.approx(target.get(label, 0.0))
    overlap = by_name["min(p, q)"]
    assert list(overlap.y) == [min(a, b) for a, b in zip(p_bars.y, q_bars.y)]
    assert "residual norm(max(0, p − q))" in by_name
    assert f"r = {rejected.uniform:.3f}" in figure.layout.xaxis.title.text


def test_speedup_curve_is_the_closed_form(trace):
    m = summarize(trace)
    cost = estimate_verify_cost(trace)
    figure = figures.speedup_figure(m.alpha, m.c, 4, m.speedup_measured, cost)
    curve = figure.data[0]
    assert list(curve.y) == pytest.approx([theory.speedup(m.alpha, g, m.c) for g in range(1, 17)])
    best = figure.data[1]
    assert best.x[0] == theory.optimal_gamma(m.alpha, m.c, max_gamma=16)
    measured = [d for d in figure.data if d.name.startswith("measured")][0]
    assert measured.y[0] == pytest.approx(m.speedup_measured) and measured.x[0] == 4 and "mean" not in measured.name


def test_an_adaptive_runs_measured_point_sits_at_its_mean_draft_length():
    figure = figures.speedup_figure(0.8, 0.2, 2.5, 1.7)
    measured = [d for d in figure.data if d.name.startswith("measured")][0]
    assert measured.x[0] == 2.5 and measured.name == "measured 1.70× at mean γ 2.5"


def test_histogram_counts_rounds_and_predicts_the_capped_geometric(trace):
    m = summarize(trace)
    sizes = [len(r.emitted) for r in trace.rounds]
    figure = figures.tokens_per_round_figure(sizes, m.alpha, 4)
    observed, predicted = figure.data
    assert list(observed.y) == [sizes.count(n) for n in range(1, 6)]
    assert sum(predicted.y) == pytest.approx(len(sizes))


def _timed_by_width(trace):
    """The trace with drafts of 1..4 tokens whose verify forwards take 20 ms + 4 ms a token fed, ± 1 ms of noise."""
    timed = copy.deepcopy(trace)
    for round_ in timed.rounds:
        round_.drafted = 1 + round_.index % 4
        round_.verify_ms = 20.0 + 4.0 * (round_.drafted + 1) + (-1.0) ** (round_.index // 4)
        round_.verify_forward_ms = None  # the whole verify time is the forward's
    return timed


def test_verify_cost_with_a_plain_run_is_each_widths_mean_over_the_plain_step(trace):
    """v(k) = the mean verify forward at width k (round 1 left out) ÷ the plain run's mean step, timed in turn."""
    timed = _timed_by_width(trace)
    timed.baseline.step_ms = 23.0
    by_size = {}
    for round_ in timed.rounds[1:]:  # round 1 also encoded the prompt
        by_size.setdefault(round_.drafted + 1, []).append(round_.verify_ms)
    cost = estimate_verify_cost(timed)
    assert cost[1] == 1.0
    for k, times in by_size.items():
        assert cost[k] == pytest.approx(statistics.fmean(times) / 23.0)
    assert cost[9] > cost[5]  # beyond the widths used: read off the last two, growing


def test_verify_cost_without_a_plain_run_is_the_least_squares_line_relative_to_one_token(trace):
    """No plain run and no calibration: v(k) = t(k) / t(1) on the line through the mean verify time at each k seen
    twice."""
    timed = _timed_by_width(trace)
    timed.baseline, timed.target_forward_ms = None, []
    by_size = {}
    for round_ in timed.rounds[1:]:  # round 1 also encoded the prompt
        by_size.setdefault(round_.drafted + 1, []).append(round_.verify_ms)
    points = {k: sum(ms) / len(ms) for k, ms in by_size.items() if len(ms) >= 2}
    assert sorted(points) == [2, 3, 4, 5]
    sizes = torch.tensor([[float(k), 1.0] for k in points], dtype=torch.float64)  # [n, 2]: k and an intercept
    times = torch.tensor(list(points.values()), dtype=torch.float64).view(-1, 1)
    slope, intercept = torch.linalg.lstsq(sizes, times).solution.flatten().tolist()
    cost = estimate_verify_cost(timed)
    assert [cost[k] for k in range(1, 18)] == pytest.approx([(slope * k + intercept) / (slope + intercept) for k in range(1, 18)])
    assert cost[5] == pytest.approx(40.0 / 24.0, rel=0.05)  # close to the line the timings were made from


def test_verify_cost_ignores_a_draft_length_seen_in_one_round_only(trace):
    """A near-perfect draft drafts γ every round but the last: one short, noisy round must not set the slope."""
    steady = copy.deepcopy(trace)
    steady.baseline, steady.target_forward_ms = None, []
    for round_ in steady.rounds[1:]:
        round_.drafted, round_.verify_ms, round_.verify_forward_ms = 4, 50.0, None
    steady.rounds[-1].drafted, steady.rounds[-1].verify_ms = 1, 20.0  # cut short at EOS, timed on a busy moment
    assert estimate_verify_cost(steady) is None  # one k remains: no line to draw
    steady.baseline = copy.deepcopy(trace.baseline)
    steady.baseline.step_ms = 40.0  # a mean over many plain steps counts as a point
    assert estimate_verify_cost(steady)[5] == pytest.approx(50.0 / 40.0)


def test_histogram_predicts_from_what_each_round_drafted():
    """Rounds of 4, 2, 0 and 3 drafts (adaptive γ, a round cut short): each round's own capped law, not γ's."""
    hand_built = hand_built_trace()
    sizes, lengths = [len(r.emitted) for r in hand_built.rounds], [r.drafted for r in hand_built.rounds]
    alpha = summarize(hand_built).alpha
    figure = figures.tokens_per_round_figure(sizes, alpha, 4, draft_lengths=lengths)
    observed, predicted = figure.data
    assert list(observed.x) == [1, 2, 3, 4, 5] and list(observed.y) == [2, 0, 2, 0, 0]

    def law(n, k):  # P(a round that drafted k yields n tokens)
        return 0.0 if n > k + 1 else alpha**k if n == k + 1 else alpha ** (n - 1) * (1 - alpha)

    assert list(predicted.y) == pytest.approx([sum(law(n, k) for k in lengths) for n in range(1, 6)])
    as_if_gamma = figures.tokens_per_round_figure(sizes, alpha, 4).data[1]
    assert list(as_if_gamma.y) != pytest.approx(list(predicted.y))  # the plain-step round alone yields 1 for sure


def test_a_greedy_run_records_and_plots_the_untempered_distributions():
    """At T = 0 p and q are one-hot; the trace also keeps softmax(logits), whose argmaxes decided the round."""
    pipeline = fake_pipeline(vocab_size=6)
    config = DecodeConfig(gamma=4, max_new_tokens=30, chat=False, temperature=0.0)
    trace = engine.run_speculative(pipeline, "abcab", config)
    drafted = [t for r in trace.rounds for t in r.tokens if t.kind in ("accepted", "rejected")]
    assert drafted and all(t.target_top_untempered and t.draft_top_untempered for t in drafted)
    for round_ in trace.rounds:
        for token in round_.tokens:
            soft = {e.token_id: e.prob for e in token.target_top_untempered}
            assert sum(soft.values()) == pytest.approx(1.0, abs=1e-4) and max(e.prob for e in token.target_top) == 1.0
            if token.kind in ("accepted", "corrected", "bonus"):  # what greedy emits is the untempered argmax of p
                assert token.token_id == max(soft, key=soft.get)
    rejected = next(t for r in trace.rounds for t in r.tokens if t.kind == "rejected")
    round_ = next(r for r in trace.rounds if rejected in r.tokens)
    figure = figures.p_vs_q_figure(round_, rejected.position)
    names = {item.name for item in figure.data}
    assert {"p at T = 1", "q at T = 1"} <= names
    below = figure.layout.xaxis.title.text.replace("<br>", " ")
    assert "T = 1 view: argmax p" in below and "loses by" in below
    sampled = engine.run_speculative(pipeline, "abcab", DecodeConfig(gamma=4, max_new_tokens=8, chat=False, temperature=1.0))
    assert not any(t.target_top_untempered for r in sampled.rounds for t in r.tokens)  # only greedy runs keep them


def test_p_vs_q_opens_on_a_position_with_a_q_never_on_a_bonus(trace):
    from specviz.app.views import follow_latest_position, select_position

    full = next(r for r in trace.rounds if r.tokens[-1].kind == "bonus" and r.accepted > 0)
    assert figures.default_position(full) == full.accepted  # the last accepted draft, not the bonus at γ + 1
    names = [item.name for item in figures.p_vs_q_figure(full, figures.default_position(full)).data]
    assert "q (draft)" in names
    rejected = next(r for r in trace.rounds if any(t.kind == "rejected" for t in r.tokens))
    assert figures.default_position(rejected) == next(t.position for t in rejected.tokens if t.kind == "rejected")
    plain = copy.deepcopy(full)
    plain.tokens = [plain.tokens[-1]]  # a round that drafted nothing: its one token is all there is
    plain.tokens[0].position = 1
    assert figures.default_position(plain) == 1
    last = copy.deepcopy(trace)
    last.rounds[-1] = full
    assert "q (draft)" in [item.name for item in figures.run_figures(last, summarize(last))[1].data]
    assert follow_latest_position(last)["value"] == full.accepted
    round_number = last.rounds.index(full) + 1
    assert "q (draft)" in [item.name for item in select_position(last, round_number, None)[0].data]


def test_p_vs_q_tick_labels_are_short_and_distinct_and_the_alpha_label_is_in_the_title(trace):
    from specviz.trace import TopToken

    labels = figures.tick_labels([(0.5, " the"), (0.3, "the"), (0.1, "a very long token indeed"),
                                  (0.05, "x" * 12), (0.05, "x" * 13)], [1, 2, 3, 4, 5])
    assert labels[:3] == ["·the", "the", "a·very·lo…"] and len(set(labels)) == 5
    assert all(len(label.split(" #")[0]) <= figures.TICK_CHARS for label in labels)
    round_ = next(r for r in trace.rounds if r.accepted > 0)
    round_.tokens[0].target_top.append(TopToken(99, "an extremely long token text", 0.001))
    figure = figures.p_vs_q_figure(round_, round_.tokens[0].position)
    assert figure.layout.xaxis.tickangle == -45 and max(len(label) for label in figure.data[0].x) <= figures.TICK_CHARS
    m = summarize(trace)
    alpha = figures.alpha_per_position_figure(m.alpha_per_position, m.reached_per_position, m.accepted_per_position,
                                              m.alpha)
    assert not alpha.layout.annotations  # no label on the dashed line, where a bar's count could sit
    assert alpha.data[0].textposition == "none"  # the counts sit under the axis, clear of the line and the bars
    assert list(alpha.layout.xaxis.ticktext) == [f"{i}<br>{a}/{r}" for i, a, r in
                                                 zip([1, 2, 3, 4], m.accepted_per_position, m.reached_per_position)]
    assert f"(all: {m.alpha:.2f}, dashed)" in alpha.layout.title.text


def test_the_toolbar_stands_upright_in_a_right_margin_of_its_own(trace):
    for figure in figures.run_figures(trace, summarize(trace)):
        assert figure.layout.template.layout.modebar.orientation == "v"
        assert figure.layout.margin.r >= 40
