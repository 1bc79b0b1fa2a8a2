"""Measure v(k): the time of one target forward over k new tokens, relative to k = 1, at a given context length."""

from __future__ import annotations

import statistics
import time

import torch

from specviz.models import loading as models


def _median_forward_ms(model: models.LanguageModel, context_ids: list[int], sizes, forward, undo,
                       repeats: int, warmup: int) -> dict[int, float]:
    """Median milliseconds of forward(k) after `context_ids` is cached, for each k in `sizes`; undo() (untimed)
    takes every timed forward back off the cache, as a rejected round would be."""
    device = model.device
    model.reset()
    model.feed(torch.tensor(context_ids, dtype=torch.long, device=device))
    base = model.cached_length
    samples: dict[int, list[float]] = {k: [] for k in sizes}
    # Interleave the k values (1, 2, .., max_k, 1, 2, ..) so that slow drifts of the machine hit every k alike.
    for attempt in range(warmup + repeats):
        for k in samples:
            models.synchronize(device)
            started = time.perf_counter()
            forward(k)
            models.synchronize(device)
            if attempt >= warmup:
                samples[k].append((time.perf_counter() - started) * 1e3)
            undo(base)
    return {k: statistics.median(values) for k, values in samples.items()}


def measure_verify_costs(
    model: models.LanguageModel, context_ids: list[int], max_k: int = 16, repeats: int = 5, warmup: int = 2,
    sizes=None,
) -> dict[int, float]:
    """Median milliseconds of feeding k tokens after `context_ids` is cached, for k = 1..max_k (or each k in
    `sizes`, when given).

    The context is encoded once; every timed forward is cropped back off, as a rejected round would be.
    """
    sizes = range(1, max_k + 1) if sizes is None else sizes
    largest = max(sizes)
    probe = torch.tensor(context_ids[-largest:] * (largest // max(len(context_ids[-largest:]), 1) + 1),
                         device=model.device)  # [≥ largest]
    return _median_forward_ms(model, context_ids, sizes, lambda k: model.feed(probe[:k], logits_to_keep=k),
                              model.crop, repeats, warmup)


def heap_parents(nodes: int) -> list[int]:
    """A bushy token tree of `nodes` entries for timing its verification: two children of the committed sequence,
    then two children per entry, breadth first ([-1, -1, 0, 0, 1, 1, 2, ..]); depth about log2(nodes)."""
    return [-1 if index < 2 else (index - 2) // 2 for index in range(nodes)]


def measure_tree_verify_costs(
    model: models.LanguageModel, context_ids: list[int], sizes: list[int], repeats: int = 5, warmup: int = 2
) -> dict[int, float]:
    """Median milliseconds of verifying a token tree of k entries (heap_parents(k): the tree attention mask and
    position ids by depth) after `context_ids` is cached, for each k in `sizes`; interleaved and cropped back off
    as measure_verify_costs does. A chain's k tokens cost measure_verify_costs(k); the difference is the mask's."""
    probe = torch.tensor([context_ids[i % len(context_ids)] for i in range(max(sizes, default=0))],
                         device=model.device)  # [max k]

    def undo(base: int) -> None:
        model.keep_path([])  # drop the tree: back to `base` cached tokens
        model.crop(base)

    return _median_forward_ms(model, context_ids, sizes, lambda k: model.feed_tree(probe[:k], heap_parents(k)), undo,
                              repeats, warmup)


def relative_costs(timings_ms: dict[int, float]) -> dict[int, float]:
    """v(k) = time(k) / time(1)."""
    return {k: ms / timings_ms[1] for k, ms in timings_ms.items()}
