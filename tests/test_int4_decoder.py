"""The int4 draft's lean decode step (int4_decoder.py): the 4-bit copy's numbers, its own cache."""

import copy

import pytest
import torch
from transformers import DynamicCache, LlamaForCausalLM

from specviz.config import QUANTIZED_DRAFTER, DecodeConfig
from specviz.decoding.pipeline import build_pipeline
from specviz.drafters.weights import int4_draft_step
from specviz.models import cpu_linear, int4, int4_decoder
from specviz.models import loading as models
from tests.builders import tiny_llama, tiny_qwen2


def feed_both(hf_model, prompt_length: int, steps: list[int], crop_after: int):
    """Feed the 4-bit copy and the lean step the same chunks, both starting from the model's own prompt cache
    (as the int4 drafter does); return the largest logit difference and both cache lengths at the end."""
    draft_copy, lean = int4.quantized_copy(hf_model), int4_decoder.Int4Decoder(hf_model)
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, hf_model.config.vocab_size, (1, prompt_length + sum(steps)), generator=generator)
    with torch.inference_mode():
        prompt_cache = DynamicCache(config=hf_model.config)
        hf_model(input_ids=ids[:, :prompt_length], past_key_values=prompt_cache, use_cache=True)
        copy_cache, lean_cache = copy.deepcopy(prompt_cache), copy.deepcopy(prompt_cache)
        worst, position = 0.0, prompt_length
        for number, width in enumerate(steps):
            chunk = ids[:, position : position + width]
            expected = draft_copy(input_ids=chunk, past_key_values=copy_cache, use_cache=True, logits_to_keep=width)
            got = lean(input_ids=chunk, past_key_values=lean_cache, logits_to_keep=width)
            copy_cache, lean_cache = expected.past_key_values, got.past_key_values
            worst = max(worst, (expected.logits - got.logits).abs().max().item())
            position += width
            if number == crop_after:  # a rejection: both roll back two tokens, then go on from there
                copy_cache.crop(-2), lean_cache.crop(-2)
                position -= 2
    return worst, copy_cache.get_seq_length(), lean_cache.get_seq_length()


def test_the_lean_step_gives_the_4bit_copys_logits_on_a_tiny_llama():
    worst, copy_length, lean_length = feed_both(tiny_llama(), 40, [1, 3, 1, 1, 2, 1], crop_after=2)
    assert worst < 1e-4 and copy_length == lean_length == 40 + 9 - 2


def test_the_lean_step_gives_the_4bit_copys_logits_on_the_offline_target(offline_target):
    worst, copy_length, lean_length = feed_both(offline_target.hf_model, 120, [1, 1, 2, 1, 5, 1], crop_after=3)
    assert worst < 1e-3 and copy_length == lean_length == 120 + 11 - 2


@pytest.mark.parametrize("overrides", [dict(attention_bias=True), dict(mlp_bias=True)])
def test_the_lean_step_gives_the_4bit_copys_logits_on_a_llama_with_biases(overrides):
    worst, copy_length, lean_length = feed_both(tiny_llama(**overrides), 40, [1, 3, 1, 1, 2, 1], crop_after=2)
    assert worst < 1e-4 and copy_length == lean_length == 40 + 9 - 2


def test_the_lean_step_gives_the_4bit_copys_logits_on_a_tiny_qwen2():
    model = tiny_qwen2()
    assert model.model.layers[0].self_attn.q_proj.bias is not None and int4_decoder.supports(model)
    worst, copy_length, lean_length = feed_both(model, 40, [1, 3, 1, 1, 2, 1], crop_after=2)
    assert worst < 1e-4 and copy_length == lean_length == 40 + 9 - 2


@pytest.mark.skipif(not cpu_linear.packing_available(), reason="this torch build has no oneDNN")
def test_a_draft_that_reads_its_prompt_densely_gives_the_same_logits():
    model = tiny_qwen2()
    kernel_only, dense = int4_decoder.Int4Decoder(model), int4_decoder.Int4Decoder(model, dense_prompt=True)
    ids = torch.randint(0, 320, (1, int4.DENSE_ROWS + 40), generator=torch.Generator().manual_seed(5))
    with torch.inference_mode():
        prompt = ids[:, :-3]  # a prompt long enough for the dense path, then three drafted tokens one at a time
        expected, got = kernel_only(prompt, logits_to_keep=2), dense(prompt, logits_to_keep=2)
        assert (expected.logits - got.logits).abs().max().item() < 0.05
        for position in range(ids.shape[1] - 3, ids.shape[1]):
            token = ids[:, position : position + 1]
            expected = kernel_only(token, past_key_values=expected.past_key_values)
            got = dense(token, past_key_values=got.past_key_values)
            assert (expected.logits - got.logits).abs().max().item() < 0.05
            assert torch.equal(expected.logits.argmax(-1), got.logits.argmax(-1))


def test_a_packed_only_target_gives_the_same_4bit_draft():
    """A target over the packed-copy budget keeps W only packed; its 4-bit draft unpacks W exactly, so the draft
    built after packing has the same logits as the one built before."""
    model = tiny_qwen2()
    before = int4_decoder.Int4Decoder(model)
    assert cpu_linear.pack_only(model) == cpu_linear.PACKED_ONLY
    after = int4_decoder.Int4Decoder(model)
    ids = torch.arange(30).view(1, -1)
    with torch.inference_mode():
        assert torch.equal(before(input_ids=ids, logits_to_keep=30).logits, after(input_ids=ids, logits_to_keep=30).logits)


def test_the_cache_grows_past_its_first_capacity_and_crops_like_transformers():
    model = tiny_llama()
    lean = int4_decoder.Int4Decoder(model)
    ids = torch.arange(700).remainder(320).view(1, -1)
    with torch.inference_mode():
        output = lean(input_ids=ids[:, :500])  # an empty cache starts with room for 512
        for start in range(500, 700, 50):
            output = lean(input_ids=ids[:, start : start + 50], past_key_values=output.past_key_values)
        cache = output.past_key_values
        assert cache.get_seq_length() == 700 and cache.keys.shape[3] >= 700
        reference = model(input_ids=ids, logits_to_keep=1).logits  # the float model, for the same prefix
    assert output.logits.argmax() == reference.argmax()
    cache.crop(-100)
    assert cache.get_seq_length() == 600
    cache.crop(650)  # a longer length keeps what is there, as DynamicCache.crop does
    assert cache.get_seq_length() == 600


@pytest.mark.parametrize("model", [lambda: tiny_llama(hidden_act="gelu"),
                                   lambda: tiny_qwen2(use_sliding_window=True, sliding_window=16, max_window_layers=1)])
def test_models_the_lean_step_does_not_reproduce_are_refused(model):
    model = model()
    assert not int4_decoder.supports(model)
    with pytest.raises(ValueError, match="full attention"):
        int4_decoder.Int4Decoder(model)


def test_the_int4_drafter_uses_the_lean_step_for_a_llama_and_the_copy_otherwise(offline_target, tmp_path):
    pipeline = build_pipeline(DecodeConfig(draft=QUANTIZED_DRAFTER).validate())
    assert isinstance(pipeline.draft_model.hf_model, int4_decoder.Int4Decoder)
    tiny_llama(hidden_act="gelu").save_pretrained(tmp_path)  # a local folder, loaded as a user's model would be
    offline_target.tokenizer.save_pretrained(tmp_path)
    step = int4_draft_step(models.load_model(str(tmp_path), torch.device("cpu"), torch.float32))
    assert isinstance(step, LlamaForCausalLM) and isinstance(step.model.layers[0].self_attn.q_proj, int4.Int4Linear)
