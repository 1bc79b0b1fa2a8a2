"""metrics.py: summarize on a hand-built trace whose every number is known, and the one χ² and TVD helpers."""

import math

import pytest
import torch

from specviz.analysis.metrics import chi_square_test, estimate_verify_cost, summarize, total_variation
from specviz.config import DecodeConfig
from specviz.trace import ACCEPTED, BONUS, Baseline, Trace
from tests.builders import chain_round, hand_built_trace

ALPHA = 4 / 6  # 4 of the 6 tested drafts below are accepted
DRAFT_LENGTHS = [4, 2, 0, 3]  # γ = 4; round 2 was cut short, round 3 a plain step (adaptive), round 4 drafted 3


def test_summarize_counts_acceptance_per_position_and_tokens_per_round():
    metrics = summarize(hand_built_trace())
    assert (metrics.rounds, metrics.generated_tokens, metrics.drafted_tokens) == (4, 8, 9)
    assert (metrics.tested_positions, metrics.accepted_tokens) == (6, 4)
    assert metrics.alpha == pytest.approx(ALPHA)
    assert metrics.reached_per_position == [3, 2, 1, 0] and metrics.accepted_per_position == [2, 2, 0, 0]
    assert metrics.alpha_per_position == [pytest.approx(2 / 3), 1.0, 0.0, None]  # position 4 was never reached
    assert metrics.tokens_per_round == 2.0 and metrics.target_calls == 4


def test_the_counts_behind_each_rate_match_its_definition():
    """The hand-built run: 9 drafted, 6 tested, 4 accepted, 3 of 4 rounds drafted, 8 tokens from 4 target calls."""
    metrics = summarize(hand_built_trace())
    assert metrics.alpha == pytest.approx(4 / 6)  # accepted drafts ÷ tested drafts
    assert metrics.draft_acceptance_rate == pytest.approx(4 / 9)  # ÷ drafted: round 1's 4th draft, round 4's 2nd, 3rd
    assert metrics.drafting_rounds == 3 and metrics.mean_acceptance_length == pytest.approx(1 + 4 / 3)
    assert metrics.tokens_per_round == pytest.approx(8 / 4)  # the plain step (round 3) counts here, not above
    assert metrics.mean_acceptance_length > metrics.tokens_per_round and metrics.alpha > metrics.draft_acceptance_rate


def test_a_run_without_drafts_has_no_engine_rates():
    trace = hand_built_trace()
    trace.rounds, trace.token_ids = [trace.rounds[2]], trace.token_ids[6:7]  # the plain step only
    metrics = summarize(trace)
    assert metrics.drafting_rounds == 0 and metrics.alpha == 0.0
    assert metrics.draft_acceptance_rate is None and metrics.mean_acceptance_length is None


def test_a_run_without_a_tested_draft_shows_no_alpha_and_counts_in_the_singular():
    """After one plain step the page says α = — (nothing tested), not 0.000, and "1 token / 1 target call"."""
    from specviz.views.stats_text import acceptance_lines

    trace = hand_built_trace()
    trace.rounds, trace.token_ids = [trace.rounds[2]], trace.token_ids[6:7]  # the plain step only
    alpha, rates, per_round = acceptance_lines(summarize(trace))
    assert "= —**" in alpha and "0.000" not in alpha and "(0 accepted / 0 tested)" in alpha
    assert "(1 token / 1 target call," in per_round and "**—**" in rates
    assert "= 0.667**" in acceptance_lines(summarize(hand_built_trace()))[0]  # a tested draft: the number
    assert "(8 tokens / 4 target calls," in acceptance_lines(summarize(hand_built_trace()))[2]


def test_every_shown_number_is_defined_once_with_a_formula_and_what_it_counts():
    from specviz.analysis.metrics import DEFINITIONS

    for key in ("alpha", "draft_acceptance_rate", "mean_acceptance_length", "tokens_per_round", "speedup_predicted",
                "speedup_measured", "c", "draft_step", "target_step"):
        definition = DEFINITIONS[key]
        assert definition.label and definition.formula and definition.counts
        assert "*" not in definition.sentence() and "`" not in definition.sentence()  # safe inside a hover title
    assert "tested" in DEFINITIONS["alpha"].formula and "drafted" in DEFINITIONS["draft_acceptance_rate"].formula
    assert len({definition.label for definition in DEFINITIONS.values()}) == len(DEFINITIONS)


