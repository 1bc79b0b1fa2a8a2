"""transformers' own decoding methods on the same loaded model, timed alike, for the benchmark to compare with.

- "generate": plain `generate()`;
- "prompt_lookup": `generate(prompt_lookup_num_tokens=γ, max_matching_ngram_size=n)`;
- "assisted": `generate(assistant_model=draft)` with specviz's settings: γ drafted tokens (constant schedule) and
  specviz's draft stop as its confidence threshold (the same rule: stop after a draft token the draft gave less
  than it; 0 turns it off);
- "assisted_defaults": the same call with transformers' own defaults (20 tokens, stop below 0.4): what a user gets.

transformers reads these three settings from the ASSISTANT's generation_config, not from generate()'s arguments
(candidate_generator.AssistedCandidateGenerator), so run_hf sets them there before each call.

A draft of another tokenizer (a vocabulary of another size, transformers' own test) also gets `tokenizer=` and
`assistant_tokenizer=`: greedy, transformers re-tokenizes the draft's text (universal assisted generation); sampling,
it drafts over the tokens both vocabularies hold (UniversalSpeculativeDecodingGenerator), and to do so it prunes the
assistant's embeddings IN PLACE, once per pair of tokenizers. So sampled cross-tokenizer runs get a second copy of
the draft, loaded once (`_sampling_assistant`), and the draft specviz runs is never touched.

Sampling inside `generate()` draws from torch's global generator, which specviz never seeds, so sampled
transformers runs are timed but not replayable; greedy runs are compared token for token.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass

import torch

from specviz.config import DecodeConfig
from specviz.models import loading as models

METHODS = ("generate", "prompt_lookup", "assisted", "assisted_defaults")
# transformers' defaults for an assistant (GenerationConfig._get_default_generation_params, transformers 5)
TRANSFORMERS_ASSISTANT_DEFAULTS = dict(num_assistant_tokens=20, num_assistant_tokens_schedule="constant",
                                       assistant_confidence_threshold=0.4)
_PRUNABLE_COPIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # draft hf_model -> its copy for sampling


@dataclass(frozen=True)
class HFRun:
    method: str
    token_ids: list[int]  # generated ids, prompt excluded
    wall_ms: float

    @property
    def tokens_per_s(self) -> float:
        return len(self.token_ids) / (self.wall_ms / 1e3) if self.wall_ms else 0.0


def generation_kwargs(config: DecodeConfig, method: str, tokenizer, assistant: models.LoadedModel | None = None) -> dict:
    """The generate() arguments that match a specviz config for one method."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    kwargs = dict(max_new_tokens=config.max_new_tokens, do_sample=not config.greedy,
                  pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id)
    if not config.greedy:
        kwargs.update(temperature=config.temperature, top_k=config.top_k or None, top_p=config.top_p)
    if method == "prompt_lookup":
        kwargs.update(prompt_lookup_num_tokens=config.gamma, max_matching_ngram_size=config.ngram_size)
    elif method.startswith("assisted"):
        if assistant is None:
            raise ValueError("assisted generation needs a draft model")
        kwargs.update(assistant_model=assistant.hf_model)
        if across_tokenizers(tokenizer, assistant):
            kwargs.update(tokenizer=tokenizer, assistant_tokenizer=assistant.tokenizer)
            if not config.greedy:
                kwargs.update(assistant_model=_sampling_assistant(assistant))
    return kwargs


def across_tokenizers(tokenizer, assistant: models.LoadedModel) -> bool:
    """Whether the draft has a tokenizer of its own, as generate() decides it: vocabularies of different sizes."""
    return len(tokenizer) != len(assistant.tokenizer) or tokenizer.get_vocab() != assistant.tokenizer.get_vocab()


def _sampling_assistant(assistant: models.LoadedModel):
    """The draft's copy that transformers may prune for cross-tokenizer sampling: loaded again, once per draft, with
    the same linear kernels (a packed CPU kernel's weights cannot be deep-copied)."""
    if assistant.hf_model not in _PRUNABLE_COPIES:
        _PRUNABLE_COPIES[assistant.hf_model] = models.load_fresh(assistant.model_id, assistant.device, assistant.dtype).hf_model
    return _PRUNABLE_COPIES[assistant.hf_model]


def assistant_settings(config: DecodeConfig, method: str) -> dict:
    """What the assistant's generation_config must hold for `method`: specviz's γ and draft stop, or the defaults."""
    if method == "assisted_defaults":
        return dict(TRANSFORMERS_ASSISTANT_DEFAULTS)
    return dict(num_assistant_tokens=config.gamma, num_assistant_tokens_schedule="constant",
                assistant_confidence_threshold=config.draft_confidence)


def run_hf(loaded: models.LoadedModel, prompt_ids: list[int], config: DecodeConfig, method: str,
           assistant: models.LoadedModel | None = None) -> HFRun:
    """One timed `generate()` call (device synchronised around the timer)."""
    kwargs = generation_kwargs(config, method, loaded.tokenizer, assistant)
    if method.startswith("assisted"):
        for name, value in assistant_settings(config, method).items():  # where transformers reads them
            setattr(kwargs["assistant_model"].generation_config, name, value)
    input_ids = torch.tensor([prompt_ids], dtype=torch.long, device=loaded.device)  # [1, n]
    with torch.inference_mode():
        models.synchronize(loaded.device)
        started = time.perf_counter()
        output = loaded.hf_model.generate(input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)  # [1, n + new]
        models.synchronize(loaded.device)
        wall_ms = (time.perf_counter() - started) * 1e3
    return HFRun(method, output[0, len(prompt_ids):].tolist(), wall_ms)
