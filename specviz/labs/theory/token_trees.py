"""The Theory tab's token-tree section: what a tree of a given node budget buys per round and per unit of time,
under Sequoia's positional model (tree_budget.expected_path), set against the chain's E(α, γ). Numbers and figures.

Symbols: γ the depth (a chain's drafted tokens), a_1 the acceptance of the first child tried under a node (α's role),
a_2 that of a later sibling once the earlier ones were rejected, n the nodes drafted, c one draft forward over one
target forward, v(k) a target forward over k tokens over one. A round of a tree with n nodes over L levels costs
L·c + v(n + 1) target forwards (tree_budget.TreeCosts: one draft forward per level, as wide as the frontier, taken to
cost one row's, as choose_budget takes it); a chain's is γc + v(γ + 1). Expected tokens per round are the expected
accepted path plus the correction or bonus, so the chain's is Σ_{i=0..γ} a_1^i = (1 − a_1^(γ+1))/(1 − a_1) = E.

>>> round(tokens_per_round(4, 4, [0.8, 0.5])[0], 4)  # the chain of 4: E(0.8, 4)
3.3616
>>> round(tokens_per_round(4, 8, [0.8, 0.5])[0], 4)  # 1 + (.8 + .2·.5)(1 + .8 + .8² + .8³): two under each
3.6568
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import plotly.graph_objects as go

from specviz.core.theory import verify_cost_at
from specviz.core.tree_shape import MAX_NODES_PER_DEPTH, TREE_MARGIN, TreeCosts, best_shape, candidate_shapes, expected_path
from specviz.views.figures import BLUE, GREEN, GREY, INK, LAYOUT, ORANGE, base_figure

VerifyCost = Callable[[int], float] | Mapping[int, float]

EXPLANATION = f"""### Token trees: more than one guess per position

A chain bets each position on one drafted token, and the first rejection ends the round. A **tree** spends extra
verification slots on alternatives: under a node where the draft was unsure it drafts a second child, so that when
the first is rejected a sibling can still be accepted and the path goes on. The target scores every node in one
forward, each node attending only to its ancestors (tree attention; SpecInfer, Miao et al. 2024), and **EAGLE-2**
(Li et al. 2024) grows the tree where it pays: it expands the nodes whose path is likeliest under the draft.

**Expected tokens (Sequoia, Chen et al. 2024).** Sequoia's positional model says the r-th child tried under a node
is accepted with probability a_r once the earlier ones were rejected, so child r is the accepted one with
probability a_r · Π_(s < r) (1 − a_s), and a node is on the accepted path with the product of those along its path.
The expected accepted path is the sum of that over the nodes; a round yields it plus one (the correction or bonus).
A chain is the tree with one child per node: Σ_(i=0..γ) a_1^i = (1 − a_1^(γ+1))/(1 − a_1) = E, so a_1 plays α's
part. The trees drawn below are the ones specviz drafts (`shape_for`): the main line always reaches depth γ; a
budget a little over γ adds a second child under the likeliest node of each of the first levels (the alternatives
pay most near the root, where every later token depends on them), and from 2γ nodes each level gets two children
under its likeliest node(s), filled level by level until the budget is spent. The plots run from the chain's γ nodes
to the 4γ that `best_shape` considers.

**The exact rule: recursive rejection sampling** (SpecInfer; Jeon et al. 2024). At a node whose target
distribution is P, try the children in turn. A child x drawn from q is accepted with probability min(1, P(x)/q(x)),
and the walk moves down to it. If it is rejected, P becomes norm(max(0, P − q)) and the next sibling is tested
against that residual; when the siblings were drawn without replacement, the next one's q is the draft's with the
rejected siblings removed and renormalised, which is exactly the distribution it was drawn from. If every child is
rejected the correction is drawn from the last residual; past an accepted leaf comes a bonus token from the target.
A turn accepts x with probability min(P(x), q(x)) and hands max(0, P − q) on to the turns after it, and
min(P, q) + max(0, P − q) = P: the text follows the target exactly, however wide the tree.

