"""The clock of a speculative run: it times each round from outside the algorithm.

A round has three marks: its start, the end of drafting (step 1) and the end of verification and commit (steps
2-4). At the last two the device is synchronized first, so a GPU's queued kernels count where they ran. Beside the
wall time the clock reads the models' own forward seconds (pipeline.forward_seconds: the target's and the draft's),
which the round anatomy splits from the Python around them. Recording (recording.py) happens after the last mark.
"""

from __future__ import annotations

import time

from specviz.decoding.adaptive import RoundTiming
from specviz.models import loading as models


class RoundClock:
    """Marks of the round in progress, read by the engine's policy (timing) and by record_round (the Round's ms)."""

    def __init__(self, pipeline):
        self.pipeline = pipeline
        self.run_forwards = pipeline.forward_seconds()  # at the run's start: forward_ms counts the run's forwards

    def start(self) -> None:
        self.started = time.perf_counter()
        self.forwards_at_start = self.pipeline.forward_seconds()
        self.target_at_start = self.pipeline.target.forward_seconds

    def drafted(self) -> None:
        models.synchronize(self.pipeline.device)
        self.drafted_at = time.perf_counter()
        self.forwards_drafted = self.pipeline.forward_seconds()

    def verified(self) -> None:
        models.synchronize(self.pipeline.device)
        self.verified_at = time.perf_counter()

    def draft_ms(self) -> float:
        return (self.drafted_at - self.started) * 1e3

    def verify_ms(self) -> float:
        """The target's forward, the accept/reject step and the commit."""
        return (self.verified_at - self.drafted_at) * 1e3

    def timing(self, draft, fed: int) -> RoundTiming:
        """What adaptive γ learns from the round: draft and verify ms, and what drafting did (Draft or None)."""
        return RoundTiming(self.draft_ms(), draft.forwards if draft else 0, self.verify_ms(), fed,
                           draft.caught_up if draft else 0, draft.source if draft else None)

    def draft_forward_ms(self) -> float:
        """The model forwards' ms while drafting (the draft model's, and the target's where a drafter reads it)."""
        return (self.forwards_drafted - self.forwards_at_start) * 1e3

    def verify_forward_ms(self) -> float:
        """The target's forward ms in this round."""
        return (self.pipeline.target.forward_seconds - self.target_at_start) * 1e3

    def round_ms(self) -> float:
        """The round's decoding, start to commit: what the run's wall time adds up."""
        return (self.verified_at - self.started) * 1e3

    def since_verified_ms(self) -> float:
        """The time after the commit so far: recording and the text, the views' cost."""
        return (time.perf_counter() - self.verified_at) * 1e3

    def run_forward_ms(self) -> float:
        """The models' forward ms since the run began."""
        return (self.pipeline.forward_seconds() - self.run_forwards) * 1e3
