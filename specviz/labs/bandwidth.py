"""The memory-bandwidth lab: why decoding one token at a time is memory-bound, and so why verifying γ+1 tokens in
one forward costs about as much as one token (the assumption v(k) = 1 behind the speedup E / (γc + 1)).

A decoder step reads every weight once, whatever the batch: P·bytes / bandwidth seconds. It does about 2 FLOPs per
weight per token: 2·P·B / FLOP/s seconds. While the first is larger the arithmetic units wait for memory, and more
tokens per forward (a bigger batch B, or k drafted tokens) come for free. The roofline takes the larger of the two.
The KV cache, activations and kernel launch costs are left out: these are lower bounds.

>>> round(crossover_batch(2, **{k: PRESETS["A100 80GB PCIe"][k] for k in ("bandwidth_bytes_per_s", "flops_per_s")}))
161
>>> weight_read_seconds(11e9, 2, 1e12)  # the course's 11B model: 22 GB read at 1 TB/s
0.022
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported only when a forward is measured
    from specviz.models.loading import LanguageModel

PRESETS: dict[str, dict] = {
    # label: hardware peak numbers, with the course's 11B-parameter model (fp16/bf16, 2 bytes) as the workload so
    # that the presets compare on one model. Keys match the arguments of bandwidth_figures.roofline_figure.
    "A100 80GB PCIe": dict(
        # NVIDIA A100 datasheet: 1,935 GB/s HBM2e (80GB PCIe); 312 TFLOP/s dense FP16/BF16 tensor core.
        # The course calls this card "A100-40GB", but the 40GB parts have 1,555 GB/s (next preset); 1,935 GB/s is
        # the figure that gives the course's crossover B ≈ 161.
        bandwidth_bytes_per_s=1935e9, flops_per_s=312e12, params=11e9, bytes_per_param=2),
    "A100 40GB": dict(
        # NVIDIA A100 datasheet: 1,555 GB/s HBM2 (40GB PCIe and SXM); 312 TFLOP/s dense FP16/BF16 tensor core.
        bandwidth_bytes_per_s=1555e9, flops_per_s=312e12, params=11e9, bytes_per_param=2),
    "H100 SXM": dict(
        # NVIDIA H100 datasheet: 3.35 TB/s HBM3 (SXM5); 989 TFLOP/s dense BF16 tensor core (1,979 with sparsity).
        bandwidth_bytes_per_s=3.35e12, flops_per_s=989e12, params=11e9, bytes_per_param=2),
    "course: 11B model at 1 TB/s": dict(
        # The course's round-number example: 11e9 parameters × 2 bytes = 22 GB read at 1 TB/s -> 22 ms per token.
        # No FLOP/s is given, so only the memory bound is drawn.
        bandwidth_bytes_per_s=1e12, flops_per_s=None, params=11e9, bytes_per_param=2),
}


def weight_read_seconds(params: float, bytes_per_param: float, bandwidth_bytes_per_s: float) -> float:
    """Time to read every weight once: P·bytes / bandwidth. 11e9 params, 2 bytes, 1e12 B/s -> 0.022 s."""
    _check_positive(params=params, bytes_per_param=bytes_per_param, bandwidth_bytes_per_s=bandwidth_bytes_per_s)
    return params * bytes_per_param / bandwidth_bytes_per_s


def compute_seconds(params: float, batch: float, flops_per_s: float) -> float:
    """Time of the arithmetic of one step over `batch` tokens: 2·P·B / FLOP/s (a multiply and an add per weight).
    11e9 params, batch 1, 312e12 FLOP/s -> 7.05e-05 s, 0.6% (= 1/161) of the A100's 22e9 / 1935e9 = 11.4 ms weight read."""
    _check_positive(params=params, batch=batch, flops_per_s=flops_per_s)
    return 2.0 * params * batch / flops_per_s


