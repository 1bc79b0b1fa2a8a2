"""Growing a token tree with a draft model, one depth at a time (EAGLE-2's dynamic tree, kept exact).

At each depth the draft model reads the frontier nodes worth expanding in ONE batched forward (tree attention:
each row sees the committed text and its own ancestors; models/tree_attention.py) and draws children under each:
- at T > 0, `branch` distinct children without replacement (sampling.draw_siblings): child i's q is the draft's
  distribution with children 1..i-1 removed and renormalised, exactly what it was drawn from;
- at T = 0, the draft's top-`branch` tokens, each with a one-hot q on itself (the greedy case of the same rule).
Which nodes are expanded is dynamic, as in EAGLE-2: the `expand` frontier nodes with the highest path score, the
product along the path of the draft's softmax at T = 0, of each child's chance by the order it is tried in at T > 0
(tried_first_chance). Every count is fixed before the
children it counts are drawn, and nothing is pruned after it is drawn, so the multi-draft rule stays exact
(core/verify_tree.py): the shape may depend on a node's own value only through its descendants, never its siblings'.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from specviz.core.sampling import draw_siblings, one_hot
from specviz.core.tree_shape import RANK_PRIOR, TreeShape, chosen_probability


@dataclass
class GrownTree:
    """The drafted tree: node j is tokens[j], a child of parents[j] (-1: of the committed text), drawn from probs[j]."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    probs: list[torch.Tensor] = field(default_factory=list)  # [V] each: q exactly as node j was drawn
    logits: list[torch.Tensor] = field(default_factory=list)  # [1, V] each: the raw draft logits at node j's parent
    fed: list[int] = field(default_factory=list)  # the nodes the draft model read, in its tree entries' order
    forwards: int = 0


def pick_children(logits: torch.Tensor, draft_probs: torch.Tensor, count: int, greedy: bool,
                  generator: torch.Generator) -> tuple[list[int], list[torch.Tensor]]:
    """`count` children of a node whose draft logits are logits [1, V] and standardized q is draft_probs [V]: the top
    `count` with one-hot q at T = 0, else drawn without replacement (fewer when q's support is smaller)."""
    if greedy:
        ids = logits[0].topk(min(count, logits.shape[-1])).indices  # [count], the first is the argmax
        return ids.tolist(), list(one_hot(ids, draft_probs.shape[-1]))
    tokens, rows = draw_siblings(draft_probs, count, generator)
    return tokens.tolist(), list(rows)


def tried_first_chance(rank: int) -> float:
    """How a sampled child ranks for expansion: Sequoia's positional chance that the rank-th child tried is the
    accepted one, a_r · Π_{s<r} (1 − a_s), with a = RANK_PRIOR (core/tree_shape.chosen_probability). At T > 0 the
    order a child is tried in predicts its acceptance better than its q does: the first child is accepted with
    probability Σ min(p, q) whichever token it is, so the deep path must hang under it, not under a likelier-looking
    later sibling that is seldom tried. (At T = 0 the children are the draft's top tokens in order, and the draft's
    own probability ranks them.)

    >>> tried_first_chance(1), round(tried_first_chance(2), 2), round(tried_first_chance(3), 3)
    (0.8, 0.06, 0.042)
    """
    return chosen_probability(rank, RANK_PRIOR)


