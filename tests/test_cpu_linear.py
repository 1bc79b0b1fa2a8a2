"""The few-row and packed CPU linear kernels compute the same product as nn.Linear, and the choice is applied."""


import pytest
import torch

from specviz.models import cpu_linear
from tests.builders import Tiny


@pytest.mark.parametrize("rows", [1, 2, 3, 5, 16, 17, 40])
@pytest.mark.parametrize("bias", [False, True])
def test_few_row_linear_equals_nn_linear(rows, bias):
    generator = torch.Generator().manual_seed(rows)
    holder = torch.nn.Sequential(torch.nn.Linear(64, 300, bias=bias))
    x = torch.randn(1, rows, 64, generator=generator)  # [batch, rows, in]
    expected = holder(x)
    cpu_linear.use_kernel(holder, cpu_linear.FEW_ROW)
    assert type(holder[0]) is cpu_linear.FewRowLinear
    got = holder(x)
    assert got.shape == expected.shape == (1, rows, 300)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not cpu_linear.packing_available(), reason="this torch build has no oneDNN")
@pytest.mark.parametrize("rows", [1, 2, 3, 5, 16, 17, 40])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("kernel", [cpu_linear.PACKED, cpu_linear.PACKED_ONLY])
def test_packed_linears_equal_nn_linear(rows, bias, kernel):
    generator = torch.Generator().manual_seed(rows)
    holder = torch.nn.Sequential(torch.nn.Linear(64, 300, bias=bias))
    x = torch.randn(1, rows, 64, generator=generator)  # [batch, rows, in]
    with torch.inference_mode():
        expected = holder(x)
        if kernel == cpu_linear.PACKED:
            cpu_linear.use_kernel(holder, kernel)
        else:
            assert cpu_linear.pack_only(holder) == kernel
        assert type(holder[0]) is CLASSES[kernel] and holder[0].packed_weight is not None
        got = holder(x)
    assert got.shape == expected.shape == (1, rows, 300)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_packed_linear_takes_the_stock_path_when_gradients_may_flow():
    """The packed copy is a snapshot of W: training (which changes W) must not read it."""
    holder = torch.nn.Sequential(torch.nn.Linear(8, 4))
    cpu_linear.use_kernel(holder, cpu_linear.PACKED)
    with torch.no_grad():
        holder[0].weight.add_(1.0)  # W changes after packing
    x = torch.randn(3, 8)
    expected = torch.nn.functional.linear(x, holder[0].weight, holder[0].bias)
    torch.testing.assert_close(holder(x), expected)  # grad enabled and W requires grad: the live W is used


def test_switching_kernels_keeps_the_weights_and_ties():
    model = Tiny()
    weight = model.head.weight
    cpu_linear.use_kernel(model, cpu_linear.FEW_ROW)
    assert type(model.inner) is cpu_linear.FewRowLinear and type(model.head) is cpu_linear.FewRowLinear
    assert model.head.weight is weight is model.embed.weight
    cpu_linear.use_kernel(model, cpu_linear.STOCK)
    assert type(model.inner) is torch.nn.Linear


CLASSES = {cpu_linear.STOCK: torch.nn.Linear, cpu_linear.FEW_ROW: cpu_linear.FewRowLinear,
           cpu_linear.PACKED: cpu_linear.PackedLinear, cpu_linear.PACKED_ONLY: cpu_linear.PackedOnlyLinear}


@pytest.mark.parametrize("forced", list(CLASSES))
def test_the_environment_forces_a_kernel(monkeypatch, forced):
    monkeypatch.setenv("SPECVIZ_CPU_LINEAR", forced)
    model = Tiny()
    chosen = cpu_linear.apply_kernel(model)
    assert chosen == forced or (forced.startswith(cpu_linear.PACKED) and not cpu_linear.packing_available())
    assert type(model.inner) is CLASSES[chosen]


def test_unforced_a_model_within_the_budget_is_packed(monkeypatch):
    monkeypatch.delenv("SPECVIZ_CPU_LINEAR", raising=False)
    model = Tiny()
    chosen = cpu_linear.apply_kernel(model)
    assert chosen == (cpu_linear.PACKED if cpu_linear.packing_available() else cpu_linear.FEW_ROW)
    assert type(model.inner) is CLASSES[chosen]


@pytest.mark.skipif(not cpu_linear.packing_available(), reason="this torch build has no oneDNN")
def test_a_model_over_the_memory_budget_is_packed_in_place(monkeypatch):
    """A second copy doubles the linear weights' memory: over SPECVIZ_PACKED_MAX_GB each W is packed and its
    float copy dropped, except the tied head's, which the embedding still needs."""
    monkeypatch.delenv("SPECVIZ_CPU_LINEAR", raising=False)
    model = Tiny()
    inner_weight, embedding = model.inner.weight.detach().clone(), model.embed.weight
    before = cpu_linear.linear_weight_bytes(model)
    monkeypatch.setenv("SPECVIZ_PACKED_MAX_GB", "0")
    assert cpu_linear.apply_kernel(model) == cpu_linear.PACKED_ONLY
    assert type(model.inner) is type(model.head) is cpu_linear.PackedOnlyLinear
    assert model.inner._float_weight is None and "weight" not in dict(model.inner.named_parameters())
    assert model.head.weight is embedding  # tied: the embedding's tensor, not an unpacked copy
    assert torch.equal(model.inner.weight, inner_weight)  # unpacked exactly
    assert cpu_linear.linear_weight_bytes(model) == before


