"""The linear kernel cpu_linear.choose_kernel picked for each model on this machine, kept on disk between processes,
so that a restarted app or a command-line run applies it at once instead of timing the kernels again.

A choice is keyed by what the timing depends on: the model (its id and the bytes of its linear weights), the dtype,
torch's version and threads, SPECVIZ_CPU_LINEAR, the CPU's name and the instruction set torch's kernels use. The
file is $SPECVIZ_CACHE/kernels.json; SPECVIZ_KERNELS names another file, or "off" to time at every load. Deleting
it makes the next load of each model time its kernels again (a machine that was busy when it timed may have chosen
a slower kernel: the kernels compute the same product, so only speed is at stake).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

VERSION = 1  # bump when choose_kernel's kernels or timing change


def store_path() -> Path | None:
    """Where choices are kept; None when SPECVIZ_KERNELS is "off"."""
    from specviz.models.offline import cache_root

    named = os.environ.get("SPECVIZ_KERNELS")
    if named == "off":
        return None
    return Path(named) if named else cache_root() / "kernels.json"


def key(model_id: str, dtype: torch.dtype, linear_bytes: int, cpu: str, instruction_set: str) -> str:
    """The key of one model's choice on this machine (`cpu`: loading.cpu_name, `instruction_set`: loading.cpu_kernels),
    as torch's threads and SPECVIZ_CPU_LINEAR stand now."""
    return " | ".join([f"v{VERSION}", model_id, f"{linear_bytes} linear bytes", str(dtype), f"torch {torch.__version__}",
                       f"{torch.get_num_threads()} threads", f"SPECVIZ_CPU_LINEAR={os.environ.get('SPECVIZ_CPU_LINEAR', 'auto')}",
                       cpu, instruction_set])


def kept(choice_key: str) -> str | None:
    """The kernel kept for `choice_key`, or None."""
    path = store_path()
    return None if path is None else _read(path).get(choice_key)


def keep(choice_key: str, kernel: str) -> None:
    """Keep a newly timed choice (whole or not at all, should two processes write at once)."""
    path = store_path()
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({**_read(path), choice_key: kernel}, indent=1), encoding="utf-8")
        temporary.replace(path)
    except OSError:
        pass  # a read-only cache: the next process times the kernels again, as it would without this file


def _read(path: Path) -> dict:
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {name: kernel for name, kernel in entries.items() if isinstance(kernel, str)} if isinstance(entries, dict) else {}
