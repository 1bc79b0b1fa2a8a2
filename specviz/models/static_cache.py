"""A model whose KV cache is allocated once, so that its decoding forwards can be captured as CUDA graphs.

At batch 1 on a GPU, a forward of a model of 0.1–2B parameters is launch-bound: each layer's dozen small kernels
wait on Python and the driver, so a 135M draft costs nearly what a 1.7B target does (docs/gpu.md) and a separate
draft model gains little. A CUDA graph replays a whole forward's kernels in one launch. It needs fixed shapes and
fixed addresses, which is what gpt-fast's speculative decoding does and what this module gives the engine:

- the cache is transformers' StaticCache: every layer's keys and values [1, kv_heads, max_length, head_dim] are
  allocated once and written in place;
- rolling back after a rejection moves each layer's write position back (nothing is copied); the keys past it
  are masked out by the causal mask (built from the positions), then overwritten by the next tokens;
- forwards over at most COMPILED_TOKENS new tokens (decoding steps, draft steps, verifying γ + 1) run through
  torch.compile (mode "reduce-overhead" on CUDA: CUDA graphs): two compiled graphs per model, one for a single
  token and one whose size is symbolic, and a CUDA graph recorded for each size met; longer forwards (the prompt)
  and the first forward into a fresh cache (which allocates it) run eagerly into the same cache.

Outside the cache it is a LanguageModel like any other: the engine cannot tell them apart. It is used on CUDA when
SPECVIZ_CUDA_GRAPHS=1 (loading.LoadedModel.language_model), for models without sliding-window layers (their
static layers are ring buffers that cannot be rolled back this way) and without a feature drafter.
"""

from __future__ import annotations

import torch

from specviz.models.language_model import TransformersModel

COMPILED_TOKENS = 32  # forwards over more new tokens than this (a prompt) run eagerly: one graph per size otherwise
STATIC_LENGTH = 4096  # tokens the cache holds (prompt and generated): the run's limit, as max_position_embeddings is
RECOMPILE_LIMIT = 2 * COMPILED_TOKENS  # graphs of the forward, all models together (dynamo counts per code object)


def supports_static_cache(hf_model) -> bool:
    """Whether every layer of this model gets a plain static cache layer (none a sliding-window ring buffer, which
    cannot be rolled back by moving its write position). Nothing is allocated: the layers allocate lazily."""
    from transformers import StaticCache

    return not any(layer.is_sliding for layer in StaticCache(config=hf_model.config, max_cache_len=1).layers)


class StaticCacheModel(TransformersModel):
    """LanguageModel over a preallocated cache; `compile_options` (torch.compile's keyword arguments, None for
    eager) choose how the short forwards run: {"mode": "reduce-overhead", "fullgraph": True} on CUDA."""

    def __init__(self, hf_model, vocab_size: int, device: torch.device, name: str = "",
                 max_length: int = STATIC_LENGTH, compile_options: dict | None = None):
        super().__init__(hf_model, vocab_size, device, name)
        self.max_length = min(self.max_length, max_length)
        self.compiled = torch.compile(hf_model.forward, **compile_options) if compile_options is not None else None

    def reset(self) -> None:
        from transformers import StaticCache

        if self.cache is None:  # allocated once (the layers allocate their tensors at the first forward)
            self.cache = StaticCache(config=self.hf_model.config, max_cache_len=self.max_length)
        self._move_write_position(0)
        self.cached_length = 0

    def crop(self, length: int) -> None:
        """Roll back to the first `length` tokens: the write position moves back, the stale keys are masked."""
        if length < self.cached_length:
            self._move_write_position(length)
            self.cached_length = length

    def _move_write_position(self, length: int) -> None:
        # Inference mode: the first forward (in feed's inference mode) allocates the cache, and on CUDA moves the write
        # position to the device there, which makes it an inference tensor: one that only inference mode may update.
        with torch.inference_mode():
            for layer in self.cache.layers:
                if getattr(layer, "is_initialized", False) and hasattr(layer, "cumulative_length"):
                    layer.cumulative_length.fill_(length)  # in place: its address is part of the captured graphs

    def _allocated(self) -> bool:
        """Whether the cache's tensors exist. The first forward into a fresh cache allocates them, and must run eagerly:
        only then does transformers mark them as static addresses (StaticLayer.lazy_initialization skips that while
        dynamo traces), and a CUDA graph skips a forward that writes into an input not so marked."""
        return all(getattr(layer, "is_initialized", True) for layer in self.cache.layers)

    def _forward(self, input_ids: torch.Tensor, logits_to_keep: int, attention_mask: torch.Tensor | None = None,
                 position_ids: torch.Tensor | None = None) -> torch.Tensor:
        new_tokens = input_ids.shape[1]
        if new_tokens > self.max_length - self.cached_length:
            raise ValueError(f"{self.name}: the sequence would pass its static cache of {self.max_length} tokens")
        positions = torch.arange(self.cached_length, self.cached_length + new_tokens, device=self.device)  # [k]
        arguments = dict(input_ids=input_ids, past_key_values=self.cache, cache_position=positions, use_cache=True,
                         logits_to_keep=logits_to_keep)
        if attention_mask is not None:  # a token tree, eagerly: its mask spans the whole static cache, stale keys masked
            width = self.max_length - attention_mask.shape[-1]
            arguments["attention_mask"] = torch.nn.functional.pad(attention_mask, (0, width), value=False)
            arguments["position_ids"] = position_ids
            return self.hf_model(**arguments).logits
        if self.compiled is None or new_tokens > COMPILED_TOKENS or not self._allocated():
            return self.hf_model(**arguments).logits
        # One graph per size, whoever calls: dynamo guards on an input's dispatch keys, which differ between a tensor
        # made inside inference mode and one made outside (verify-cost's), and on logits_to_keep; each extra graph
        # is a long compile (docs/gpu.md, "What broke on CUDA, and the fixes"). So the input is always an
        # inference tensor (feed runs this in inference mode) and the graph keeps every position's logits (0: all;
        # at most COMPILED_TOKENS rows, where the head's weights are read once anyway), sliced outside it.
        if not input_ids.is_inference():
            with torch.inference_mode():
                arguments["input_ids"] = input_ids.clone()
        arguments["logits_to_keep"] = 0
        torch.compiler.cudagraph_mark_step_begin()  # the previous call's outputs may be overwritten from here on
        with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT):
            logits = self.compiled(**arguments).logits
        return logits[:, -logits_to_keep:].clone()  # a CUDA graph's output lives in its pool; the next replay overwrites it
