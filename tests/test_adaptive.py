"""Adaptive γ: the controller's choices on hand-made observations, and exactness when the engine uses it."""

import pytest
import torch

from specviz.analysis.metrics import chi_square_test, total_variation
from specviz.config import DecodeConfig
from specviz.decoding import engine, plain
from specviz.decoding.adaptive import DRAFT_MARGIN, PRIOR_ALPHA, AdaptiveGamma
from tests.fakes import PROMPT, check_rounds_against_the_models, exact_sequence_probs, fake_pipeline


def _controller(accept_probs, verify_ms_by_fed, draft_step_ms=0.0, rounds=40, max_gamma=8):
    """A controller that has seen `rounds` rounds with these acceptances, verify timings and draft cost."""
    controller = AdaptiveGamma(max_gamma)
    for index in range(rounds):
        controller.observe_acceptance(accept_probs)
        fed, ms = list(verify_ms_by_fed.items())[index % len(verify_ms_by_fed)]
        controller.observe_costs(draft_step_ms * (fed - 1), fed - 1, ms, fed)
    return controller


CPU_LIKE = {1: 34.0, 2: 44.0, 3: 50.0, 5: 57.0, 9: 90.0}  # target forward over n tokens, measured on this CPU


def test_everything_accepted_drafts_the_most():
    assert _controller([1.0] * 8, CPU_LIKE).choose(8, costless=True) == 8


def test_nothing_accepted_decodes_plainly():
    assert _controller([0.0], CPU_LIKE).choose(8, costless=True) == 0


def test_a_costly_draft_model_drafts_less_than_a_free_one():
    accept = [0.6] * 8
    free = _controller(accept, CPU_LIKE).choose(8, costless=True)
    costly = _controller(accept, CPU_LIKE, draft_step_ms=12.0).choose(8, costless=False)
    assert free > costly >= 0
    # and the choice is the argmax of E_k / T(k)
    controller = _controller(accept, CPU_LIKE, draft_step_ms=12.0)
    scores = [controller.expected_tokens(k) / controller.round_ms(k, costless=False) for k in range(9)]
    assert costly == max(range(9), key=lambda k: (scores[k], -k))


def test_a_draft_must_beat_a_plain_step_by_the_margin():
    flat = {1: 30.0, 2: 30.0}  # verifying one draft costs nothing extra, so E_1 = 1 + a_1 is the whole gain
    for accept, drafts in [(DRAFT_MARGIN / 2, False), (DRAFT_MARGIN * 2, True)]:
        controller = _controller([accept], flat, rounds=400, max_gamma=1)
        assert controller.expected_tokens(1) / controller.round_ms(1, True) > 1 / controller.round_ms(0, True)
        assert (controller.choose(1, costless=True) == 1) == drafts


def test_flat_verify_cost_like_a_gpu_drafts_more_than_a_steep_cpu():
    accept = [0.7] * 8
    gpu_like = {1: 20.0, 3: 20.5, 5: 21.0, 9: 22.0}
    assert _controller(accept, gpu_like).choose(8, costless=True) > _controller(accept, CPU_LIKE).choose(8, costless=True)


def test_expected_tokens_follow_the_per_position_rates():
    controller = _controller([1.0, 0.5], {1: 30.0}, rounds=400, max_gamma=2)
    a1, a2 = controller.acceptance()
    assert a1 == pytest.approx(1.0, abs=0.06) and a2 == pytest.approx(0.5, abs=0.03)
    assert controller.expected_tokens(0) == 1.0
    assert controller.expected_tokens(2) == pytest.approx(1 + a1 + a1 * a2)


def test_verify_cost_is_measured_per_size_and_optimistic_beyond_the_longest_timed():
    controller = _controller([0.5], {1: 30.0, 3: 40.0, 5: 50.0}, rounds=30)
    assert controller.verify_ms(3) == pytest.approx(40.0)
    assert controller.verify_ms(2) == pytest.approx(35.0)  # between timed sizes: a straight line
    assert controller.verify_ms(9) == pytest.approx(50.0)  # not timed yet: assumed no dearer than 5 tokens


def test_a_long_draft_is_tried_once_and_then_priced_by_its_own_timing():
    """Costs that bend (v(2) dear, v(5) cheap, as measured here) must not keep long drafts untried."""
    controller = _controller([0.8] * 4, {1: 34.0, 2: 50.0}, rounds=30, max_gamma=4)
    assert controller.choose(4, costless=True) == 4  # 5 tokens never timed: priced as 2 tokens, so tried
    for _ in range(30):
        controller.observe_costs(0.0, 0, 200.0, 5)  # it turns out very dear
    assert controller.choose(4, costless=True) < 4


def test_an_unused_position_drifts_back_to_the_prior():
    controller = _controller([0.0], CPU_LIKE, rounds=20)
    assert controller.acceptance()[0] < 0.1
    for _ in range(200):  # rounds that drafted nothing: nothing tested, the old evidence fades
        controller.observe_acceptance([])
    assert controller.acceptance()[0] == pytest.approx(PRIOR_ALPHA, abs=0.01)


