"""The few-row CPU linear kernel computes the same product as nn.Linear, and the choice between them is applied."""

import pytest
import torch

from specviz import cpu_linear


@pytest.mark.parametrize("rows", [1, 2, 3, 5, 16, 17, 40])
@pytest.mark.parametrize("bias", [False, True])
def test_few_row_linear_equals_nn_linear(rows, bias):
    generator = torch.Generator().manual_seed(rows)
    stock = torch.nn.Linear(64, 300, bias=bias)
    x = torch.randn(1, rows, 64, generator=generator)  # [batch, rows, in]
    expected = stock(x)
    stock.__class__ = cpu_linear.FewRowLinear
    got = stock(x)
    assert got.shape == expected.shape == (1, rows, 300)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


class _Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(60, 16)  # fewer ids than the timing input's first id (100)
        self.inner = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(16, 60, bias=False)
        self.head.weight = self.embed.weight  # tied, as in SmolLM2

    def get_input_embeddings(self):
        return self.embed

    def forward(self, input_ids, use_cache=False, logits_to_keep=1):
        return self.head(self.inner(self.embed(input_ids)))[:, -logits_to_keep:]


def test_switching_kernels_keeps_the_weights_and_ties():
    model = _Tiny()
    weight = model.head.weight
    cpu_linear.use_kernel(model, cpu_linear.FEW_ROW)
    assert type(model.inner) is cpu_linear.FewRowLinear and type(model.head) is cpu_linear.FewRowLinear
    assert model.head.weight is weight is model.embed.weight
    cpu_linear.use_kernel(model, cpu_linear.STOCK)
    assert type(model.inner) is torch.nn.Linear


@pytest.mark.parametrize("forced", [cpu_linear.STOCK, cpu_linear.FEW_ROW])
def test_the_environment_forces_a_kernel(monkeypatch, forced):
    monkeypatch.setenv("SPECVIZ_CPU_LINEAR", forced)
    model = _Tiny()
    assert cpu_linear.choose_kernel(model) == forced
    assert (type(model.inner) is cpu_linear.FewRowLinear) == (forced == cpu_linear.FEW_ROW)


def test_the_timed_choice_is_applied(monkeypatch):
    monkeypatch.delenv("SPECVIZ_CPU_LINEAR", raising=False)
    model = _Tiny()
    chosen = cpu_linear.choose_kernel(model, repeats=1)
    assert chosen in (cpu_linear.STOCK, cpu_linear.FEW_ROW)
    assert (type(model.inner) is cpu_linear.FewRowLinear) == (chosen == cpu_linear.FEW_ROW)


def test_the_offline_model_gets_a_kernel_and_the_same_logits(offline_target):
    """Both kernels give the same next-token logits on the real model (to float rounding)."""
    model = offline_target.hf_model
    input_ids = torch.tensor([[1, 504, 3458, 314, 253, 2284]])
    results = {}
    try:
        for kernel in (cpu_linear.STOCK, cpu_linear.FEW_ROW):
            cpu_linear.use_kernel(model, kernel)
            with torch.inference_mode():
                results[kernel] = model(input_ids=input_ids, use_cache=False, logits_to_keep=3).logits
    finally:
        cpu_linear.use_kernel(model, offline_target.linear_kernel)
    assert offline_target.linear_kernel in (cpu_linear.STOCK, cpu_linear.FEW_ROW)
    torch.testing.assert_close(results[cpu_linear.FEW_ROW], results[cpu_linear.STOCK], rtol=1e-4, atol=1e-4)
    assert results[cpu_linear.FEW_ROW][0, -1].argmax() == results[cpu_linear.STOCK][0, -1].argmax()
