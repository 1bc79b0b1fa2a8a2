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
        # Seed 001 (the blog post) gives its "A100-40GB" this figure, but the 40GB parts have 1,555 GB/s (next
        # preset); 1,935 GB/s is the figure that gives the post's crossover B ≈ 161.
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


# The forward sizes the "Measure this machine" button times: every k up to 4 (γ + 1 for the small γ a CPU uses), then
# about √2 apart up to 32: ten sizes show the curve's shape, where every k from 1 to 32 took 32 forwards a pass.
MEASURED_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
OPENING_PRESET = "A100 40GB"  # the card the hierarchy caption corrects, so the tab's headline and caption agree (14.1 ms)
COURSE_MODEL_BYTES = 11e9 * 2  # the course's 11B-parameter model in fp16: 22 GB

# Seed 001's memory-hierarchy picture for the A100-40GB, fastest tier first, with its figures corrected and sourced.
A100_40GB_HIERARCHY: list[dict] = [
    # 192 KB of combined L1 cache / shared memory per SM × 108 SMs = 20,736 KiB = 20.25 MiB (NVIDIA A100 whitepaper,
    # 2020). About 19 TB/s is Dao et al. 2022 (FlashAttention), section 2.1's estimate; its Figure 1 rounds to "20 MB".
    dict(tier="on-chip SRAM (L1 / shared)", capacity_bytes=108 * 192 * 1024, bandwidth_bytes_per_s=19e12,
         capacity_text="20.25 MiB (192 KiB × 108 SMs)"),
    # 40 MB L2 (41,943,040 bytes, as cudaGetDeviceProperties reports). Bandwidth: the whitepaper's 5,120 bytes per
    # clock (2.3× the V100's) at the 1,410 MHz boost clock, 7.2 TB/s: a peak; microbenchmarks measure less.
    dict(tier="L2 cache", capacity_bytes=40 * 2**20, bandwidth_bytes_per_s=5120 * 1.41e9, capacity_text="40 MiB"),
    # 40 GB of HBM2 at 1,555 GB/s (A100 datasheet, 40GB PCIe and SXM4). Not 1,935 GB/s: that is the 80GB PCIe's HBM2e.
    dict(tier="HBM2", capacity_bytes=40 * 2**30, bandwidth_bytes_per_s=PRESETS["A100 40GB"]["bandwidth_bytes_per_s"],
         capacity_text="40 GiB"),
    # Host DRAM as the GPU reads it, over PCIe 4.0 x16: 16 GT/s × 16 lanes × 128/130 (encoding) / 8 = 31.5 GB/s each
    # way (the datasheet's "64 GB/s" adds both directions). 1 TB: a DGX A100's system memory. The DRAM itself is
    # faster (8 channels of DDR4-3200, 204.8 GB/s a socket), so the link bounds what the GPU gets. FlashAttention's
    # Figure 1 gives "CPU DRAM 12.8 GB/s" (one DDR4-1600 channel), a lower figure without a stated source.
    dict(tier="host DRAM over PCIe 4.0 x16", capacity_bytes=1e12, bandwidth_bytes_per_s=16e9 * 16 * 128 / 130 / 8,
         capacity_text="1 TB (DGX A100)"),
]


def hierarchy_read_times(model_bytes: float = COURSE_MODEL_BYTES, tiers: list[dict] = A100_40GB_HIERARCHY) -> list[dict]:
    """Each tier's row with `holds` (model_bytes fits in it) and `read_seconds` = model_bytes / bandwidth, the time
    to stream the weights once, i.e. one decoding step's floor, or None where it does not fit.
    22e9 bytes: SRAM and L2 None, HBM2 22e9 / 1555e9 = 14.1 ms, host over PCIe 22e9 / 31.5e9 = 0.70 s."""
    _check_positive(model_bytes=model_bytes)
    rows = []
    for tier in tiers:
        _check_positive(capacity_bytes=tier["capacity_bytes"], bandwidth_bytes_per_s=tier["bandwidth_bytes_per_s"])
        holds = tier["capacity_bytes"] >= model_bytes
        rows.append({**tier, "holds": holds,
                     "read_seconds": model_bytes / tier["bandwidth_bytes_per_s"] if holds else None})
    return rows


