"""The seed table's rows for the Memory bandwidth tab: seed 001's A100 figures and formulas, and seed 002's
Lesson 1 example (an 11B model, 22 GB, at 1 TB/s). Every value is computed by
specviz.labs.memory_bandwidth.bandwidth, the module the tab draws with.

Seed 001 calls its card an "A100-40GB". specviz takes the card's name as the fact and corrects the figures that
belong to another part or to a slip: the bandwidth (1,935 GB/s is the 80GB PCIe's), the SRAM (40 MB is the L2's
size), bits given as bytes, and an extra factor 2 in the weight-read time.
"""

from __future__ import annotations

from specviz.labs.memory_bandwidth import bandwidth
from tests.sources.checks import SeedRow

A100_40GB = bandwidth.PRESETS["A100 40GB"]  # the card seed 001 names, with its datasheet figures
A100_80GB_PCIE = bandwidth.PRESETS["A100 80GB PCIe"]  # the card whose bandwidth seed 001 prints
COURSE_1TB = bandwidth.PRESETS["course: 11B model at 1 TB/s"]  # seed 002's Lesson 1 example
SRAM_TIER = bandwidth.A100_40GB_HIERARCHY[0]


def _crossover(preset: dict) -> float:
    """The batch at which compute overtakes the weight read, for a preset's card at its bytes per parameter."""
    return bandwidth.crossover_batch(preset["bytes_per_param"], preset["bandwidth_bytes_per_s"], preset["flops_per_s"])


def _read_seconds(preset: dict) -> float:
    """One read of the preset's model (11B parameters, 2 bytes each: 22 GB) at the preset's bandwidth."""
    return bandwidth.weight_read_seconds(preset["params"], preset["bytes_per_param"], preset["bandwidth_bytes_per_s"])


SEED_001_ROWS = [
    SeedRow(seed="001", where="denote the number of bytes in each number (16 for FP16",
            what="bytes per FP16 number", seed_value="16",
            specviz_value=lambda: A100_40GB["bytes_per_param"], expected=2.0, agrees=False,
            settles="16 is FP16's width in bits: 16 bits ÷ 8 = 2 bytes (and INT8 is 8 bits = 1 byte, not 8)."),
    SeedRow(seed="001", where="\\frac{2 \\cdot P \\cdot n_{\\text {bytes }}}{n_{\\text {memory bandwidth }}}",
            what="factor in the weight-read time, factor · P · bytes / bandwidth",
            seed_value="2", specviz_value=lambda: bandwidth.weight_read_seconds(1, 1, 1), expected=1.0,
            agrees=False,
            settles="A step reads each weight once: P · bytes / bandwidth. The 2 belongs to the compute time (a "
                    "multiply and an add per weight). With it, 22 GB at 1,555 GB/s would take 28.3 ms instead of "
                    "14.1 ms."),
    SeedRow(seed="001", where="\\frac{2 \\cdot P \\cdot B}{n_{\\text {flops }}}",
            what="factor in the compute time, factor · P · B / FLOP/s", seed_value="2",
            specviz_value=lambda: bandwidth.compute_seconds(1, 1, 1), expected=2.0, agrees=True, settles=""),
    SeedRow(seed="001", where="Memory bandwidth: 1935 GB/s", what="HBM bandwidth of the A100-40GB",
            seed_value="1935 GB/s", specviz_value=lambda: A100_40GB["bandwidth_bytes_per_s"], expected=1555e9,
            agrees=False,
            settles="NVIDIA's A100 datasheet gives the 40GB parts (PCIe and SXM) 1,555 GB/s of HBM2; 1,935 GB/s is "
                    "the 80GB PCIe part's HBM2e (the 80GB SXM has 2,039 GB/s)."),
    SeedRow(seed="001", where="SRAM: 40MB", what="on-chip SRAM of the A100 (L1 / shared memory, all SMs)",
            seed_value="40MB", specviz_value=lambda: SRAM_TIER["capacity_bytes"], expected=108 * 192 * 1024,
            agrees=False,
            settles="192 KiB per SM × 108 SMs = 20,736 KiB = 20.25 MiB, about 21.2 MB. 40 MB is the size of the "
                    "A100's L2 cache, the next tier down."),
    SeedRow(seed="001", where="Compute: 312 TFLOPS with FP16", what="dense FP16 tensor-core peak of the A100",
            seed_value="312 TFLOPS", specviz_value=lambda: A100_40GB["flops_per_s"], expected=312e12, agrees=True,
            settles=""),
    SeedRow(seed="001", where="Memory bandwidth: 1935 GB/s",
            what="one step's weight read, 22 GB (an 11B fp16 model) on the A100-40GB; the post prints no time, "
                 "its 1935 GB/s implies 11.4 ms",
            seed_value="11.4 ms", specviz_value=lambda: _read_seconds(A100_40GB), expected=22e9 / 1555e9,
            agrees=False,
            settles="22 GB ÷ 1,555 GB/s = 14.1 ms. The 11.4 ms is 22 GB ÷ 1,935 GB/s, the 80GB PCIe card's "
                    "bandwidth."),
    SeedRow(seed="001", where="memory bandwidth dominates compute latency for batch sizes smaller than 161",
            what="batch at which compute time overtakes the weight read (FP16, A100-40GB)", seed_value="161",
            specviz_value=lambda: _crossover(A100_40GB), expected=312e12 * 2 / (2 * 1555e9), agrees=False,
            settles="Equal times: P·b / W = 2·P·B / F, so B = F·b / (2W) = 312e12 × 2 / (2 × 1,555e9) = 200.6. "
                    "161 is the same sum with 1,935 GB/s (161.2). The post's own formulas, with the extra 2 and "
                    "16 \"bytes\", would give B = 16 × 312e12 / 1,935e9 = 2,580."),
]

# Seed 002, Lesson 1's worked example: the Memory bandwidth tab's "course: 11B model at 1 TB/s" preset.
SEED_002_BANDWIDTH_ROWS = [
    SeedRow(seed="002", where="say 11B parameters = 22 GB in 16-bit precision", what="bytes of an 11B fp16 model",
            seed_value="22 GB", specviz_value=lambda: bandwidth.COURSE_MODEL_BYTES, expected=22e9, agrees=True,
            settles=""),
    SeedRow(seed="002", where="If memory bandwidth is 1 TB/s, each read takes about 22 ms",
            what="one read of the 22 GB model at 1 TB/s", seed_value="22 ms",
            specviz_value=lambda: _read_seconds(COURSE_1TB), expected=0.022, agrees=True, settles=""),
    SeedRow(seed="002", where="so 5 tokens take at least 110 ms", what="floor for 5 tokens, one forward each",
            seed_value="110 ms",
            specviz_value=lambda: bandwidth.min_walltime_seconds(5, COURSE_1TB["params"],
                                                                  COURSE_1TB["bytes_per_param"],
                                                                  COURSE_1TB["bandwidth_bytes_per_s"]),
            expected=0.110, agrees=True, settles=""),
]
