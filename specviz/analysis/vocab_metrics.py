"""Trace -> the numbers of a run whose draft tokenizes differently: how much of the draft's belief fell on
tokens the target's vocabulary also holds. Defined once, in metrics.DEFINITIONS["shared_mass"].

A draft of another tokenizer proposes only the tokens both vocabularies spell alike (drafters/cross_vocab.py), from
its distribution renormalized over them. The share it had put there before renormalizing says what the mismatch
costs: at 0.9, a tenth of what the draft believed could not be proposed at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.trace import Trace


@dataclass
class SharedMass:
    overall: float  # "shared_mass": the mean over every drafted token
    lowest_round: float  # the smallest and largest of the rounds' own means
    highest_round: float
    drafted: int  # drafted tokens it is taken over


def shared_mass(trace: Trace) -> SharedMass | None:
    """The run's shared mass; None for a draft of the target's own tokenizer (no round recorded one)."""
    rounds = [round_.shared_mass for round_ in trace.rounds if round_.shared_mass]
    if not rounds:
        return None
    values = [value for masses in rounds for value in masses]
    means = [sum(masses) / len(masses) for masses in rounds]
    return SharedMass(sum(values) / len(values), min(means), max(means), len(values))