def grow(model, root_logits: torch.Tensor, shape: TreeShape, standardize, generator: torch.Generator) -> GrownTree:
    """Grow a tree under the committed text, whose next-token logits [1, V] the model has just given. The model's
    cache holds the committed text; the expanded nodes are left in it as tree entries (keep_path settles them)."""
    tree = GrownTree()
    frontier = [(-1, root_logits, 1.0)]  # (node, its logits [1, V], its path probability under the draft)
    for level in range(shape.depth):
        new: list[tuple[int, float]] = []
        for node, logits, score in frontier:
            count = min(shape.children(level), shape.budget - len(tree.tokens))
            if count <= 0:
                break
            draft_probs = standardize(logits)[0]  # [V]
            confidence = torch.softmax(logits[0].float(), dim=-1)  # the draft's own, untempered: ranks the paths
            children, rows = pick_children(logits, draft_probs, count, standardize.greedy, generator)
            for rank, (token, row) in enumerate(zip(children, rows), start=1):
                if float(confidence[token]) >= shape.stop:  # else the draft was unsure of it: its path ends here
                    chance = float(confidence[token]) if standardize.greedy else tried_first_chance(rank)
                    new.append((len(tree.tokens), score * chance))
                tree.tokens.append(token)
                tree.parents.append(node)
                tree.probs.append(row)
                tree.logits.append(logits)
        if level == shape.depth - 1 or len(tree.tokens) >= shape.budget:
            break
        # Expand the likeliest new paths (an EOS ends its path: nothing follows it): one batched forward.
        ranked = sorted((item for item in new if tree.tokens[item[0]] not in shape.ends), key=lambda item: -item[1])
        chosen = sorted(ranked[: shape.expand])  # in node order, so each parent is read before its children
        if not chosen:
            break
        entry_of = {node: entry for entry, node in enumerate(tree.fed)}
        parents = [entry_of.get(tree.parents[node], -1) for node, _ in chosen]
        ids = torch.tensor([tree.tokens[node] for node, _ in chosen], dtype=torch.long, device=model.device)
        rows = model.feed_tree(ids, parents, sync=False)  # [w, V]
        tree.fed.extend(node for node, _ in chosen)
        tree.forwards += 1
        frontier = [(node, rows[i : i + 1], score) for i, (node, score) in enumerate(chosen)]
    return tree


def settle(model, fed_tokens: list[int], committed: list[int], sequence: list[int]) -> list[int]:
    """Before the next proposal: keep, of the tree entries the model read (fed_tokens, in entry order, with the
    model's tree_parents), the longest path that the sequence now continues `committed` with; drop the rest.
    Returns the ids the model's cache then holds."""
    parents = model.tree_parents
    continuation = sequence[len(committed):]
    best: list[int] = []
    paths: dict[int, list[int]] = {}
    for entry, parent in enumerate(parents):
        if parent >= 0 and parent not in paths:
            continue  # its parent is off the sequence
        path = [*paths[parent], entry] if parent >= 0 else [entry]
        depth = len(path)
        if depth <= len(continuation) and fed_tokens[entry] == continuation[depth - 1]:
            paths[entry] = path
            if depth > len(best):
                best = path
    model.keep_path(best)
    return committed + [fed_tokens[entry] for entry in best]


def main_line(tokens: list[int], parents: list[int]) -> list[int]:
    """The tree's first-drawn path: the first child of the root, its first child, and so on (a chain: all of it)."""
    line, node = [], -1
    while (child := next((index for index, parent in enumerate(parents) if parent == node), None)) is not None:
        line.append(tokens[child])
        node = child
    return line


def with_branch(draft, branch):
    """`draft` (a tree) with a chain `branch` (a Draft of one-hot q, prompt lookup's copy) merged in: the branch
    follows the tree where the tree drew the same tokens and goes on as new nodes after the last match, the first
    of them a later sibling there. Each new node's q is one-hot on itself, the distribution it came from (it was
    copied, not drawn), so the multi-draft rule stays exact; a new node never repeats a sibling."""
    tokens, parents = draft.tokens.tolist(), draft.tree_parents
    branch_ids = branch.tokens.tolist()
    node, depth = -1, 0
    while depth < len(branch_ids):
        match = next((index for index, parent in enumerate(parents)
                      if parent == node and tokens[index] == branch_ids[depth]), None)
        if match is None:
            break
        node, depth = match, depth + 1
    added = branch_ids[depth:]
    if not added:
        return draft
    new_parents = [node, *range(len(tokens), len(tokens) + len(added) - 1)]
    device = draft.tokens.device
    return dataclasses.replace(
        draft, tokens=torch.cat([draft.tokens, torch.tensor(added, dtype=torch.long, device=device)]),
        probs=torch.cat([draft.probs, branch.probs[depth:].to(draft.probs.device, draft.probs.dtype)]),
        parents=[*parents, *new_parents])
