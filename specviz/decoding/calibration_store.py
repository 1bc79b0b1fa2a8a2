"""The calibration's timings kept on disk between starts, so a restarted app's first row does not wait for them.

calibration.calibrate times the target's forward over k = 1..K tokens (v(k)) and c's two steps before a pair's first
round, for a large pair more than the rest of a start (docs/results.md, "Against llama.cpp"). Their ratios hold
from one start to the next on the same machine (scripts/c_spread.py measures their spread); the machine's pace does
not. So a later start reads the ratios from here and times one target step afresh, and every kept time is scaled
by that step's ratio to the kept one: v(k) and c stay as timed, the milliseconds are this start's.

SPECVIZ_CALIBRATION names another file, or "off" to time everything at each start (the tests give each test its
own file; scripts/c_spread.py turns it off to measure fresh calibrations).

An entry is keyed by what its timings depend on: the model backend's class, the target (and, for c, the drafter),
the device and dtype, the threads, the CPU's name and the instruction set torch's kernels use. The file is
$SPECVIZ_CACHE/calibration.json; deleting it makes the next start time everything again.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path

import torch

from specviz.models import kept_file

VERSION = 1  # bump when what calibration.calibrate times changes (its prompt, sizes or method)


def store_path() -> Path | None:
    """Where timings are kept; None when SPECVIZ_CALIBRATION is "off"."""
    return kept_file.path("SPECVIZ_CALIBRATION", "calibration.json")


def machine_key(model_class: str, target_id: str, device: torch.device, dtype) -> str:
    """The key of one target's timings on this machine, as its settings stand now."""
    from specviz.models.loading import cpu_kernels, cpu_name

    return " | ".join([f"v{VERSION}", model_class, target_id, str(device), str(dtype), f"{torch.get_num_threads()} threads",
                       cpu_name(), cpu_kernels(device) or "gpu"])


class KeptTimings:
    """One target's kept timings (None where nothing is kept), rescaled to this start's pace by `time_step`, a
    function that times one target step now (called at most once, and only when something kept is used)."""

    def __init__(self, key: str, time_step: Callable[[], float], path: Path | None = None):
        self.key, self.path, self._time_step = key, path or store_path(), time_step
        self._scale: float | None = None
        self.entry = kept_file.read(self.path).get(key, {}) if self.path is not None else {}

    def scale(self) -> float:
        """This start's target step over the kept one: every kept millisecond is multiplied by it."""
        if self._scale is None:
            self._scale = self._time_step() / self.entry["forwards_ms"][0]
        return self._scale

    def align(self, one_step_ms: float) -> None:
        """This process already timed a target step (one_step_ms, a forward over one token): scale to it, not to a new
        timing."""
        if self._scale is None and self.entry.get("forwards_ms"):
            self._scale = one_step_ms / self.entry["forwards_ms"][0]

    def forwards(self, sizes: int) -> list[float] | None:
        """The target's forward over 1..sizes tokens, in this start's milliseconds; None if fewer were kept."""
        kept = self.entry.get("forwards_ms", [])
        return [ms * self.scale() for ms in kept[:sizes]] if len(kept) >= sizes else None

    def steps(self, drafter: str) -> tuple[float, float] | None:
        """(draft step ms, target step ms) for c with this drafter, in this start's milliseconds; None if not kept."""
        kept = self.entry.get("steps_ms", {}).get(drafter)
        if kept is None or not self.entry.get("forwards_ms"):
            return None
        return kept[0] * self.scale(), kept[1] * self.scale()

    def keep_forwards(self, forwards_ms: list[float]) -> None:
        """Keep newly timed forwards; c's steps kept beside older forwards are rescaled to them."""
        old = self.entry.get("forwards_ms")
        ratio = forwards_ms[0] / old[0] if old else 1.0
        steps = {name: [ms * ratio for ms in pair] for name, pair in self.entry.get("steps_ms", {}).items()}
        self.entry = {**self.entry, "forwards_ms": list(forwards_ms), "steps_ms": steps}
        self._scale = 1.0
        self._write()

    def keep_steps(self, drafter: str, draft_ms: float, target_ms: float) -> None:
        """Keep c's steps, in the kept forwards' milliseconds (so one scale rescales them all later)."""
        if not self.entry.get("forwards_ms"):
            return
        self.entry.setdefault("steps_ms", {})[drafter] = [draft_ms / self.scale(), target_ms / self.scale()]
        self._write()

    def _write(self) -> None:
        if self.path is None:
            return  # a read-only cache keeps nothing: the next start times everything again
        self.entry["timed"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        kept_file.write(self.path, self.key, self.entry)
