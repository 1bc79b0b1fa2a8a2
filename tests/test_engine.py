"""The engine on scripted models: exact output distribution, greedy identity, cache bookkeeping, replay."""


import pytest
import torch

from specviz.analysis.metrics import summarize
from specviz.config import DecodeConfig
from specviz.decoding import comparison, engine, plain
from specviz.trace import Trace
from tests.fakes import PROMPT, check_rounds_against_the_models, exact_sequence_probs, fake_pipeline
from tests.stats import chi_square_p_value

SAMPLINGS = [dict(temperature=1.0), dict(temperature=0.7, top_k=2), dict(temperature=1.3, top_p=0.8)]
SAMPLING_IDS = ["T=1", "T=0.7 top-k 2", "T=1.3 top-p 0.8"]


@pytest.mark.slow  # thousands of runs; the fast tier checks every sampling's rounds' rows (below) and verify's exact law
def test_speculative_sequences_follow_the_target_exactly():
    """One sampled χ² test of the engine, at T = 1 as its negative control below."""
    vocab, length, runs = 3, 3, 2000
    config = DecodeConfig(gamma=2, max_new_tokens=length, chat=False, **SAMPLINGS[0])
    exact = exact_sequence_probs(config, length, vocab)
    pipeline = fake_pipeline(vocab)
    counts = dict.fromkeys(exact, 0)
    for seed in range(runs):
        trace = engine.run_speculative(pipeline, PROMPT, DecodeConfig(**{**config.to_dict(), "seed": seed}))
        counts[tuple(trace.token_ids)] += 1
    support = [seq for seq, p in exact.items() if p > 0]
    assert sum(counts[seq] for seq in exact if exact[seq] == 0) == 0  # never a sequence the target forbids
    observed = torch.tensor([counts[seq] for seq in support], dtype=torch.float)
    expected = torch.tensor([exact[seq] for seq in support])
    assert chi_square_p_value(observed, expected / expected.sum()) > 0.001
    assert 0.5 * (observed / runs - expected).abs().sum() < 0.06  # total variation distance


@pytest.mark.slow
def test_lookup_then_model_rounds_mix_and_the_output_follows_the_target_exactly():
    vocab, length, runs = 3, 4, 3000
    # γ = 1 gives several rounds: the first has nothing to copy ("b" is new), later ones often do; which of
    # lookup and the model drafts a round depends on how each did before it.
    config = DecodeConfig(gamma=1, max_new_tokens=length, chat=False, temperature=1.0)
    exact = exact_sequence_probs(config, length, vocab)
    pipeline = fake_pipeline(vocab, drafter="ngram+model")
    counts = dict.fromkeys(exact, 0)
    copied_rounds = modelled_rounds = 0
    for seed in range(runs):
        trace = engine.run_speculative(pipeline, PROMPT, DecodeConfig(**{**config.to_dict(), "seed": seed}))
        counts[tuple(trace.token_ids)] += 1
        copied_rounds += sum(r.drafted > 0 and r.draft_forwards == 0 for r in trace.rounds)
        modelled_rounds += sum(r.draft_forwards > 0 for r in trace.rounds)
    assert copied_rounds > 300 and modelled_rounds > 300  # both drafters had their turn
    support = [seq for seq, p in exact.items() if p > 0]
    assert sum(counts[seq] for seq in exact if exact[seq] == 0) == 0
    observed = torch.tensor([counts[seq] for seq in support], dtype=torch.float)
    expected = torch.tensor([exact[seq] for seq in support])
    assert chi_square_p_value(observed, expected / expected.sum()) > 0.001
    assert 0.5 * (observed / runs - expected).abs().sum() < 0.08  # total variation distance over 81 sequences


def _keep_off_by_one(model, path):
    """The kept entries read one place late: a rejected draft stays in the target's cache."""
    late = [node + 1 for node in path] if len(model.tree_tokens) > len(path) else path
    model.tokens.extend(model.tree_tokens[node] for node in late)
    model.tree_tokens, model.tree_parents = [], []


