"""Simulated models for the lab: a target and a draft over a few words, with the acceptance rate set exactly.

At every prefix the target p (Leviathan's symbol; `target_probs` here) lives on a prefix-dependent half of the
vocabulary, and an "other" distribution d on the remaining half. The draft at overlap β is

    q = β·tilt(p) + (1 − β)·d,  with β·tilt(p) ≤ p,  so  Σ_x min(p(x), q(x)) = β·Σ tilt(p) = β  at every prefix

(tilt(p) is p with its top word lowered; see SimulatedWorld.draft_probs). Acceptance is then exactly β at every
drafted position at temperature 1, the acceptance rate α = E[β] equals β, and tokens per round follow the capped
geometric law of specviz.core.theory exactly. Both models read their distribution from a hash of the whole prefix, so
a cache rolled back wrongly changes what they say next. They implement the narrow interface of
specviz.models.LanguageModel, as tests/fakes.py does.

>>> world = simulated_pipeline(overlap=0.7).target.world
>>> prompt_hash = world.hash_of([0, 1])  # "the cat"
>>> target_probs, _ = world.distributions(prompt_hash)
>>> draft_probs = world.draft_probs(prompt_hash, 0.7)
>>> round(float(torch.minimum(target_probs, draft_probs).sum()), 6), int((target_probs > 0).sum())
(0.7, 8)
"""

from __future__ import annotations

import torch

from specviz.config import DecodeConfig
from specviz.decoding.pipeline import Pipeline
from specviz.drafters.model import DraftModelDrafter

WORDS = ("the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "park", "big", "red", "ball", "saw",
         "home", "sun", "was", "warm", "hat")
DEFAULT_VOCAB = 16
NEVER = -1e9  # logit of a token outside the support: finite, so no warper ever sees inf - inf; exp() is exactly 0
HASH_MODULUS = 4_294_967_291  # largest prime below 2**32: torch's CPU generator keeps only 32 bits of a seed
HASH_BASE = 1_000_003
SHARPNESS = 1.5  # spread of the random logits behind p and d (higher = more peaked, more repetitive text)
CACHE_LIMIT = 100_000  # memoized prefixes per world and per model
PROMPT = "the cat"  # encodes to [0, 1]