def test_summarize_costs_and_speedups():
    metrics = summarize(hand_built_trace())
    assert metrics.draft_step_ms == pytest.approx(1.0)  # rounds 2-4: 5 ms over 5 draft forwards
    assert (metrics.target_step_ms, metrics.c_basis) == (10.0, "baseline") and metrics.c == pytest.approx(0.1)
    assert metrics.speedup_measured == pytest.approx(2.0) and metrics.identical  # 10 ms a token against 5
    assert metrics.tokens_per_s == pytest.approx(200.0)
    # round anatomy: 9 ms of drafting and 40 ms of verifying over 4 rounds; of the 40 ms of wall time, 35 ms were
    # model forwards, so 5 ms (1.25 a round) went to sampling, acceptance tests and bookkeeping
    assert (metrics.draft_ms_per_round, metrics.verify_ms_per_round, metrics.overhead_ms_per_round) == (2.25, 10.0, 1.25)


def test_overhead_is_never_negative():
    trace = _steady_trace(draft_ms=[4.0] * 4, verify_ms=[20.0] * 4, forward_ms=120.0)  # timers disagree: wall 100 ms
    assert summarize(trace).overhead_ms_per_round == 0.0


def test_predicted_speedup_uses_what_each_round_drafted():
    """Σ_r E(α, k_r) / Σ_r (k_r c + v(k_r + 1)), with E(α, k) = 1 + α + .. + α^k written out, not the config's γ; the
    hand-built rounds all verify in 10 ms whatever their width, so no v(k) is measured and a forward costs one step."""
    expected = sum(sum(ALPHA**i for i in range(k + 1)) for k in DRAFT_LENGTHS) / sum(k * 0.1 + 1 for k in DRAFT_LENGTHS)
    as_if_every_round_drafted_gamma = sum(ALPHA**i for i in range(5)) / (4 * 0.1 + 1)
    speedup = summarize(hand_built_trace()).speedup_predicted
    assert speedup == pytest.approx(expected)
    assert abs(speedup - as_if_every_round_drafted_gamma) > 0.1


def test_no_other_speedup_than_the_measured_with_its_interval_and_the_predicted():
    """One measured speedup, the two ends of its interval, and one predicted; the paper's E ÷ (k·c + 1) is the
    prediction at v(k) = 1."""
    names = [name for name in summarize(hand_built_trace()).to_dict() if "speedup" in name]
    assert names == ["speedup_measured", "speedup_low", "speedup_high", "speedup_predicted"]


# ---------------------------------------------------------------- the one χ² helper


def _steady_trace(draft_ms: list[float], verify_ms: list[float], **fields) -> Trace:
    """Rounds of 2 drafts each (both accepted, then a bonus) with these timings; no baseline."""
    rounds = []
    for index, (draft, verify) in enumerate(zip(draft_ms, verify_ms)):
        round_ = chain_round(index, 2, [ACCEPTED, ACCEPTED, BONUS], draft_ms=draft)
        round_.verify_ms = verify
        rounds.append(round_)
    config = DecodeConfig(gamma=2).to_dict()
    return Trace(config=config, prompt="p", prompt_token_count=1, target_name="t", draft_name="d", device="cpu",
                 dtype="float32", rounds=rounds, token_ids=[1] * 3 * len(rounds), wall_ms=100.0, **fields)


def test_c_leaves_out_the_warm_up_and_a_stray_slow_round():
    """Round 1 encodes the prompt, round 2 pays first-call costs, round 6 was slowed by another process: c is
    the median draft step (2 ms per forward) over the median verify (20 ms) of the steady rounds."""
    trace = _steady_trace(draft_ms=[40.0, 12.0, 4.0, 4.0, 4.0, 30.0, 4.0], verify_ms=[200.0, 60.0, 20.0, 20.0, 20.0, 90.0, 20.0])
    metrics = summarize(trace)
    assert metrics.c_basis == "verify" and metrics.c == pytest.approx(0.1)
    assert metrics.draft_step_ms == pytest.approx(2.0) and metrics.target_step_ms == pytest.approx(20.0)


def test_a_calibrated_target_step_gives_c_and_the_verify_cost_curve():
    trace = _steady_trace(draft_ms=[4.0] * 6, verify_ms=[20.0] * 6, target_forward_ms=[16.0, 16.0, 18.0, 20.0, 24.0])
    metrics = summarize(trace)
    assert metrics.c_basis == "calibrated target" and metrics.c == pytest.approx(2.0 / 16.0)
    cost = estimate_verify_cost(trace)
    assert [cost[k] for k in (1, 2, 3, 5)] == pytest.approx([1.0, 1.0, 18 / 16, 1.5])  # the timings themselves
    assert cost[5] < cost[6] < cost[17]  # beyond them, extrapolated upward
    assert estimate_verify_cost(_steady_trace(draft_ms=[4.0] * 6, verify_ms=[20.0] * 6)) is None  # one size: no curve


