"""The transformers backend of the LanguageModel Protocol (models/protocol.py): a causal LM with its own KV cache
(feed, crop, reset), timed.

models/loading.py builds these (LoadedModel.language_model); models/static_cache.py is the same backend over a
preallocated cache, for CUDA graphs; models/llama_cpp.py is the llama.cpp backend.
"""

from __future__ import annotations

import time

import torch

from specviz import job
from specviz.models.head_subset import HeadSubset
from specviz.models.tree_attention import depths, is_chain, keep_entries, tree_mask, tree_positions


def synchronize(device: torch.device) -> None:
    """Wait for queued device work, so that host timers measure it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


class TransformersModel:
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
        # Parents of the token-tree entries after the committed tokens (feed_tree; tree_attention), [] without a tree
        self.tree_parents: list[int] = []
        self.head_subset: HeadSubset | None = None  # a draft's head scored over some rows only (limit_vocabulary)
        self.sliding = False  # whether the cache has sliding-window layers (set by reset)
        self.fed_ids: list[torch.Tensor] = []

    def limit_vocabulary(self, ids: list[int]) -> None:
        """From now on score only the head rows `ids` (logits -inf elsewhere; models/head_subset.py): a draft model's
        FR-Spec head. The rows are copied into this per-run wrapper; the model's own modules are left alone, since
        the WeightsCache shares them with every pipeline (a draft model may be another run's target)."""
        self.head_subset = HeadSubset(self.hf_model.get_output_embeddings(), ids)

    def full_vocabulary(self) -> None:
        """Score every row of the head again."""
        self.head_subset = None

    def reset(self) -> None:
        from transformers import DynamicCache

        self.cache = DynamicCache(config=self.hf_model.config)
        if hasattr(self.cache, "activate_past_recording"):
            self.cache.activate_past_recording()  # sliding-window layers can then be rolled back after a rejection
        # A sliding-window layer keeps only window - 1 states after each crop: a later crop that reaches further back
        # than the tokens fed since cannot be undone in place, so such a model keeps the ids its cache holds.
        self.sliding = any(getattr(layer, "is_sliding", False) for layer in getattr(self.cache, "layers", ()))
        self.fed_ids = []  # [k] tensors, in order, for a sliding model only (no host sync on the hot path)
        self.cached_length = 0
        self.features = None
        self.tree_parents = []

    def feed(self, token_ids: torch.Tensor, logits_to_keep: int = 1, sync: bool = True) -> torch.Tensor:
        """Append token_ids [k] to the cache; return logits [logits_to_keep, vocab_size] for the last positions.

        sync=False leaves the device running ahead (the draft loop synchronises once, after its last step);
        forward_seconds then counts only the launch time of that call on a GPU.
        """
        if self.tree_parents:
            raise ValueError(f"{self.name}: keep a path of the token tree (keep_path) before feeding a sequence")
        return self._feed(token_ids, logits_to_keep, sync)

    def feed_tree(self, token_ids: torch.Tensor, parents: list[int], logits_to_keep: int | None = None,
                  sync: bool = True) -> torch.Tensor:
        """Append token-tree entries token_ids [m], entry j a child of parents[j]: an index among this tree's
        entries (those fed since the last keep_path, then this call's, in order) or -1 for a child of the last
        committed token. One forward, with the tree attention mask and position ids by depth (tree_attention).
        Returns logits [logits_to_keep (default m), vocab_size] for the last entries."""
        every_parent = self.tree_parents + [int(parent) for parent in parents]
        depths(every_parent)  # refuses a parent that is not an earlier entry
        new, keep = len(parents), logits_to_keep or len(parents)
        if new != token_ids.numel():
            raise ValueError(f"{self.name}: {token_ids.numel()} tree entries with {new} parents")
        if not self.tree_parents and is_chain(every_parent):  # a chain: the causal mask is the tree mask
            logits = self._feed(token_ids, keep, sync)
        elif self.keep_features:
            raise ValueError(f"{self.name}: a token tree cannot keep the features a feature drafter reads")
        else:
            base = self.cached_length - len(self.tree_parents)
            logits = self._feed(token_ids, keep, sync, tree_mask(every_parent, new, base, self.device),
                                tree_positions(every_parent, new, base, self.device))
        self.tree_parents = every_parent
        return logits

    def keep_path(self, path: list[int]) -> None:
        """Keep the tree entries of `path` (root to leaf, indices as feed_tree's parents) as committed tokens and drop
        the rest of the tree; their keys and values move down in place, nothing is fed again."""
        for parent, node in zip([-1, *path], path):
            if not 0 <= node < len(self.tree_parents) or self.tree_parents[node] != parent:
                raise ValueError(f"{self.name}: {path} is not a path from the root of the token tree")
        base = self.cached_length - len(self.tree_parents)
        if path != list(range(len(path))):  # else the path's entries are in place already
            with torch.inference_mode():
                keep_entries(self.cache, base, path)
        self.tree_parents = []
        self.crop(base + len(path))

    def _feed(self, token_ids: torch.Tensor, logits_to_keep: int, sync: bool, attention_mask: torch.Tensor | None = None,
              position_ids: torch.Tensor | None = None) -> torch.Tensor:
        job.check()  # a stopped run ends here, before the next forward
        if self.cache is None:
            self.reset()
        started = time.perf_counter()
        input_ids = token_ids.view(1, -1).to(self.device)
        with torch.inference_mode():
            if self.keep_features:
                logits = self._feed_keeping_features(input_ids, logits_to_keep)
            elif self.head_subset is not None and type(self)._forward is TransformersModel._forward:
                logits = self._forward_in_halves(input_ids, logits_to_keep, attention_mask, position_ids)
            else:  # [1, logits_to_keep, V']
                logits = self._forward(input_ids, logits_to_keep, attention_mask, position_ids)
                if self.head_subset is not None:  # a forward of a subclass's own (a static cache's CUDA graphs):
                    logits = self.head_subset.mask(logits)  # the subset's q, at the full head's cost
        if sync:
            synchronize(self.device)  # so forward_seconds is device time, not kernel-launch time
        self.forward_seconds += time.perf_counter() - started
        self.cached_length += token_ids.numel()
        if self.sliding:
            self.fed_ids.append(token_ids.view(-1))
        self.tokens_fed += token_ids.numel()
        self.forward_calls += 1
        return logits[0, -logits_to_keep:, : self.vocab_size]  # [logits_to_keep, V]

    def _forward(self, input_ids: torch.Tensor, logits_to_keep: int, attention_mask: torch.Tensor | None = None,
                 position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """The causal LM's forward over input_ids [1, k] into the cache; its logits [1, logits_to_keep, V'].
        A token tree passes its mask [1, 1, k, cached + k] and position ids [1, k]; a sequence passes neither."""
        tree = {} if attention_mask is None else {"attention_mask": attention_mask, "position_ids": position_ids}
        output = self.hf_model(input_ids=input_ids, past_key_values=self.cache, use_cache=True,
                               logits_to_keep=logits_to_keep, **tree)
        self.cache = output.past_key_values
        return output.logits

    def _feed_keeping_features(self, input_ids: torch.Tensor, logits_to_keep: int):
        """The causal LM's forward in its two halves: the decoder (whose last hidden state we keep), then the head."""
        output = self.hf_model.get_decoder()(input_ids=input_ids, past_key_values=self.cache, use_cache=True)
        self.cache, hidden = output.past_key_values, output.last_hidden_state  # hidden: [1, k, H]
        self.features = hidden[0] if self.features is None else torch.cat([self.features, hidden[0]])
        return self._head()(hidden[:, -logits_to_keep:])  # [1, logits_to_keep, V]

    def _forward_in_halves(self, input_ids: torch.Tensor, logits_to_keep: int,
                           attention_mask: torch.Tensor | None = None, position_ids: torch.Tensor | None = None):
        """_forward as the decoder, then the head subset over the last positions only: logits [1, logits_to_keep, V'].
        (A model whose causal-LM forward rescales its logits after the head is scored without that step: still
        exact, since q is whatever the draft sampled from.)"""
        tree = {} if attention_mask is None else {"attention_mask": attention_mask, "position_ids": position_ids}
        output = self.hf_model.get_decoder()(input_ids=input_ids, past_key_values=self.cache, use_cache=True, **tree)
        self.cache = output.past_key_values
        return self.head_subset(output.last_hidden_state[:, -logits_to_keep:])  # hidden [1, logits_to_keep, H]

    def _head(self):
        """The head logits are scored with: the subset's (limit_vocabulary), else the model's own."""
        return self.head_subset if self.head_subset is not None else self.hf_model.get_output_embeddings()

    def _sliding_can_remove(self, count: int) -> bool:
        """Whether every sliding-window layer still holds the states it needs after dropping its last `count`: at
        most window - 1 of them, those before the dropped ones (a layer keeps window - 1 after each crop, plus what
        was fed since)."""
        for layer in self.cache.layers:
            if getattr(layer, "is_sliding", False) and getattr(layer, "keys", None) is not None:
                needed = min(layer.cumulative_length - count, layer.sliding_window - 1)
                if layer.keys.shape[-2] - count < needed:
                    return False
        return True

    def crop(self, length: int) -> None:
        """Roll the cache back to its first `length` tokens (transformers 5 takes a negative count to remove)."""
        if self.tree_parents:
            if length > self.cached_length - len(self.tree_parents):
                raise ValueError(f"{self.name}: crop into a token tree; keep a path of it first (keep_path)")
            self.tree_parents = []
        if length < self.cached_length and self.sliding and not self._sliding_can_remove(self.cached_length - length):
            kept = torch.cat(self.fed_ids)[:length]  # [length]: read again into a fresh cache (rare: a deep rollback)
            self.reset()
            if length:
                self.feed(kept)
            return
        if length < self.cached_length:
            self.cache.crop(length - self.cached_length)
            self.cached_length = length
            if self.sliding:
                self.fed_ids = [torch.cat(self.fed_ids)[:length]]
            if self.features is not None:
                self.features = self.features[:length]
