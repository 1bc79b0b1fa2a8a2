"""The preallocated-cache model (models/static_cache.py), on the CPU: what a CUDA graph needs (fixed addresses, a
forward dynamo captures whole) checked without a GPU, and rollback by moving the write position checked exactly.
CUDA graphs themselves (mode "reduce-overhead") need a GPU: docs/gpu.md says how to time them there."""

import pytest
import torch

from specviz import engine
from specviz.config import DecodeConfig
from specviz.drafters.model import DraftModelDrafter
from specviz.models.cache import WeightsCache
from specviz.models.loading import LoadedModel
from specviz.models.static_cache import StaticCacheModel, supports_static_cache
from specviz.pipeline import Pipeline
from tests.fakes import FakeTokenizer
from tests.test_devices import VOCAB, tiny_model

PREFIX, WRONG, RIGHT = torch.arange(6), torch.tensor([9, 8, 7, 6]), torch.tensor([40, 41, 42, 43])


def static_twin(architecture: str, seed: int, compile_options=None, layers: int = 2, max_length: int = 64):
    """A tiny random model of a real architecture behind both interfaces: (dynamic-cache model, static one)."""
    dynamic = tiny_model(architecture, seed, "cpu", torch.float32, layers)
    return dynamic, StaticCacheModel(dynamic.hf_model, VOCAB, dynamic.device, f"static-{seed}", max_length,
                                     compile_options)


def fed_after_a_rollback(model) -> torch.Tensor:
    """Feed 6 tokens, 4 drafts that are then rejected, roll back to 6 and feed the right 4: their logits [4, V]."""
    model.reset()
    model.feed(PREFIX)
    model.feed(WRONG, logits_to_keep=4)
    model.crop(6)
    return model.feed(RIGHT, logits_to_keep=4)


@pytest.mark.parametrize("architecture", ["llama", "qwen2"])
def test_rolling_back_moves_the_write_position_and_leaves_no_trace(architecture):
    dynamic, static = static_twin(architecture, 0)
    rolled_back = fed_after_a_rollback(static)
    static.reset()
    static.feed(PREFIX)
    clean = static.feed(RIGHT, logits_to_keep=4)  # [4, V]
    assert static.cached_length == 10 and torch.equal(rolled_back, clean)  # the same shapes: bit for bit
    dynamic.reset()
    dynamic.feed(PREFIX)
    assert torch.allclose(clean, dynamic.feed(RIGHT, logits_to_keep=4), atol=1e-4)  # and the dynamic cache's logits


def test_the_decoding_forward_is_captured_whole_and_gives_the_eager_logits():
    """fullgraph=True fails on any graph break, which would also break a CUDA graph's capture; the "eager" backend
    runs what dynamo captured, so the CPU checks the capture without compiling kernels."""
    _, eager = static_twin("qwen2", 0)
    _, compiled = static_twin("qwen2", 0, compile_options={"backend": "eager", "fullgraph": True})
    assert torch.equal(fed_after_a_rollback(compiled), fed_after_a_rollback(eager))


def test_greedy_speculative_decoding_over_static_caches_is_the_targets_own():
    (_, target), (_, draft) = static_twin("qwen2", 1, layers=3, max_length=128), static_twin("qwen2", 2, max_length=128)
    pipeline = Pipeline(target, DraftModelDrafter(draft), FakeTokenizer(VOCAB), [], torch.device("cpu"), torch.float32,
                        draft, cache=WeightsCache())
    config = DecodeConfig(target="tiny", gamma=5, max_new_tokens=24, temperature=0).validate()
    trace = engine.run_speculative(pipeline, "The quick brown fox jumps over the lazy dog", config)
    assert trace.rounds[0].drafted == 5 and trace.rounds[0].accepted < 5  # drafts rejected, the caches rolled back
    assert trace.token_ids == engine.baseline_decode(pipeline, trace.prompt, config).token_ids


def test_a_sequence_longer_than_the_static_cache_is_refused_with_its_length():
    _, static = static_twin("llama", 0, max_length=8)
    static.reset()
    static.feed(PREFIX)
    assert static.max_length == 8
    with pytest.raises(ValueError, match="static cache of 8 tokens"):
        static.feed(RIGHT)


def test_only_models_without_sliding_window_layers_get_a_static_cache():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    assert supports_static_cache(tiny_model("qwen2", 0, "cpu", torch.float32).hf_model)
    sliding = Qwen2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, use_sliding_window=True, sliding_window=16,
                          max_window_layers=0)
    assert not supports_static_cache(Qwen2ForCausalLM(sliding))


def test_the_cpu_keeps_the_dynamic_cache_even_when_cuda_graphs_are_asked_for(monkeypatch):
    monkeypatch.setenv("SPECVIZ_CUDA_GRAPHS", "1")
    model = tiny_model("llama", 0, "cpu", torch.float32)
    loaded = LoadedModel(model.hf_model, FakeTokenizer(VOCAB), "tiny", torch.device("cpu"), torch.float32)
    assert type(loaded.language_model(VOCAB)).__name__ == "LanguageModel"
