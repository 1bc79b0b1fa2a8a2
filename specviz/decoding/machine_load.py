"""How busy the machine was while a run was timed: the CPU time other processes took, read from Linux's counters.

A class laptop is rarely quiet. A timing means something only beside what else ran meanwhile, so a compared run
reads the kernel's CPU counters at its start and after each round (/proc/stat: every core's busy time; /proc/self/stat: this
process's, all its threads), and the difference is what the others took:

    others' busy cores = (Δ machine busy − Δ this process) ÷ Δ wall

>>> load = CpuLoad(machine_ticks=1000, own_ticks=300, wall_s=10.0)
>>> later = CpuLoad(machine_ticks=1300, own_ticks=450, wall_s=11.0)   # 1 s: 300 ticks in all, 150 of them ours
>>> round(later.others_busy_cores(load, ticks_per_s=100), 2)
1.5
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # of /proc/stat's "cpu" line: user, nice, system, irq, softirq, steal (not idle, iowait)


@dataclass(frozen=True)
class CpuLoad:
    """A reading of the counters: the machine's busy ticks on every core, this process's, and the wall clock."""

    machine_ticks: int
    own_ticks: int
    wall_s: float

    @classmethod
    def read(cls) -> CpuLoad | None:
        """Now; None where the counters cannot be read (not Linux)."""
        try:
            with open("/proc/stat", encoding="ascii") as handle:
                fields = handle.readline().split()[1:]
            with open("/proc/self/stat", encoding="ascii") as handle:
                own = handle.read().rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
        except (OSError, IndexError):
            return None
        machine = sum(int(fields[index]) for index in BUSY_FIELDS if index < len(fields))
        return cls(machine, int(own[11]) + int(own[12]), time.perf_counter())  # utime + stime

    def others_busy_cores(self, start: CpuLoad, ticks_per_s: float | None = None) -> float | None:
        """The cores other processes kept busy on average since `start`; None over too short a time to say."""
        ticks_per_s = ticks_per_s or os.sysconf("SC_CLK_TCK")
        seconds = self.wall_s - start.wall_s
        if seconds * ticks_per_s < 10:  # under ten ticks: the counters' grain is too coarse to read
            return None
        others = (self.machine_ticks - start.machine_ticks) - (self.own_ticks - start.own_ticks)
        return max(others, 0) / ticks_per_s / seconds


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