@pytest.mark.slow
def test_negative_control_broken_rollback_is_caught(monkeypatch):
    """If the target cache kept the wrong entries after a rejection (off by one), the output would leave the target's
    law."""
    vocab, length, runs = 3, 3, 2000
    config = DecodeConfig(gamma=2, max_new_tokens=length, chat=False, temperature=1.0)
    exact = exact_sequence_probs(config, length, vocab)
    pipeline = fake_pipeline(vocab)
    monkeypatch.setattr(type(pipeline.target), "keep_path", _keep_off_by_one)
    counts = dict.fromkeys(exact, 0)
    for seed in range(runs):
        pipeline.target.reset()
        trace = engine.run_speculative(pipeline, PROMPT, DecodeConfig(**{**config.to_dict(), "seed": seed}))
        counts[tuple(trace.token_ids)] += 1
    observed = torch.tensor([counts[seq] for seq in exact], dtype=torch.float)
    expected = torch.tensor(list(exact.values()))
    assert 0.5 * (observed / runs - expected).abs().sum() > 0.1


@pytest.mark.parametrize("sampling,drafter", [*((sampling, "model") for sampling in SAMPLINGS), (SAMPLINGS[0], "ngram+model")],
                         ids=[*(f"{name} model" for name in SAMPLING_IDS), "T=1 lookup then model"])
def test_sampled_rounds_verify_the_models_own_rows_and_emit_what_verify_chose(sampling, drafter):
    pipeline = fake_pipeline(4, drafter=drafter)
    for seed in range(2):
        config = DecodeConfig(gamma=3, max_new_tokens=16, chat=False, seed=seed, **sampling)
        assert sum(round_.drafted for round_ in check_rounds_against_the_models(pipeline, PROMPT, config).rounds)


def test_negative_control_a_rollback_that_keeps_a_rejected_draft_fails_the_row_check(monkeypatch):
    pipeline = fake_pipeline(4)
    monkeypatch.setattr(type(pipeline.target), "keep_path", _keep_off_by_one)
    with pytest.raises(AssertionError, match="p rows"):
        check_rounds_against_the_models(pipeline, PROMPT, DecodeConfig(gamma=3, max_new_tokens=24, chat=False,
                                                                                temperature=1.0))


@pytest.mark.parametrize("drafter", ["model", "ngram", "ngram+model"])
@pytest.mark.parametrize("gamma", [1, 3, 8])
def test_greedy_equals_target_greedy(drafter, gamma):
    pipeline = fake_pipeline(vocab_size=5, drafter=drafter)
    config = DecodeConfig(gamma=gamma, max_new_tokens=40, chat=False)
    trace = engine.run_speculative(pipeline, "abcab", config)
    baseline = plain.baseline_decode(pipeline, "abcab", config)
    assert len(trace.token_ids) == 40
    assert trace.token_ids == baseline.token_ids


def test_tokens_fed_prove_the_prefix_is_never_re_encoded():
    pipeline = fake_pipeline(vocab_size=4)
    config = DecodeConfig(gamma=3, max_new_tokens=30, chat=False, temperature=1.0, seed=3)
    prompt_length = len(PROMPT)
    cache_lengths = []
    prompt_ids = [ord(ch) % 4 for ch in PROMPT]
    for round_, trace in engine.speculative_decode(pipeline, PROMPT, config):
        # After each round the target holds every token but the newest; the drafter only a valid prefix
        # of what it was shown (the sequence before this round, plus its own drafts but the last).
        cache_lengths.append((pipeline.target.cached_length, prompt_length + len(trace.token_ids) - 1))
        assert pipeline.target.tokens == (prompt_ids + trace.token_ids)[: pipeline.target.cached_length]
        shown = prompt_ids + trace.token_ids[: len(trace.token_ids) - len(round_.emitted)] + round_.draft_token_ids[:-1]
        assert pipeline.draft_model.tokens == shown
    assert all(held == expected for held, expected in cache_lengths)
    rounds = trace.rounds
    drafted = sum(r.drafted for r in rounds)
    # Target: the prompt once, then per round the one pending token plus the k drafts.
    assert pipeline.target.tokens_fed == prompt_length + (len(rounds) - 1) + drafted
    assert pipeline.target.forward_calls == len(rounds)
    # Draft: each round feeds what it has not seen (1 or 2 tokens, the prompt in round one) and k - 1 drafts.
    fed_by_draft = pipeline.draft_model.tokens_fed
    assert fed_by_draft <= prompt_length + len(trace.token_ids) + drafted
    rejections = sum(1 for r in rounds if r.accepted < r.drafted)
    assert sum(r.accepted == r.drafted for r in rounds) + rejections == len(rounds)
    assert any(r.accepted < r.drafted for r in rounds) and any(r.accepted == r.drafted for r in rounds)