class SimulatedWorld:
    """The shared ground truth: at every prefix, the target distribution p and the "other" distribution d.

    A prefix is named by a polynomial hash of its tokens, extended one token at a time:
    hash([]) = seed mod M, hash(prefix + [t]) = (hash(prefix)·B + t + 1) mod M.
    """

    def __init__(self, vocab_size: int = DEFAULT_VOCAB, seed: int = 0, sharpness: float = SHARPNESS):
        if not 2 <= vocab_size <= len(WORDS):
            raise ValueError(f"vocab_size must be between 2 and {len(WORDS)}, got {vocab_size}")
        self.vocab_size, self.sharpness = vocab_size, sharpness
        self.root_hash = seed % HASH_MODULUS
        self._cache: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    @staticmethod
    def extend(prefix_hash: int, token: int) -> int:
        return (prefix_hash * HASH_BASE + token + 1) % HASH_MODULUS

    def hash_of(self, tokens: list[int]) -> int:
        prefix_hash = self.root_hash
        for token in tokens:
            prefix_hash = self.extend(prefix_hash, token)
        return prefix_hash

    def distributions(self, prefix_hash: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(target_probs [V], other_probs [V]) at this prefix, on disjoint halves of the vocabulary."""
        return _memoized(self._cache, prefix_hash, lambda: self._draw(prefix_hash))

    def _draw(self, prefix_hash: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(prefix_hash)
        order = torch.randperm(self.vocab_size, generator=generator)  # p's half comes first
        scores = self.sharpness * torch.randn(self.vocab_size, generator=generator)  # [V]
        in_target = torch.zeros(self.vocab_size, dtype=torch.bool)
        in_target[order[: self.vocab_size // 2]] = True
        target_probs = torch.softmax(torch.where(in_target, scores, NEVER), dim=-1)  # [V]
        other_probs = torch.softmax(torch.where(in_target, NEVER, scores), dim=-1)  # [V]
        return target_probs, other_probs

    def draft_probs(self, prefix_hash: int, overlap: float) -> torch.Tensor:
        """q = β·tilt(p) + (1 − β)·d at this prefix [V]; p itself at β = 1, the disjoint d at β = 0.

        tilt(p) ∝ p·s, where s = 1 except at p's top word, lowered by λ = min(1, (1 − β)/p_top). Then
        β·s(x)/E_p[s] ≤ 1, so β·tilt(p) ≤ p everywhere: min(p, q) = β·tilt(p), whose mass is exactly β. The
        residual norm(max(0, p − q)) then leans to p's top word instead of being p itself, as it would be with
        q = β·p + (1 − β)·d, so a sampler that draws corrections from p is caught.
        """
        target_probs, other_probs = self.distributions(prefix_hash)
        if overlap == 1.0:
            return target_probs
        top = int(target_probs.argmax())
        lowered = min(1.0, (1.0 - overlap) / float(target_probs[top]))  # λ
        tilted = target_probs.clone()
        tilted[top] *= 1.0 - lowered  # p·s
        return overlap * tilted / tilted.sum() + (1.0 - overlap) * other_probs


class SimulatedModel:
    """The narrow LanguageModel interface of specviz.models: the world's target (overlap 1) or a draft.

    The "cache" is the list of prefix hashes: hashes[i] names the first i tokens fed. Cropping truncates it.
    """

    def __init__(self, world: SimulatedWorld, overlap: float = 1.0, name: str = "simulated:target"):
        if not 0.0 <= overlap <= 1.0:
            raise ValueError(f"overlap must be in [0, 1], got {overlap}")
        self.world, self.overlap, self.name = world, float(overlap), name
        self.vocab_size = world.vocab_size
        self.device = torch.device("cpu")
        self.max_length = 1 << 20
        self.hashes = [world.root_hash]
        self.tree_parents: list[int] = []  # token-tree entries after the committed tokens, as LanguageModel.feed_tree
        self.tree_hashes: list[int] = []
        self.tokens_fed = self.forward_calls = 0
        self.forward_seconds = 0.0
        self._logits: dict[int, torch.Tensor] = {}

    @property
    def cached_length(self) -> int:
        return len(self.hashes) - 1 + len(self.tree_hashes)

    def reset(self) -> None:
        self.hashes = [self.world.root_hash]
        self.tree_parents, self.tree_hashes = [], []

    def logits_at(self, prefix_hash: int) -> torch.Tensor:
        """log q [V] (log p for the target), NEVER where there is no mass; softmax gives the probabilities back."""
        def compute() -> torch.Tensor:
            probs = self.world.draft_probs(prefix_hash, self.overlap)
            return torch.where(probs > 0, probs.clamp(min=1e-30).log(), NEVER)

        return _memoized(self._logits, prefix_hash, compute)

    def feed(self, token_ids: torch.Tensor, logits_to_keep: int = 1, sync: bool = True) -> torch.Tensor:
        """Append token_ids [k]; return logits [logits_to_keep, V] after each of the last positions."""
        for token in token_ids.view(-1).tolist():
            self.hashes.append(self.world.extend(self.hashes[-1], token))
        self.tokens_fed += token_ids.numel()
        self.forward_calls += 1
        return torch.stack([self.logits_at(h) for h in self.hashes[-logits_to_keep:]])  # [keep, V]

    def feed_tree(self, token_ids: torch.Tensor, parents: list[int], logits_to_keep: int | None = None,
                  sync: bool = True) -> torch.Tensor:
        """Append token-tree entries, each after its parent's path (LanguageModel.feed_tree's contract)."""
        for token, parent in zip(token_ids.view(-1).tolist(), parents):
            self.tree_hashes.append(self.world.extend(self.tree_hashes[parent] if parent >= 0 else self.hashes[-1], token))
            self.tree_parents.append(int(parent))
        self.tokens_fed += token_ids.numel()
        self.forward_calls += 1
        return torch.stack([self.logits_at(h) for h in self.tree_hashes[-(logits_to_keep or len(parents)):]])

    def keep_path(self, path: list[int]) -> None:
        """Keep the tree entries of `path` as committed tokens, drop the rest."""
        self.hashes.extend(self.tree_hashes[node] for node in path)
        self.tree_parents, self.tree_hashes = [], []

    def crop(self, length: int) -> None:
        self.tree_parents, self.tree_hashes = [], []
        del self.hashes[length + 1 :]


def _memoized(cache: dict, key, compute):
    """cache[key], computed once; the cache is emptied past CACHE_LIMIT entries (a pure function recomputes)."""
    value = cache.get(key)
    if value is None:
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        value = cache[key] = compute()
    return value


class WordTokenizer:
    """Ids ↔ words. decode gives each word a leading space, as GPT-2-style tokens do, so rows read like text.

    >>> tokenizer = WordTokenizer(16); tokenizer("the cat")["input_ids"], tokenizer.decode([2, 3])
    ([0, 1], ' sat on')
    """

    chat_template = None
    eos_token_id = None

    def __init__(self, vocab_size: int = DEFAULT_VOCAB):
        self.words = WORDS[:vocab_size]

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict:
        """Known words map to their ids; an unknown word to a fixed id from its letters."""
        index = {word: i for i, word in enumerate(self.words)}
        return {"input_ids": [index.get(word, sum(map(ord, word)) % len(self.words)) for word in text.lower().split()]}

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return "".join(" " + self.words[int(i)] for i in ids)


def simulated_pipeline(overlap: float, vocab_size: int = DEFAULT_VOCAB, seed: int = 0,
                       sharpness: float = SHARPNESS) -> Pipeline:
    """A target (overlap 1) and a draft at `overlap` over one world, ready for engine.speculative_decode."""
    world = SimulatedWorld(vocab_size, seed, sharpness)
    target = SimulatedModel(world, 1.0, "simulated:target")
    draft = SimulatedModel(world, overlap, f"simulated:draft(overlap={overlap:g})")
    return Pipeline(target, DraftModelDrafter(draft), WordTokenizer(vocab_size), [], torch.device("cpu"),
                           torch.float32, draft)


def simulated_config(overlap: float, gamma: int, max_new_tokens: int, seed: int, temperature: float = 1.0) -> DecodeConfig:
    return DecodeConfig(target="simulated:target", draft=f"simulated:draft(overlap={overlap:g})", gamma=gamma,
                        max_new_tokens=max_new_tokens, temperature=temperature, seed=seed, chat=False).validate()
