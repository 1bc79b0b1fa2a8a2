"""Which token tree pays on this machine: Sequoia's hardware-aware choice, with the costs measured here.

A round's time is the drafting (one draft forward per level, over the `expand` frontier rows at once) plus one
target forward over the pending token and every node, v(n + 1). What a tree buys is its expected accepted path.
Under Sequoia's positional model a node's children are tried in order and the r-th is accepted with probability
a_r once the ones before it were rejected (acceptance by sibling rank, measured on the run), so child r is the
accepted one with probability a_r · Π_{s<r} (1 − a_s), and the expected path length is the sum, over nodes, of the
product of those along the node's path (Sequoia's f(T)). A chain of γ is the tree of branch 1: Σ_{i≤γ} a_1^i.

The budget that maximises (expected path + 1) ÷ round time wins, its tree built as drafters/tree.shape_for builds
one; a chain when no tree beats it.
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.drafters.tree import TreeShape, measured_budget, shape_for

MAX_NODES_PER_DEPTH = 4  # budgets up to this many nodes per level of depth
TREE_MARGIN = 0.03  # a tree must promise this much more than the chain per ms: less is within the costs' noise


@dataclass(frozen=True)
class TreeCosts:
    """What a round costs here, in ms: verify_ms[k - 1] = v(k), the target's forward over k tokens after a context
    (pipeline.calibrate), and draft_ms[w - 1] = one draft forward over w frontier rows (w = 1: the draft step)."""

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


MIN_TREE_ROUNDS = 4  # a run whose acceptance by sibling rank choose_budget may use: engine.warm_up's have fewer


def rank_counts(rounds) -> tuple[list[int], list[int]]:
    """(tests of an r-th sibling, of which accepted) for r = 1, 2, ..: Sequoia's acceptance vector, counted. A tested
    node's rank is r when it was the r-th child tried under its parent in its round; siblings share their parent and
    their depth, and keying on both keeps a chain recorded without parents at rank 1."""
    tests: list[int] = []
    accepted: list[int] = []
    for round_ in rounds:
        tried: dict[tuple[int, int], int] = {}
        for token in round_.tokens:
            if token.kind not in ("accepted", "rejected"):
                continue
            key = (token.position, token.parent)
            rank = tried[key] = tried.get(key, 0) + 1
            if rank > len(tests):
                tests.append(0)
                accepted.append(0)
            tests[rank - 1] += 1
            accepted[rank - 1] += token.kind == "accepted"
    return tests, accepted


def sibling_acceptance(trace) -> list[float]:
    """Acceptance by sibling rank: a_r = accepted r-th siblings ÷ tested r-th siblings, for every rank tested."""
    tests, accepted = rank_counts(trace.rounds)
    return [hit / tried for hit, tried in zip(accepted, tests)]


def _acceptance_key(pipeline, config: dict):
    """Per pair, device and sampling settings: a second sibling's acceptance at T = 0 (the draft's runner-up is the
    target's argmax) says nothing of it at T = 1."""
    sampling = tuple(config.get(name) for name in ("temperature", "top_k", "top_p"))
    return ("tree-acceptance", pipeline.target.name, pipeline.drafter.name, str(pipeline.device), sampling)


def remember_acceptance(pipeline, trace) -> None:
    """Keep this run's acceptance by sibling rank for the pair's next tree run (choose_budget); per process."""
    rates = sibling_acceptance(trace)
    if sum(round_.is_tree for round_ in trace.rounds) >= MIN_TREE_ROUNDS and rates:  # not a warm-up's few rounds
        pipeline.cache.get(_acceptance_key(pipeline, trace.config), dict)["by_rank"] = rates


def choose_budget(pipeline, config) -> int:
    """The node budget for a run whose config (DecodeConfig) left it at 0: with the pair's acceptance by sibling rank
    from an earlier tree run at the same sampling settings and no draft stop, the best_shape on this machine's v(k)
    (pipeline.target_forward_ms) and draft step; otherwise the most nodes whose verify costs at most FLAT_SLACK
    more than a chain's (drafters/tree.measured_budget). A chain's γ when v(k) was not measured far enough to tell."""
    verify_ms, step, gamma = pipeline.target_forward_ms, pipeline.draft_step_ms, config.gamma
    remembered = pipeline.cache.get(_acceptance_key(pipeline, config.to_dict()), dict).get("by_rank")
    # best_shape's model drafts every level to depth γ. A draft stop (DecodeConfig.draft_confidence) ends each
    # round's draft where the draft is unsure, a depth the model cannot foresee: it then set a full γ-deep chain
    # against γ-deep trees and chose the chain, while the flat-v(k) budget's trees gained 6-26% tokens/s on the
    # Qwen pair's first three benchmark prompts (docs/results.md). With a stop, the flat-v(k) rule decides.
    if not remembered or len(verify_ms) <= gamma or not step or config.draft_confidence > 0:
        return measured_budget(gamma, verify_ms)
    # One draft forward over a few frontier rows is taken to cost one row's (memory-bound on a CPU); see docs.
    choice = best_shape(gamma, TreeCosts(list(verify_ms), [step] * 4), remembered)
    return choice.shape.budget if choice.shape is not None else gamma