**Why top-k children checked with the chain rule are not exact.** The chain's test min(1, p/q) is right only for a
token *drawn* from q. Take the draft's top-k tokens instead and test each with min(1, p/q) as if it had been drawn,
and the probabilities no longer add up: with p = q = (0.5, 0.3, 0.2), the top child is the first token every round
and min(1, 0.5/0.5) = 1 accepts it every round, so the text gives the first token with probability 1, not 0.5
(specviz's own tests use this as the negative control). A chosen child is exact when its q is one-hot on itself
(accepted with probability P(x), leaving P without x): that is how specviz checks greedy top-k children.

**Hardware-aware budgets (Sequoia).** On a GPU a target forward over k tokens costs about one forward over a single
token while it stays memory-bound: the flat part of v(k) is verification the hardware does for free, and a tree can
fill it with siblings. Past it, every node costs time. Sequoia chooses the tree size (and, by dynamic programming,
its shape) that gives the most expected tokens per second on the hardware. specviz's `best_shape` does the same
over `shape_for`'s trees and keeps the chain unless a tree wins by at least {TREE_MARGIN:.0%}; a run whose tree
budget is 0 uses it with this machine's measured v(k) and draft step once an earlier tree run of the pair has
measured a_r (before that, it takes the most nodes within v(k)'s flat part). Here it runs on the v(k) and c you
choose. A round of a tree with n nodes over L levels costs L·c + v(n + 1) target forwards (one draft forward per
level, taken to cost one row's however wide); a chain's costs γc + v(γ + 1)."""


def flat_then_linear(k0: int, slope: float) -> Callable[[int], float]:
    """v(k) = 1 up to k0 tokens (the forward is memory-bound: more tokens ride on the same weight reads), then
    1 + slope·(k − k0). flat_then_linear(8, 0.1)(12) = 1.4."""
    return lambda k: 1.0 if k <= k0 else 1.0 + slope * (k - k0)


def largest_budget(gamma: int) -> int:
    """The most nodes best_shape considers at depth γ: MAX_NODES_PER_DEPTH per level."""
    return MAX_NODES_PER_DEPTH * gamma


def shape_at(gamma: int, budget: int):
    """The TreeShape that drafters/tree.shape_for builds for a budget of nodes at depth γ (as tree_budget's
    candidate_shapes lists them); the chain of γ for a budget ≤ γ, the largest tree for one past largest_budget."""
    shapes = candidate_shapes(gamma, largest_budget(gamma))  # budgets γ (the chain), γ + 1, .., MAX_NODES_PER_DEPTH·γ
    return shapes[min(max(budget - gamma, 0), len(shapes) - 1)]


def tokens_per_round(gamma: int, budget: int, accept: list[float]) -> tuple:
    """(expected tokens per round = expected accepted path + 1, nodes drafted, levels, the shape) for the tree
    shape_at builds; accept = [a_1, a_2, ..] by sibling rank (ranks past the list use its last)."""
    shape = shape_at(gamma, budget)
    path, nodes, levels = expected_path(shape, accept)
    return path + 1.0, nodes, levels, shape


def tree_costs(verify_cost: VerifyCost, c: float, max_nodes: int) -> TreeCosts:
    """The costs in target forwards, as tree_budget prices a round: v(k) for k = 1..max_nodes + 1, and c for a draft
    forward over any of the frontier's rows (one forward per level reads them all at once)."""
    return TreeCosts([verify_cost_at(verify_cost, k) for k in range(1, max_nodes + 2)], [c] * MAX_NODES_PER_DEPTH)


@dataclass(frozen=True)
class BudgetRow:
    budget: int
    tokens: float  # expected tokens per round
    nodes: int  # nodes the tree really drafts (shape_for may leave a budget partly unspent)
    levels: int  # draft forwards
    expand: int
    cost: float  # the round in target forwards: levels·c + v(nodes + 1)

    @property
    def rate(self) -> float:
        """Expected tokens per target forward's time: the speedup over plain decoding (one token per v(1) = 1)."""
        return self.tokens / self.cost


@dataclass(frozen=True)
class TreeView:
    rows: list[BudgetRow]  # one per budget γ .. the largest shown; the first is the chain of γ
    chosen: BudgetRow  # the budget asked for
    chain: BudgetRow  # the chain of γ: tokens E(a_1, γ), cost γc + v(γ + 1)
    best_budget: int  # what tree_budget.best_shape picks on these costs; γ when the chain pays best
    gain: float  # the best's tokens per unit time over the chain's


def tree_view(gamma: int, a_first: float, a_later: float, budget: int, verify_cost: VerifyCost, c: float) -> TreeView:
    """Every budget from γ to largest_budget(γ) priced on v(k) and c, the one asked for (held within that range), and
    best_shape's pick (it searches the same budgets and keeps the chain unless a tree wins by tree_budget.TREE_MARGIN)."""
    top = largest_budget(gamma)
    accept = [a_first, a_later]
    costs = tree_costs(verify_cost, c, top)
    rows = []
    for size, shape in enumerate(candidate_shapes(gamma, top), start=gamma):  # the chain, then budgets γ + 1 ..
        path, nodes, levels = expected_path(shape, accept)
        rows.append(BudgetRow(size, path + 1.0, nodes, levels, shape.expand, costs.round_ms(nodes, levels, shape.expand)))
    choice = best_shape(gamma, costs, accept)
    best_budget = choice.shape.budget if choice.shape is not None else gamma
    return TreeView(rows, rows[min(max(budget, gamma), top) - gamma], rows[0], best_budget, choice.gain)


LEGEND_BELOW = dict(orientation="h", yanchor="top", y=-0.3, x=0)  # above, its entries would run into the title


def tokens_figure(view: TreeView) -> go.Figure:
    """Expected tokens per round against the node budget: the tree's, the chain's E as a level, the budget asked for."""
    figure = base_figure()
    budgets = [row.budget for row in view.rows]
    figure.add_scatter(x=budgets, y=[row.tokens for row in view.rows], mode="lines+markers", name="tree (shape_for)",
                       line=dict(color=GREEN, shape="hv"), marker=dict(size=5),
                       customdata=[[row.nodes, row.levels, row.expand] for row in view.rows],
                       hovertemplate="budget %{x} → %{customdata[0]} nodes, %{customdata[1]} levels, "
                                     "%{customdata[2]} expanded per level<br>E[tokens per round] = %{y:.3f}<extra></extra>")
    _add_chain(figure, budgets, view.chain.tokens, f"chain: E = {view.chain.tokens:.3f}")
    _mark_budget(figure, view.chosen, view.chosen.tokens)
    _layout(figure, "What-if: tokens per round by budget", dict(title="E[tokens per round]",
                                                                             rangemode="tozero"))
    return figure


def rate_figure(view: TreeView, verify_cost: VerifyCost, cost_label: str) -> go.Figure:
    """Expected tokens per unit time (target forwards) against the budget, the chain's as a level, best_shape's pick
    starred, and v(n + 1) on a second axis: its flat part is verification the hardware does for free."""
    figure = base_figure()
    budgets = [row.budget for row in view.rows]
    figure.add_scatter(x=budgets, y=[verify_cost_at(verify_cost, size + 1) for size in budgets], mode="lines",
                       name="v(n + 1), right axis", yaxis="y2", line=dict(color=GREY, dash="dot"),
                       hovertemplate="v(%{x} + 1) = %{y:.3f}<extra></extra>")
    figure.add_scatter(x=budgets, y=[row.rate for row in view.rows], mode="lines+markers", name="tree",
                       line=dict(color=GREEN), marker=dict(size=5),
                       customdata=[[row.tokens, row.cost] for row in view.rows],
                       hovertemplate="budget %{x}: %{customdata[0]:.3f} tokens / %{customdata[1]:.3f} forwards"
                                     "<br>= %{y:.3f}× plain decoding<extra></extra>")
    _add_chain(figure, budgets, view.chain.rate, f"chain: {view.chain.rate:.3f}×")
    best = view.rows[view.best_budget - view.rows[0].budget]
    label = "best_shape: the chain" if best.budget == view.chain.budget else f"best_shape n = {best.budget}"
    figure.add_scatter(x=[best.budget], y=[best.rate], mode="markers", name=f"{label}: {best.rate:.3f}×",
                       marker=dict(symbol="star", size=16, color=ORANGE, line=dict(color=INK, width=1)),
                       hovertemplate=f"{label}<br>%{{y:.3f}}× plain decoding<extra></extra>")
    _mark_budget(figure, view.chosen, view.chosen.rate)
    _layout(figure, f"What-if: tokens per unit time (× plain)<br><sup>v(k) {cost_label}</sup>",
            dict(title="speedup ×"),
            yaxis2=dict(title="v(n + 1)", overlaying="y", side="right", rangemode="tozero", showgrid=False))
    return figure


def _add_chain(figure: go.Figure, budgets: list[int], value: float, name: str) -> None:
    """The chain of γ's value as a dashed level across the budgets (a trace, so the legend names it)."""
    figure.add_scatter(x=[budgets[0], budgets[-1]], y=[value, value], mode="lines", name=name,
                       line=dict(color=BLUE, dash="dash"), hovertemplate=f"{name}<extra></extra>")


def _mark_budget(figure: go.Figure, row: BudgetRow, value: float) -> None:
    """The budget asked for, as a dot on the curve and a dotted vertical line."""
    figure.add_vline(x=row.budget, line_color=GREY, line_dash="dot")
    figure.add_scatter(x=[row.budget], y=[value], mode="markers", name=f"your n = {row.budget}",
                       marker=dict(size=11, color=BLUE, line=dict(color=INK, width=1)),
                       hovertemplate=f"your budget n = {row.budget}: %{{y:.3f}}<extra></extra>")


def _layout(figure: go.Figure, title: str, yaxis: dict, **more) -> None:
    right = 60 if "yaxis2" in more else 0  # room for the right axis's title
    figure.update_layout(**{**LAYOUT, "legend": LEGEND_BELOW, "height": 420,
                            "margin": {**LAYOUT["margin"], "b": 130, "r": LAYOUT["margin"]["r"] + right}},
                         title=title, xaxis=dict(title="node budget n"), yaxis=yaxis, **more)
