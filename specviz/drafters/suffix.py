"""Suffix drafting (SuffixDecoding, Oliaro et al. 2024): continue the text by what most often followed its ending.

Prompt lookup copies what followed the earliest match of the last n-gram. A suffix index counts every continuation:
it holds every substring of up to `depth` tokens of the prompt and the text decoded so far, each with how many times
it occurs, so the node of the text's last m tokens says what followed them each time they occurred before, and how
often. The draft follows the most frequent continuation token by token while the product of their empirical
frequencies stays above `min_probability`: long drafts where the text repeats itself one way, short or none where it
branched.

The proposal is deterministic given the sequence, so q is one-hot (as prompt lookup's): a drafted x is accepted with
probability p(x), and the output follows the target exactly. The empirical frequencies choose how far to draft; they
are not the q of the acceptance rule.

>>> index = SuffixIndex(depth=8)
>>> index.extend([1, 2, 3, 9, 1, 2, 4, 1, 2])
>>> index.continuations(index.suffix_node(2))      # what followed "1 2" before: 3 once, 4 once
{3: 1, 4: 1}
>>> SuffixDrafter(vocab_size=10).propose([1, 2, 3, 9, 1, 2, 3, 9, 1, 2], 4, None, None).tokens.tolist()
[3, 9, 1, 2]
"""

from __future__ import annotations

from specviz.core.sampling import one_hot
from specviz.drafters.base import BY_LOOKUP, Draft, empty_draft, refuse_tree

DEPTH = 40  # the longest substring indexed: a match of up to MAX_PATTERN tokens leaves at least 24 to draft
MAX_PATTERN = 16  # the longest ending matched
MIN_PATTERN = 2  # the shortest: one token matches too often to predict anything
MIN_PROBABILITY = 0.25  # drafting stops where the continuation's empirical frequency (a product) falls below this


class _Node:
    __slots__ = ("count", "children")

    def __init__(self):
        self.count = 0  # occurrences of the substring this node spells
        self.children: dict[int, _Node] = {}


class SuffixIndex:
    """Every substring of up to `depth` tokens of a growing sequence, in a trie with counts; O(depth) per token.

    `open[m - 1]` is the node of the sequence's last m tokens (m < depth): appending a token extends each of them by
    one, and the root gives the one-token substring."""

    def __init__(self, depth: int = DEPTH):
        self.depth = depth
        self.root = _Node()
        self.tokens: list[int] = []
        self.open: list[_Node] = []

    def extend(self, tokens) -> None:
        for token in tokens:
            extended = []
            for node in [self.root, *self.open]:  # the suffixes of length 0 .. depth - 1, each grown by `token`
                child = node.children.get(token)
                if child is None:
                    child = node.children[token] = _Node()
                child.count += 1
                extended.append(child)
            self.open = extended[: self.depth - 1]  # a substring of `depth` tokens grows no further
            self.tokens.append(token)

    def suffix_node(self, length: int) -> _Node | None:
        """The node of the sequence's last `length` tokens (1 ≤ length < depth), or None if the sequence is shorter."""
        return self.open[length - 1] if 1 <= length <= len(self.open) else None

    @staticmethod
    def continuations(node: _Node) -> dict[int, int]:
        """What followed the node's substring before, and how often."""
        return {token: child.count for token, child in node.children.items()}


class SuffixDrafter:
    """Drafts the most frequent continuation of the longest ending of the text that occurred before (see above)."""

    name = "suffix"
    costless = True
    forward_seconds = 0.0  # no model
    chains_only = "suffix drafting follows one continuation"

    def __init__(self, vocab_size: int, min_probability: float = MIN_PROBABILITY, max_pattern: int = MAX_PATTERN):
        self.vocab_size = vocab_size
        self.min_probability = min_probability
        self.max_pattern = max_pattern
        self.index = SuffixIndex()

    def begin(self) -> None:
        self.index = SuffixIndex()

    def _catch_up(self, sequence: list[int]) -> None:
        """Index the tokens the sequence gained since the last round (a sequence that is not a continuation of the
        indexed one starts a new index: a new run, or a replay from an earlier round)."""
        known = len(self.index.tokens)
        if len(sequence) < known or sequence[:known] != self.index.tokens:
            self.index = SuffixIndex(self.index.depth)
            known = 0
        self.index.extend(sequence[known:])

    def propose(self, sequence, gamma, standardize, generator, tree=None) -> Draft:
        if tree is not None:
            raise refuse_tree(self)
        self._catch_up(list(sequence))
        node = None
        for length in range(min(self.max_pattern, len(self.index.open)), MIN_PATTERN - 1, -1):
            candidate = self.index.suffix_node(length)
            if candidate is not None and candidate.children:  # this ending occurred before, with something after it
                node = candidate
                break
        drafted, probability = [], 1.0
        while node is not None and node.children and len(drafted) < gamma:
            total = sum(child.count for child in node.children.values())
            token, child = max(node.children.items(), key=lambda item: (item[1].count, -item[0]))
            probability *= child.count / total
            if probability < self.min_probability:
                break
            drafted.append(token)
            node = child
        if not drafted:
            return empty_draft(self.vocab_size, BY_LOOKUP)
        import torch

        tokens = torch.tensor(drafted, dtype=torch.long)  # [k]
        return Draft(tokens, one_hot(tokens, self.vocab_size), 0, source=BY_LOOKUP)  # q one-hot: [k, V]
