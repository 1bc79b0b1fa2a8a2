"""Which token tree pays on this machine: Sequoia's hardware-aware choice, with the costs measured here and the
pair's acceptance by sibling rank counted on its earlier tree runs. The maths of what a shape buys is
core/tree_shape.py (best_shape); this module gathers its inputs: v(k) and the draft step from the pipeline's
calibration, the acceptance vector from recorded rounds.
"""

from __future__ import annotations

from specviz.core.tree_shape import TreeCosts, best_shape, measured_budget

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
    # round's draft where the draft is unsure, a depth the model cannot foresee: it would set a full γ-deep chain
    # against γ-deep trees and choose the chain where the flat-v(k) budget's trees pay (docs/trees.md). With a
    # stop, the flat-v(k) rule decides.
    if not remembered or len(verify_ms) <= gamma or not step or config.draft_confidence > 0:
        return measured_budget(gamma, verify_ms)
    # One draft forward over a few frontier rows is taken to cost one row's (memory-bound on a CPU); see docs.
    choice = best_shape(gamma, TreeCosts(list(verify_ms), [step] * 4), remembered)
    return choice.shape.budget if choice.shape is not None else gamma
