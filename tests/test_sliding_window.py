"""A cache with sliding-window layers (Gemma-3's) rolled back further than the tokens fed since its last crop.

After each crop such a layer keeps only window - 1 states; a draft across tokenizers may crop deeper (its context's
tokenization can change before the last round's start). transformers' crop then leaves too few states and the next
forward fails ("size of tensor a (511) must match ... (512)", Spec-Bench #483 with Gemma-3-270M as the draft, at T = 1).
LanguageModel reads the kept tokens again into a fresh cache instead."""

import torch

from specviz.models.language_model import TransformersModel


def tiny_gemma3():
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)  # this throwaway model's weights only
    config = Gemma3TextConfig(vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=4,
                              layer_types=["sliding_attention", "full_attention"], max_position_embeddings=128)
    return Gemma3ForCausalLM(config).eval()


def test_a_rollback_past_the_sliding_window_gives_the_logits_of_a_fresh_read():
    hf_model = tiny_gemma3()
    model, fresh = TransformersModel(hf_model, 40, torch.device("cpu")), TransformersModel(hf_model, 40, torch.device("cpu"))
    ids = torch.arange(1, 21) % 37 + 1  # [20]
    model.reset()
    model.feed(ids[:10])
    model.crop(9)  # the layer now keeps window - 1 = 3 states
    model.feed(ids[9:10])
    model.crop(6)  # 4 tokens back, past the 1 fed since: the states are gone
    assert model.cached_length == 6
    logits = model.feed(ids[6:12], logits_to_keep=6)  # [6, V]
    fresh.reset()
    expected = fresh.feed(ids[:12], logits_to_keep=6)
    assert torch.allclose(logits, expected, atol=1e-4)
    model.crop(11)  # a shallow rollback stays in place
    assert model.cached_length == 11 and torch.allclose(model.feed(ids[11:12]), expected[-1:], atol=1e-4)
