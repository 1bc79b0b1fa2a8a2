"""Tier 3: end to end on the real offline model (SmolLM2-135M-Instruct from the embedded GGUF)."""

import pytest

from specviz.config import OFFLINE_MODEL, DecodeConfig
from specviz.decoding import engine, plain
from specviz.decoding.pipeline import build_pipeline

PROMPTS = [
    "Alan Turing theorized that computers would one day become",
    "Repeat exactly: the cat sat on the mat, the cat sat on the mat, the cat sat on the mat.",
    "Write a Python function that returns the square of a number.",
    "Summarize: Water boils at 100 degrees Celsius at sea level. At higher altitudes, water boils at lower temperatures.",
]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_prompt_lookup_is_token_identical_to_target_greedy(offline_target, prompt):
    config = DecodeConfig(gamma=5, max_new_tokens=40)
    pipeline = build_pipeline(config)
    trace = engine.run_speculative(pipeline, prompt, config)
    assert trace.token_ids == plain.baseline_decode(pipeline, prompt, config).token_ids


@pytest.mark.parametrize("prompt", PROMPTS[:2])
def test_greedy_draft_model_is_token_identical_to_target_greedy(offline_target, tiny_draft_folder, prompt):
    config = DecodeConfig(draft=tiny_draft_folder, gamma=3, max_new_tokens=24)
    pipeline = build_pipeline(config)
    trace = engine.run_speculative(pipeline, prompt, config)
    assert trace.token_ids == plain.baseline_decode(pipeline, prompt, config).token_ids
    assert sum(r.accepted < r.drafted for r in trace.rounds) > 0  # a random draft is rejected: corrections ran


def test_self_draft_accepts_everything_and_keeps_caches_in_step(offline_target):
    """Target as its own draft at T=0: every draft is accepted, so every round ends in a bonus."""
    config = DecodeConfig(draft=OFFLINE_MODEL, gamma=4, max_new_tokens=30)
    pipeline = build_pipeline(config)
    for round_, trace in engine.speculative_decode(pipeline, PROMPTS[0], config):
        assert round_.accepted == round_.drafted
        sequence_length = trace.prompt_token_count + len(trace.token_ids)
        for model in (pipeline.target, pipeline.draft_model):
            assert model.cache.get_seq_length() == model.cached_length  # bookkeeping matches the real cache
        ends_with_accepted_eos = round_.tokens[-1].kind == "accepted"  # an accepted EOS draft: no bonus follows
        assert pipeline.target.cached_length == sequence_length - (not ends_with_accepted_eos)
    assert trace.token_ids == plain.baseline_decode(pipeline, PROMPTS[0], config).token_ids


def test_caches_stay_consistent_across_rejections(offline_target, tiny_draft_folder):
    config = DecodeConfig(draft=tiny_draft_folder, gamma=4, max_new_tokens=20, temperature=1.0, seed=5)
    pipeline = build_pipeline(config)
    for round_, trace in engine.speculative_decode(pipeline, PROMPTS[0], config):
        for model in (pipeline.target, pipeline.draft_model):
            assert model.cache.get_seq_length() == model.cached_length
        ends_with_accepted_eos = round_.tokens[-1].kind == "accepted"
        expected = trace.prompt_token_count + len(trace.token_ids) - (not ends_with_accepted_eos)
        assert pipeline.target.cached_length == expected


def test_sampled_run_replays_exactly_from_its_seed(offline_target):
    config = DecodeConfig(gamma=4, max_new_tokens=24, temperature=1.0, top_p=0.9, seed=7)
    pipeline = build_pipeline(config)
    first = engine.run_speculative(pipeline, PROMPTS[1], config)
    second = engine.run_speculative(pipeline, PROMPTS[1], config)
    assert first.token_ids == second.token_ids
    assert [[t.uniform for t in r.tokens] for r in first.rounds] == [[t.uniform for t in r.tokens] for r in second.rounds]
