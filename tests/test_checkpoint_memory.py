"""Giving back a mapped checkpoint's memory: paged-out weights keep their values; copies keep ties."""

import sys

import pytest
import torch

from specviz.models import checkpoint_memory
from tests.builders import Tiny


def test_copying_out_of_the_checkpoint_keeps_values_and_ties_and_leaves_linear_weights():
    """The copies release a memory-mapped checkpoint: new storage for everything but the linears' weights."""
    model = Tiny()
    embedding, inner_weight, inner_bias = model.embed.weight, model.inner.weight, model.inner.bias.detach().clone()
    old_pointer, inner_pointer = embedding.data_ptr(), inner_weight.data_ptr()
    checkpoint_memory.copy_out_of_checkpoint(model)
    assert model.embed.weight is embedding is model.head.weight and embedding.data_ptr() != old_pointer  # same tied tensor
    assert model.inner.weight.data_ptr() == inner_pointer  # the linear's own weight is left for packing or quantizing
    assert torch.equal(model.inner.bias, inner_bias)


def _resident_file_kb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssFile:"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise and /proc are Linux's")
def test_paging_out_a_mapped_weight_keeps_its_values_and_gives_back_its_pages(tmp_path):
    """What packing does to each float W of a mapped checkpoint once its packed copy exists."""
    values = torch.randn(64, 2**16, generator=torch.Generator().manual_seed(0))  # 16 MiB
    path = tmp_path / "weight.bin"
    values.numpy().tofile(path)
    mapped = torch.from_file(str(path), shared=False, size=values.numel()).view_as(values)  # a file mapping
    assert torch.equal(mapped, values)  # every page read: resident
    before = _resident_file_kb()
    if not checkpoint_memory.page_out(mapped):
        pytest.skip("this kernel has no MADV_PAGEOUT")
    assert before - _resident_file_kb() > 8 * 1024  # most of the 16 MiB given back
    assert torch.equal(mapped, values)  # read back from the file, unchanged
    anonymous = values.clone()
    checkpoint_memory.page_out(anonymous)  # ordinary memory: nothing changes either
    assert torch.equal(anonymous, values)
