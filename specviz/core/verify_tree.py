"""The accept/reject step for a token tree, as one pure function over probabilities.

Recursive rejection sampling (SpecInfer, Miao et al. 2024; Jeon et al. 2024; Sequoia): the chain test of
verify.py, tried sibling after sibling. In the paper's symbols the target is p and the draft q; in code they are
`target_probs` and `draft_probs`. Node j has a token, a parent (-1 = the root, i.e. the last committed token;
always an earlier node), and the exact distribution q_j it was drawn from given its earlier siblings: q at the
parent for i.i.d. children, q with the earlier siblings zeroed and renormalised without replacement
(sampling.draw_siblings), one-hot on itself for greedy top-w children.

The walk: at a node with target distribution P, try its children in sibling order. Child c is accepted when
r_c < min(1, P(x_c) / q_c(x_c)); the walk moves to c, P := p after c's path. On rejection P := norm(max(0, P - q_c))
and the next sibling is tried. All children rejected: the correction is drawn from P. A node without children:
the bonus is drawn from p after it.

Why the output follows p exactly (induction on the siblings left, then on depth). Claim: from a sibling turn with
current P, the procedure emits its first token with law P, and after an accepted x continues as p does after x.
No sibling left: the token is drawn from P itself. Turn of sibling c, whatever the history that fixed q_c: x_c ~ q_c
is accepted with probability q_c(x) min(1, P(x)/q_c(x)) = min(P(x), q_c(x)); a rejection has probability
1 - Σ min(P, q_c) = Σ max(0, P - q_c), and by induction the later siblings then emit norm(max(0, P - q_c)),
whatever q they were drawn from (the history changes later siblings' q, never the target or the uniforms).
Total: min(P, q_c) + max(0, P - q_c) = P. After acceptance the same holds one level down, with p after x.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.core.acceptance import EXACT, AcceptanceRule
from specviz.core.sampling import compute_dtype, residual, sample_with_uniform
from specviz.core.verify import BONUS, CORRECTED, verify


@dataclass(frozen=True)
class TreeVerifyResult:
    path: list[int]  # accepted node indices, root to leaf (depth order)
    next_token: int  # the token that ends the round: a correction or a bonus
    next_kind: str  # CORRECTED (all children of the last node rejected) or BONUS (the last node has no children)
    accept_probs: list[float | None]  # per node: min(1, P(x)/q(x)) at its turn, P residual-updated; None: not tested
    tested: list[int]  # node indices in the order they were tested
    next_probs: torch.Tensor  # [V] the distribution the next token was drawn from


def tree_depths(parents) -> list[int]:
    """Depth of every node, 1 for a child of the root.

    >>> tree_depths([-1, -1, 0, 2])
    [1, 1, 2, 3]
    """
    depths: list[int] = []
    for parent in _checked_parents(parents):
        depths.append(1 if parent < 0 else depths[parent] + 1)
    return depths


def children_of(parents, node: int) -> list[int]:
    """The children of `node` (-1 = the root) in sibling order.

    >>> children_of([-1, -1, 0], -1), children_of([-1, -1, 0], 0)
    ([0, 1], [2])
    """
    return [index for index, parent in enumerate(_checked_parents(parents)) if parent == node]


def path_to(parents, node: int) -> list[int]:
    """The nodes from the root's child down to `node`, inclusive.

    >>> path_to([-1, -1, 0, 2], 3)
    [0, 2, 3]
    """
    parents = _checked_parents(parents)
    path = []
    while node >= 0:
        path.append(node)
        node = parents[node]
    return path[::-1]


def _checked_parents(parents) -> list[int]:
    parents = parents.tolist() if isinstance(parents, torch.Tensor) else [int(parent) for parent in parents]
    for index, parent in enumerate(parents):
        if not -1 <= parent < index:
            raise ValueError(f"parents[{index}] = {parent}: a parent must be -1 (the root) or an earlier node")
    return parents


def _check_shapes(draft_tokens, parents, draft_probs, target_probs, uniforms) -> None:
    count, vocab_size = draft_tokens.shape[0], target_probs.shape[-1]
    if (draft_tokens.dim() != 1 or len(parents) != count or draft_probs.shape != (count, vocab_size)
            or target_probs.shape != (count + 1, vocab_size) or uniforms.shape != (count,)):
        raise ValueError(
            f"shape mismatch: draft_tokens {tuple(draft_tokens.shape)}, parents of length {len(parents)}, "
            f"draft_probs {tuple(draft_probs.shape)}, target_probs {tuple(target_probs.shape)}, "
            f"uniforms {tuple(uniforms.shape)}; expected [n], n, [n, V], [n+1, V], [n]"
        )
    if count and bool(((draft_tokens < 0) | (draft_tokens >= vocab_size)).any()):  # -1 would index from the end
        raise ValueError(f"draft ids must be in [0, {vocab_size}), got {draft_tokens.tolist()}")


def verify_tree(
    draft_tokens: torch.Tensor,
    parents,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    uniforms: torch.Tensor,
    next_uniform: float | torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> TreeVerifyResult:
    """Walk the tree from the root, accepting one child per level, and draw the token that ends the round.

    Shapes: draft_tokens [n], parents n ints (list or tensor), draft_probs [n, V] (row j: the q node j was drawn
    from), target_probs [n+1, V] (row 0: p at the root, row j+1: p after node j's path), uniforms [n] (n may be 0).
    The next token is drawn by inverse CDF from `next_uniform` if given, else from `generator`. Only the rows of
    tested nodes are read: the work is O(tested · V), whatever n. Compared and subtracted in float32 at least.

    Example: root children 0 and 1, P = [.1, .4, .3, .2], q_0 = [.5, .3, .1, .1] with x_0 = 0, r_0 = .5:
    min(1, .1/.5) = .2, rejected; P := norm(max(0, P - q_0)) = [0, .25, .5, .25]. Node 1 was drawn without
    replacement, q_1 = [0, .6, .2, .2], x_1 = 1: min(1, .25/.6) = 5/12, accepted when r_1 < 5/12.
    """
    parents = _checked_parents(parents)
    _check_shapes(draft_tokens, parents, draft_probs, target_probs, uniforms)
    dtype = compute_dtype(draft_probs, target_probs)
    tokens, thresholds = draft_tokens.tolist(), uniforms.to(dtype).tolist()  # [n] ints, [n] r in the compute dtype
    children: list[list[int]] = [[] for _ in range(len(parents) + 1)]  # slot 0: the root, slot j+1: node j
    for index, parent in enumerate(parents):
        children[parent + 1].append(index)

    path: list[int] = []
    tested: list[int] = []
    accept_probs: list[float | None] = [None] * len(parents)
    node, current = -1, target_probs[0].to(dtype)  # current: P, the target's (residual-updated) distribution [V]
    next_kind = BONUS
    while children[node + 1]:
        for child in children[node + 1]:
            tested.append(child)
            token = tokens[child]
            # 1. Acceptance probability min(1, P(x_c) / q_c(x_c)), as verify() computes it.
            target_at, draft_at = current[token], draft_probs[child, token].to(dtype)
            accept_probs[child] = float(EXACT.at(target_at, draft_at))
            if thresholds[child] < accept_probs[child]:
                # 2. Accepted: move to the child; its children are tried against p after its path.
                path.append(child)
                node, current = child, target_probs[child + 1].to(dtype)
                break
            # 3. Rejected: the next sibling is tested against the residual norm(max(0, P - q_c)).
            current = residual(current, draft_probs[child])
        else:
            next_kind = CORRECTED  # 4a. Every child rejected: the correction comes from the last residual.
            break
    # 4b. Otherwise the walk stopped at a node without children: the bonus comes from p after its path (current).
    if next_uniform is None:
        next_uniform = torch.rand((), generator=generator, device=current.device)
    next_token = int(sample_with_uniform(current, next_uniform))
    return TreeVerifyResult(path, next_token, next_kind, accept_probs, tested, current)


def verify_draft(draft_tokens, parents, draft_probs, target_probs, uniforms, next_uniform=None,
                 rule: AcceptanceRule = EXACT) -> TreeVerifyResult:
    """The engine's step 3-4 for any draft: a chain (parents [-1, 0, 1, ..]) through verify.verify, the chain's own test
    (the losslessness lab's lenient rule included), any other tree through verify_tree; one result type."""
    if any(parent != index - 1 for index, parent in enumerate(parents)):
        if not rule.exact:
            raise ValueError(f"the {rule.name} rule applies to a chain of drafts; a token tree is verified exactly")
        return verify_tree(draft_tokens, parents, draft_probs, target_probs, uniforms, next_uniform)
    result = verify(draft_tokens, draft_probs, target_probs, uniforms, next_uniform, rule=rule)
    count, accepted = draft_tokens.shape[0], result.accepted_count
    tested = list(range(min(accepted + 1, count)))
    return TreeVerifyResult(list(range(accepted)), result.next_token, result.next_kind,
                            [result.accept_probs[node] if node <= accepted else None for node in range(count)],
                            tested, result.next_probs)
