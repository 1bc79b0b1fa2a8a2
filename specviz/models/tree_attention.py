"""A token tree in one forward: the tree attention mask, position ids by depth, and keeping the accepted path.

A model's KV cache holds the committed sequence (`base` tokens) and, after it, the tree's entries in the order
they were fed. Entry i has a parent: an earlier entry, or -1 for a child of the last committed token. Entry i
attends to every committed token, to its ancestors and to itself, never to a sibling or a cousin, and sits at
position base + depth(i) - 1 (SpecInfer's tree attention; EAGLE's `tree_mask` and `tree_position_ids`):

>>> parents = [-1, -1, 0]           # a and b follow the sequence; c follows a
>>> tree_mask(parents, new=3, base=2)[0, 0].int().tolist()
[[1, 1, 1, 0, 0], [1, 1, 0, 1, 0], [1, 1, 1, 0, 1]]
>>> tree_positions(parents, new=3, base=2).tolist()
[[2, 2, 3]]

After verification only the accepted path stays: its entries move down to follow the committed tokens
(`keep_entries`), in place, and nothing is fed again.
"""

from __future__ import annotations

import torch

from specviz.core.verify_tree import tree_depths


def depths(parents: list[int]) -> list[int]:
    """Depth of every entry: 1 for a child of the committed sequence. [-1, -1, 0, 2] -> [1, 1, 2, 3]; ValueError for
    a parent that is no earlier entry (tree_verify.tree_depths)."""
    return tree_depths(parents)


def is_chain(parents: list[int]) -> bool:
    """Whether every entry follows the one before it (a chain, where the plain causal mask is the tree mask)."""
    return all(parent == index - 1 for index, parent in enumerate(parents))


def ancestors(parents: list[int]) -> torch.Tensor:
    """[n, n] bool: entry i sees entry j when j is i or one of its ancestors."""
    count = len(parents)
    seen = torch.eye(count, dtype=torch.bool)
    for index, parent in enumerate(parents):
        if parent >= 0:
            seen[index] |= seen[parent]
    return seen


def tree_mask(parents: list[int], new: int, base: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """The attention mask of the last `new` tree entries: bool [1, 1, new, base + len(parents)], True = attend.
    `parents` covers every tree entry in the cache after this forward (the earlier ones, then the new ones)."""
    seen = ancestors(parents)[len(parents) - new :]  # [new, n]
    committed = torch.ones(new, base, dtype=torch.bool)
    return torch.cat([committed, seen], dim=1).to(device)[None, None]


def tree_positions(parents: list[int], new: int, base: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Position ids [1, new] of the last `new` tree entries: base + depth - 1."""
    return torch.tensor([base + depth - 1 for depth in depths(parents)[len(parents) - new :]], device=device)[None]


def keep_entries(cache, base: int, kept: list[int]) -> None:
    """Move tree entries `kept` (indices from base, increasing) of a cache down to base, base + 1, ..; the caller
    then crops the cache to base + len(kept). Works on transformers' caches (`layers`, each with keys and values
    [1, heads, seq, d]) and on int4_decoder.KVBuffer (keys and values [layers, 1, heads, capacity, d])."""
    sources = torch.tensor([base + index for index in kept], dtype=torch.long)
    end = base + len(kept)
    pairs = ([(layer.keys, layer.values) for layer in cache.layers] if hasattr(cache, "layers")
             else [(cache.keys[index], cache.values[index]) for index in range(cache.keys.shape[0])])
    if any(getattr(layer, "is_sliding", False) for layer in getattr(cache, "layers", ())):
        raise ValueError("a sliding-window cache layer cannot keep a tree path")
    for keys, values in pairs:  # [1, heads, seq, d]; the right side is gathered first, so this is safe in place
        index = sources.to(keys.device)
        keys[:, :, base:end] = keys[:, :, index]
        values[:, :, base:end] = values[:, :, index]
