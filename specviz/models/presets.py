"""The named model pairs (PAIRS: `--preset`, the app's pair menu) and the draft each runs on this device."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from specviz.config import (
    DISTILLED_DRAFTER,
    LLAMA_CPP,
    NGRAM_DRAFTER,
    OFFLINE_DRAFTER,
    OFFLINE_DRAFTER_OFF_CPU,
    OFFLINE_MODEL,
    QUANTIZED_DRAFT_MODEL,
    QUANTIZED_DRAFTER,
    TRANSFORMERS,
    DrafterSpec,
    ModelSpec,
)
from specviz.models.loading import choose_device
from specviz.models.requantize import REQUANTIZATIONS, variant
from specviz.models.split_gguf import GEMMA_270M, QWEN_CODER_DRAFT, QWEN_CODER_TARGET, SPLIT_MODELS


@dataclass(frozen=True)
class Pair:
    """A pair of models, one row: its `--preset` name, the app's menu entry, the two models, and what it runs with
    on each backend unless the user moves it. The presets, the app's pair menu, the CLI's `--preset` help and the
    hosted policy's models are made from PAIRS; README.md and docs/models.md list each row (a test checks both)."""

    name: str  # `--preset NAME`
    target: str  # a model id (config.ModelSpec)
    draft: str  # a draft name (config.DrafterSpec)
    title: str | None = None  # the menu entry's value, which API callers send; None: the command line's only
    label: str | None = None  # the menu's short label (the app adds where the models come from)
    settings: Mapping[str, Mapping] = field(default_factory=dict)  # backend -> gamma, draft_confidence, adaptive, draft_vocab

    @property
    def models(self) -> tuple[str, str]:
        return self.target, self.draft


SMOLLM2_1_7B, SMOLLM2_135M = "HuggingFaceTB/SmolLM2-1.7B-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"
QWEN_1_5B, QWEN_0_5B = "Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"
CODER, CODER_DRAFT = QWEN_CODER_TARGET.model_id, QWEN_CODER_DRAFT.model_id
# The Qwen2.5-Coder pair drafts up to 12 tokens and stops a draft after a token its 0.5B draft gave less than 0.6:
# long drafts where the two agree (code, maths), short ones in prose (docs/results.md; the rule is transformers'
# assistant_confidence_threshold). On llama.cpp the pair's forward is bound by arithmetic (4-bit weights on a CPU: v(k)
# grows nearly as k), so no fixed draft length pays there: adaptive γ, seeded with the measured costs, decodes
# plainly where drafting cannot pay and drafts where it can (docs/results.md, "Against llama.cpp").
CODER_SETTINGS = {TRANSFORMERS: dict(gamma=12, draft_confidence=0.6),
                  LLAMA_CPP: dict(gamma=4, draft_confidence=0.6, adaptive=True)}
PAIRS: tuple[Pair, ...] = (  # the menu's order
    # The offline default: its draft is chosen per device (offline_drafter: this row's on a CPU); the menu offers its
    # two drafts.
    Pair("offline", OFFLINE_MODEL, OFFLINE_DRAFTER),
    Pair("smollm2-distilled", OFFLINE_MODEL, DISTILLED_DRAFTER, "Offline: SmolLM2-135M-Instruct (embedded)",
         "SmolLM2-135M ← distilled draft"),
    # The 4-bit copy agrees with its target on nearly every greedy draft, so a run would show almost no rejection;
    # its head scoring only the 8,192 most frequent tokens (draft_vocab, exact either way) leaves a few to look at and
    # the run still faster than plain decoding (docs/results.md, "The default live run").
    Pair("smollm2-int4", OFFLINE_MODEL, QUANTIZED_DRAFTER, "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy",
         "SmolLM2-135M ← its 4-bit copy", {TRANSFORMERS: dict(draft_vocab=8192)}),
    Pair("qwen2.5-coder", CODER, CODER_DRAFT, "Offline: Qwen2.5-Coder-1.5B-Instruct ← Qwen2.5-Coder-0.5B-Instruct",
         "Qwen2.5-Coder-1.5B ← 0.5B", CODER_SETTINGS),
    Pair("gpt2-xl", "openai-community/gpt2-xl", "openai-community/gpt2", "gpt2-xl ← gpt2", "gpt2-xl ← gpt2"),
    Pair("smollm2-1.7b", SMOLLM2_1_7B, SMOLLM2_135M, "SmolLM2-1.7B-Instruct ← SmolLM2-135M-Instruct",
         "SmolLM2-1.7B ← 135M"),
    Pair("qwen2.5-1.5b", QWEN_1_5B, QWEN_0_5B, "Qwen2.5-1.5B-Instruct ← Qwen2.5-0.5B-Instruct", "Qwen2.5-1.5B ← 0.5B"),
    # Drafts of another tokenizer: they propose only the tokens both vocabularies spell alike (drafters/kinds.py).
    Pair("qwen2.5-coder-smollm2-draft", CODER, OFFLINE_MODEL,
         "Offline: Qwen2.5-Coder-1.5B-Instruct ← SmolLM2-135M-Instruct", "Qwen2.5-Coder-1.5B ← SmolLM2-135M"),
    Pair("qwen2.5-coder-gemma-draft", CODER, GEMMA_270M.model_id, "Offline: Qwen2.5-Coder-1.5B-Instruct ← gemma-3-270m",
         "Qwen2.5-Coder-1.5B ← Gemma-3-270M"),
    Pair("qwen2.5-1.5b-smollm2-draft", QWEN_1_5B, SMOLLM2_135M, "Qwen2.5-1.5B-Instruct ← SmolLM2-135M-Instruct",
         "Qwen2.5-1.5B ← SmolLM2-135M"),
)
PRESETS: dict[str, Pair] = {pair.name: pair for pair in PAIRS}


def offline_pair(pair: Pair) -> bool:
    """Whether every model of the pair ships as packages (drafters such as prompt lookup need none)."""
    models = [pair.target, DrafterSpec.parse(pair.draft).model]
    return all(model is None or ModelSpec.parse(model).offline for model in models)


def preset_help() -> str:
    """The command line's `--preset` help, from PAIRS: each name, and what an offline pair needs installed."""
    def needs(pair: Pair) -> str:
        files = dict.fromkeys(SPLIT_MODELS[model].requirements for model in pair.models if model in SPLIT_MODELS)
        terms = "; Gemma Terms of Use" if model_terms(*pair.models) else ""
        return (f" (offline with {' + '.join(files)}{terms})" if files else "") if offline_pair(pair) else " (hub)"

    return "one of " + ", ".join(pair.name + needs(pair) for pair in PAIRS)


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


def preset_settings(name: str | None, backend: str = TRANSFORMERS) -> dict:
    """The settings the preset `name` runs with on `backend` unless told otherwise (gamma, draft_confidence,
    adaptive, draft_vocab); {} for none."""
    pair = PRESETS.get(name or "")
    return dict(pair.settings.get(backend, {})) if pair else {}


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
INT4_ON_CPU = (CODER_DRAFT, QWEN_0_5B)


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
    """The (target, draft) the preset `name` runs on this device and `backend`."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    target, draft = PRESETS[name].models
    if name == "offline":  # the offline default: the drafter measured fastest on this device, not the row's
        return target, offline_drafter(backend=backend)
    return backend_model(target, backend), device_draft(draft, backend=backend)