def crossover_batch(bytes_per_param: float, bandwidth_bytes_per_s: float, flops_per_s: float) -> float:
    """The batch at which compute time overtakes weight-read time: 2·P·B / F = P·b / W  =>  B* = F·b / (2·W).
    P cancels: it depends on the hardware and the precision only. A100 (1935 GB/s, 312 TFLOP/s), 2 bytes -> 161.2."""
    _check_positive(bytes_per_param=bytes_per_param, bandwidth_bytes_per_s=bandwidth_bytes_per_s, flops_per_s=flops_per_s)
    return flops_per_s * bytes_per_param / (2.0 * bandwidth_bytes_per_s)


def step_seconds(params: float, batch: float, bytes_per_param: float, bandwidth_bytes_per_s: float,
                 flops_per_s: float | None) -> float:
    """The roofline: one forward over `batch` tokens takes max(weight read, compute); memory only if flops is None.
    11e9 params, 2 bytes on the A100: batch 1 -> 11.4 ms, batch 161 -> 11.4 ms, batch 322 -> 22.7 ms."""
    memory = weight_read_seconds(params, bytes_per_param, bandwidth_bytes_per_s)
    if flops_per_s is None:
        _check_positive(batch=batch)
        return memory
    return max(memory, compute_seconds(params, batch, flops_per_s))


def min_walltime_seconds(n_tokens: int, params: float, bytes_per_param: float, bandwidth_bytes_per_s: float,
                         flops_per_s: float | None = None, batch: int = 1) -> float:
    """A lower bound on decoding n_tokens one after another (each needs its own forward): n · step_seconds.
    With batch B, B sequences advance together and the bound holds for each. 100 tokens of the 11B model at
    1 TB/s -> 2.2 s, whatever the FLOP/s: plain decoding is capped at about 45 tokens/s there."""
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, numbers.Integral) or n_tokens < 0:
        raise ValueError(f"n_tokens must be an integer >= 0, got {n_tokens!r}")
    return n_tokens * step_seconds(params, batch, bytes_per_param, bandwidth_bytes_per_s, flops_per_s)


def measure_forward_ms(language_model: LanguageModel, context_ids: list[int], max_tokens: int = 32,
                       repeats: int = 3, warmup: int = 1) -> dict[int, float]:
    """Median ms of one forward of the loaded model over k = 1..max_tokens new tokens after `context_ids`, by
    profiling.measure_verify_costs (the cache is cropped back after every timed forward). {1: 21.0, 2: 21.4, ..}."""
    if not context_ids:
        raise ValueError("context_ids must hold at least one token: the forward is timed after a cached context")
    if not isinstance(max_tokens, int) or max_tokens < 1 or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"max_tokens and repeats must be integers >= 1, got {max_tokens!r} and {repeats!r}")
    from specviz.models import profiling

    return profiling.measure_verify_costs(language_model, list(context_ids), max_k=max_tokens, repeats=repeats,
                                          warmup=warmup)


def bandwidth_bound_until(timings_ms: dict[int, float], tolerance: float = 1.25) -> int:
    """The largest k such that every forward over 1..k tokens took at most tolerance × time(1): up to there, more
    tokens per forward are (nearly) free and this hardware is bandwidth-bound. The walk stops at the first k over
    the line, so a lucky fast time further on does not count.

    {1: 10, 2: 10.5, 3: 12, 4: 13, 5: 12}, tolerance 1.25 -> 3   (13 > 12.5 stops the walk; k = 5 is not reached)
    """
    if not timings_ms or 1 not in timings_ms:
        raise ValueError("timings_ms needs time(1), the forward over one token")
    if not tolerance >= 1.0:
        raise ValueError(f"tolerance must be >= 1 (a multiple of time(1)), got {tolerance!r}")
    limit = tolerance * timings_ms[1]
    bound = 1
    for k in range(2, max(timings_ms) + 1):
        if k not in timings_ms or timings_ms[k] > limit:
            break
        bound = k
    return bound


def _check_positive(**values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
