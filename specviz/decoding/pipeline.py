"""The one place where a target and a drafter are assembled from a DecodeConfig.

It builds only the drafter that was asked for: drafters/kinds.py builds each kind, and this module puts prompt
lookup first where the name asks for it. Weights that pipelines share (loaded models, the distilled
draft, the target's 4-bit copy) come from one explicit WeightsCache; the pipeline itself holds the per-run
wrappers (KV caches), so build a new one for each run, or reset it (the engine does) before reuse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from specviz.config import SUFFIX_DRAFTER, DecodeConfig
from specviz.drafters import kinds
from specviz.drafters.base import Drafter
from specviz.drafters.lookup import LookupThenModelDrafter, PromptLookupDrafter
from specviz.drafters.suffix import SuffixDrafter
from specviz.models import loading as models
from specviz.models.cache import WEIGHTS, WeightsCache
from specviz.models.split_gguf import unobtainable


@dataclass
class Pipeline:
    """A target, a drafter and the tokenizer they share, ready to decode."""

    target: models.LanguageModel
    drafter: Drafter
    tokenizer: object
    eos_ids: list[int]
    device: torch.device
    dtype: torch.dtype
    draft_model: models.LanguageModel | None = None
    cache: WeightsCache = WEIGHTS  # where shared weights, and the record of warm-ups, live
    target_forward_ms: list[float] = field(default_factory=list)  # set by calibrate(); copied into each trace
    draft_step_ms: float = 0.0  # one draft forward, set by calibrate() for a drafter that runs a model
    # Makes the target again over the same weights with a KV cache of its own, for plain decoding in turn with the
    # rounds (decoding/comparison.py); None: the target is all there is (a pipeline built by hand)
    new_target: Callable[[], models.LanguageModel] | None = None
    _plain_target: models.LanguageModel | None = field(default=None, repr=False)

    @property
    def context_limit(self) -> int:
        """The longest sequence both models can hold."""
        if self.draft_model is None:
            return self.target.max_length
        return min(self.target.max_length, self.draft_model.max_length)

    def plain_target(self) -> models.LanguageModel:
        """The target that plain decoding runs on: a second cache over the same weights, made once per pipeline; the
        target itself where none can be made."""
        if self._plain_target is None:
            self._plain_target = self.new_target() if self.new_target is not None else self.target
        return self._plain_target

    def forward_seconds(self) -> float:
        """Seconds spent so far inside model forwards, the target's and the drafter's."""
        total = self.target.forward_seconds
        if self.draft_model is not None:
            return total + self.draft_model.forward_seconds
        return total + self.drafter.forward_seconds  # a distilled drafter times its own head


def build_pipeline(config: DecodeConfig, cache: WeightsCache = WEIGHTS) -> Pipeline:
    """Load (or reuse) the models named by config and check that they can work together."""
    spec = config.drafter
    kinds.check(config)  # what the drafter's kind cannot do, before any model loads
    refusal = unobtainable((config.target, spec.model))
    if refusal is not None:  # refused before the other model's long first assembly and conversion
        raise models.ModelUnavailable(refusal)
    target = models.load_model(config.target, cache=cache, backend=config.backend)
    eos = eos_ids(target)
    target_model, drafter, draft_model = kinds.build(spec, target, config, eos, cache)  # the kind's builder
    kinds.check_built(drafter, config)  # a draft of another tokenizer drafts chains only: said before any forward
    if spec.lookup_first:  # prompt lookup or suffix drafting copies first (DrafterSpec.first)
        lookup = (SuffixDrafter(target_model.vocab_size) if spec.first == SUFFIX_DRAFTER
                  else PromptLookupDrafter(target_model.vocab_size, config.ngram_size, eos))
        drafter = LookupThenModelDrafter(lookup, drafter, str(spec))
    return Pipeline(target_model, drafter, target.tokenizer, eos, target.device, target.dtype, draft_model, cache,
                    new_target=lambda: target.language_model(target_model.vocab_size, trees=config.tree))


def encode_prompt(tokenizer, prompt: str, chat: bool, system_prompt: str | None = None) -> list[int]:
    """Token ids of the prompt, wrapped in the chat template when asked for and the tokenizer has one, after the
    system message `system_prompt` (None: whatever the template puts there by default)."""
    if chat and getattr(tokenizer, "chat_template", None):
        system = [] if system_prompt is None else [{"role": "system", "content": system_prompt}]
        messages = [*system, {"role": "user", "content": prompt}]
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer(prompt)["input_ids"]


def eos_ids(loaded: models.LoadedModel) -> list[int]:
    """Every id that ends generation (LoadedModel.eos_ids; a GGUF on llama.cpp: every end-of-generation id)."""
    return list(loaded.eos_ids)
