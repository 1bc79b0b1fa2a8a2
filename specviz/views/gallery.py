"""Recorded real runs that ship with the app (assets/gallery/*.json), opened with no model loaded.

A free Space cannot hold the Qwen2.5-Coder pair (its install and memory: docs/models.md), yet a real draft's real
rejections are the point of the demo. A trace holds everything the views draw, so a run recorded where the pair is
installed opens anywhere. Each entry file is one JSON object:

    {"gallery": 1, "title": "...", "about": "...", "provenance": {...}, "trace": {... a Trace ...}}

The provenance says where the run came from: the models and the sha256 of their weights, the settings, the
machine, the library versions, the date and the command. `python -m specviz replay --check FILE` re-runs an entry
on the machine that has the pair and confirms every round reproduces, so the shipped runs are real.

The runs shipped, and the command that records them, are in gallery_runs.py.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from specviz import paths
from specviz.analysis.consistency import checked
from specviz.config import OFFLINE_MODEL, DecodeConfig, ModelSpec
from specviz.trace import Trace

GALLERY_DIR = paths.ASSETS / "gallery"
ENTRY_VERSION = 1


@dataclass(frozen=True)
class Entry:
    """One recorded run: its file name's stem, a title and a line for the menu, and its provenance."""

    name: str
    title: str
    about: str
    provenance: dict
    path: Path

    def trace(self) -> Trace:
        return checked(Trace.from_dict(trace_data(json.loads(self.path.read_text(encoding="utf-8")))))

    def caption(self) -> str:
        """One line under an opened run: the pair, the machine and the date it was recorded on."""
        source, models = self.provenance, self.provenance.get("models", {})
        pair = " ← ".join(ModelSpec.parse(str(model.get("id", "?"))).name for model in models.values())
        return (f"Recorded on {source.get('machine', '?')} on {source.get('date', '?')[:10]}: {pair}; "
                "replayed here with no model (python -m specviz replay --check reproduces it where the pair is "
                "installed)")


def is_entry(data) -> bool:
    return isinstance(data, dict) and data.get("gallery") == ENTRY_VERSION and isinstance(data.get("trace"), dict)


def trace_data(data):
    """The trace's JSON object inside an entry; anything else as it is (a bare trace, or what Trace refuses)."""
    return data["trace"] if is_entry(data) else data


def entries(folder: Path | None = None) -> list[Entry]:
    """The entries in `folder` (GALLERY_DIR), in their file names' order (a number first sets it); none where it is missing."""
    found, folder = [], folder or GALLERY_DIR
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not is_entry(data):
            raise ValueError(f"{path.name} is not a gallery entry (no 'gallery': {ENTRY_VERSION} and 'trace')")
        found.append(Entry(path.stem, data["title"], data["about"], data["provenance"], path))
    return found


def model_hashes(model_id: str | None) -> str | None:
    """The pinned sha256 of an offline model's weights (checked when they are assembled or unpacked); None for a
    hub id or folder, whose weights this code does not pin."""
    from specviz.models import offline, split_gguf

    if model_id == OFFLINE_MODEL:
        return offline.GGUF_SHA256
    model = split_gguf.SPLIT_MODELS.get(model_id or "")
    return model.sha256 if model is not None else None


def _models(config: DecodeConfig) -> dict:
    draft = config.drafter.model if config.drafter.model else None
    return {role: {"id": model_id, "sha256": model_hashes(model_id)}
            for role, model_id in (("target", config.target), ("draft", draft)) if model_id}


def _machine() -> str:
    """The CPU's model name and its core count (or the GPU's name), as a person would write it."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"


def provenance(trace: Trace, command: list[str]) -> dict:
    config = DecodeConfig.from_dict(trace.config)
    versions = {package: metadata.version(package) for package in ("torch", "transformers")}
    return {"models": _models(config), "settings": trace.config, "device": trace.device, "dtype": trace.dtype,
            "machine": _machine(), "versions": {"python": platform.python_version(), **versions},
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": shlex.join(command)}


def changed_models(path: str | Path) -> list[str]:
    """For a gallery entry's file: each recorded model whose pinned weights differ from this code's pins (a replay
    would compare other weights). [] for a file that is no entry (a bare trace, an exported page)."""
    text = Path(path).read_text(encoding="utf-8")
    data = json.loads(text) if text.lstrip().startswith("{") else None
    if not is_entry(data):
        return []
    return [f"{model['id']} was recorded with weights of sha256 {model['sha256'][:12]}…, this code pins "
            f"{(model_hashes(model['id']) or 'none')[:12]}…"
            for model in data["provenance"].get("models", {}).values()
            if model.get("sha256") and model_hashes(model["id"]) != model["sha256"]]


def write_entry(path: Path, title: str, about: str, trace: Trace, command: list[str]) -> None:
    entry = {"gallery": ENTRY_VERSION, "title": title, "about": about, "provenance": provenance(trace, command),
             "trace": json.loads(trace.to_json())}
    path.write_text(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
