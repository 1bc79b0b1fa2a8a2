"""Goodness-of-fit helpers shared by the statistical tests: sampled counts against an exact law."""

import torch

from specviz.analysis.metrics import chi_square_test


def chi_square_p_value(counts: torch.Tensor, probs: torch.Tensor) -> float:
    """The p-value of specviz's one χ² helper (small bins pooled, exact Q(dof/2, χ²/2))."""
    return chi_square_test(counts, probs)[2]


def fit(exact: dict, counts: dict, runs: int) -> tuple[float, float]:
    """(χ² p-value, total variation distance) of the observed sequences against the target's law."""
    support = [sequence for sequence, p in exact.items() if p > 0]
    assert sum(counts[sequence] for sequence in exact if exact[sequence] == 0) == 0  # never a forbidden sequence
    observed = torch.tensor([counts[sequence] for sequence in support], dtype=torch.float)
    expected = torch.tensor([exact[sequence] for sequence in support])
    return chi_square_p_value(observed, expected / expected.sum()), 0.5 * float((observed / runs - expected).abs().sum())
