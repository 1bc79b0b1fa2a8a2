"""The int4 drafter: the target's own 4-bit copy (int4.py)."""

import pytest
import torch

from specviz.config import LOOKUP_FIRST, QUANTIZED_DRAFTER, DecodeConfig
from specviz.decoding import engine, plain
from specviz.decoding.pipeline import build_pipeline
from specviz.drafters.weights import int4_copy
from specviz.models import int4
from specviz.models.cache import WeightsCache
from tests.decoding import greedy_acceptance

PROMPTS = ["Explain how a bicycle stays upright while it moves.", "Write a haiku about rain on a tin roof."]


def q4_1_linear(out_features: int, in_features: int, seed: int) -> torch.nn.Linear:
    """A linear layer whose weights are Q4_1 values: w = d·q + m per group of 32, d and m in float16 as in a GGUF."""
    generator = torch.Generator().manual_seed(seed)
    groups = in_features // int4.GROUP
    codes = torch.randint(0, 16, (out_features, groups, int4.GROUP), generator=generator)
    codes[..., 0], codes[..., 1] = 0, 15  # every group spans its range, as llama.cpp's Q4_1 quantizer makes it
    scale = (torch.rand(out_features, groups, 1, generator=generator) * 0.02 + 5e-3).half().float()
    low = (-torch.rand(out_features, groups, 1, generator=generator) * 0.1).half().float()
    linear = torch.nn.Linear(in_features, out_features, bias=False)
    with torch.no_grad():
        linear.weight.copy_((codes * scale + low).view(out_features, in_features))
    return linear


def test_int4_linear_reads_every_q4_1_code_right():
    linear = q4_1_linear(96, 128, seed=0)
    quantized = int4.Int4Linear(linear)
    # Unit rows pick single weight columns. The kernel holds each group's scale and zero in bfloat16, so a weight
    # may move by that rounding, but always by far less than half a step d/2: no 4-bit code is ever wrong.
    columns = quantized(torch.eye(128)).T  # [96, 128] = W as the kernel sees it
    groups = linear.weight.detach().view(96, -1, int4.GROUP)
    half_step = (groups.amax(-1, keepdim=True) - groups.amin(-1, keepdim=True)) / 15 / 2  # [96, in/G, 1]
    error = (columns.view_as(groups) - groups).abs()
    assert bool((error < half_step / 4).all())
    x = torch.randn(5, 128, generator=torch.Generator().manual_seed(1))
    assert torch.allclose(quantized(x), linear(x), rtol=0.02, atol=0.02)


def test_linears_side_by_side_quantize_in_chunks_as_their_stacked_weight_does_whole(monkeypatch):
    """Int4Linear quantizes QUANT_ROWS rows at a time, across the parts' boundaries (q, k, v): the codes, packing,
    scales and biases are those of the stacked [Σ out, in] weight quantized whole, and so are the outputs."""
    parts = [q4_1_linear(rows, 128, seed=rows) for rows in (144, 48, 48)]  # boundaries at 144 and 192; a 16-row tail
    parts[0].bias = torch.nn.Parameter(torch.randn(144))
    stacked = torch.nn.Linear(128, 240)
    with torch.no_grad():
        stacked.weight.copy_(torch.cat([part.weight for part in parts]))
        stacked.bias.copy_(torch.cat([parts[0].bias, torch.zeros(96)]))
    monkeypatch.setattr(int4, "QUANT_ROWS", 10**6)
    whole = int4.Int4Linear(stacked, dense_prompt=True)
    monkeypatch.setattr(int4, "QUANT_ROWS", 64)
    chunked = int4.Int4Linear(parts, dense_prompt=True)
    for name in ("packed", "scales_and_zeros", "bias", "nibbles", "dense_scale", "dense_zero"):
        assert torch.equal(getattr(chunked, name), getattr(whole, name)), name
    x = torch.randn(3, 128, generator=torch.Generator().manual_seed(2))
    assert torch.equal(chunked(x), whole(x))
    head = q4_1_linear(100, 64, seed=5)
    monkeypatch.setattr(int4, "HEAD_ROWS", 32)
    row_head = int4.Int8RowLinear(head)
    monkeypatch.setattr(int4, "HEAD_ROWS", 10**6)
    assert torch.equal(row_head.codes, int4.Int8RowLinear(head).codes)


def _kernel(quantized: int4.Int4Linear, rows: torch.Tensor) -> torch.Tensor:
    """What the 4-bit kernel itself gives for rows [m, in]: [m, out] in float32."""
    return torch.ops.aten._weight_int4pack_mm_for_cpu(
        rows.bfloat16(), quantized.packed, int4.GROUP, quantized.scales_and_zeros).float()


