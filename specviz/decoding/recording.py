"""A verified round -> plain Round / Token records: top-k lists, token texts and the probabilities the views
plot. This runs outside the engine's timed sections; nothing here changes what a round decides."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.core.verify import VerifyResult
from specviz.core.verify_tree import TreeVerifyResult, tree_depths
from specviz.drafters.base import Draft
from specviz.trace import ACCEPTED, BONUS, CORRECTED, REJECTED, Round, Token, TopToken

TOP_N = 10  # entries of p and q kept per position, enough to draw the p-vs-q bars


class TokenTexts:
    """Memoized single-token decoding: the same ids recur in every round's top-10 lists."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.cache: dict[int, str] = {}

    def __call__(self, token_id: int) -> str:
        text = self.cache.get(token_id)
        if text is None:
            text = self.cache[token_id] = self.tokenizer.decode([token_id])
        return text

    def top(self, probs: torch.Tensor) -> list[list[TopToken]]:
        """Top-N of each row of probs [n, V] with prob > 0, in one topk call."""
        if probs.shape[0] == 0:
            return []
        values, indices = probs.topk(min(TOP_N, probs.shape[-1]), dim=-1)
        return [
            [TopToken(i, self(i), round(v, 6)) for v, i in zip(row_values, row_ids) if v > 0]
            for row_values, row_ids in zip(values.tolist(), indices.tolist())
        ]


@dataclass
class RoundOutcome:
    """One round as the engine decided it: what record_round turns into a Round."""

    asked: int  # tokens the γ policy asked the drafter for
    draft: Draft | None  # the drafter's proposal (its forwards, shared mass and own texts); None: nothing was asked
    drafted_ids: list[int]  # [k] the drafted tokens verified, after trimming at EOS and by the policy
    parents: list[int]  # k: each node's parent (-1: the committed text); a chain is [-1, 0, 1, ..]
    draft_probs: torch.Tensor  # [k, V] q of each node
    target_probs: torch.Tensor  # [k+1, V] p at the root (row 0) and after each node (row j+1)
    uniforms: torch.Tensor  # [k] r of each node
    next_uniform: float  # the uniform the correction or bonus was drawn with
    result: TreeVerifyResult  # the accepted path, the tested nodes and the next token
    emitted: list[int]  # the tokens committed: the accepted path, then the correction or bonus unless EOS ended it
    untempered: tuple | None = None  # greedy runs: (target logits [k+1, V], the draft's logits [1, V] per node)


def record_round(index: int, outcome: RoundOutcome, clock, texts: TokenTexts) -> Round:
    """The whole Round of one verified round: its tokens (record_tokens) and the clock's timings of it."""
    draft = outcome.draft
    round_ = record_tokens(index, outcome.drafted_ids, outcome.draft_probs, outcome.target_probs, outcome.uniforms,
                           outcome.result, texts, with_next=len(outcome.emitted) > len(outcome.result.path),
                           untempered=outcome.untempered, parents=outcome.parents)
    round_.draft_ms, round_.verify_ms = clock.draft_ms(), clock.verify_ms()
    round_.draft_forwards = draft.forwards if draft else 0
    round_.next_uniform, round_.asked = outcome.next_uniform, outcome.asked
    round_.shared_mass = list(draft.shared_mass) if draft is not None and draft.shared_mass else []
    round_.draft_own_texts = list(draft.own_texts) if draft is not None and draft.own_texts else []
    round_.draft_forward_ms, round_.verify_forward_ms = clock.draft_forward_ms(), clock.verify_forward_ms()
    return round_


