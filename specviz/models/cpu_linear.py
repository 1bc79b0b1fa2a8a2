"""A faster linear layer for decoding on a CPU, where each forward multiplies a few rows by large weights.

Decoding feeds 1 token (plain) or γ+1 tokens (verification), so every linear layer computes X Wᵀ with X of
1..17 rows and W of thousands, streamed from memory on every forward. With MKL, one row runs as a GEMV that
streams W slowly, and two or three rows stream W once per row; W Xᵀ with two or more rows is a GEMM that streams
W once, far faster. So `FewRowLinear` computes W Xᵀ and pads a single row to two. The result is the same product,
so the model is unchanged; only float rounding differs, as between any two kernels.

A GEMM also repacks W into its blocked layout on every call, which costs as much as streaming W again.
`PackedLinear` packs each W once, at load, into oneDNN's layout (`torch.ops.mkldnn._reorder_linear_weight`,
what torch.compile's CPU backend uses for frozen weights) and multiplies 2..16 rows against the packed copy;
one row still takes the padded W Xᵀ, and two rows are padded to three, since oneDNN's two-row path is slower
than its three-row one. Verifying γ + 1 tokens then costs fewer plain steps than with the few-row kernel. The
packed copy doubles the memory of the linear weights, LM head included.

What it buys (docs/results.md, "What the float32 CPU path's machinery buys", 2026-12-02, two cores): the default
offline run decodes speculatively at 31.1 tokens/s packed against 28.4 stock and 25.0 few-row; the Qwen2.5-Coder
pair, packed-only, at 7.5 against 4.4 stock. Packed won there and on an AVX2 machine, so `apply_kernel` packs every
model (the kernels are no longer timed at each load: that cost 1.7 s). SPECVIZ_CPU_LINEAR=stock|few-row|packed|
packed-only forces one.

Over PACKED_MAX_BYTES of linear weights (SPECVIZ_PACKED_MAX_GB, default 2) a second copy costs too much: it would
take the Qwen2.5-Coder pair past a free Space's 16 GB. Such a model gets `packed-only`: each W is
packed and the float copy is dropped (kept only where another module shares it, as a tied embedding does), and
every forward, one row padded to three, runs on the packed copy, so verification stays nearly as cheap as a plain
step in about the float model's memory. Reading `weight` of a packed-only linear reads W back from the checkpoint
file (checked against the packed copy), else unpacks it exactly (a product with the identity, slow); only the 4-bit
copies read it, once.

The timings behind each choice: docs/research.md, "What makes it fast on a CPU", and docs/models.md.
"""

from __future__ import annotations

import os

import torch

from specviz.models.checkpoint_memory import copy_out_of_checkpoint, page_out

MAX_ROWS = 16  # above this (prompt encoding) the stock GEMM is already efficient
PACKED_MAX_BYTES = 2 * 2**30  # no packed copy of more linear weights than this (see the module docstring)
STOCK, FEW_ROW, PACKED, PACKED_ONLY = "stock", "few-row", "packed", "packed-only"


