"""The one interface the engine, the drafters and the pipeline use of a model: a causal LM with its own KV cache.

Every backend satisfies it, and tests/test_model_protocol.py checks each against the same contract:
- models/language_model.py: transformers (TransformersModel; static_cache.py its CUDA-graph variant);
- models/llama_cpp.py: llama.cpp, a GGUF in its own quantization (LlamaCppModel);
- labs/simulated_models/models.py: the simulated worlds of the labs (SimulatedModel);
- tests/fakes.py: the tests' scripted models (FakeLanguageModel).

A backend is then one file: it feeds tokens, returns their logits in float32 on the CPU or its device, and rolls
its cache back. Verification, recording and replay stay specviz's own, whatever runs the forwards.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class LanguageModel(Protocol):
    """A causal LM with its own KV cache: feed new tokens, get their logits, crop the cache back.

    Logits are returned over the first `vocab_size` ids only, so two models whose heads are padded differently give
    distributions of the same width. `tokens_fed`, `forward_calls` and `forward_seconds` count what the forwards did
    (tests prove with them that a prefix is never read twice; the round anatomy times them).
    """

    name: str
    vocab_size: int  # the width of every logits row returned
    device: torch.device
    max_length: int  # the longest sequence the model (or its context) holds
    tokens_fed: int
    forward_calls: int
    forward_seconds: float
    tree_parents: list[int]  # parents of the token-tree entries after the committed tokens; [] without a tree

    @property
    def cached_length(self) -> int:
        """Tokens whose keys and values are in the cache (tree entries included)."""
        ...

    def reset(self) -> None:
        """Empty the cache: the next feed starts a new sequence."""
        ...

    def feed(self, token_ids: torch.Tensor, logits_to_keep: int = 1, sync: bool = True) -> torch.Tensor:
        """Append token_ids [k] to the cache; return logits [logits_to_keep, vocab_size] of the last positions."""
        ...

    def feed_tree(self, token_ids: torch.Tensor, parents: list[int], logits_to_keep: int | None = None,
                  sync: bool = True) -> torch.Tensor:
        """Append token-tree entries token_ids [m], entry j a child of parents[j] (an earlier entry, or -1 for the last
        committed token), in one forward; logits [logits_to_keep (default m), vocab_size] of the last entries. A
        backend that reads chains only refuses a tree with ValueError."""
        ...

    def keep_path(self, path: list[int]) -> None:
        """Keep the tree entries of `path` (root to leaf) as committed tokens and drop the rest of the tree."""
        ...

    def crop(self, length: int) -> None:
        """Roll the cache back to its first `length` tokens."""
        ...
