"""GGUFs requantized for batched verification: made once from a shipped file with llama.cpp's own quantizer.

A Q4_K_M file mixes types: the Qwen2.5-Coder-1.5B file stores 32% of its bytes as Q6_K (the output layer and half of
`ffn_down`), and llama.cpp's x86 CPU backend has no batched kernel for Q6_K, so checking k drafted tokens passes over
those weights k times. Requantized so that every tensor has one type that llama.cpp repacks into an interleaved
layout and multiplies as a GEMM (Q4_0, Q4_K, IQ4_NL), a forward over a few tokens costs about one over one token
(docs/results.md, "Verification that costs one forward").

    path = requantized_gguf(source, REQUANTIZATIONS["Q4_0"])   # quantized on first use (about a minute), then kept

- The quantizer is the bindings' `llama_model_quantize` (no separate tool), with `allow_requantize` (the source is
  already 4-bit: the result is the shipped model's weights rounded again, not a fresh quantization of the original)
  and `pure` (every tensor in the one type, the output layer included).
- The result is written under a temporary name, hashed, and renamed into place with a sidecar that records its size,
  its sha256, the source's size and the quantizer's version. A file in place is reused only when the sidecar matches
  it and its source; anything else is made again. Two processes starting at once quantize once (a lock).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from specviz import job
from specviz.config import ModelSpec
from specviz.models.offline import CHUNK, ModelUnavailable, cache_root, exclusive

SHIPPED_TYPES = ("q4_k_m", "q4_k_s", "q8_0", "q4_1", "q4_0")  # how a shipped GGUF's file name gives its type


@dataclass(frozen=True)
class Requantization:
    """One target type for every tensor of a GGUF."""

    name: str  # the GGML type every tensor gets: "Q4_0"
    ftype: str  # the bindings' file type constant: "LLAMA_FTYPE_MOSTLY_Q4_0"
    repacked: bool  # whether llama.cpp's x86 CPU backend repacks this type for a batched GEMM (ggml-cpu/repack.cpp)

    def file_name(self, source: Path) -> str:
        stem = source.stem.lower()
        for shipped in SHIPPED_TYPES:
            stem = stem.removesuffix(f"-{shipped}")
        return f"{stem}-requantized-{self.name.lower()}.gguf"


# Each row: a type the measurement compares (python -m specviz.bench.kernels). Q8_0 is there for contrast: twice the
# bytes, and a batched kernel on x86 without repacking.
REQUANTIZATIONS = {row.name: row for row in (
    Requantization("Q4_0", "LLAMA_FTYPE_MOSTLY_Q4_0", repacked=True),
    Requantization("Q4_K", "LLAMA_FTYPE_MOSTLY_Q4_K_M", repacked=True),  # with `pure`, every tensor Q4_K
    Requantization("IQ4_NL", "LLAMA_FTYPE_MOSTLY_IQ4_NL", repacked=True),
    Requantization("Q8_0", "LLAMA_FTYPE_MOSTLY_Q8_0", repacked=False),
)}
SIDECAR = ".json"  # beside the GGUF: {"size", "sha256", "source_size", "type", "quantizer"}


def split_variant(model_id: str) -> tuple[str, Requantization | None]:
    """(the model id without its requantization, the requantization or None); ValueError in words for an ending
    that names none.

    >>> split_variant("offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0")[1].name, split_variant("gpt2")
    ('Q4_0', ('gpt2', None))
    """
    spec = ModelSpec.parse(model_id)
    if spec.requantized is None:
        return model_id, None
    if spec.requantized not in REQUANTIZATIONS:
        raise ValueError(f"{model_id!r} asks for its GGUF requantized to {spec.requantized}, which is none of "
                         f"{', '.join(REQUANTIZATIONS)}")
    return spec.base, REQUANTIZATIONS[spec.requantized]


def variant(model_id: str, requantization: Requantization) -> str:
    return str(dataclasses.replace(ModelSpec.parse(model_id), requantized=requantization.name))


def describe(model_id: str) -> str:
    """How the page names a model: 'Qwen2.5-Coder-1.5B-Instruct, requantized from Q4_K_M to Q4_0 for batched
    verification' for a requantized one, else its name."""
    base, requantization = split_variant(model_id)
    name = ModelSpec.parse(base).name
    if requantization is None:
        return name
    return f"{name}, requantized from {source_type(base)} to {requantization.name} for batched verification"


