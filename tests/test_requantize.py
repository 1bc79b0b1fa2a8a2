"""Requantized GGUFs (models/requantize.py) and the repacking check (models/repacking.py): made once with the
bindings' quantizer, every tensor in the one type, reused only when their record matches; a crash of llama.cpp's
repacking is caught in a child process, kept, and never reaches the app's process."""

import json
import signal

import pytest

from specviz.models import llama_cpp, offline, repacking, requantize

NEEDS_BINDINGS = [pytest.mark.slow, pytest.mark.skipif(
    not llama_cpp.available() or offline.installed_gguf() is None,
    reason=f"needs the llama.cpp bindings ({llama_cpp.INSTALL_COMMAND}) and {offline.INSTALL_COMMAND}")]


def needs_bindings(test):
    for mark in NEEDS_BINDINGS:
        test = mark(test)
    return test


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