def test_the_dense_prompt_path_multiplies_by_the_kernels_own_weights():
    linear = q4_1_linear(96, 256, seed=3)
    quantized = int4.Int4Linear(linear, dense_prompt=True)
    assert 256 >= int4.DENSE_ROWS  # the 256 unit rows below take the dense path
    # Unit rows read the weights back: the dense path's W is the kernel's W (to a bfloat16 rounding of the output).
    dense_columns, kernel_columns = quantized(torch.eye(256)), _kernel(quantized, torch.eye(256))
    assert torch.allclose(dense_columns, kernel_columns, rtol=2**-7, atol=0)
    prompt = torch.randn(300, 256, generator=torch.Generator().manual_seed(4))
    assert torch.allclose(quantized(prompt), _kernel(quantized, prompt), rtol=0.02, atol=0.02)
    few = prompt[: int4.DENSE_ROWS - 1]  # below the threshold: the kernel's very numbers
    assert torch.equal(quantized(few), _kernel(quantized, few))


def test_int8_head_is_close_to_the_float_head():
    linear = torch.nn.Linear(64, 300, bias=False)
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(2))
    assert torch.allclose(int4.Int8RowLinear(linear)(x), linear(x), rtol=0.03, atol=0.03)


def test_widths_that_are_not_multiples_of_the_group_are_refused():
    model = torch.nn.Sequential(torch.nn.Linear(48, 32))
    with pytest.raises(ValueError, match="multiples of 32"):
        int4.quantized_copy(model)


def test_the_copy_shares_the_target_tensors_and_leaves_the_target_alone(offline_target):
    target = offline_target.hf_model
    before = target.lm_head.weight.clone()
    draft = int4_copy(offline_target, WeightsCache())  # built from this target (the process's cache may hold a copy
    # built from an earlier load of the same model, which shares that load's tensors)
    assert draft.get_input_embeddings().weight is target.get_input_embeddings().weight  # shared, not copied
    assert isinstance(draft.get_output_embeddings(), int4.Int8RowLinear)
    assert not any(type(m) is torch.nn.Linear or isinstance(m, torch.nn.Linear) for m in draft.modules())
    assert all(isinstance(m, torch.nn.Linear) for m in [target.lm_head, target.model.layers[0].mlp.up_proj])
    assert torch.equal(target.lm_head.weight, before)


def test_the_copy_agrees_with_the_offline_target(offline_target):
    """The offline target is Q4_1: the copy reads its exact codes, so only bfloat16 rounding separates them."""
    draft = int4_copy(offline_target)
    ids = offline_target.tokenizer(PROMPTS[0] + " It stays upright because the wheels act as gyroscopes and "
                                   "the rider steers into the fall.", return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        target_logits = offline_target.hf_model(input_ids=ids).logits[0]  # [n, V]
        draft_logits = draft(input_ids=ids).logits[0]  # [n, V]
    agreement = (target_logits.argmax(-1) == draft_logits.argmax(-1)).float().mean().item()
    shared_mass = torch.minimum(target_logits.softmax(-1), draft_logits.softmax(-1)).sum(-1).mean().item()
    assert agreement > 0.9 and shared_mass > 0.9  # α at T = 1 is this shared mass


@pytest.mark.parametrize("draft", [QUANTIZED_DRAFTER, LOOKUP_FIRST + QUANTIZED_DRAFTER])
def test_greedy_decoding_with_the_int4_draft_is_identical_to_the_target(offline_target, draft):
    config = DecodeConfig(draft=draft, gamma=5, max_new_tokens=40).validate()
    assert greedy_acceptance(config, PROMPTS) > 0.5  # a random draft is accepted ~never


def test_sampled_draft_distributions_are_real(offline_target):
    config = DecodeConfig(draft=QUANTIZED_DRAFTER, gamma=3, max_new_tokens=12, temperature=1.0, seed=3).validate()
    trace = engine.run_speculative(build_pipeline(config), PROMPTS[1], config)
    tops = [t.draft_top for r in trace.rounds for t in r.tokens if t.draft_top]
    assert tops and all(len(top) > 1 for top in tops)  # q is spread, not one-hot


def test_a_target_off_the_cpu_gets_a_clear_error():
    assert not int4.available(torch.device("meta"))


def test_the_int4_draft_starts_from_the_target_cache_instead_of_encoding_the_prompt(offline_target):
    config = DecodeConfig(draft=QUANTIZED_DRAFTER, gamma=4, max_new_tokens=24).validate()
    pipeline = build_pipeline(config)
    prompt = "Summarize in one sentence: " + "The river floods every spring and the farmers plant after it. " * 8
    trace = engine.run_speculative(pipeline, prompt, config)
    assert trace.rounds[0].drafted == 0  # round 0: the target encodes the prompt alone
    assert all(r.drafted > 0 for r in trace.rounds[1:-1])
    fed = pipeline.draft_model.tokens_fed  # the draft fed only what followed the copied cache
    assert fed < trace.prompt_token_count and fed <= len(trace.token_ids) + config.gamma * len(trace.rounds)
    assert trace.token_ids == plain.baseline_decode(pipeline, prompt, config).token_ids
