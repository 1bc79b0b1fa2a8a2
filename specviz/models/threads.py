"""torch's CPU threads sized to the CPUs this process may really use.

torch starts one OpenMP thread per core it sees, and a container sees the host's cores, not its CPU quota: a
Space limited to 2 CPUs on an 8-core host runs 8 threads that take turns on 2 CPUs, and decoding runs slower than
with 2 (docs/hosting.md, "A Space that is ready when the first visitor arrives"). The quota is in the cgroup:
cgroup v2's cpu.max ("200000 100000" is 2 CPUs, "max 100000" none), or v1's cpu.cfs_quota_us over
cpu.cfs_period_us (-1: none). An affinity mask narrows too.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")


def cgroup_cpu_limit(root: Path = CGROUP) -> float | None:
    """The CPU quota in CPUs (2.0, 1.5, ...) from cgroup v2 or v1; None where there is none or none is readable."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]  # v2
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())  # v1
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 or period <= 0 else quota / period
    except (OSError, ValueError):
        return None


def usable_cpus(root: Path = CGROUP) -> int:
    """CPUs this process may use: its affinity mask (else the core count), lowered to the quota, rounded up."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    limit = cgroup_cpu_limit(root)
    return max(1, min(cpus, math.ceil(limit))) if limit is not None else max(1, cpus)


def size_torch_threads(root: Path = CGROUP) -> tuple[int, int]:
    """Lower torch's intra-op threads to usable_cpus() where it started more (never raise them; an explicit
    OMP_NUM_THREADS is left alone). Returns (threads before, threads now)."""
    import torch

    before = torch.get_num_threads()
    if os.environ.get("OMP_NUM_THREADS"):
        return before, before
    wanted = usable_cpus(root)
    if wanted < before:
        torch.set_num_threads(wanted)
    return before, torch.get_num_threads()


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo where there is one, else what platform says."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as file:
            info = file.read()
    except OSError:
        return platform.processor() or "unknown"
    return next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")),
                platform.processor() or "unknown")
