"""Scripted stand-ins for models: deterministic distributions that depend on the whole prefix.

Because every position's logits are a function of all tokens before it, a cache that is rolled back wrongly
changes the distributions and shows up in the statistical tests.
"""

import itertools

import torch

from specviz.config import DecodeConfig
from specviz.core.sampling import Standardizer
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


def outside_mask(ids: list[int], width: int) -> torch.Tensor:
    mask = torch.ones(width, dtype=torch.bool)
    mask[ids] = False
    return mask  # [V]: True where a token is not scored


class SubsetFake(FakeLanguageModel):
    """A scripted draft whose head can be limited as LanguageModel.limit_vocabulary does: -inf outside the rows."""

    subset: list[int] | None = None

    def limit_vocabulary(self, ids: list[int]) -> None:
        self.subset = list(ids)

    def full_vocabulary(self) -> None:
        self.subset = None

    def logits_after(self, prefix: tuple) -> torch.Tensor:
        logits = super().logits_after(prefix)  # [V]
        if self.subset is None:
            return logits
        return logits.masked_fill(outside_mask(self.subset, self.vocab_size), float("-inf"))


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


PROMPT = "ab"  # the prompt of the tests that enumerate the law of fake_pipeline's target (exact_sequence_probs)


def exact_sequence_probs(config: DecodeConfig, length: int, vocab: int) -> dict:
    """P(sequence) under the target alone, enumerated: the law speculative decoding must reproduce."""
    target = FakeLanguageModel(vocab, salt=1)
    standardize = Standardizer(config.temperature, config.top_k, config.top_p)
    prompt = [ord(ch) % vocab for ch in PROMPT]
    probs = {}
    for sequence in itertools.product(range(vocab), repeat=length):
        p = 1.0
        for step in range(length):
            dist = standardize(target.logits_after(tuple(prompt + list(sequence[:step]))).view(1, -1))[0]
            p *= float(dist[sequence[step]])
        probs[sequence] = p
    return probs


def check_rounds_against_the_models(pipeline, prompt: str, config, draft_row=None):
    """Run the engine and check every round's inputs to the accept/reject step against the scripted models, which
    are pure functions of the prefix: p row 0 is the target's after the sequence so far and row j+1 its after node
    j's path; where the draft model drafted, node j's q is the draft's after its parent's path, with its earlier
    siblings zeroed and renormalised (drafters/tree.py; a chain has none); and the round emits the accepted path,
    then verify's next token. With verify exact (tests/test_verify.py and test_tree_verify.py enumerate its law),
    these make a sampled run exact: a cache rolled back wrongly, or a q other than the one drawn from, fails here
    deterministically. draft_row(standardize, sequence, drafts): the q a drafter of another kind draws from after
    the target ids `sequence` and its own earlier `drafts` (default: the scripted draft model's). Returns the trace."""
    import pytest

    from specviz.core.verify_tree import path_to
    from specviz.decoding import engine

    calls, real = [], engine.verify_draft
    standardize = Standardizer(config.temperature, config.top_k, config.top_p)

    def row(model, prefix):
        return standardize(model.logits_after(tuple(prefix)).view(1, -1))[0]

    draft_row = draft_row or (lambda standardize, sequence, drafts: row(pipeline.draft_model, sequence + drafts))

    def recording(*args):
        calls.append((args, real(*args)))
        return calls[-1][1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "verify_draft", recording)
        prompt_ids = engine.checked_prompt_ids(pipeline, prompt, config)
        before, prompt_length = prompt_ids, len(prompt_ids)
        for round_, trace in engine.speculative_decode(pipeline, prompt, config):
            (drafted, parents, draft_probs, target_probs, *_), result = calls[-1]
            drafted = drafted.tolist()
            paths = [[drafted[node] for node in path_to(parents, index)] for index in range(len(drafted))]
            expected = torch.stack([row(pipeline.target, before + path) for path in [[], *paths]])
            assert torch.allclose(target_probs, expected, atol=1e-6), f"round {round_.index}: p rows"
            if round_.draft_forwards and config.temperature > 0:  # drafted by the scripted draft model, sampling
                for index, path in enumerate(paths):
                    q = draft_row(standardize, before, path[:-1])
                    earlier = [drafted[node] for node in range(index) if parents[node] == parents[index]]
                    if earlier:
                        q[earlier] = 0
                        q = q / q.sum()
                    assert torch.allclose(draft_probs[index], q, atol=1e-6), f"round {round_.index}: q of node {index}"
            accepted = [drafted[node] for node in result.path]
            ended = accepted and accepted[-1] in pipeline.eos_ids  # an accepted EOS ends the text: nothing follows
            assert trace.token_ids[len(before) - prompt_length:] == accepted + ([] if ended else [result.next_token])
            before = prompt_ids + trace.token_ids
    return trace
