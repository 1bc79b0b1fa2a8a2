"""torch's threads sized to the container's CPU quota (models/threads.py), read from fake cgroup trees."""

import os

import pytest
import torch

from specviz.models import threads


def _v2(tmp_path, text):
    (tmp_path / "cpu.max").write_text(text)
    return tmp_path


def _v1(tmp_path, quota, period):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text(f"{period}\n")
    return tmp_path


def test_the_quota_is_read_from_cgroup_v2_and_v1(tmp_path):
    assert threads.cgroup_cpu_limit(_v2(tmp_path, "200000 100000\n")) == 2.0
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert threads.cgroup_cpu_limit(tmp_path) is None
    (tmp_path / "b").mkdir()
    assert threads.cgroup_cpu_limit(_v1(tmp_path / "b", 150000, 100000)) == 1.5
    (tmp_path / "c").mkdir()
    assert threads.cgroup_cpu_limit(_v1(tmp_path / "c", -1, 100000)) is None
    assert threads.cgroup_cpu_limit(tmp_path / "missing") is None


def test_usable_cpus_rounds_a_fractional_quota_up_and_never_passes_the_affinity(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    assert threads.usable_cpus(_v2(tmp_path, "150000 100000")) == 2
    (tmp_path / "cpu.max").write_text("5000 100000")  # a twentieth of a CPU: still one thread
    assert threads.usable_cpus(tmp_path) == 1
    (tmp_path / "cpu.max").write_text("1600000 100000")  # 16 CPUs of quota, 8 in the mask
    assert threads.usable_cpus(tmp_path) == 8
    (tmp_path / "cpu.max").write_text("max 100000")
    assert threads.usable_cpus(tmp_path) == 8


@pytest.fixture
def torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_torch_threads_are_lowered_to_the_quota_never_raised(tmp_path, monkeypatch, torch_threads):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    torch.set_num_threads(4)
    assert threads.size_torch_threads(_v2(tmp_path, "100000 100000")) == (4, 1)
    (tmp_path / "cpu.max").write_text("max 100000")
    assert threads.size_torch_threads(tmp_path) == (1, 1)  # no quota: 8 usable, and 1 is not raised
    torch.set_num_threads(4)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    (tmp_path / "cpu.max").write_text("100000 100000")
    assert threads.size_torch_threads(tmp_path) == (4, 4)  # the user's explicit choice stands