def test_costless_proposals_are_scored_against_the_tokens_that_follow():
    controller = AdaptiveGamma(4, prior_alpha=0.0)
    controller.watch_proposal(10, [5, 6, 7])
    sequence = list(range(10)) + [5]
    controller.score_proposals(sequence)  # only index 10 exists yet: position 1 matched
    assert controller.scores.reached[:3] == [1.0, 0.0, 0.0] and controller.scores.accepted[0] == 1.0
    controller.score_proposals(sequence + [6, 9, 9])  # position 2 matches, position 3 does not; 4 is never reached
    assert [round(r, 3) for r in controller.scores.reached] == [0.95, 1.0, 1.0, 0.0]
    assert [round(a, 3) for a in controller.scores.accepted] == [0.95, 1.0, 0.0, 0.0]
    assert controller.scores.watched == []  # fully scored, no longer watched


@pytest.mark.parametrize("drafter", ["model", "ngram"])
def test_adaptive_sampled_rounds_verify_the_models_own_rows_and_emit_what_verify_chose(drafter):
    pipeline = fake_pipeline(4, drafter=drafter)
    for seed in range(2):
        config = DecodeConfig(gamma=3, max_new_tokens=24, chat=False, temperature=1.0, seed=seed, adaptive=True)
        check_rounds_against_the_models(pipeline, PROMPT, config)


@pytest.mark.slow  # 2,000 runs each; the fast tier checks the rounds' rows (above) and verify's exact law
@pytest.mark.parametrize("drafter", ["model", "ngram"])
def test_adaptive_sequences_follow_the_target_exactly(drafter):
    vocab, length, runs = 3, 3, 2000
    config = DecodeConfig(gamma=2, max_new_tokens=length, chat=False, temperature=1.0, adaptive=True)
    exact = exact_sequence_probs(config, length, vocab)
    pipeline = fake_pipeline(vocab, drafter=drafter)
    counts = dict.fromkeys(exact, 0)
    for seed in range(runs):
        trace = engine.run_speculative(pipeline, PROMPT, DecodeConfig(**{**config.to_dict(), "seed": seed}))
        counts[tuple(trace.token_ids)] += 1
    observed = torch.tensor([counts[seq] for seq in exact], dtype=torch.float)
    expected = torch.tensor(list(exact.values()))
    assert chi_square_test(observed, expected)[2] > 0.001
    assert total_variation(observed, expected) < 0.06


@pytest.mark.parametrize("drafter", ["model", "ngram"])
def test_adaptive_greedy_equals_target_greedy_and_drafts_at_most_gamma(drafter):
    pipeline = fake_pipeline(vocab_size=5, drafter=drafter)
    config = DecodeConfig(gamma=6, max_new_tokens=60, chat=False, adaptive=True)
    trace = engine.run_speculative(pipeline, "abcab", config)
    assert trace.token_ids == plain.baseline_decode(pipeline, "abcab", config).token_ids
    assert all(0 <= round_.drafted <= 6 for round_ in trace.rounds)


def test_adaptive_never_re_encodes_the_prefix():
    pipeline = fake_pipeline(vocab_size=4, drafter="ngram")
    config = DecodeConfig(gamma=4, max_new_tokens=40, chat=False, temperature=1.0, seed=5, adaptive=True)
    trace = engine.run_speculative(pipeline, PROMPT, config)
    drafted = sum(round_.drafted for round_ in trace.rounds)
    assert pipeline.target.tokens_fed == len(PROMPT) + (len(trace.rounds) - 1) + drafted
    assert pipeline.target.forward_calls == len(trace.rounds)


def test_adaptive_must_be_a_bool():
    with pytest.raises(ValueError, match="adaptive"):
        DecodeConfig(adaptive="yes").validate()


def test_a_draft_that_first_caught_up_on_the_prompt_is_not_priced_as_draft_steps():
    """The Qwen pair's 0.5B draft first reads the whole prompt (1.2 s) in the round that drafts 2 tokens: learnt
    as 600 ms a step, dearer than the 1.5B target's 400 ms, adaptive γ never drafted again."""
    def after_first_draft(caught_up):
        controller = AdaptiveGamma(4)
        controller.observe_acceptance([1.0, 1.0])
        controller.observe_costs(1200.0, 2, 430.0, 3, caught_up=caught_up)  # the first draft, and its verify
        for _ in range(5):
            controller.observe_acceptance([])
            controller.observe_costs(0.0, 0, 400.0, 1)  # then plain steps
        return controller

    assert after_first_draft(caught_up=60).choose(4, costless=False) > 0  # the catch-up is not a draft step
    assert after_first_draft(caught_up=1).choose(4, costless=False) == 0  # a real 600 ms step: drafting does not pay


def test_seeded_with_an_arithmetic_bound_targets_costs_adaptive_gamma_decodes_plainly_from_the_first_round():
    """4-bit weights on llama.cpp: v(2) = 1.8, a draft step 0.47 of the target's (this CPU, docs/results.md). At the
    prior α of 0.5 no draft pays, and the seeded policy knows it before any round is timed; unseeded, it prices
    verification with a GPU's flat prior and a draft as free, and drafts."""
    from specviz.decoding.adaptive import gamma_policy

    steps = [85.0, 153.0, 214.0, 282.0, 350.0]  # the target's forward over k = 1..5 tokens, ms
    seeded = gamma_policy(4, adaptive=True, costless=False, target_forward_ms=steps, draft_step_ms=40.0)
    assert seeded.before_draft(4) == 0
    assert gamma_policy(4, adaptive=True, costless=False).before_draft(4) > 0
    flat = gamma_policy(4, adaptive=True, costless=False, target_forward_ms=[30.0, 30.5, 31.0, 31.5, 32.0],
                        draft_step_ms=3.0)  # a forward bound by reading weights, a cheap draft: it drafts
    assert flat.before_draft(4) > 0
