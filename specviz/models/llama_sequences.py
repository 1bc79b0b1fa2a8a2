"""A token tree in llama.cpp's KV cache: one sequence per path, sharing the cache entries of the nodes they share.

llama.cpp has no tree mask to hand a batch, but each cache entry carries a set of sequence ids, and a token attends
to the entries of its own sequences at positions up to its own. So a tree is a set of sequences: every root-to-leaf
path one sequence id, a node's entry in the sequences of every path through it, siblings at the same position in
different sequences (as llama.cpp's own speculative example drafts several sequences). The committed text is
sequence 0; a path that branches off an entry already in the cache first gets that entry's path copied into its new
sequence (llama_memory_seq_cp adds an id to the entries, it copies no keys or values).

This module is the bookkeeping only, pure Python: which sequence each new node joins, which copies come first, and
at what position each node sits. models/llama_cpp.py applies it to a context.

    plan = sequences.add(parents=[-1, -1, 0], base=10)   # two siblings at position 10, a child of the first at 11
    plan.members == [[0], [1], [0]]; plan.copies == [(0, 1, 10)]; plan.positions == [10, 10, 11]
"""

from __future__ import annotations

from dataclasses import dataclass, field

COMMITTED = 0  # the sequence that holds the committed text (and, between trees, nothing else)


@dataclass
class SequencePlan:
    """What one batch of new tree entries needs: copies (source, new sequence, end position) to make before the
    batch, so the new sequence holds the source's entries at positions < end; each entry's sequences and position."""

    copies: list[tuple[int, int, int]] = field(default_factory=list)
    members: list[list[int]] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)

    def piece(self, start: int, end: int) -> SequencePlan:
        """Entries start..end-1, for a batch decoded in pieces (parents come before children, so each piece reads
        the earlier ones from the cache); the copies are made once, before the first."""
        return SequencePlan([], self.members[start:end], self.positions[start:end])


class TreeSequences:
    """The sequences of the token tree a context holds after its committed text (entries in the order fed)."""

    def __init__(self, limit: int):
        self.limit = limit  # the context's n_seq_max
        self.reset()

    def reset(self) -> None:
        self.parents: list[int] = []
        self.depths: list[int] = []  # 1 for a child of the committed text
        self.sequence: list[int] = []  # a sequence that holds the entry and its whole path
        self.tips = {COMMITTED: -1}  # each sequence's deepest entry (-1: the committed text)

    def add(self, parents: list[int], base: int, branches: bool = True) -> SequencePlan:
        """Plan entries that are children of parents[j] (an earlier entry, or -1 for the committed text, whose
        length is base). A child takes its parent's sequence when the parent is that sequence's tip; otherwise it
        opens a sequence, copied from its nearest ancestor already in the cache and joined by its new ancestors.
        branches=False refuses a second path (a chain given as a tree passes)."""
        first, tips = len(self.parents), dict(self.tips)
        try:
            return self._add(parents, base, first, branches)
        except ValueError:  # nothing of a refused batch stays
            del self.parents[first:], self.depths[first:], self.sequence[first:]
            self.tips = tips
            raise

    def _add(self, parents: list[int], base: int, first: int, branches: bool) -> SequencePlan:
        plan = SequencePlan()
        for offset, parent in enumerate(parents):
            entry = first + offset
            if not -1 <= parent < entry:
                raise ValueError(f"tree entry {entry}'s parent must be an earlier entry or -1, not {parent}")
            source = self.sequence[parent] if parent >= 0 else COMMITTED
            if self.tips[source] == parent:
                sequence = source
            else:
                if not branches:
                    raise ValueError("this llama.cpp context takes chains only (it runs flash attention, as llama.cpp's "
                                     "tools do); a branching token tree needs one made for trees")
                sequence = len(self.tips)  # ids are opened in order and freed only when the tree settles
                if sequence >= self.limit:
                    raise ValueError(f"a token tree of more than {self.limit} paths does not fit this llama.cpp "
                                     "context's sequences")
                cached = parent
                while cached >= first:  # the nearest ancestor in the cache already
                    cached = self.parents[cached]
                depth = self.depths[cached] if cached >= 0 else 0
                plan.copies.append((self.sequence[cached] if cached >= 0 else COMMITTED, sequence, base + depth))
            self.tips[sequence] = entry
            self.parents.append(parent)
            self.depths.append(self.depths[parent] + 1 if parent >= 0 else 1)
            self.sequence.append(sequence)
            plan.members.append([sequence])
            plan.positions.append(base + self.depths[-1] - 1)
            node = parent
            while node >= first and sequence not in plan.members[node - first]:  # its new ancestors join it
                plan.members[node - first].append(sequence)
                node = self.parents[node]
        return plan

    def kept(self, path: list[int]) -> int:
        """The sequence that holds `path` (entries from a child of the committed text down); ValueError if it is not
        a path of the tree."""
        for parent, node in zip([-1, *path], path):
            if not 0 <= node < len(self.parents) or self.parents[node] != parent:
                raise ValueError(f"{path} is not a path from the root of the token tree")
        return self.sequence[path[-1]] if path else COMMITTED