class FewRowLinear(torch.nn.Linear):
    """nn.Linear whose forward over ≤ MAX_ROWS rows is (W Xᵀ)ᵀ, one row padded to two. Same parameters."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])  # [m, in]
        count = rows.shape[0]
        if count > MAX_ROWS or rows.device.type != "cpu":
            return super().forward(x)
        if count == 1:
            rows = torch.cat([rows, rows])  # [2, in]: a two-column GEMM streams W faster than the GEMV
        out = (self.weight @ rows.T)[:, :count].T  # [out, m] -> [m, out]
        if self.bias is not None:
            out = out + self.bias
        return out.reshape(*x.shape[:-1], out.shape[-1])


class PackedLinear(FewRowLinear):
    """FewRowLinear that multiplies 2..MAX_ROWS rows (two padded to three) against a copy of W packed once in oneDNN's layout.

    The packed copy is made by `use_kernel` and is not a parameter: it is right only while W is unchanged, so
    anything that may need gradients takes the stock path.
    """

    packed_weight: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])  # [m, in]
        if not 2 <= rows.shape[0] <= MAX_ROWS or self.packed_weight is None or _needs_grad(x, self.weight):
            return super().forward(x)
        count = rows.shape[0]
        if count == 2:
            rows = torch.cat([rows, rows[-1:]])  # [3, in]: oneDNN's two-row path is slower than its three-row one
        out = torch.ops.mkldnn._linear_pointwise(rows, self.packed_weight, self.bias, "none", [], "")[:count]  # [m, out]
        return out.reshape(*x.shape[:-1], out.shape[-1])


class PackedOnlyLinear(torch.nn.Linear):
    """y = x Wᵀ + b with W held only in oneDNN's packed layout (made by `use_kernel(model, PACKED_ONLY)`).

    `weight` is a property: the float W this module was built from where another module shares it (a tied
    head); else W read back from the safetensors checkpoint it was loaded from (`source`: file and key), once
    three of its columns are checked bit for bit against the packed copy; else W unpacked (exact, and as slow as
    a forward over `in_features` rows; docs/results.md, "CI's time", has the timings).
    """

    def __init__(self, linear: torch.nn.Linear, keep_weight: bool, source: tuple[str, str] | None = None):
        torch.nn.Module.__init__(self)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.bias = linear.bias
        with torch.no_grad():
            packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), MAX_ROWS)  # [out, in], blocked
        self.register_buffer("packed_weight", packed, persistent=False)
        self._float_weight = linear.weight if keep_weight else None
        self._source = source  # (safetensors file, tensor key) holding this W, or None

    @property
    def weight(self) -> torch.Tensor:
        if self._float_weight is not None:
            return self._float_weight
        from_checkpoint = self._read_source()
        if from_checkpoint is not None:
            return from_checkpoint
        return self._unpack(torch.eye(self.in_features))  # [out, in]

    def _unpack(self, rows: torch.Tensor) -> torch.Tensor:
        """Columns of W picked by one-hot `rows` [k, in]: I·Wᵀ is exact in float32. Returns [out, k]."""
        with torch.inference_mode():
            transposed = torch.ops.mkldnn._linear_pointwise(rows, self.packed_weight, None, "none", [], "")  # [k, out]
        return transposed.T.contiguous()

    def _read_source(self) -> torch.Tensor | None:
        """W from the checkpoint, where it is there and its first, middle and last columns equal the packed copy's."""
        if self._source is None:
            return None
        from safetensors import safe_open

        path, key = self._source
        try:
            with safe_open(path, framework="pt") as checkpoint:
                weight = checkpoint.get_tensor(key)  # [out, in], a copy of its own
        except (OSError, KeyError, RuntimeError, ValueError):
            return None
        if weight.shape != (self.out_features, self.in_features) or weight.dtype != torch.float32:
            return None
        columns = [0, self.in_features // 2, self.in_features - 1]
        probes = torch.zeros(len(columns), self.in_features)  # [3, in], one-hot
        probes[range(len(columns)), columns] = 1.0
        return weight if torch.equal(self._unpack(probes), weight[:, columns]) else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])  # [m, in]
        count = rows.shape[0]
        if torch.is_grad_enabled() and x.requires_grad:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        if count < 3:
            rows = torch.cat([rows, rows[-1:].expand(3 - count, -1)])  # [3, in]: oneDNN's one- and two-row paths are slower
        out = torch.ops.mkldnn._linear_pointwise(rows, self.packed_weight, self.bias, "none", [], "")[:count]  # [m, out]
        return out.reshape(*x.shape[:-1], out.shape[-1])


def pack_only(hf_model: torch.nn.Module) -> str:
    """Replace every float32 CPU linear by a PackedOnlyLinear, one at a time (so memory never holds two copies
    of more than one W), and return PACKED_ONLY; FEW_ROW where torch has no oneDNN."""
    if not packing_available():
        return use_kernel(hf_model, FEW_ROW)
    shared = {id(tensor) for module in hf_model.modules() if not isinstance(module, torch.nn.Linear)
              for tensor in module.parameters(recurse=False)}  # tied embeddings keep their float W
    sources = checkpoint_keys(hf_model)
    replacements: dict[int, torch.nn.Module] = {}
    for parent_name, parent in list(hf_model.named_modules()):
        for name, child in list(parent.named_children()):
            if type(child) in _CLASSES.values() and _packable(child.weight):
                if id(child) not in replacements:
                    keep = id(child.weight) in shared
                    key = f"{parent_name}.{name}.weight" if parent_name else f"{name}.weight"
                    source = (sources[key], key) if key in sources else None
                    replacements[id(child)] = PackedOnlyLinear(child, keep_weight=keep, source=source)
                    if not keep:
                        page_out(child.weight)
                setattr(parent, name, replacements[id(child)])
    copy_out_of_checkpoint(hf_model)
    return PACKED_ONLY