def source_type(model_id: str) -> str:
    """The quantization a shipped GGUF's file name gives ('Q4_K_M'), else 'its own quantization'."""
    from specviz.models.split_gguf import SPLIT_MODELS

    file_name = SPLIT_MODELS[model_id].gguf_file if model_id in SPLIT_MODELS else Path(model_id).name
    for shipped in SHIPPED_TYPES:
        if shipped in file_name.lower():
            return shipped.upper()
    return "its own quantization"


def requantized_path(source: Path, requantization: Requantization) -> Path:
    return cache_root() / "gguf" / requantization.file_name(source)


def is_made(source: Path, requantization: Requantization) -> bool:
    """Whether the requantized file is in place with a sidecar that matches it and its source (sizes, no hashing)."""
    path = requantized_path(source, requantization)
    try:
        record = json.loads(path.with_name(path.name + SIDECAR).read_text())
        return (record["size"] == path.stat().st_size and record["source_size"] == source.stat().st_size
                and record["type"] == requantization.name and record["quantizer"] == _quantizer_version())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def requantized_gguf(source: Path, requantization: Requantization, threads: int | None = None) -> Path:
    """`source` with every tensor in `requantization`'s type: made on first use, then reused."""
    destination = requantized_path(source, requantization)
    if is_made(source, requantization):
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(destination.with_name(f".{destination.name}.lock")):
        if is_made(source, requantization):  # made by another process while this one waited
            return destination
        for stale in destination.parent.glob(f".{destination.name}.*.partial"):  # left by a killed process
            with suppress(OSError):
                stale.unlink()
        _quantize(source, requantization, destination, threads)
    return destination


def record(source: Path, requantization: Requantization) -> dict:
    """The sidecar of a made file: its size, sha256, the source's size, the type and the quantizer's version."""
    path = requantized_path(source, requantization)
    return json.loads(path.with_name(path.name + SIDECAR).read_text())


def _quantize(source: Path, requantization: Requantization, destination: Path, threads: int | None) -> None:
    from specviz.models.llama_bindings import bindings

    llama_cpp, _ = bindings()  # quiet: llama.cpp's quantizer logs every tensor
    handle, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".partial", dir=destination.parent)
    os.close(handle)
    try:
        job.stage(f"Requantizing {source.name} to {requantization.name} for batched verification, once")
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = getattr(llama_cpp, requantization.ftype)
        params.allow_requantize = True  # the source is already quantized
        params.pure = True  # every tensor in the one type: no Q6_K output layer left behind
        params.nthread = threads or os.cpu_count() or 1
        started = time.perf_counter()
        status = llama_cpp.llama_model_quantize(str(source).encode(), temporary.encode(), params)
        if status != 0:
            raise ModelUnavailable(f"llama.cpp could not requantize {source.name} to {requantization.name} "
                                   f"(status {status}).")
        seconds = time.perf_counter() - started
        digest = hashlib.sha256()
        with open(temporary, "rb") as made:
            while chunk := made.read(CHUNK):
                digest.update(chunk)
        sidecar = {"size": os.path.getsize(temporary), "sha256": digest.hexdigest(),
                   "source_size": source.stat().st_size, "type": requantization.name,
                   "quantizer": _quantizer_version(), "seconds": round(seconds, 1)}
        side = destination.with_name(destination.name + SIDECAR)
        side.unlink(missing_ok=True)  # no sidecar names a file that is not yet in place
        os.replace(temporary, destination)
        side.write_text(json.dumps(sidecar, indent=1))
    except OSError as error:  # a full disk, say
        raise ModelUnavailable(f"Requantizing {source.name} in {destination.parent} failed ({error}).") from error
    finally:
        Path(temporary).unlink(missing_ok=True)


def _quantizer_version() -> str:
    """The bindings' version: the llama.cpp they vendor quantizes, so a new one may round differently."""
    import importlib.metadata

    try:
        return importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
