"""The shape of a token tree, and what a tree of a given shape buys: pure maths under Sequoia's positional model.

A round's time is the drafting (one draft forward per level, over the `expand` frontier rows at once) plus one
target forward over the pending token and every node, v(n + 1). What a tree buys is its expected accepted path.
Under Sequoia's positional model a node's children are tried in order and the r-th is accepted with probability
a_r once the ones before it were rejected (acceptance by sibling rank), so child r is the accepted one with
probability a_r · Π_{s<r} (1 − a_s) (chosen_probability, the one rank product: the drafter ranks sampled children
by it, the budget scores trees by it), and the expected path length is the sum, over nodes, of the product of those
along the node's path (Sequoia's f(T)). A chain of γ is the tree of branch 1: Σ_{i≤γ} a_1^i.

The drafter grows the shape (drafters/tree.py); decoding/tree_budget.py picks the budget from this machine's costs
and the pair's measured acceptance by sibling rank.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class TreeShape:
    """How a draft model grows a token tree. A chain of γ is TreeShape(depth=γ, branch=1, expand=1, budget=γ)."""

    depth: int  # levels below the committed text: the longest path, at most depth - 1 draft forwards after the first
    branch: int  # children drawn under each expanded node (the root's too)
    expand: int  # nodes expanded per level: the frontier's most probable paths, read in one batched forward
    budget: int  # the most nodes drafted in all
    ends: tuple[int, ...] = ()  # tokens nothing is drafted after (EOS): such a node is never expanded
    wide: int | None = None  # levels (from the top) whose expanded nodes get `branch` children; one child below them
    # A node the draft gave less than this (softmax of its logits) is not expanded, as a chain's draft stops after
    # such a token (DecodeConfig.draft_confidence); the tree stops growing when no node is left to expand.
    stop: float = 0.0

    def __post_init__(self):
        for name in ("depth", "branch", "expand", "budget"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"a tree's {name} must be a whole number of at least 1, got {value!r}")

    def children(self, level: int) -> int:
        """Children drawn under each expanded node of `level` (0: the root)."""
        return self.branch if self.wide is None or level < self.wide else 1

    def within(self, depth: int) -> TreeShape:
        """This shape at most `depth` deep (a round near max_new_tokens may emit only so many tokens)."""
        return dataclasses.replace(self, depth=min(self.depth, depth)) if depth < self.depth else self

    def describe(self) -> str:
        return (f"up to {self.budget} nodes, {self.depth} deep, {self.branch} children under each of the "
                f"{self.expand} likeliest nodes per level")


BRANCH = 2  # children under each expanded node: the draft's choice and one alternative where it was unsure
FLAT_SLACK = 0.10  # a tree may verify as many nodes as cost at most this much more than the chain's γ + 1 tokens


def shape_for(gamma: int, budget: int, ends=(), stop: float = 0.0) -> TreeShape | None:
    """The tree a budget of nodes buys at depth γ, the main line always reaching γ: below 2γ nodes, a second child
    under the likeliest node of each of the first budget − γ levels (alternatives where they pay most, near the
    root); from 2γ, BRANCH children under the likeliest max(1, budget // (BRANCH·γ)) nodes of every level, filled
    level by level until the budget is spent. None when the budget is no more than a chain's γ nodes.

    >>> shape_for(4, 6)
    TreeShape(depth=4, branch=2, expand=1, budget=6, ends=(), wide=2, stop=0.0)
    >>> shape_for(4, 8).wide is None, shape_for(4, 4) is None
    (True, True)
    """
    if budget <= gamma:
        return None
    if budget < BRANCH * gamma:
        return TreeShape(depth=gamma, branch=BRANCH, expand=1, budget=budget, ends=tuple(ends), wide=budget - gamma,
                         stop=stop)
    return TreeShape(depth=gamma, branch=BRANCH, expand=max(1, budget // (BRANCH * gamma)), budget=budget,
                     ends=tuple(ends), stop=stop)


def measured_budget(gamma: int, verify_ms: list[float]) -> int:
    """The node budget this machine's verify costs afford: the most nodes n (up to BRANCH·γ·2) whose forward over
    n + 1 tokens costs at most FLAT_SLACK more than the chain's over γ + 1, read from verify_ms[k - 1] = v(k) in ms
    (calibration.calibrate). γ (a chain) when v(k) was not measured that far.

    >>> measured_budget(4, [10, 10, 10, 10, 10.5, 10.6, 10.8, 11.5, 14, 20])  # v(8) = 11.5 ≤ 1.1 × v(5)
    7
    """
    if len(verify_ms) < gamma + 1:
        return gamma
    limit = verify_ms[gamma] * (1 + FLAT_SLACK)
    affordable = [k - 1 for k in range(gamma + 1, min(len(verify_ms), 2 * BRANCH * gamma + 1) + 1) if verify_ms[k - 1] <= limit]
    return max(affordable, default=gamma)


RANK_PRIOR = (0.8, 0.3)  # sampled trees: the chance that the r-th child tried is accepted once those before it failed
MAX_NODES_PER_DEPTH = 4  # budgets up to this many nodes per level of depth
TREE_MARGIN = 0.03  # a tree must promise this much more than the chain per ms: less is within the costs' noise


@dataclass(frozen=True)
class TreeCosts:
    """What a round costs here, in ms: verify_ms[k - 1] = v(k), the target's forward over k tokens after a context
    (calibration.calibrate), and draft_ms[w - 1] = one draft forward over w frontier rows (w = 1: the draft step)."""

    verify_ms: list[float]
    draft_ms: list[float]

    def round_ms(self, nodes: int, levels: int, expand: int) -> float:
        """One round: `levels` draft forwards (the first over one row, the rest over `expand` rows), then v(nodes + 1)."""
        width = min(expand, len(self.draft_ms)) - 1
        draft = self.draft_ms[0] + (levels - 1) * self.draft_ms[width] if levels else 0.0
        verify = self.verify_ms[min(nodes, len(self.verify_ms) - 1)]
        return draft + verify


def chosen_probability(rank: int, accept: list[float]) -> float:
    """P(the rank-th child tried is the accepted one) = a_r · Π_{s<r} (1 − a_s); ranks past the vector use its last.

    >>> round(chosen_probability(2, [0.8, 0.5]), 3)
    0.1
    """
    rates = [accept[min(index, len(accept) - 1)] for index in range(rank)]
    product = rates[-1]
    for rate in rates[:-1]:
        product *= 1 - rate
    return product


def expected_path(shape: TreeShape, accept: list[float]) -> tuple[float, int, int]:
    """(expected accepted tokens, nodes, levels) of the tree grow() builds for `shape`, where the likeliest paths
    are expanded, with the draft's ranking taken to match the target's (the positional model's assumption)."""
    frontier, total, nodes, levels = [1.0], 0.0, 0, 0  # path probabilities of the nodes to expand next
    for _ in range(shape.depth):
        new = []
        for path in sorted(frontier, reverse=True)[: shape.expand if levels else 1]:
            for rank in range(1, shape.children(levels) + 1):
                if nodes >= shape.budget:
                    break
                probability = path * chosen_probability(rank, accept)
                new.append(probability)
                total, nodes = total + probability, nodes + 1
        levels += 1
        if nodes >= shape.budget or not new:
            break
        frontier = new
    return total, nodes, levels


def candidate_shapes(gamma: int, max_nodes: int) -> list[TreeShape]:
    """The trees γ deep that drafters/tree.shape_for builds for budgets γ + 1 .. MAX_NODES_PER_DEPTH·γ (and at most
    max_nodes, what v(k) was measured for), after the chain of γ (branch 1)."""
    chain = TreeShape(depth=gamma, branch=1, expand=1, budget=gamma)
    top = min(MAX_NODES_PER_DEPTH * gamma, max_nodes)
    return [chain, *(shape_for(gamma, budget) for budget in range(gamma + 1, top + 1))]


@dataclass(frozen=True)
class Choice:
    shape: TreeShape | None  # None: a chain pays best
    expected_tokens: float  # per round: expected path + 1
    round_ms: float
    chain_tokens: float  # the chain of γ's, for the comparison
    chain_ms: float

    @property
    def gain(self) -> float:
        """Expected tokens per ms of the choice over the chain's."""
        return (self.expected_tokens / self.round_ms) / (self.chain_tokens / self.chain_ms)


def best_shape(gamma: int, costs: TreeCosts, accept: list[float], ends=()) -> Choice:
    """The budget whose tree (shape_for) gives the most expected tokens per ms on these costs, set against the chain
    of γ; shape None when the chain is the best or the tree beats it by less than TREE_MARGIN (it does not pay)."""
    scored = []
    for shape in candidate_shapes(gamma, len(costs.verify_ms) - 1):
        path, nodes, levels = expected_path(shape, accept)
        milliseconds = costs.round_ms(nodes, levels, shape.expand)
        scored.append(((path + 1) / milliseconds, -shape.budget, shape, path + 1, milliseconds))
    chain = scored[0]
    _, _, shape, tokens, milliseconds = max(scored, key=lambda item: item[:2])
    if shape.branch == 1 or tokens / milliseconds < chain[0] * (1 + TREE_MARGIN):
        return Choice(None, chain[3], chain[4], chain[3], chain[4])
    return Choice(shape_for(gamma, shape.budget, ends), tokens, milliseconds, chain[3], chain[4])