def checkpoint_keys(hf_model: torch.nn.Module) -> dict[str, str]:
    """{tensor key: safetensors file} of the local checkpoint folder the model was loaded from; {} for any other."""
    import json

    config = getattr(hf_model, "config", None)
    folder = getattr(hf_model, "name_or_path", "") or getattr(config, "_name_or_path", "")
    if not folder or not os.path.isdir(folder):
        return {}
    single, index = os.path.join(folder, "model.safetensors"), os.path.join(folder, "model.safetensors.index.json")
    try:
        if os.path.isfile(index):
            with open(index, encoding="utf-8") as file:
                weight_map = json.load(file)["weight_map"]
            return {key: os.path.join(folder, name) for key, name in weight_map.items()}
        if os.path.isfile(single):
            from safetensors import safe_open

            with safe_open(single, framework="pt") as checkpoint:
                return {key: single for key in checkpoint.keys()}
    except (OSError, KeyError, ValueError):
        pass
    return {}


def packing_available() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")


def _needs_grad(x: torch.Tensor, weight: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)


_CLASSES = {STOCK: torch.nn.Linear, FEW_ROW: FewRowLinear, PACKED: PackedLinear}


def use_kernel(hf_model: torch.nn.Module, kernel: str) -> str:
    """Replace every nn.Linear below the model by the named kernel's module, holding the same weight and bias
    tensors (so tied weights stay tied), and return the kernel applied: `packed` falls back to `few-row` where
    torch has no oneDNN.

    `packed` packs each float32 CPU weight once: a PackedLinear hands its packed copy on to its replacement, and a
    weight two modules share is packed once. A module shared by two parents gets one replacement in both.
    """
    if kernel == PACKED and not packing_available():
        kernel = FEW_ROW
    packed_copies: dict[int, torch.Tensor] = {}  # id(weight) -> its packed copy
    replacements: dict[int, torch.nn.Module] = {}  # id(old module) -> its replacement
    for parent in list(hf_model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) in _CLASSES.values():
                if id(child) not in replacements:
                    replacements[id(child)] = _kernel_module(child, kernel, packed_copies)
                setattr(parent, name, replacements[id(child)])
    return kernel


def _kernel_module(linear: torch.nn.Linear, kernel: str, packed_copies: dict[int, torch.Tensor]) -> torch.nn.Linear:
    """A module of the kernel's class over `linear`'s own parameters (the same tensors, not copies)."""
    module = _CLASSES[kernel](linear.in_features, linear.out_features, bias=linear.bias is not None, device="meta")
    module.weight, module.bias = linear.weight, linear.bias  # the meta placeholders replaced: nothing allocated
    module.train(linear.training)
    key = id(linear.weight)
    if getattr(linear, "packed_weight", None) is not None:
        packed_copies.setdefault(key, linear.packed_weight)
    if kernel == PACKED and _packable(linear.weight):
        if key not in packed_copies:
            with torch.no_grad():
                packed_copies[key] = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), MAX_ROWS)
        module.packed_weight = packed_copies[key]  # oneDNN's blocked layout of W [out, in]
    return module


def _packable(weight: torch.Tensor) -> bool:
    return weight.device.type == "cpu" and weight.dtype == torch.float32 and weight.dim() == 2


def apply_kernel(hf_model: torch.nn.Module) -> str:
    """Apply the kernel this model runs with on a CPU and return its name: SPECVIZ_CPU_LINEAR's where set, else
    packed-only over the packed budget, else packed (few-row where torch has no oneDNN)."""
    forced = os.environ.get("SPECVIZ_CPU_LINEAR", "auto")
    if forced == PACKED_ONLY or (forced == "auto" and linear_weight_bytes(hf_model) > packed_budget()):
        return pack_only(hf_model)
    return use_kernel(hf_model, forced if forced in _CLASSES else PACKED)


def linear_weight_bytes(hf_model: torch.nn.Module) -> int:
    """Bytes of every nn.Linear weight (the LM head included): what a packed copy would add."""
    return sum(module.in_features * module.out_features * module.packed_weight.element_size()
               if isinstance(module, PackedOnlyLinear) else module.weight.numel() * module.weight.element_size()
               for module in hf_model.modules() if isinstance(module, torch.nn.Linear))


def packed_budget() -> int:
    return int(float(os.environ.get("SPECVIZ_PACKED_MAX_GB", PACKED_MAX_BYTES / 2**30)) * 2**30)
