"""Requantized GGUFs (models/requantize.py) and the repacking check (models/repacking.py): made once with the
bindings' quantizer, every tensor in the one type, reused only when their record matches; a crash of llama.cpp's
repacking is caught in a child process, kept, and never reaches the app's process."""

import json
import signal

import pytest

from specviz.models import offline, repacking, requantize
from tests.llama_cpp_marks import llama_cpp_only

needs_bindings = llama_cpp_only  # the real GGUF on llama.cpp: seconds, so the slow tier


def test_each_requantization_names_a_constant_the_bindings_define():
    llama = pytest.importorskip("llama_cpp")
    for row in requantize.REQUANTIZATIONS.values():
        assert isinstance(getattr(llama, row.ftype), int), row


def test_a_requantized_file_is_named_by_its_source_and_type(tmp_path):
    row = requantize.REQUANTIZATIONS["Q4_0"]
    assert row.file_name(tmp_path / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf") == \
        "qwen2.5-coder-1.5b-instruct-requantized-q4_0.gguf"
    assert row.file_name(tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf") == "smollm2-135m-instruct.q4_1-requantized-q4_0.gguf"


@needs_bindings
def test_requantizing_makes_every_tensor_one_type_once_and_a_changed_file_again(tmp_path, monkeypatch):
    from gguf import GGUFReader

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    source = offline.installed_gguf()
    row = requantize.REQUANTIZATIONS["Q4_0"]
    made = requantize.requantized_gguf(source, row)
    types = {tensor.tensor_type.name for tensor in GGUFReader(str(made)).tensors}
    assert types == {"Q4_0", "F32"}  # the norms stay float; every matrix, output and embedding included, is Q4_0
    record = requantize.record(source, row)
    assert record["size"] == made.stat().st_size and len(record["sha256"]) == 64 and record["type"] == "Q4_0"

    stamp = made.stat().st_mtime_ns
    assert requantize.requantized_gguf(source, row) == made and made.stat().st_mtime_ns == stamp  # reused

    with open(made, "ab") as file:  # a file that no longer matches its record is made again
        file.write(b"torn")
    assert not requantize.is_made(source, row)
    requantize.requantized_gguf(source, row)
    assert requantize.is_made(source, row) and made.stat().st_size == record["size"]
    assert not list(made.parent.glob("*.partial"))


def test_a_crash_in_the_probe_is_a_kept_no_with_its_reason(tmp_path, monkeypatch):
    """A repacking that kills its process (as on an AMX CPU in a VM) reads as "no", is said, and is not tried again."""
    monkeypatch.setenv("SPECVIZ_REPACKING", str(tmp_path / "repacking.json"))
    monkeypatch.setattr(repacking, "_PROBE", f"import os; os.kill(os.getpid(), {int(signal.SIGSEGV)})")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    works, why = repacking.repacking_works(model)
    assert not works and "crashed" in why and f"signal {int(signal.SIGSEGV)}" in why

    monkeypatch.setattr(repacking, "_PROBE", "raise SystemExit('must not run again')")
    assert repacking.repacking_works(model) == (works, why)  # kept: the probe ran once
    kept = json.loads((tmp_path / "repacking.json").read_text())
    assert list(kept.values()) == [{"works": False, "why": why}]


def test_a_failing_probe_says_its_last_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_REPACKING", "off")
    monkeypatch.setattr(repacking, "_PROBE", "raise RuntimeError('no kernel for this type')")
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    works, why = repacking.repacking_works(model)
    assert not works and "no kernel for this type" in why


@needs_bindings
def test_repacking_works_on_this_cpu_for_the_embedded_model_or_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_REPACKING", str(tmp_path / "repacking.json"))
    works, why = repacking.repacking_works(offline.installed_gguf())
    with open("/proc/cpuinfo") as info:
        amx = " amx_tile" in info.read()
    assert works or amx, why  # it crashed only on AMX CPUs in VMs so far


def test_a_model_id_asks_for_its_gguf_requantized_by_its_ending():
    base, row = requantize.split_variant("offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0")
    assert base == "offline:Qwen2.5-Coder-1.5B-Instruct" and row is requantize.REQUANTIZATIONS["Q4_0"]
    assert requantize.split_variant("~/models/me@home/model.gguf") == ("~/models/me@home/model.gguf", None)
    with pytest.raises(ValueError, match="requantized to Q3_X, which is none of Q4_0"):
        requantize.split_variant("offline:Qwen2.5-Coder-1.5B-Instruct@Q3_X")
    assert requantize.describe("offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0") == \
        "Qwen2.5-Coder-1.5B-Instruct, requantized from Q4_K_M to Q4_0 for batched verification"
    assert requantize.describe("offline:Qwen2.5-Coder-1.5B-Instruct") == "Qwen2.5-Coder-1.5B-Instruct"


def test_a_pair_runs_requantized_on_llama_cpp_only_and_a_requantized_id_is_refused_elsewhere():
    from specviz.config import LLAMA_CPP, DecodeConfig
    from specviz.models import presets, split_gguf

    target, draft = presets.resolve_preset("qwen2.5-coder", LLAMA_CPP)
    assert (target, draft) == ("offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0", "offline:Qwen2.5-Coder-0.5B-Instruct@Q4_0")
    assert presets.resolve_preset("qwen2.5-coder")[0] == "offline:Qwen2.5-Coder-1.5B-Instruct"
    DecodeConfig(target=target, draft=draft, backend=LLAMA_CPP).validate()
    with pytest.raises(ValueError, match="requantized for llama.cpp's kernels: it runs on the llama.cpp backend"):
        DecodeConfig(target=target, draft="ngram").validate()
    with pytest.raises(ValueError, match="runs on the llama.cpp backend"):
        DecodeConfig(target="offline:Qwen2.5-Coder-1.5B-Instruct", draft=draft).validate()
    # an offline model's install check reads through the ending
    assert split_gguf.first_missing([target]) == split_gguf.first_missing([target.removesuffix("@Q4_0")])


def test_the_stats_say_what_a_requantized_target_is_and_what_the_output_is_exact_to():
    from specviz.trace import Trace
    from specviz.views.stats_text import _requantized_words

    def trace(target):
        return Trace({}, "", 0, target_name=target, draft_name="suffix", device="cpu", dtype="float32")

    words = _requantized_words(trace("offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0"))
    # Markdown-escaped, as every name from a trace
    assert "requantized from Q4\\_K\\_M to Q4\\_0 for batched verification" in words and "exactly" in words
    assert _requantized_words(trace("offline:Qwen2.5-Coder-1.5B-Instruct")) == ""
    assert _requantized_words(trace("gpt2@Q9_9")) == ""  # a recorded name that names no requantization says nothing


def test_the_server_allows_a_requantized_offline_model_as_it_allows_the_model():
    from specviz.app.policy import Policy

    policy = Policy(hosted=True, allowed_models=frozenset())
    policy.check_model("target", "offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0")
    with pytest.raises(ValueError, match="not offered here"):
        policy.check_model("target", "Qwen/Qwen2.5-1.5B@Q4_0")  # a hub model is judged as itself
    with pytest.raises(ValueError, match="none of Q4_0"):
        policy.check_model("target", "offline:Qwen2.5-Coder-1.5B-Instruct@Q9_X")
