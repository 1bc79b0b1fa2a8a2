"""Trace -> the numbers of token-tree rounds: nodes drafted per round, acceptance by depth and by sibling
rank, and α over the depth levels tested. Each number is defined once, in metrics.DEFINITIONS.

A round's walk (tree_verify.py) starts at the committed text. At each depth it tests the children of the node it
accepted last, one sibling after another, until one is accepted (the walk goes a level deeper) or all are rejected
(a correction ends the round); an accepted node without children ends it with a bonus. Round.tokens lists those
tests in that order. A chain is the tree with one child per node, and then every number here equals its chain
counterpart: acceptance by depth is α at position i, the tree α is α, and the first sibling's acceptance is α.

Worked example, one round of 5 nodes, parents [-1, -1, 0, 0, 2] (nodes 0, 1 at depth 1; 2, 3 under node 0):
the walk accepts node 0 (1st sibling, depth 1), rejects node 2 (1st sibling, depth 2), accepts node 3 (2nd sibling,
depth 2), which has no child: bonus. 5 nodes drafted, path 2, levels tested 2 (α = 2/2), by depth [1/1, 1/1],
by sibling rank [1/2, 1/1].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from specviz.decoding.tree_budget import rank_counts
from specviz.trace import ACCEPTED, REJECTED, Round, Trace


@dataclass
class TreeMetrics:
    """A run's token-tree numbers; each is defined in metrics.DEFINITIONS under the key named in its comment."""

    rounds: int
    drafted_nodes: int  # Σ Round.drafted: every node of every tree (vLLM's num_draft_tokens)
    draft_nodes_per_round: float  # "draft_nodes_per_round": drafted nodes / rounds
    draft_levels: int  # Σ each round's tree depth: one batched draft forward per level
    accepted_tokens: int  # Σ accepted path lengths (Round.accepted)
    accepted_path_per_round: float  # accepted_tokens / rounds
    levels_tested: int  # Σ over rounds of the depths at which the walk tested at least one node
    alpha: float  # "alpha_tree": accepted_tokens / levels_tested
    sibling_tests: int  # acceptance tests that ran: every sibling tried counts
    tested_per_depth: list[int]  # rounds whose walk tested a node at depth d = 1, 2, ..
    accepted_per_depth: list[int]  # rounds that accepted a node at depth d
    acceptance_by_depth: list[float | None]  # "acceptance_by_depth" (None where no round tested depth d)
    tests_per_rank: list[int]  # tests of an r-th sibling, r = 1, 2, ..
    accepted_per_rank: list[int]
    acceptance_by_sibling_rank: list[float | None]  # "acceptance_by_sibling_rank"
    is_tree: bool  # some round drafted a node with a sibling (else every round was a chain)

    def to_dict(self) -> dict:
        return asdict(self)


def node_depths(round_: Round) -> list[int]:
    """The depth of each drafted node (1 for a child of the committed text); a round recorded without parents (a
    hand-built chain) is read as the chain [1, 2, .., drafted].

    >>> node_depths(Round(0, 5, 2, [], 0.0, 0.0, 0, draft_parents=[-1, -1, 0, 0, 2]))
    [1, 1, 2, 2, 3]
    """
    if len(round_.draft_parents) != round_.drafted:
        return list(range(1, round_.drafted + 1))
    depths: list[int] = []
    for parent in round_.draft_parents:  # a parent always comes before its children
        depths.append(1 if parent < 0 else depths[parent] + 1)
    return depths


def round_depth(round_: Round) -> int:
    """The levels a round drafted: its deepest node's depth (a chain's draft length; 0 for a plain step)."""
    return max(node_depths(round_), default=0)


def depth_counts(rounds: list[Round], levels: int = 0) -> tuple[list[int], list[int]]:
    """(rounds that tested a node at depth d, rounds that accepted one there) for d = 1..max(levels, deepest test).
    A depth counts once per round however many siblings were tried there; in a chain that is one test per depth."""
    tested: list[int] = [0] * levels
    accepted: list[int] = [0] * levels
    for round_ in rounds:
        depths: dict[int, bool] = {}  # depth tested -> whether a node there was accepted
        for token in round_.tokens:
            if token.kind in (ACCEPTED, REJECTED):
                depths[token.position] = depths.get(token.position, False) or token.kind == ACCEPTED
        for depth, was_accepted in depths.items():
            if depth > len(tested):
                tested += [0] * (depth - len(tested))
                accepted += [0] * (depth - len(accepted))
            tested[depth - 1] += 1
            accepted[depth - 1] += was_accepted
    return tested, accepted


def is_tree_run(trace: Trace) -> bool:
    """Whether some round of the run drafted a tree (a node with a sibling), not only chains."""
    return any(round_.is_tree for round_ in trace.rounds)


def node_budget(trace: Trace) -> int | None:
    """The node budget a tree run drafted with: DecodeConfig.tree_budget, which the engine records as it chose it
    (engine.resolved_config fills a budget of 0). None for a run that drafted no tree (or did not record it)."""
    if not trace.config.get("tree") or not is_tree_run(trace):
        return None
    return int(trace.config.get("tree_budget") or 0) or None


def why_no_tree(trace: Trace) -> str:
    """Why a run that asked for a tree (DecodeConfig.tree) drew only chains: its budget (0 takes what this machine's
    measured v(k) affords) bought no more than γ nodes, or no round's draft gave a node a sibling."""
    budget, gamma = int(trace.config.get("tree_budget") or 0), int(trace.config["gamma"])
    if budget and budget <= gamma:
        return (f"none drawn: a budget of {budget} nodes buys no more than the chain of γ = {gamma}, so every round "
                f"drafted a chain (a tree budget of 0 takes what this machine's measured verify cost affords; above γ, "
                f"a tree)")
    return "none drawn: no round's draft gave a node a sibling, so every round drafted a chain"


def _ratios(numerators: list[int], denominators: list[int]) -> list[float | None]:
    return [n / d if d else None for n, d in zip(numerators, denominators)]


def summarize_tree(trace: Trace) -> TreeMetrics:
    """The run's tree numbers (a chain run gets its chain values: see the module docstring)."""
    rounds = trace.rounds
    count = max(len(rounds), 1)
    tested_depth, accepted_depth = depth_counts(rounds, int(trace.config.get("gamma", 0)))
    tests_rank, accepted_rank = rank_counts(rounds)
    drafted = sum(round_.drafted for round_ in rounds)
    accepted = sum(accepted_depth)  # = Σ Round.accepted: the path accepts one node per level it passes
    levels = sum(tested_depth)
    return TreeMetrics(
        rounds=len(rounds),
        drafted_nodes=drafted,
        draft_nodes_per_round=drafted / count,
        draft_levels=sum(round_depth(round_) for round_ in rounds),
        accepted_tokens=accepted,
        accepted_path_per_round=accepted / count,
        levels_tested=levels,
        alpha=accepted / levels if levels else 0.0,
        sibling_tests=sum(tests_rank),
        tested_per_depth=tested_depth,
        accepted_per_depth=accepted_depth,
        acceptance_by_depth=_ratios(accepted_depth, tested_depth),
        tests_per_rank=tests_rank,
        accepted_per_rank=accepted_rank,
        acceptance_by_sibling_rank=_ratios(accepted_rank, tests_rank),
        is_tree=is_tree_run(trace),
    )
