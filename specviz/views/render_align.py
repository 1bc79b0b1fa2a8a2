"""Where a draft of another tokenizer meets the target's tokens: which of its own pieces became which target tokens.

A cross-tokenizer round (drafters/cross_vocab.py) records the draft's own tokens as it wrote them and the target
tokens they were re-tokenized into. Both spell the same characters from the same start, so they can be cut into
groups at every character offset where both have a token boundary: each group's own pieces and target tokens cover
the same characters. The draft's last pieces, held back because they could still merge with what it writes next,
form a last group with no target token.

>>> [(g.own, g.target) for g in align_groups(["def", " is", "_pr", "ime"], ["def", " is", "_prime"])]
[([0], [0]), ([1], [1]), ([2, 3], [2])]
>>> [(g.own, g.target) for g in align_groups([" retur", "n", "("], [" return"])]
[([0, 1], [0]), ([2], [])]
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate


@dataclass
class Group:
    own: list[int]  # indices into the draft's own pieces
    target: list[int]  # indices into the target tokens they became (empty: held back)


def align_groups(own_texts: list[str], target_texts: list[str]) -> list[Group]:
    """Cut the two tokenizations at their common boundaries. Where the target tokens do not spell the start of
    the draft's text (a tokenizer that rewrites characters), one group holds everything."""
    own_text, target_text = "".join(own_texts), "".join(target_texts)
    if not own_text.startswith(target_text):
        return [Group(list(range(len(own_texts))), list(range(len(target_texts))))]
    own_ends, target_ends = list(accumulate(map(len, own_texts))), list(accumulate(map(len, target_texts)))
    cuts = sorted(set(own_ends) & set(target_ends))
    groups, own_at, target_at = [], 0, 0
    for cut in cuts:  # each group: the pieces of both that end by this cut and after the one before
        own, target = [], []
        while own_at < len(own_texts) and own_ends[own_at] <= cut:
            own.append(own_at)
            own_at += 1
        while target_at < len(target_texts) and target_ends[target_at] <= cut:
            target.append(target_at)
            target_at += 1
        if own or target:
            groups.append(Group(own, target))
    if own_at < len(own_texts) or target_at < len(target_texts):  # the held-back pieces
        groups.append(Group(list(range(own_at, len(own_texts))), list(range(target_at, len(target_texts)))))
    return groups