def test_sampled_run_replays_exactly_from_its_seed():
    pipeline = fake_pipeline(vocab_size=6)
    config = DecodeConfig(gamma=4, max_new_tokens=25, chat=False, temperature=1.0, seed=42)
    first = engine.run_speculative(pipeline, PROMPT, config)
    second = engine.run_speculative(pipeline, PROMPT, config)
    strip = lambda t: [[(x.token_id, x.kind, x.uniform) for x in r.tokens] for r in t.rounds]  # noqa: E731
    assert strip(first) == strip(second)
    other = engine.run_speculative(pipeline, PROMPT, DecodeConfig(**{**config.to_dict(), "seed": 43}))
    assert strip(other) != strip(first)


def test_eos_stops_and_nothing_follows_it():
    pipeline = fake_pipeline(vocab_size=4, eos_ids=[2])
    for seed in range(20):
        config = DecodeConfig(gamma=4, max_new_tokens=50, chat=False, temperature=1.0, seed=seed)
        trace = engine.run_speculative(pipeline, PROMPT, config)
        assert 2 not in trace.token_ids[:-1]
        assert trace.stop_reason == ("eos" if trace.token_ids[-1] == 2 else "max_new_tokens")


def test_trace_round_trips_through_json_and_records_every_field():
    pipeline = fake_pipeline(vocab_size=5)
    config = DecodeConfig(gamma=3, max_new_tokens=20, chat=False, temperature=1.0, seed=1)
    trace = engine.run_speculative(pipeline, PROMPT, config)
    trace.baseline = plain.baseline_decode(pipeline, PROMPT, config)
    again = Trace.from_json(trace.to_json())
    assert again == trace
    kinds = {token.kind for r in trace.rounds for token in r.tokens}
    assert kinds <= {"accepted", "rejected", "corrected", "bonus"} and "rejected" in kinds
    for r in trace.rounds:
        for token in r.tokens:
            assert token.target_top and 0 <= token.target_prob <= 1
            if token.kind in ("accepted", "rejected"):
                assert token.draft_top and 0 <= token.uniform < 1
                assert token.accept_prob == pytest.approx(min(1, token.target_prob / token.draft_prob), abs=1e-5)
            if token.kind == "corrected":
                assert token.residual_top
    with pytest.raises(ValueError):
        Trace.from_json('{"schema": 99}')


def test_context_limit_stops_the_run_without_overflowing():
    pipeline = fake_pipeline(vocab_size=4)
    pipeline.target.max_length = 12
    config = DecodeConfig(gamma=4, max_new_tokens=100, chat=False, temperature=1.0, seed=2)
    trace = engine.run_speculative(pipeline, PROMPT, config)
    assert trace.stop_reason == "context"
    assert len(PROMPT) + len(trace.token_ids) == 12
    assert pipeline.target.cached_length <= 12


def test_max_new_tokens_is_exact_whatever_gamma():
    pipeline = fake_pipeline(vocab_size=3)
    for gamma, limit in [(1, 1), (4, 5), (7, 9), (16, 3)]:
        config = DecodeConfig(gamma=gamma, max_new_tokens=limit, chat=False, temperature=1.0)
        trace = engine.run_speculative(pipeline, PROMPT, config)
        assert len(trace.token_ids) == limit and trace.stop_reason == "max_new_tokens"