def test_a_run_timed_with_its_plain_run_takes_c_from_its_own_forwards_not_a_calibration():
    """A calibration from another moment (3 ms / 15 ms) gives way to this run's own steps: drafts of 40 ms a forward
    against the plain run's 22 ms steps, timed in the same seconds; without a plain run, the calibration."""
    trace = _steady_trace(draft_ms=[80.0] * 6, verify_ms=[20.0] * 6, target_forward_ms=[15.0, 16.0], draft_step_ms=3.0)
    assert summarize(trace).c_basis == "calibrated" and summarize(trace).c == pytest.approx(0.2)
    trace.baseline = Baseline(text="", token_ids=[1] * 18, wall_ms=400.0, step_ms=22.0)
    metrics = summarize(trace)
    assert metrics.c_basis == "baseline" and metrics.c == pytest.approx(40.0 / 22.0)
    assert (metrics.draft_step_ms, metrics.target_step_ms) == (40.0, 22.0)


def test_chi_square_against_closed_forms():
    statistic, dof, p_value = chi_square_test([600, 400], [0.5, 0.5])
    assert (statistic, dof) == (pytest.approx(40.0), 1) and p_value == pytest.approx(math.erfc(math.sqrt(20)), rel=1e-9)
    statistic, dof, p_value = chi_square_test([30, 50, 20], [0.3, 0.4, 0.3])
    assert statistic == pytest.approx(0 + 2.5 + 10 / 3) and dof == 2
    assert p_value == pytest.approx(math.exp(-statistic / 2), rel=1e-9)  # Q(1, x/2) = e^(−x/2): χ² with 2 dof
    assert chi_square_test(torch.tensor([30.0, 50.0, 20.0]), torch.tensor([0.3, 0.4, 0.3]))[2] == pytest.approx(p_value)
    assert chi_square_test([50, 50, 0], [0.5, 0.5, 0.0])[:2] == (0.0, 1)  # an empty impossible bin is skipped
    assert chi_square_test([50, 49, 1], [0.5, 0.5, 0.0]) == (math.inf, 1, 0.0)  # an impossible token was seen
    assert chi_square_test(torch.tensor([5.0, 1.0]), torch.tensor([1.0, 0.0]))[2] == 0.0
    pooled = chi_square_test([500, 480, 2, 1, 17], [0.5, 0.48, 0.002, 0.001, 0.017])  # expected 2, 1 pool with 17
    assert pooled[1] == 2 and pooled[0] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="at least one sample"):
        chi_square_test([0, 0], [0.5, 0.5])


def test_total_variation_of_sequences_tensors_and_mappings():
    assert total_variation([1, 0], [0, 1]) == 1.0 and total_variation([0.4, 0.6], [4, 6]) == pytest.approx(0.0)
    assert total_variation(torch.tensor([0.4, 0.3, 0.2, 0.1]), [0.5, 0.25, 0.15, 0.1]) == pytest.approx(0.1)  # 1 − β
    assert total_variation({"a": 3, "b": 1}, {"a": 1, "c": 1}) == pytest.approx(0.5)  # ½(|.75 − .5| + .25 + .5)
    with pytest.raises(ValueError, match="entries"):
        total_variation([0.5, 0.5], [1.0])


# ---------------------------------------------------------------- the definitions where the numbers are shown


def test_each_stats_label_carries_its_definition_on_hover_and_its_counts_in_words():
    import html

    from specviz.analysis.metrics import DEFINITIONS
    from specviz.views.stats_text import stats_markdown

    trace = hand_built_trace()
    stats = stats_markdown(trace, summarize(trace))
    assert "= 0.667** (4 accepted / 6 tested)" in stats
    assert "draft acceptance rate</abbr> **0.444** (4 accepted / 9 drafted: 3 drafted after a rejection, never tested)" in stats
    assert "mean acceptance length</abbr> **2.33** (1 + 4 accepted / 3 drafting rounds)" in stats
    assert "tokens per round</abbr>** (8 tokens / 4 target calls, plain steps included: 1 of them drafted nothing)" in stats
    assert "c</abbr> = 0.100 = " in stats and "draft step</abbr> 1.0 ms / " in stats
    predicted = summarize(trace).speedup_predicted
    assert f"predicted speedup</abbr> **{predicted:.2f}×** (from this run's α, c and v(k))" in stats
    # 8 tokens in 40 ms against the plain run's 8 in 80 ms
    assert "measured speedup</abbr> **2.00×** (200.0 <abbr" in stats
    assert "÷ plain decoding's 100.0, timed after the run in this process)" in stats  # a hand-built plain run
    for key in ("alpha", "draft_acceptance_rate", "mean_acceptance_length", "tokens_per_round", "c", "draft_step",
                "target_step", "speedup_predicted", "speedup_measured", "tokens_per_s", "overhead"):
        assert f'<abbr title="{html.escape(DEFINITIONS[key].sentence(), quote=True)}">' in stats, key
    trace.baseline = None
    assert "measured speedup</abbr>: tick *compare with plain decoding*" in stats_markdown(trace, summarize(trace))
