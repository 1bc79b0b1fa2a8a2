"""The narrow interface the engine calls: a causal LM with its own KV cache (feed, crop, reset), timed.

models/loading.py builds these (LoadedModel.language_model); models/static_cache.py is the same interface over a
preallocated cache, for CUDA graphs.
"""

from __future__ import annotations

import time

import torch

from specviz import job


def synchronize(device: torch.device) -> None:
    """Wait for queued device work, so that host timers measure it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


class LanguageModel:
    """A causal LM with its own KV cache: feed new tokens, get their logits, crop the cache back.

    Only logits over the first `vocab_size` ids are returned (padded embedding rows are dropped), so two
    models with differently padded heads give distributions of the same width. Counts tokens fed and time
    spent in forwards, which lets tests prove the prefix is never re-encoded.
    """

    def __init__(self, hf_model, vocab_size: int, device: torch.device, name: str = "", keep_features: bool = False):
        self.hf_model = hf_model
        self.vocab_size = vocab_size
        self.device = device
        self.name = name
        self.max_length = int(getattr(hf_model.config, "max_position_embeddings", 0) or 1 << 20)
        self.cache = None
        self.cached_length = 0  # tokens whose keys/values are in the cache
        self.tokens_fed = 0
        self.forward_calls = 0
        self.forward_seconds = 0.0
        # keep_features: also keep the final-norm hidden state of every cached token (a feature drafter reads them)
        self.keep_features = keep_features
        self.features: torch.Tensor | None = None  # [cached_length, H] when keep_features

    def reset(self) -> None:
        from transformers import DynamicCache

        self.cache = DynamicCache(config=self.hf_model.config)
        if hasattr(self.cache, "activate_past_recording"):
            self.cache.activate_past_recording()  # sliding-window layers can then be rolled back after a rejection
        self.cached_length = 0
        self.features = None

    def feed(self, token_ids: torch.Tensor, logits_to_keep: int = 1, sync: bool = True) -> torch.Tensor:
        """Append token_ids [k] to the cache; return logits [logits_to_keep, vocab_size] for the last positions.

        sync=False leaves the device running ahead (the draft loop synchronises once, after its last step);
        forward_seconds then counts only the launch time of that call on a GPU.
        """
        job.check()  # a stopped run ends here, before the next forward
        if self.cache is None:
            self.reset()
        started = time.perf_counter()
        input_ids = token_ids.view(1, -1).to(self.device)
        with torch.inference_mode():
            if self.keep_features:
                logits = self._feed_keeping_features(input_ids, logits_to_keep)
            else:
                logits = self._forward(input_ids, logits_to_keep)  # [1, logits_to_keep, V']
        if sync:
            synchronize(self.device)  # so forward_seconds is device time, not kernel-launch time
        self.forward_seconds += time.perf_counter() - started
        self.cached_length += token_ids.numel()
        self.tokens_fed += token_ids.numel()
        self.forward_calls += 1
        return logits[0, -logits_to_keep:, : self.vocab_size]  # [logits_to_keep, V]

    def _forward(self, input_ids: torch.Tensor, logits_to_keep: int) -> torch.Tensor:
        """The causal LM's forward over input_ids [1, k] into the cache; its logits [1, logits_to_keep, V']."""
        output = self.hf_model(input_ids=input_ids, past_key_values=self.cache, use_cache=True,
                               logits_to_keep=logits_to_keep)
        self.cache = output.past_key_values
        return output.logits

    def _feed_keeping_features(self, input_ids: torch.Tensor, logits_to_keep: int):
        """The causal LM's forward in its two halves: the decoder (whose last hidden state we keep), then the head."""
        output = self.hf_model.get_decoder()(input_ids=input_ids, past_key_values=self.cache, use_cache=True)
        self.cache, hidden = output.past_key_values, output.last_hidden_state  # hidden: [1, k, H]
        self.features = hidden[0] if self.features is None else torch.cat([self.features, hidden[0]])
        return self.hf_model.get_output_embeddings()(hidden[:, -logits_to_keep:])  # [1, logits_to_keep, V]

    def crop(self, length: int) -> None:
        """Roll the cache back to its first `length` tokens (transformers 5 takes a negative count to remove)."""
        if length < self.cached_length:
            self.cache.crop(length - self.cached_length)
            self.cached_length = length
            if self.features is not None:
                self.features = self.features[:length]