def test_warm_up_feeds_every_verification_width_then_runs_both_paths_once_per_process(monkeypatch):
    pipeline = fake_pipeline(vocab_size=5)
    config = DecodeConfig(gamma=3, max_new_tokens=20, chat=False)
    widths = []
    feed = type(pipeline.target).feed
    def counting_feed(self, ids, *args, **kwargs):
        widths.append(ids.numel())
        return feed(self, ids, *args, **kwargs)

    monkeypatch.setattr(type(pipeline.target), "feed", counting_feed)
    comparison.warm_up(pipeline, config)
    assert {1, 2, 3, 4} <= set(widths)  # every width a round can verify: γ + 1 = 4 at most
    assert pipeline.draft_model.forward_calls > 0  # and the drafter ran
    count = len(widths)
    comparison.warm_up(pipeline, config)
    assert len(widths) == count  # once per process for the same pair and γ
    trace = engine.run_speculative(pipeline, "abcab", config)  # a warmed pipeline decodes as before
    assert trace.token_ids == plain.baseline_decode(pipeline, "abcab", config).token_ids


def test_calibrating_times_the_target_once_per_target_and_again_for_a_larger_gamma():
    from specviz.decoding.calibration import calibrate

    pipeline = fake_pipeline(8)
    first = calibrate(pipeline, "fake-target", 3)
    calls = pipeline.target.forward_calls
    assert len(first) == 5 and all(ms > 0 for ms in first)  # at least MIN_CALIBRATED_K sizes
    assert calibrate(pipeline, "fake-target", 4) == first and pipeline.target.forward_calls == calls  # cached
    assert len(calibrate(pipeline, "fake-target", 8)) == 8 and pipeline.target.forward_calls > calls  # measured again
    trace = engine.run_speculative(pipeline, "abcabc", DecodeConfig(gamma=2, max_new_tokens=6, chat=False))
    assert trace.target_forward_ms == pipeline.target_forward_ms and summarize(trace).c_basis == "calibrated"


@pytest.mark.parametrize("drafter", ["model", "ngram+model"])
def test_calibrating_times_the_draft_step_beside_the_target_step_once_per_pair(drafter):
    """c's two steps come from the same alternating forwards, once: identical reruns then show the same c."""
    from specviz.decoding.calibration import STEP_SAMPLES, STEP_WARM_UP, calibrate

    pipeline = fake_pipeline(8, drafter=drafter)
    draft_model = pipeline.draft_model
    calibrate(pipeline, "fake-target", 3)
    assert pipeline.draft_step_ms > 0 and pipeline.target_forward_ms[0] > 0
    # every timed proposal drafted CALIBRATION_DRAFTS tokens, each a forward of the draft model (lookup not asked)
    assert draft_model.forward_calls >= (STEP_SAMPLES + STEP_WARM_UP) * 4
    calls = (pipeline.target.forward_calls, draft_model.forward_calls)
    steps = (pipeline.draft_step_ms, pipeline.target_forward_ms[0])
    calibrate(pipeline, "fake-target", 3)
    assert (pipeline.target.forward_calls, draft_model.forward_calls) == calls  # cached for the pair
    assert (pipeline.draft_step_ms, pipeline.target_forward_ms[0]) == steps
    config = DecodeConfig(gamma=2, max_new_tokens=8, chat=False)
    first, second = (summarize(engine.run_speculative(pipeline, "abcabc", config)) for _ in range(2))
    assert first.c_basis == second.c_basis == "calibrated" and first.c == second.c
    assert (first.draft_step_ms, first.target_step_ms) == steps


def test_prompt_lookup_is_not_timed_as_a_draft_model():
    from specviz.decoding.calibration import calibrate

    pipeline = fake_pipeline(8, drafter="ngram")
    calibrate(pipeline, "fake-target", 3)
    assert pipeline.draft_step_ms == 0.0
    trace = engine.run_speculative(pipeline, "abcabc", DecodeConfig(gamma=2, max_new_tokens=8, chat=False))
    assert summarize(trace).c_basis == "calibrated target"  # its per-token cost from the run, the target's timed once
