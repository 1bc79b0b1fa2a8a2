"""A token-tree round -> its layout in the rows (pure data; render.py draws it).

One column per depth of the walk: on top the token that stands there (the accepted node, or at the last depth the
round's correction or bonus), and hanging under it the other children of the same parent, in sibling order: those
tried before it and rejected, then those never tried (the walk took an earlier sibling). The walk never enters a
rejected or untried sibling, so every drafted node under one is untested; each branch counts them.

Example: parents [-1, -1, 0, 0, 2, 2]; tested 0 (accepted), 2 (accepted), 4 (rejected), 5 (accepted); a bonus.
    depth 1: node 0    under it: node 1 (never tried, 0 below it)
    depth 2: node 2    under it: node 3 (never tried)
    depth 3: node 5    under it: node 4 (rejected, sibling 1 of 2)
    depth 4: the bonus (node 5 is a leaf)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specviz.trace import ACCEPTED, Round, Token


@dataclass(frozen=True)
class Turn:
    """A token's turn among its siblings: it was sibling `sibling` of `siblings` at `depth` (counting from 1).
    A correction comes after all of them (sibling = siblings + 1); a bonus follows a leaf (siblings = 0)."""

    sibling: int
    siblings: int
    depth: int


@dataclass
class Branch:
    node: int  # index into Round.draft_token_ids
    text: str
    token: Token | None  # its test (kind rejected); None: never tried
    turn: Turn
    hidden: list[int] = field(default_factory=list)  # drafted nodes below it, never tested (index order)


@dataclass
class Column:
    token: Token | None  # accepted node, correction or bonus; None only if the round ended without one
    turn: Turn
    branches: list[Branch]


def children(parents: list[int], node: int) -> list[int]:
    """The children of node (-1: the committed text) in sibling order. children([-1, -1, 0], -1) -> [0, 1]."""
    return [index for index, parent in enumerate(parents) if parent == node]


def descendants(parents: list[int], node: int) -> list[int]:
    """Every node below node, in index order. descendants([-1, -1, 0, 2, 1], 0) -> [2, 3]."""
    below: set[int] = {node}
    for index, parent in enumerate(parents):  # a parent always comes before its children
        if parent in below:
            below.add(index)
    return sorted(below - {node})


def tree_columns(round_: Round) -> list[Column]:
    """The columns of a tree round, root's children first (see the module docstring)."""
    parents = round_.draft_parents
    tested = {token.node: token for token in round_.tokens if token.node is not None}
    path = [token.node for token in round_.tokens if token.kind == ACCEPTED]
    ends = [token for token in round_.tokens if token.node is None]  # the correction or bonus
    columns = []
    for depth, parent in enumerate([-1, *path], start=1):
        siblings = children(parents, parent)
        chosen = path[depth - 1] if depth <= len(path) else None
        token = tested[chosen] if chosen is not None else (ends[0] if ends else None)
        if token is None and not siblings:
            break
        sibling = siblings.index(chosen) + 1 if chosen is not None else len(siblings) + 1
        branches = [Branch(node, round_.draft_texts[node], tested.get(node), Turn(place, len(siblings), depth),
                           descendants(parents, node))
                    for place, node in enumerate(siblings, start=1) if node != chosen]
        columns.append(Column(token, Turn(sibling, len(siblings), depth), branches))
    return columns


def turn_lines(token: Token, turn: Turn) -> tuple[str, str]:
    """(head, turn) lines of a tree token's tooltip: what it is and where its test stood among its siblings."""
    depth = turn.depth
    if token.node is None and turn.siblings == 0:
        return f"bonus token from p at depth {depth}", "the accepted path ends at a leaf: nothing left to test"
    if token.node is None:
        return (f"correction from norm(max(0, P − q)) at depth {depth}",
                f"after all {turn.siblings} siblings at depth {depth} were rejected; P is the target after the "
                "residual of each, q the last one's")
    kind = "accepted draft" if token.kind == ACCEPTED else "rejected draft"
    target = ("P is the target p (no sibling before it)" if turn.sibling == 1
              else "P is the target after the residual of the siblings before it")
    return (f"{kind} at depth {depth} (node {token.node})",
            f"its turn: sibling {turn.sibling} of {turn.siblings} at depth {depth}; {target}")


def untested_tooltip(branch: Branch, column: Column) -> str:
    """Why a sibling was never tried: the walk accepted an earlier one (or stopped)."""
    turn = branch.turn
    taken = (f"sibling {column.turn.sibling} was accepted first" if column.token is not None
             and column.token.node is not None else "the walk stopped before it")
    return (f"drafted at depth {turn.depth} (node {branch.node}), never tested\n"
            f"sibling {turn.sibling} of {turn.siblings}: {taken}")


def hidden_tooltip(branch: Branch, texts: list[str]) -> str:
    """The drafted nodes under a branch, which the walk never reached."""
    shown = ", ".join(repr(texts[node]) for node in branch.hidden[:12])
    more = f", … {len(branch.hidden) - 12} more" if len(branch.hidden) > 12 else ""
    return (f"{len(branch.hidden)} drafted node{'s' if len(branch.hidden) != 1 else ''} below this one, never "
            f"tested (the walk never enters a sibling it did not accept): {shown}{more}")
