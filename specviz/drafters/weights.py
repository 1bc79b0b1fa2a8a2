"""The shared weights the drafters run on, each built once per target and kept in the one WeightsCache.

They hold no per-run state (the KV caches live in the drafters and LanguageModels built from them), so every
pipeline of the same target shares them: the distilled draft head, the target's 4-bit copy and its lean decode step,
and a draft model's 4-bit copy.
"""

from __future__ import annotations

from specviz import job
from specviz.config import QUANTIZED_DRAFTER
from specviz.models import loading as models
from specviz.models.cache import WEIGHTS, WeightsCache


def distilled_draft(target: models.LoadedModel, cache: WeightsCache = WEIGHTS):
    """The distilled draft for this loaded target, loaded once and shared by every pipeline (it holds no state)."""
    from specviz.drafters.distilled import load_for_target

    def build():
        job.stage("Loading the distilled draft head")
        return load_for_target(target)

    return cache.get(("distilled", target.model_id, target.device, target.dtype), build)


def int4_copy(target: models.LoadedModel, cache: WeightsCache = WEIGHTS):
    """The target's 4-bit copy, built once per loaded target and shared: it holds no state."""
    from specviz.models.int4 import quantized_copy

    _check_int4_kernels(target)
    def build():
        job.stage(f"Building {target.model_id}'s 4-bit copy")
        return quantized_copy(target.hf_model)

    return cache.get(("int4", target.model_id, target.device, target.dtype), build)


def int4_draft_step(target: models.LoadedModel, cache: WeightsCache = WEIGHTS):
    """What the int4 drafter calls: the lean 4-bit decode step for a Llama or Qwen2 (the copy's numbers, less
    overhead), else the 4-bit copy itself. Built once per loaded target and shared: it holds no state."""
    from specviz.models import int4_decoder

    _check_int4_kernels(target)
    if not int4_decoder.supports(target.hf_model):
        return int4_copy(target, cache)
    key = ("int4-decoder", target.model_id, target.device, target.dtype)

    def build():
        job.stage(f"Building {target.model_id}'s 4-bit copy")
        return int4_decoder.Int4Decoder(target.hf_model)

    return cache.get(key, build)


def int4_model_step(model_id: str, target: models.LoadedModel, cache: WeightsCache = WEIGHTS):
    """A draft model run through the 4-bit kernels, and the vocabulary it shares with the target: the lean step
    for a Llama or Qwen2, else its 4-bit copy. Built once per draft and target, then shared (it holds no state);
    the float draft is loaded without packing and dropped once quantized, so only the 4-bit weights,
    the embedding and the norms stay in memory."""
    from specviz.models import int4_decoder
    from specviz.models.checkpoint_memory import copy_out_of_checkpoint
    from specviz.models.int4 import quantized_copy

    _check_int4_kernels(target)

    def build():
        draft = models.load_fresh(model_id, target.device, target.dtype, pack_weights=False)
        vocab = models.shared_vocab_size(target, draft)
        job.stage(f"Building {model_id}'s 4-bit copy")
        copy_out_of_checkpoint(draft.hf_model)  # the float linears go with draft: nothing else keeps the file mapped
        if int4_decoder.supports(draft.hf_model):
            return int4_decoder.Int4Decoder(draft.hf_model, dense_prompt=True, release_float=True), vocab
        return quantized_copy(draft.hf_model, dense_prompt=True), vocab

    return cache.get(("int4-model", model_id, target.model_id, target.device, target.dtype), build)


def _check_int4_kernels(target: models.LoadedModel) -> None:
    from specviz.models import int4

    if not int4.available(target.device):
        raise ValueError(f"the {QUANTIZED_DRAFTER!r} draft runs on a CPU with torch's 4-bit kernels; this target is on "
                         f"{target.device.type}: choose another drafter")
