"""The preallocated-cache model (models/static_cache.py), on the CPU: what a CUDA graph needs (fixed addresses, a
forward dynamo captures whole) checked without a GPU, and rollback by moving the write position checked exactly.
CUDA graphs themselves (mode "reduce-overhead") need a GPU: docs/gpu.md says how to time them there."""

import contextlib

import pytest
import torch

from specviz.config import DecodeConfig
from specviz.decoding import engine, plain
from specviz.decoding.pipeline import Pipeline
from specviz.drafters.model import DraftModelDrafter
from specviz.models.cache import WeightsCache
from specviz.models.loading import LoadedModel
from specviz.models.static_cache import StaticCacheModel, supports_static_cache
from tests.builders import VOCAB, tiny_model
from tests.fakes import FakeTokenizer

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


@pytest.mark.slow  # dynamo traces the forward: seconds
def test_the_decoding_forward_is_captured_whole_and_gives_the_eager_logits():
    """fullgraph=True fails on any graph break, which would also break a CUDA graph's capture; the "eager" backend
    runs what dynamo captured, so the CPU checks the capture without compiling kernels."""
    _, eager = static_twin("qwen2", 0)
    _, compiled = static_twin("qwen2", 0, compile_options={"backend": "eager", "fullgraph": True})
    assert torch.equal(fed_after_a_rollback(compiled), fed_after_a_rollback(eager))


@pytest.mark.slow  # torch.compile imports dynamo: seconds
def test_a_short_first_forward_allocates_the_cache_eagerly_so_its_addresses_are_static():
    """A cache allocated while dynamo traces is not marked static (transformers skips mark_static_address then), and
    a CUDA graph skips any forward that writes into such an input: a short first prompt (≤ 32 tokens, no chat
    template) would run that model without CUDA graphs for the whole run. So the first forward runs eagerly."""
    _, compiled = static_twin("qwen2", 0, compile_options={"backend": "eager", "fullgraph": True})
    compiled.reset()
    compiled.feed(PREFIX)  # 6 tokens: a size that is compiled, but the cache is fresh
    for layer in compiled.cache.layers:  # mark_static_address's own tag (torch._dynamo.decorators)
        assert all(getattr(tensor, "_dynamo_static_input_type", None) for tensor in (layer.keys, layer.values))


def test_a_cache_allocated_in_inference_mode_rolls_back_outside_it():
    """On CUDA the first forward (inside feed's inference mode) moves each layer's write position to the device, which
    makes it an inference tensor; verify-cost and the engine's reset then move it outside inference mode. On the CPU
    the move is a no-op, so the test makes the cache there inside inference mode, as CUDA does."""
    _, static = static_twin("llama", 0)
    with torch.inference_mode():
        static.reset()
        static.feed(PREFIX)
    static.feed(WRONG, logits_to_keep=4)
    static.crop(6)  # outside inference mode, as measure_verify_costs crops
    assert static.cache.layers[0].cumulative_length.item() == 6
    static.reset()
    assert static.cache.layers[0].cumulative_length.item() == 0


@pytest.mark.slow  # dynamo traces the forward twice: seconds
def test_one_graph_for_one_token_and_one_for_every_other_size_whoever_calls():
    """On an H200 the Qwen2.5 pair compiled 7 graphs (20-35 s each) before its first timed token: dynamo guards on
    an input's dispatch keys, which differ between a tensor made inside inference mode (the engine's) and outside it
    (verify-cost's), and on logits_to_keep (the engine's warm-up feeds k tokens keeping 1). Neither may add a graph,
    and the logits kept must still be the eager model's."""
    from torch._dynamo.testing import CompileCounter

    counter = CompileCounter()
    eager, compiled = static_twin("qwen2", 0), static_twin("qwen2", 0, compile_options={"backend": counter,
                                                                                        "fullgraph": True})
    for model in (eager[1], compiled[1]):
        model.reset()
        model.feed(torch.arange(40))  # a prompt: eager, and it allocates the cache
    for k in (1, 2, 5):
        for inside in (False, True):
            for keep in (1, k):
                with torch.inference_mode() if inside else contextlib.nullcontext():
                    ids = torch.arange(k) + 50
                logits = [model.feed(ids, logits_to_keep=keep) for model in (eager[1], compiled[1])]
                assert logits[1].shape == (keep, VOCAB) and torch.allclose(logits[0], logits[1], atol=1e-5)
                for model in (eager[1], compiled[1]):
                    model.crop(40)
    assert counter.frame_count == 2  # size 1, then one graph with a dynamic size for 2..COMPILED_TOKENS


def test_greedy_speculative_decoding_over_static_caches_is_the_targets_own():
    (_, target), (_, draft) = static_twin("qwen2", 1, layers=3, max_length=128), static_twin("qwen2", 2, max_length=128)
    pipeline = Pipeline(target, DraftModelDrafter(draft), FakeTokenizer(VOCAB), [], torch.device("cpu"), torch.float32,
                        draft, cache=WeightsCache())
    config = DecodeConfig(target="tiny", gamma=5, max_new_tokens=24, temperature=0).validate()
    trace = engine.run_speculative(pipeline, "The quick brown fox jumps over the lazy dog", config)
    assert trace.rounds[0].drafted == 5 and trace.rounds[0].accepted < 5  # drafts rejected, the caches rolled back
    assert trace.token_ids == plain.baseline_decode(pipeline, trace.prompt, config).token_ids


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
    assert type(loaded.language_model(VOCAB)).__name__ == "TransformersModel"
