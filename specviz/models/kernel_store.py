"""The linear kernel cpu_linear.choose_kernel picked for each model on this machine, kept on disk between processes,
so that a restarted app or a command-line run applies it at once instead of timing the kernels again.

A choice is keyed by what the timing depends on: the model (its id and the bytes of its linear weights), the dtype,
torch's version and threads, SPECVIZ_CPU_LINEAR, the CPU's name and the instruction set torch's kernels use. The
file is $SPECVIZ_CACHE/kernels.json; SPECVIZ_KERNELS names another file, or "off" to time at every load. Deleting
it makes the next load of each model time its kernels again (a machine that was busy when it timed may have chosen
a slower kernel: the kernels compute the same product, so only speed is at stake).
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from specviz.models import kept_file

VERSION = 1  # bump when choose_kernel's kernels or timing change


def store_path() -> Path | None:
    """Where choices are kept; None when SPECVIZ_KERNELS is "off"."""
    return kept_file.path("SPECVIZ_KERNELS", "kernels.json")


def key(model_id: str, dtype: torch.dtype, linear_bytes: int, cpu: str, instruction_set: str) -> str:
    """The key of one model's choice on this machine (`cpu`: loading.cpu_name, `instruction_set`: loading.cpu_kernels),
    as torch's threads and SPECVIZ_CPU_LINEAR stand now."""
    return " | ".join([f"v{VERSION}", model_id, f"{linear_bytes} linear bytes", str(dtype), f"torch {torch.__version__}",
                       f"{torch.get_num_threads()} threads", f"SPECVIZ_CPU_LINEAR={os.environ.get('SPECVIZ_CPU_LINEAR', 'auto')}",
                       cpu, instruction_set])


def kept(choice_key: str) -> str | None:
    """The kernel kept for `choice_key`, or None."""
    path = store_path()
    kernel = None if path is None else kept_file.read(path).get(choice_key)
    return kernel if isinstance(kernel, str) else None


def keep(choice_key: str, kernel: str) -> None:
    """Keep a newly timed choice (a read-only cache keeps nothing: the next process times the kernels again)."""
    path = store_path()
    if path is not None:
        kept_file.write(path, choice_key, kernel)