def test_the_offline_model_gets_a_kernel_and_the_same_logits(offline_target):
    """Both kernels give the same next-token logits on the real model (to float rounding)."""
    model = offline_target.hf_model
    input_ids = torch.tensor([[1, 504, 3458, 314, 253, 2284]])
    results = {}
    try:
        for kernel in (cpu_linear.STOCK, cpu_linear.FEW_ROW, cpu_linear.PACKED):  # packed-only is one-way
            cpu_linear.use_kernel(model, kernel)
            with torch.inference_mode():
                results[kernel] = model(input_ids=input_ids, use_cache=False, logits_to_keep=3).logits
    finally:
        cpu_linear.use_kernel(model, offline_target.linear_kernel)
    assert offline_target.linear_kernel in CLASSES
    for kernel in (cpu_linear.FEW_ROW, cpu_linear.PACKED):
        torch.testing.assert_close(results[kernel], results[cpu_linear.STOCK], rtol=1e-4, atol=1e-4)
        assert results[kernel][0, -1].argmax() == results[cpu_linear.STOCK][0, -1].argmax()


def test_a_kernel_is_a_new_module_over_the_same_tensors():
    """The swap replaces the child module (setattr on its parent); the old module and the state dict are unchanged."""
    model = Tiny()
    old_inner, keys = model.inner, list(model.state_dict())
    cpu_linear.use_kernel(model, cpu_linear.FEW_ROW)
    assert model.inner is not old_inner and type(old_inner) is torch.nn.Linear
    assert model.inner.weight is old_inner.weight and model.inner.bias is old_inner.bias
    assert list(model.state_dict()) == keys


def test_a_linear_shared_by_two_parents_gets_one_replacement():
    shared = torch.nn.Linear(8, 8)
    model = torch.nn.ModuleDict({"a": torch.nn.Sequential(shared), "b": torch.nn.Sequential(shared)})
    cpu_linear.use_kernel(model, cpu_linear.FEW_ROW)
    assert model["a"][0] is model["b"][0] and type(model["a"][0]) is cpu_linear.FewRowLinear


@pytest.mark.skipif(not cpu_linear.packing_available(), reason="this torch build has no oneDNN")
def test_packing_again_keeps_each_weights_packed_copy():
    model = Tiny()
    cpu_linear.use_kernel(model, cpu_linear.PACKED)
    first = model.inner.packed_weight
    cpu_linear.use_kernel(model, cpu_linear.PACKED)  # the PackedLinear hands its copy on
    assert model.inner.packed_weight is first
    cpu_linear.use_kernel(model, cpu_linear.STOCK)
    assert not hasattr(model.inner, "packed_weight")  # a stock module holds no copy


@pytest.mark.skipif(not cpu_linear.packing_available(), reason="this torch build has no oneDNN")
def test_a_packed_only_weight_is_read_back_from_its_checkpoint_and_checked_against_the_packed_copy(tmp_path, monkeypatch):
    """W of a model loaded from a safetensors folder comes back from the file (not a product with the identity);
    a file whose tensor differs from the packed copy is not trusted, and W is unpacked instead: exact either way."""
    from safetensors.torch import load_file, save_file
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)  # the throwaway model's weights only
    config = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(tmp_path)
    model = LlamaForCausalLM.from_pretrained(tmp_path, dtype=torch.float32)
    expected = {name: module.weight.detach().clone() for name, module in model.named_modules()
                if isinstance(module, torch.nn.Linear)}
    assert cpu_linear.pack_only(model) == cpu_linear.PACKED_ONLY
    unpacked = []
    monkeypatch.setattr(cpu_linear.PackedOnlyLinear, "_unpack",
                        lambda self, rows: unpacked.append(len(rows)) or ORIGINAL_UNPACK(self, rows))
    down = model.model.layers[0].mlp.down_proj
    assert type(down) is cpu_linear.PackedOnlyLinear and down._source is not None
    assert torch.equal(down.weight, expected["model.layers.0.mlp.down_proj"])
    assert unpacked == [3]  # three probe columns, not the identity's 128 rows

    tensors = load_file(tmp_path / "model.safetensors")  # negative control: the file no longer holds this W
    tensors["model.layers.0.mlp.down_proj.weight"][5, 127] += 1.0
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    unpacked.clear()
    assert torch.equal(down.weight, expected["model.layers.0.mlp.down_proj"])
    assert unpacked == [3, 128]  # the probe found the difference; W was unpacked in full


ORIGINAL_UNPACK = cpu_linear.PackedOnlyLinear._unpack


def test_load_fresh_packs_a_models_weights_on_a_cpu_unless_told_not_to(monkeypatch):
    """loading.load_fresh applies apply_kernel's kernel (SPECVIZ_CPU_LINEAR forces one) and says so as a stage."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from specviz import job
    from specviz.models import loading

    config = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2)
    monkeypatch.setattr(loading, "_from_pretrained", lambda auto_class, model_id, source, **kwargs:
                        LlamaForCausalLM(config) if auto_class == "AutoModelForCausalLM" else object())
    monkeypatch.setenv("SPECVIZ_CPU_LINEAR", cpu_linear.FEW_ROW)
    stages = []
    with job.running(job.Job(on_stage=stages.append)):
        loaded = loading.load_fresh("tests/a-tiny-model", torch.device("cpu"), torch.float32)
    assert loaded.linear_kernel == cpu_linear.FEW_ROW and "Packing tests/a-tiny-model's weights for this CPU" in stages
    assert type(loaded.hf_model.model.layers[0].mlp.down_proj) is cpu_linear.FewRowLinear
    plain = loading.load_fresh("tests/a-tiny-model", torch.device("cpu"), torch.float32, pack_weights=False)
    assert plain.linear_kernel == cpu_linear.STOCK and type(plain.hf_model.model.layers[0].mlp.down_proj) is torch.nn.Linear
