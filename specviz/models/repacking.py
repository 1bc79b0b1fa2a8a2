"""Whether llama.cpp's weight repacking works on this CPU: tried once in a child process, the answer kept.

Repacking copies a GGUF's 4-bit weights into an interleaved layout at load (llama.cpp's "extra buffer types") so
that a batch of rows runs as one GEMM. On an Intel CPU with AMX inside a VM, llama.cpp chose its AMX buffer type
there and the process died with a segmentation fault on the first forward, for every file tried. A crash cannot be
caught in the process it kills, so the first load that wants repacking tries it in a child process: load the file
with repacking, run one batched forward, exit. The answer is kept in the cache ($SPECVIZ_CACHE/repacking.json),
keyed by the CPU, its flags, the bindings' version and the file, so each machine tries each file once.

    works, why = repacking_works(path)    # (False, "llama.cpp's repacking crashed here (signal 11) ...") on such a CPU
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from specviz.models import kept_file

PROBE_TIMEOUT_S = 300  # repacking a 1.5B model and one forward take seconds; a hang is a failure too
_PROBE = """
import sys
from specviz.models.llama_cpp import load_gguf
import torch
loaded = load_gguf(sys.argv[1], repack=True)
model = loaded.language_model(loaded.logits_width)
logits = model.feed(torch.arange(100, 108), logits_to_keep=8)
assert torch.isfinite(logits).all(), "non-finite logits"
"""


def store_path() -> Path | None:
    return kept_file.path("SPECVIZ_REPACKING", "repacking.json")


def key(path: Path) -> str:
    """What the answer depends on: the CPU and its flags, the bindings' version, and the file (its name and size
    stand for its tensor types, which choose the kernels)."""
    from specviz.models.threads import cpu_name

    return " | ".join([cpu_name(), f"flags {_flags_digest()}", f"llama_cpp_python {_bindings_version()}",
                       f"{path.name} {path.stat().st_size} bytes"])


def repacking_works(path: Path) -> tuple[bool, str]:
    """(whether loading `path` with repacking and running a batch works here, and if not, one sentence why)."""
    store = store_path()
    probe_key = key(path)
    kept = kept_file.read(store).get(probe_key) if store else None
    if isinstance(kept, dict) and isinstance(kept.get("works"), bool):
        return kept["works"], str(kept.get("why", ""))
    works, why = _probe(path)
    if store is not None:
        kept_file.write(store, probe_key, {"works": works, "why": why})
    return works, why


def _probe(path: Path) -> tuple[bool, str]:
    from specviz import job

    job.stage("Checking, once, that llama.cpp's repacked kernels run on this CPU")
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True,
                              errors="replace", timeout=PROBE_TIMEOUT_S, cwd=Path(__file__).resolve().parents[2])
    except subprocess.TimeoutExpired:
        return False, f"llama.cpp's repacked kernels did not finish one forward in {PROBE_TIMEOUT_S} s on this CPU"
    if done.returncode == 0:
        return True, ""
    if done.returncode < 0:
        return False, (f"llama.cpp's repacking crashed on this CPU (signal {-done.returncode}) when a test process "
                       f"tried it, so its weights are read unrepacked")
    last = (done.stderr.strip().splitlines() or ["no message"])[-1][:200]
    return False, f"llama.cpp's repacking failed on this CPU when a test process tried it ({last})"


def _flags_digest() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as file:
            flags = next((line for line in file if line.startswith("flags")), "")
    except OSError:
        import platform

        flags = platform.machine()
    return hashlib.sha256(flags.encode()).hexdigest()[:12]


def _bindings_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        return "none"
