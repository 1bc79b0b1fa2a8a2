import pytest
import torch


@pytest.fixture(scope="session")
def offline_target():
    """The embedded SmolLM2-135M-Instruct (converted from its GGUF on first use, then cached)."""
    from specviz import models
    from specviz.config import OFFLINE_MODEL

    return models.load_model(OFFLINE_MODEL, torch.device("cpu"), torch.float32)


def save_tiny_llama(folder, tokenizer, vocab_size, seed=0, layers=2):
    """A random-weight Llama with `tokenizer`, saved as a checkpoint folder, as a user's local model would be."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)  # only for the weights of this throwaway model, never for decoding
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                         tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def tiny_draft_folder(tmp_path_factory, offline_target):
    """A tiny random draft that shares the offline target's tokenizer: it drafts badly, which tests rejections."""
    return save_tiny_llama(tmp_path_factory.mktemp("tiny-draft"), offline_target.tokenizer, 49152)
