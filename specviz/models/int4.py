"""The target's own 4-bit copy as a draft: quantized self-speculation (as in QSpec, Zhao et al. 2024).

The offline target ships as a Q4_1 GGUF: every linear weight is 4-bit codes in groups of 32, each group with a
scale d and a minimum m, so w = d·q + m. specviz runs it in float32 (the dequantized weights), which keeps its
distribution exact but streams 4 bytes a weight on every step. This draft runs the same codes through torch's
4-bit CPU kernel (`_weight_int4pack_mm_for_cpu`, which computes w = (q − 8)·scale + zero), so it reads an eighth
of the bytes:

- the 210 decoder linears: group-32 asymmetric 4-bit, recovered from the float32 weights. For the offline target
  every code is recovered exactly (every group of a Q4_1 tensor spans its codes' range); the kernel holds each
  group's scale and zero in bfloat16, which moves a weight by far less than half a step;
- the LM head (the tied Q8_0 embedding, 49k × 576): int8 with one scale per row (`_weight_int8pack_mm`), since
  4-bit there halves agreement;
- the kernels take bfloat16 activations: each linear casts its input to bfloat16 and its output back, so
  attention, norms and the KV cache stay in the target's dtype.

The draft therefore differs from the target only by bfloat16 rounding (activations, scales and zeros): on the
offline target it picks the target's top token almost everywhere, for about half a float32 step (docs/research.md,
"The target's own 4-bit copy"). Speculative decoding then keeps the float32 target's
distribution exactly, which running the 4-bit copy alone would not.

For any other float target the same recovery is an ordinary 4-bit quantization (lossy, still exact as a draft).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch

GROUP = 32  # weights per quantization group: Q4_1's block size
DENSE_ROWS = 160  # from about this many rows (a prompt) the dense path beats the 4-bit kernel (Int4Linear._dense)
DENSE_CHUNK = 1024  # output rows dequantized at a time: a few MB, so the float weights never exist whole
# Output rows quantized at a time: each step's temporaries stay small and in cache, and a weight's float, int32 and
# difference tensors never exist whole (about twice as fast as whole tensors). A multiple of 64, the rows the 4-bit
# packing works in, so that the packed chunks join into the whole weight's packing.
QUANT_ROWS = 256
HEAD_ROWS = 4096  # the int8 head's rows at a time, for the same reason


def available(device: torch.device) -> bool:
    """Whether this torch has the CPU 4-bit and 8-bit weight-only kernels, and the device is a CPU."""
    aten = torch.ops.aten
    return device.type == "cpu" and all(
        hasattr(aten, name)
        for name in ("_convert_weight_to_int4pack_for_cpu", "_weight_int4pack_mm_for_cpu", "_weight_int8pack_mm")
    )


class Int4Linear(torch.nn.Module):
    """y = x Wᵀ (+ b) with W held as group-32 asymmetric 4-bit codes; bfloat16 inside the kernel.

    >>> Int4Linear(torch.nn.Linear(64, 16))(torch.ones(2, 64)).shape  # the kernel packs outputs in sixteens
    torch.Size([2, 16])
    """

    def __init__(self, linear: torch.nn.Linear | Sequence[torch.nn.Linear], dense_prompt: bool = False):
        """`linear`, or several linears of one input side by side (q, k and v as one: their outputs concatenated)."""
        super().__init__()
        linears = [linear] if isinstance(linear, torch.nn.Linear) else list(linear)
        weights = [part.weight.detach() for part in linears]  # each [out_i, in], read once (a packed-only W is read back)
        in_features = weights[0].shape[1]
        self.out_features = sum(weight.shape[0] for weight in weights)
        packed, scales, lows, nibbles = [], [], [], []
        for rows in _row_chunks(weights, QUANT_ROWS):  # [c, in] of the stacked W, in order
            groups = rows.float().view(rows.shape[0], in_features // GROUP, GROUP)  # [c, in/G, G]
            low, high = groups.amin(-1), groups.amax(-1)  # [c, in/G]: m, and m + 15·d (aminmax is 5× slower here)
            scale = ((high - low) / 15).clamp(min=1e-12)  # d
            codes = (groups - low[..., None]).div_(scale[..., None]).round_().clamp_(0, 15).to(torch.int32)  # q ∈ [0, 15]
            packed.append(torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes.view(rows.shape[0], in_features), 8))
            scales.append(scale)
            lows.append(low)
            if dense_prompt:  # the same codes, two to a byte, for the dense path: [c, in/2], low nibble first
                pairs = codes.view(rows.shape[0], in_features // 2, 2).to(torch.uint8)
                nibbles.append(pairs[..., 0] | pairs[..., 1] << 4)
        self.packed = torch.cat(packed)  # [out, in/2]: the kernel packs rows in blocks that the chunks never split
        scale, low = torch.cat(scales), torch.cat(lows)  # [out, in/G]
        # The kernel computes (q − 8)·scale + zero, so zero = m + 8·d gives d·q + m.  # [in/G, out, 2]
        self.scales_and_zeros = torch.stack([scale, low + 8 * scale], -1).transpose(0, 1).contiguous().to(torch.bfloat16)
        biases = [part.bias for part in linears]
        if len(linears) == 1:
            self.bias = None if biases[0] is None else biases[0].detach()  # shared with the float model
        else:  # [Σ out]: a linear without a bias adds zeros
            self.bias = None if all(bias is None for bias in biases) else torch.cat(
                [weight.new_zeros(weight.shape[0]) if bias is None else bias.detach() for weight, bias in zip(weights, biases)])
        self.nibbles = self.dense_scale = self.dense_zero = None
        if dense_prompt:
            self.nibbles = torch.cat(nibbles)  # [out, in/2]
            # The kernel's (q − 8)·scale + zero as q·scale + (zero − 8·scale), from its bfloat16 values: [out, in/G, 1]
            kernel_scale, kernel_zero = self.scales_and_zeros.float().transpose(0, 1).unbind(-1)  # [out, in/G]
            self.dense_scale = kernel_scale.contiguous()[..., None]
            self.dense_zero = (kernel_zero - 8 * kernel_scale).contiguous()[..., None]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1]).to(torch.bfloat16)  # [m, in]
        if self.nibbles is not None and rows.shape[0] >= DENSE_ROWS:
            out = self._dense(rows.float()).to(torch.bfloat16)  # rounded as the kernel rounds its output
        else:
            out = torch.ops.aten._weight_int4pack_mm_for_cpu(rows, self.packed, GROUP, self.scales_and_zeros)  # [m, out]
        out = out.to(x.dtype).view(*x.shape[:-1], self.out_features)
        return out if self.bias is None else out + self.bias

    def _dense(self, rows: torch.Tensor) -> torch.Tensor:
        """rows [m, in] (bfloat16 values in float32) times the kernel's weights (q − 8)·scale + zero, dequantized
        DENSE_CHUNK output rows at a time into float32 for a GEMM: a long prompt's rows run about twice as fast
        as in the 4-bit kernel, which is built for a few. The weights and activations are the kernel's; only the
        order of the float sums differs."""
        out = rows.new_empty(rows.shape[0], self.out_features)  # [m, out]
        for start in range(0, self.out_features, DENSE_CHUNK):
            end = min(start + DENSE_CHUNK, self.out_features)
            nibbles = self.nibbles[start:end]  # [c, in/2]
            codes = torch.stack([nibbles & 15, nibbles >> 4], -1).view(end - start, -1, GROUP).float()  # [c, in/G, G]
            weight = torch.addcmul(self.dense_zero[start:end], codes, self.dense_scale[start:end])  # [c, in/G, G]
            out[:, start:end] = rows @ weight.view(end - start, -1).T
        return out


class Int8RowLinear(torch.nn.Module):
    """y = x Wᵀ with W as int8 codes and one scale per output row; bfloat16 inside the kernel. No bias."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        weight = linear.weight.detach()  # [out, in]
        scales, codes = [], []
        for rows in _row_chunks([weight], HEAD_ROWS):  # [c, in]
            rows = rows.float()
            scale = rows.abs().amax(1).clamp(min=1e-12) / 127  # [c]
            codes.append((rows / scale[:, None]).round().clamp(-127, 127).to(torch.int8))
            scales.append(scale)
        self.codes = torch.cat(codes).contiguous()  # [out, in]
        self.scales = torch.cat(scales).to(torch.bfloat16)
        self.out_features = weight.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1]).to(torch.bfloat16)  # [m, in]
        out = torch.ops.aten._weight_int8pack_mm(rows, self.codes, self.scales)  # [m, out]
        return out.to(x.dtype).view(*x.shape[:-1], self.out_features)


