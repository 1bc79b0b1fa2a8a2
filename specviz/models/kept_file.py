"""A JSON file of keyed entries kept in the cache between processes: where it is, reading it, and writing one entry.

The calibration's timings (decoding/calibration_store.py) and whether repacking works (models/repacking.py) are
kept so. A missing, unreadable or foreign file reads as empty; a write replaces the whole file by a rename, so two
processes writing at once leave one whole file (one entry may be lost: it is timed again later); a read-only cache
writes nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def path(variable: str, file_name: str) -> Path | None:
    """The file named by the environment variable `variable`, else `file_name` in the cache; None where it is "off"."""
    from specviz.models.offline import cache_root

    named = os.environ.get(variable)
    if named == "off":
        return None
    return Path(named) if named else cache_root() / file_name


def read(file: Path) -> dict:
    """Every entry of the file; {} where there is none to read."""
    try:
        entries = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}


def write(file: Path, key: str, entry) -> None:
    """Set one entry, keeping the others."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        temporary = file.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps({**read(file), key: entry}, indent=1), encoding="utf-8")
        temporary.replace(file)
    except OSError:
        pass
