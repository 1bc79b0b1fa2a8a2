"""The loading path users take with a hub id or folder, tested offline on tiny models saved to temporary folders."""

import pytest
import torch
from tokenizers import Tokenizer, models as tokenizer_models
from transformers import PreTrainedTokenizerFast

from specviz import engine, models
from specviz.config import DecodeConfig
from tests.conftest import save_tiny_llama


def test_device_and_dtype_are_chosen_in_one_place(monkeypatch):
    monkeypatch.delenv("SPECVIZ_DEVICE", raising=False)
    device = models.choose_device()
    assert device.type in ("cuda", "mps", "cpu")
    assert models.choose_dtype(torch.device("cpu")) == torch.float32
    monkeypatch.setenv("SPECVIZ_DEVICE", "cpu")
    assert models.choose_device() == torch.device("cpu")


def test_local_pair_with_padded_head_loads_and_decodes_exactly(tmp_path, offline_target):
    tokenizer = offline_target.tokenizer
    target_dir = save_tiny_llama(tmp_path / "target", tokenizer, 49152 + 64, seed=1, layers=3)  # padded rows
    draft_dir = save_tiny_llama(tmp_path / "draft", tokenizer, 49152, seed=2)
    target, draft = models.load_model(target_dir), models.load_model(draft_dir)
    assert target.logits_width == 49152 + 64
    assert models.shared_vocab_size(target, draft) == 49152
    config = DecodeConfig(target=target_dir, draft=draft_dir, gamma=3, max_new_tokens=24, chat=False)
    pipeline = engine.build_pipeline(config)
    trace = engine.run_speculative(pipeline, "Once upon a time", config)
    baseline = engine.baseline_decode(pipeline, "Once upon a time", config)
    assert trace.token_ids == baseline.token_ids and len(trace.token_ids) > 0


def _word_level_tokenizer(words):
    vocab = {word: index for index, word in enumerate(words)}
    backend = Tokenizer(tokenizer_models.WordLevel(vocab, unk_token="<unk>"))
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")


def test_pair_with_different_vocabularies_is_refused_with_names_and_sizes(tmp_path, offline_target):
    target_dir = save_tiny_llama(tmp_path / "target", offline_target.tokenizer, 49152)
    other = _word_level_tokenizer(["<unk>", "a", "b", "c"])
    draft_dir = save_tiny_llama(tmp_path / "draft", other, 4)
    with pytest.raises(models.IncompatibleModels) as error:
        engine.build_pipeline(DecodeConfig(target=target_dir, draft=draft_dir))
    message = str(error.value)
    assert target_dir in message and draft_dir in message and "49152" in message and "4 tokens" in message


def test_unknown_hub_id_offline_is_one_clear_sentence(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    models.hub_reachable.cache_clear()
    try:
        with pytest.raises(models.ModelUnavailable) as error:
            models.load_model("no-such-org/no-such-model")
    finally:
        models.hub_reachable.cache_clear()
    message = str(error.value)
    assert "no-such-org/no-such-model" in message and "\n" not in message and "Traceback" not in message


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(models.ModelUnavailable, match="no model folder"):
        models.load_model(str(tmp_path / "absent"))


def test_folder_without_checkpoint_is_refused(tmp_path):
    (tmp_path / "junk.txt").write_text("not a model")
    with pytest.raises(models.ModelUnavailable, match="holds no usable checkpoint"):
        models.load_model(str(tmp_path))


def test_offline_cache_is_written_atomically_and_a_partial_one_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    conversions = []

    def fake_convert(gguf, out_dir):
        conversions.append(out_dir)
        (out_dir / "config.json").write_text("{}")

    monkeypatch.setattr(models, "_convert_gguf", fake_convert)
    first = models.offline_checkpoint()
    assert (tmp_path / first.split("/")[-1] / "COMPLETE").is_file() and len(conversions) == 1
    assert models.offline_checkpoint() == first and len(conversions) == 1  # reused, not converted again
    (tmp_path / first.split("/")[-1] / "COMPLETE").unlink()  # as if killed before the marker was written
    assert models.offline_checkpoint() == first and len(conversions) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".partial-")]

    def failing_convert(gguf, out_dir):
        (out_dir / "model.safetensors").write_text("half")
        raise KeyboardInterrupt

    monkeypatch.setattr(models, "_convert_gguf", failing_convert)
    (tmp_path / first.split("/")[-1] / "COMPLETE").unlink()
    with pytest.raises(KeyboardInterrupt):
        models.offline_checkpoint()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".partial-")]