def _row_chunks(weights: list[torch.Tensor], size: int):
    """The rows of `weights` stacked ([Σ out, in]) in chunks of `size` rows (the last may be shorter), without
    building the stacked tensor: a chunk that spans two weights joins their slices."""
    pieces, held = [], 0
    for weight in weights:
        start = 0
        while start < weight.shape[0]:
            take = min(size - held, weight.shape[0] - start)
            pieces.append(weight[start:start + take])
            held, start = held + take, start + take
            if held == size:
                yield pieces[0] if len(pieces) == 1 else torch.cat(pieces)
                pieces, held = [], 0
    if pieces:
        yield pieces[0] if len(pieces) == 1 else torch.cat(pieces)


def quantized_copy(hf_model: torch.nn.Module, dense_prompt: bool = False) -> torch.nn.Module:
    """A copy of a causal LM whose linear layers run 4-bit (decoder) and int8 (LM head) kernels (and, with
    dense_prompt, Int4Linear's dense path over long prompts).

    Everything that is not a linear weight (embeddings, norms, rotary tables) is shared with the original, not
    copied, so the copy costs only its quantized weights (about 90 MB for SmolLM2-135M).
    """
    linears = [module for module in hf_model.modules() if isinstance(module, torch.nn.Linear)]
    bad = [(module.out_features, module.in_features) for module in linears if module.in_features % GROUP]
    if bad:
        raise ValueError(f"the 4-bit copy needs input widths that are multiples of {GROUP}; this model has {bad[0]}")
    # deepcopy with every tensor pre-entered in the memo: the structure is copied, the tensors are shared.
    shared = {id(tensor): tensor for tensor in [*hf_model.parameters(), *hf_model.buffers()]}
    shared.update({id(module.packed_weight): module.packed_weight for module in linears
                   if getattr(module, "packed_weight", None) is not None})  # cpu_linear's packed copies
    draft = copy.deepcopy(hf_model, memo=shared)
    head = draft.get_output_embeddings()
    for parent in list(draft.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(parent, name, Int8RowLinear(child) if child is head else Int4Linear(child, dense_prompt))
    return draft.eval()