def record_tokens(index, drafted_ids, draft_probs, target_probs, uniforms, result, texts, with_next,
                  untempered=None, parents=None) -> Round:
    """Turn one verify step into plain data: every tested draft in the order tested, then the correction or bonus.

    drafted_ids [n] with parents (their tree; None: a chain), draft_probs [n, V], target_probs [n+1, V] (row 0 after
    the committed text, row j+1 after node j), uniforms [n]; `result` is verify's VerifyResult for a chain or
    tree_verify's TreeVerifyResult. `untempered`, for a greedy run: (target logits [n+1, V], the draft's list of
    logits [1, V] per node, or None), whose softmaxes' top-10 go into each token's *_top_untempered."""
    k = len(drafted_ids)
    parents = list(range(-1, k - 1)) if parents is None else [int(parent) for parent in parents]
    path, tested, accept_probs, next_kind = _outcome(result, k)
    final_row = path[-1] + 1 if path else 0  # the target row the correction or bonus was drawn from
    rows = [parents[node] + 1 for node in tested]  # each tested node's target row: its parent's
    depth = tree_depths(parents)
    target_tops = dict(zip([*rows, final_row], texts.top(target_probs[[*rows, final_row]])))
    draft_tops = texts.top(draft_probs[tested]) if tested else []
    device = target_probs.device
    row_index = torch.tensor(rows, dtype=torch.long, device=device)
    node_index = torch.tensor(tested, dtype=torch.long, device=device)
    drafted = torch.tensor([drafted_ids[node] for node in tested], dtype=torch.long, device=device)
    target_at = target_probs[row_index, drafted].tolist()
    draft_at = draft_probs[node_index, drafted].tolist()
    overlaps = torch.minimum(target_probs[row_index], draft_probs[node_index]).sum(dim=-1).tolist()  # β per test
    uniform_list, on_path = uniforms.tolist(), set(path)
    tokens = []
    for order, node in enumerate(tested):
        tokens.append(Token(
            token_id=drafted_ids[node], text=texts(drafted_ids[node]), kind=ACCEPTED if node in on_path else REJECTED,
            position=depth[node], target_prob=target_at[order], draft_prob=draft_at[order], uniform=uniform_list[node],
            accept_prob=accept_probs[node], overlap=overlaps[order], target_top=target_tops[rows[order]],
            draft_top=draft_tops[order], node=node, parent=parents[node],
        ))
    if with_next:
        y = result.next_token
        correction = next_kind == CORRECTED  # then the last tested node is the last rejected sibling
        tokens.append(Token(
            token_id=y, text=texts(y), kind=CORRECTED if correction else BONUS, position=len(path) + 1,
            target_prob=float(target_probs[final_row, y]),
            draft_prob=float(draft_probs[tested[-1], y]) if correction else None,
            overlap=overlaps[-1] if correction else None,
            target_top=target_tops[final_row], draft_top=draft_tops[-1] if correction else [],
            residual_top=texts.top(result.next_probs.view(1, -1))[0] if correction else [],
            parent=path[-1] if path else -1,
        ))
    if untempered is not None:
        _add_untempered(tokens, *untempered, texts, last_tested=tested[-1] if tested else None)
    return Round(index=index, drafted=k, accepted=len(path), tokens=tokens, draft_ms=0.0, verify_ms=0.0,
                 draft_forwards=0, draft_token_ids=list(drafted_ids), draft_texts=[texts(i) for i in drafted_ids],
                 draft_parents=parents)


def _outcome(result, k: int) -> tuple[list[int], list[int], list[float | None], str]:
    """(accepted path, tested nodes in order, acceptance probability per node or None, next kind) of a verify
    result: a chain's VerifyResult (path 0..a-1, tested up to the first rejection) or a TreeVerifyResult."""
    if isinstance(result, VerifyResult):
        accepted = result.accepted_count
        tested = list(range(min(accepted + 1, k)))
        accept_probs = [result.accept_probs[node] if node in tested else None for node in range(k)]
        return list(range(accepted)), tested, accept_probs, result.next_kind
    return list(result.path), list(result.tested), list(result.accept_probs), result.next_kind


def _add_untempered(tokens: list[Token], target_logits: torch.Tensor, draft_logits, texts: TokenTexts,
                    last_tested: int | None) -> None:
    """Each token's top-10 of softmax(target logits) at its parent's row and, where the draft had logits, of
    softmax(draft logits) behind its own draw (a correction: behind the last rejected sibling's)."""
    rows = sorted({token.parent + 1 for token in tokens})
    target_tops = dict(zip(rows, texts.top(torch.softmax(target_logits[rows].float(), dim=-1))))
    for token in tokens:
        token.target_top_untempered = target_tops[token.parent + 1]
        node = token.node if token.kind != CORRECTED else last_tested
        if token.kind != BONUS and draft_logits and node is not None and node < len(draft_logits):
            token.draft_top_untempered = texts.top(torch.softmax(draft_logits[node].float(), dim=-1))[0]


class IncrementalText:
    """The text of the generated ids, decoded a few tokens at a time instead of whole every round.

    It decodes a short window before the new ids and keeps what the new ids add (as streaming servers do), so
    tokenizers that merge spaces or split a character over several byte tokens still give the right text; an
    unfinished character (U+FFFD at the end) waits for the next round. The final call decodes everything once.
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.text = ""
        self.window_start = 0  # ids before this are settled in self.text
        self.read_until = 0  # ids before this have been decoded into self.text

    def update(self, token_ids: list[int], final: bool = False) -> str:
        if final:
            self.text = self.tokenizer.decode(token_ids, skip_special_tokens=True)
            return self.text
        settled = self.tokenizer.decode(token_ids[self.window_start : self.read_until], skip_special_tokens=True)
        extended = self.tokenizer.decode(token_ids[self.window_start :], skip_special_tokens=True)
        if len(extended) > len(settled) and not extended.endswith("\ufffd"):
            self.text += extended[len(settled) :]
            self.window_start, self.read_until = self.read_until, len(token_ids)
        return self.text
