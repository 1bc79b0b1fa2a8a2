"""When it pays (labs/when_it_pays/): recorded regimes, the live run beside them, and the two acceptance rules."""

import dataclasses
import json

import pytest

from specviz.labs.when_it_pays import regimes as when_it_pays
from specviz.labs.when_it_pays.figures import payoff_figure, verify_cost_figure
from specviz.trace import TopToken
from tests.builders import scripted_trace

READING_WEIGHTS = {1: 1.0, 2: 1.02, 4: 1.04, 8: 1.1, 16: 1.4}  # v(k) of a forward bound by reading the weights
ARITHMETIC = {1: 1.0, 2: 1.8, 4: 3.3, 8: 6.0, 16: 9.0}  # ... and of one bound by arithmetic


def regime(verify_cost, alpha=0.8, c=0.3, **more):
    return when_it_pays.Regime("r", "m", "2026-11-27", "b", "p", 10.0, verify_cost, alpha, c, "s", **more)


def test_a_forward_bound_by_reading_weights_pays_and_one_bound_by_arithmetic_does_not():
    weights, arithmetic = regime(READING_WEIGHTS), regime(ARITHMETIC)
    assert weights.weight_bound_up_to == 8 and arithmetic.weight_bound_up_to == 1
    gamma, best = weights.best()
    assert gamma >= 3 and best > 1.5
    assert arithmetic.best() == (0, 1.0)  # E(0.8, 1) = 1.8 < 0.3 + v(2) = 2.1: plain decoding
    assert "It pays" in when_it_pays.verdict(weights)
    assert "No γ pays" in when_it_pays.verdict(arithmetic) and "bound by arithmetic" in when_it_pays.verdict(arithmetic)
    cheap_draft = regime(ARITHMETIC, alpha=0.9, c=0.0)  # prompt lookup where text repeats: 1.9 against 1.8 at γ 1
    assert cheap_draft.best()[0] in (1, 2) and 1.0 < cheap_draft.best()[1] < 1.1  # it pays, a little


def test_the_recorded_regimes_load_with_their_date_machine_and_source(tmp_path):
    shipped = when_it_pays.load_regimes()
    assert len(shipped) >= 3 and all(r.date and r.machine and r.source and r.verify_cost[1] == 1.0 for r in shipped)
    backends = {r.backend for r in shipped}
    assert {"transformers", "llama.cpp"} <= backends
    by_backend = {r.backend: r for r in shipped if "CPU" in r.name}
    assert by_backend["transformers"].best()[0] > 0 and by_backend["llama.cpp"].weight_bound_up_to == 1
    broken = tmp_path / "regimes.json"
    broken.write_text(json.dumps({"regimes": [{"name": "no fields"}]}))
    with pytest.raises(ValueError, match="not a regimes file"):
        when_it_pays.load_regimes(broken)


def test_the_live_run_joins_the_regimes_with_its_measured_costs():
    live = when_it_pays.live_regime(scripted_trace())
    assert live.verify_cost[4] == pytest.approx(1.75) and live.c == pytest.approx(0.1)
    assert live.measured_speedup == pytest.approx(540 / 173) and live.measured_gamma == 3
    figure = payoff_figure([regime(READING_WEIGHTS), live])
    assert [trace.name for trace in figure.data if trace.showlegend is not False] == ["r", "this run"]
    assert verify_cost_figure([regime(ARITHMETIC)]).data[1].y[-1] == 9.0  # the measured point at k = 16
    assert when_it_pays.live_regime(None) is None


def test_matching_accepts_less_often_than_rejection_sampling_and_equally_when_one_hot():
    beta, match = when_it_pays.acceptance_by_rule({1: 0.5, 2: 0.5}, {1: 0.5, 2: 0.5})
    assert (beta, match) == (1.0, 0.5)  # identical distributions: rejection sampling always accepts
    assert when_it_pays.acceptance_by_rule([0.0, 1.0], [0.0, 1.0]) == (1.0, 1.0)  # greedy: one-hot, the rules agree
    trace = scripted_trace()
    assert when_it_pays.live_rules(trace) is None  # no tested draft kept its distributions
    for round_ in trace.rounds:
        for token in round_.tokens[:3]:  # p = (0.6, 0.4), q = (0.4, 0.6): β = 0.8, Σ p·q = 0.48
            token.overlap = 0.8
            token.target_top = [TopToken(1, "a", 0.6), TopToken(2, "b", 0.4)]
            token.draft_top = [TopToken(2, "b", 0.6), TopToken(1, "a", 0.4)]
    rules = when_it_pays.live_rules(trace)
    assert rules["positions"] == 18 and rules["rejection_sampling"] == pytest.approx(0.8)
    assert rules["matching"] == pytest.approx(0.48)


def test_the_live_run_is_judged_by_its_measured_interval_never_against_it():
    """It paid above 1× across the interval, lost below, cannot tell when the interval holds 1×; its one prediction
    beside; its costs only at the widths it verified."""
    trace = scripted_trace()
    live = when_it_pays.live_regime(trace)
    assert sorted(live.verify_cost) == [1, 4]  # round 1 read the prompt; every other round verified 4 tokens
    paid = dataclasses.replace(live, measured_speedup=1.5, measured_low=1.3, measured_high=1.7, run_predicted=1.45)
    lost = dataclasses.replace(paid, measured_speedup=0.8, measured_low=0.7, measured_high=0.9)
    unclear = dataclasses.replace(paid, measured_speedup=1.1, measured_low=0.9, measured_high=1.3)
    assert when_it_pays.verdict(paid).startswith("It paid: measured **1.50×** (1.30–1.70) at γ = 3")
    assert when_it_pays.verdict(lost).startswith("It did not pay") and "No γ pays" not in when_it_pays.verdict(lost)
    assert "its interval includes 1×" in when_it_pays.verdict(unclear)
    assert "v(4) = 1.75 one-token forwards" in when_it_pays.verdict(paid) and "**1.45×**" in when_it_pays.verdict(paid)
    for judged in (paid, lost, unclear):  # never the model's own verdict against the measurement
        assert "It pays" not in when_it_pays.verdict(judged) and "decode plainly (adaptive" not in when_it_pays.verdict(judged)
    unmeasured = dataclasses.replace(live, measured_speedup=None, measured_low=None, measured_high=None)
    assert "Tick *compare with plain decoding*" in when_it_pays.verdict(unmeasured)


def test_the_rules_count_each_tested_draft_once():
    """A correction carries its rejected draft's β: counted, it made 108 'tested drafts' of a run's 82."""
    import copy

    from specviz.analysis.metrics import summarize
    from specviz.trace import REJECTED

    trace = copy.deepcopy(scripted_trace())
    for round_ in trace.rounds:
        for token in round_.tokens:
            token.overlap = 0.5 if token.kind in ("accepted", "rejected") else 0.1
            token.target_top, token.draft_top = [TopToken(1, "a", 1.0)], [TopToken(1, "a", 1.0)]
    rules = when_it_pays.live_rules(trace)
    assert rules["positions"] == summarize(trace).tested_positions
    assert rules["rejection_sampling"] == pytest.approx(0.5)
    assert any(token.kind == REJECTED for round_ in trace.rounds for token in round_.tokens)