def hierarchy_caption(model_bytes: float = COURSE_MODEL_BYTES) -> str:
    """What the hierarchy figure shows, and the seeds' figures it corrects, each with its arithmetic (Markdown).
    The picture and the card's figures are seed 001's (a blog post), the 22 GB model and the round 1 TB/s are
    seed 002's (the course); docs/sources-checked.md lists the same corrections row by row."""
    rows = {row["tier"]: row for row in hierarchy_read_times(model_bytes)}
    hbm, host, sram = rows["HBM2"], rows["host DRAM over PCIe 4.0 x16"], A100_40GB_HIERARCHY[0]
    wrong = PRESETS["A100 80GB PCIe"]["bandwidth_bytes_per_s"]
    flops, right = PRESETS["A100 40GB"]["flops_per_s"], hbm["bandwidth_bytes_per_s"]
    gigabytes = f"{model_bytes / 1e9:g} GB"
    return (f"**The A100-40GB's memory hierarchy** (the picture seed 001, the blog post, draws): capacity and bandwidth "
            f"of each tier, and the time to read the course's {gigabytes} model (11B parameters × 2 bytes) once from "
            "each tier that can hold it, the floor of one decoding step; red diamonds mark the seeds' bandwidths. "
            f"**Corrected:** the post gives this card {wrong / 1e9:,.0f} GB/s, the figure of the A100 80GB PCIe's "
            f"HBM2e; the 40GB parts have {right / 1e9:,.0f} GB/s. A step of the {gigabytes} model is then "
            f"{gigabytes} ÷ {right / 1e9:,.0f} GB/s = **{hbm['read_seconds'] * 1e3:.1f} ms**, not "
            f"{model_bytes / wrong * 1e3:.1f} ms (the course's round 1 TB/s gives {model_bytes / 1e12 * 1e3:.0f} ms), "
            f"and compute overtakes memory where P·b / W = 2·P·B / F, at B = F·b / (2W) = "
            f"{flops / 1e12:.0f}e12 × 2 / (2 × {right / 1e9:,.0f}e9) ≈ **{crossover_batch(2, right, flops):.1f}**, "
            f"not {crossover_batch(2, wrong, flops):.0f}. The post's formula also counts FP16 as 16 bytes (16 is FP16's "
            "bits: 2 bytes) and doubles the weight read (2·P·b / W: each weight is read once). Its 40 MB of SRAM is "
            f"the L2's size: the SMs' L1 / shared memory is 192 KiB × 108 = {sram['capacity_text'].split(' (')[0]}. "
            f"The host's memory is read over PCIe 4.0 x16 at {host['bandwidth_bytes_per_s'] / 1e9:.1f} GB/s each way "
            "(FlashAttention's figure says 12.8 GB/s for CPU DRAM); SRAM's 19 TB/s is FlashAttention's estimate, and "
            "L2's 7.2 TB/s a peak from the whitepaper's bytes per clock.")


def weight_read_seconds(params: float, bytes_per_param: float, bandwidth_bytes_per_s: float) -> float:
    """Time to read every weight once: P·bytes / bandwidth. 11e9 params, 2 bytes, 1e12 B/s -> 0.022 s."""
    _check_positive(params=params, bytes_per_param=bytes_per_param, bandwidth_bytes_per_s=bandwidth_bytes_per_s)
    return params * bytes_per_param / bandwidth_bytes_per_s


def compute_seconds(params: float, batch: float, flops_per_s: float) -> float:
    """Time of the arithmetic of one step over `batch` tokens: 2·P·B / FLOP/s (a multiply and an add per weight).
    11e9 params, batch 1, 312e12 FLOP/s -> 7.05e-05 s, 0.6% (= 1/161) of the 80GB PCIe card's 22e9 / 1935e9 = 11.4 ms
    weight read."""
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


def measure_forward_ms(language_model: LanguageModel, context_ids: list[int], sizes: tuple[int, ...] = MEASURED_SIZES,
                       repeats: int = 3, warmup: int = 1) -> dict[int, float]:
    """Median ms of one forward of the loaded model over k new tokens after `context_ids`, for each k in `sizes`, by
    profiling.measure_verify_costs (the cache is cropped back after every timed forward). {1: 21.0, 2: 21.4, ..}."""
    if not context_ids:
        raise ValueError("context_ids must hold at least one token: the forward is timed after a cached context")
    if not sizes or sizes[0] != 1 or any(not isinstance(k, int) or isinstance(k, bool) for k in sizes) \
            or list(sizes) != sorted(set(sizes)):
        raise ValueError(f"sizes must be increasing whole numbers from 1 (the one-token forward), got {sizes!r}")
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    from specviz.models import profiling

    return profiling.measure_verify_costs(language_model, list(context_ids), sizes=sizes, repeats=repeats,
                                          warmup=warmup)


def bandwidth_bound_until(timings_ms: dict[int, float], tolerance: float = 1.25) -> int:
    """The largest timed k such that every forward timed over 1..k tokens took at most tolerance × time(1): up to
    there, more tokens per forward are (nearly) free and this hardware is bandwidth-bound. The walk goes through the
    timed sizes in order and stops at the first over the line, so a lucky fast time further on does not count.

    {1: 10, 2: 10.5, 3: 12, 4: 13, 5: 12}, tolerance 1.25 -> 3   (13 > 12.5 stops the walk; k = 5 is not reached)
    {1: 10, 2: 11, 4: 12, 8: 14}, tolerance 1.25 -> 4   (k = 3 was not timed; 8 is over the line)
    """
    if not timings_ms or 1 not in timings_ms:
        raise ValueError("timings_ms needs time(1), the forward over one token")
    if not tolerance >= 1.0:
        raise ValueError(f"tolerance must be >= 1 (a multiple of time(1)), got {tolerance!r}")
    limit = tolerance * timings_ms[1]
    bound = 1
    for k in sorted(timings_ms):
        if timings_ms[k] > limit:
            break
        bound = k
    return bound


def _check_positive(**values: float) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
