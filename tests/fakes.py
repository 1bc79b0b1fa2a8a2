"""Scripted stand-ins for models: deterministic distributions that depend on the whole prefix.

Because every position's logits are a function of all tokens before it, a cache that is rolled back wrongly
changes the distributions and shows up in the statistical tests.
"""

import torch

from specviz.decoding.pipeline import Pipeline
from specviz.drafters.lookup import LookupThenModelDrafter, PromptLookupDrafter
from specviz.drafters.model import DraftModelDrafter
from specviz.models.cache import WeightsCache


class FakeLanguageModel:
    """Implements the narrow interface of specviz.models.LanguageModel over a small vocabulary."""

    def __init__(self, vocab_size: int, salt: int, sharpness: float = 2.0, name: str = "fake"):
        self.vocab_size, self.salt, self.sharpness, self.name = vocab_size, salt, sharpness, name
        self.device = torch.device("cpu")
        self.max_length = 10_000
        self.tokens: list[int] = []
        self.tree_tokens: list[int] = []  # token-tree entries after the committed tokens (feed_tree), and their parents
        self.tree_parents: list[int] = []
        self.tokens_fed = self.forward_calls = 0
        self.forward_seconds = 0.0

    @property
    def cached_length(self) -> int:
        return len(self.tokens) + len(self.tree_tokens)

    def reset(self) -> None:
        self.tokens, self.tree_tokens, self.tree_parents = [], [], []

    def logits_after(self, prefix: tuple) -> torch.Tensor:
        generator = torch.Generator().manual_seed(hash((self.salt,) + tuple(prefix)) % (2**31))
        return self.sharpness * torch.randn(self.vocab_size, generator=generator)

    def feed_tree(self, token_ids: torch.Tensor, parents: list[int], logits_to_keep: int | None = None,
                  sync: bool = True) -> torch.Tensor:
        """Each entry's logits after the committed tokens and its own path (LanguageModel.feed_tree's contract)."""
        rows = []
        for token, parent in zip(token_ids.view(-1).tolist(), parents):
            assert -1 <= parent < len(self.tree_tokens), "a parent must be an earlier entry"
            self.tree_tokens.append(token)
            self.tree_parents.append(parent)
            rows.append(self.logits_after(tuple(self.tokens + self._path(len(self.tree_tokens) - 1))))
        self.tokens_fed += token_ids.numel()
        self.forward_calls += 1
        return torch.stack(rows[-(logits_to_keep or len(rows)):])  # [keep, V]

    def _path(self, entry: int) -> list[int]:
        path = []
        while entry >= 0:
            path.append(self.tree_tokens[entry])
            entry = self.tree_parents[entry]
        return path[::-1]

    def keep_path(self, path: list[int]) -> None:
        for parent, node in zip([-1, *path], path):
            assert self.tree_parents[node] == parent, f"{path} is not a path of the tree"
        self.tokens.extend(self.tree_tokens[node] for node in path)
        self.tree_tokens, self.tree_parents = [], []

    def feed(self, token_ids: torch.Tensor, logits_to_keep: int = 1, sync: bool = True) -> torch.Tensor:
        assert not self.tree_tokens, "keep a path of the tree before feeding a sequence"
        self.tokens.extend(token_ids.view(-1).tolist())
        self.tokens_fed += token_ids.numel()
        self.forward_calls += 1
        ends = range(len(self.tokens) - logits_to_keep + 1, len(self.tokens) + 1)
        return torch.stack([self.logits_after(tuple(self.tokens[:end])) for end in ends])  # [keep, V]

    def crop(self, length: int) -> None:
        assert not self.tree_tokens or length <= len(self.tokens), "crop into a token tree"
        self.tree_tokens, self.tree_parents = [], []
        del self.tokens[length:]


class FakeTokenizer:
    chat_template = None
    eos_token_id = None

    def __init__(self, vocab_size: int):
        self.vocab_size = vocab_size

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": [ord(ch) % self.vocab_size for ch in text]}

    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(ord("a") + i) for i in ids)


def fake_pipeline(vocab_size=3, drafter="model", eos_ids=(), draft_salt=7, draft_sharpness=1.0, draft_confidence=0.0):
    """drafter: "model" (a scripted draft model), "ngram" (prompt lookup) or "ngram+model" (lookup, else the model)."""
    target = FakeLanguageModel(vocab_size, salt=1, name="target")
    draft_model = None
    if drafter in ("model", "ngram+model"):
        draft_model = FakeLanguageModel(vocab_size, salt=draft_salt, sharpness=draft_sharpness, name="draft")
        chosen = DraftModelDrafter(draft_model, confidence=draft_confidence)
    if drafter in ("ngram", "ngram+model"):
        lookup = PromptLookupDrafter(vocab_size, ngram_size=2, eos_token_ids=list(eos_ids))
        chosen = lookup if drafter == "ngram" else LookupThenModelDrafter(lookup, chosen, drafter)
    return Pipeline(target, chosen, FakeTokenizer(vocab_size), list(eos_ids), torch.device("cpu"), torch.float32, draft_model,
                    cache=WeightsCache())  # its own cache: warm-ups in one test do not leak into another
