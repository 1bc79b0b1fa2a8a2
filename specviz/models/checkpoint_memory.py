"""Memory that a memory-mapped checkpoint holds, given back once the weights it maps have copies of their own.

transformers maps a safetensors checkpoint into memory, and every page read stays resident as part of the file
mapping while any tensor points into it. A packed (cpu_linear) or 4-bit (models.int4_decoder) copy of a linear
weight makes its float pages dead weight: page_out gives them back at once, and copy_out_of_checkpoint moves the
small tensors (embeddings, norms, biases) out so that the mapping itself can go. The Qwen2.5-Coder pair's run
peaks at 9.5 GB with both, 14.7 GB without (docs/results.md, "What the float32 CPU path's machinery buys").
"""

from __future__ import annotations

import ctypes
import mmap
import sys

import torch

MADV_PAGEOUT = 21  # linux/mman.h


def page_out(tensor: torch.Tensor) -> bool:
    """Ask Linux to reclaim the pages that lie wholly inside `tensor` (madvise MADV_PAGEOUT): content unchanged.

    A packed weight's float W is a page range of the mapped checkpoint, and read pages stay resident while the
    mapping lives (until copy_out_of_checkpoint): without this, packing a model holds its checkpoint's pages
    beside its own memory, nearly doubling the peak (docs/results.md, "The Qwen2.5-Coder pair: memory, start-up,
    and whether it should be the default"). Clean file pages are dropped (read again if ever touched);
    elsewhere, and on kernels before 5.4, the call does nothing. Returns whether the kernel took the advice.
    """
    page = mmap.PAGESIZE
    start = tensor.data_ptr()
    first, last = -(-start // page) * page, (start + tensor.numel() * tensor.element_size()) // page * page
    if tensor.device.type != "cpu" or last <= first or sys.platform != "linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.madvise(ctypes.c_void_p(first), ctypes.c_size_t(last - first), MADV_PAGEOUT) == 0


def copy_out_of_checkpoint(hf_model: torch.nn.Module) -> None:
    """Give every float tensor that is not a linear's weight (embeddings, norms, biases, tables) its own memory.

    transformers maps a safetensors checkpoint into memory, and every weight read stays resident as part of the
    file mapping until no tensor points into it. Once the linear weights are dropped (packed, or quantized by a
    4-bit draft), these copies release the mapping, and with it the resident pages (docs/models.md).
    """
    with torch.no_grad():
        for module in hf_model.modules():
            for tensors in (module._parameters, module._buffers):
                for name, tensor in tensors.items():
                    if tensor is not None and tensor.layout == torch.strided and not (
                            name == "weight" and isinstance(module, torch.nn.Linear)):
                        tensor.data = tensor.data.clone()
