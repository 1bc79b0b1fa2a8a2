"""A verified round -> plain Round / Token records: top-k lists, token texts and the probabilities the views
plot. This runs outside the engine's timed sections; nothing here changes what a round decides."""

from __future__ import annotations

import torch

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


def record_round(index, drafted_ids, draft_probs, target_probs, uniforms, result, texts, with_next,
                 untempered=None) -> Round:
    """Turn one verify step into plain data: every drafted token, then the correction or bonus.

    `untempered`, for a greedy run: (target logits [k+1, V], the draft's list of logits [1, V] or None), whose
    softmaxes' top-10 go into each token's *_top_untempered."""
    k, accepted = len(drafted_ids), result.accepted_count
    tested = min(accepted + 1, k)  # positions whose acceptance test ran
    target_tops = texts.top(target_probs[: min(accepted + 1, k + 1)])
    draft_tops = texts.top(draft_probs[:tested])
    rows = torch.arange(tested, device=target_probs.device)
    drafted = torch.tensor(drafted_ids[:tested], dtype=torch.long, device=target_probs.device)
    target_at = target_probs[rows, drafted].tolist()
    draft_at = draft_probs[rows, drafted].tolist()
    uniform_list = uniforms.tolist()
    overlaps = torch.minimum(target_probs[:tested], draft_probs[:tested]).sum(dim=-1).tolist()  # β per position
    tokens = []
    for i in range(tested):
        tokens.append(Token(
            token_id=drafted_ids[i], text=texts(drafted_ids[i]), kind=ACCEPTED if i < accepted else REJECTED,
            position=i + 1, target_prob=target_at[i], draft_prob=draft_at[i], uniform=uniform_list[i],
            accept_prob=result.accept_probs[i], overlap=overlaps[i], target_top=target_tops[i], draft_top=draft_tops[i],
        ))
    if with_next:
        y, position = result.next_token, accepted
        correction = result.next_kind == CORRECTED
        tokens.append(Token(
            token_id=y, text=texts(y), kind=CORRECTED if correction else BONUS, position=position + 1,
            target_prob=float(target_probs[position, y]),
            draft_prob=float(draft_probs[position, y]) if correction else None,
            overlap=overlaps[position] if correction else None,
            target_top=target_tops[position], draft_top=draft_tops[position] if correction else [],
            residual_top=texts.top(result.next_probs.view(1, -1))[0] if correction else [],
        ))
    if untempered is not None:
        _add_untempered(tokens, *untempered, texts)
    return Round(index=index, drafted=k, accepted=accepted, tokens=tokens, draft_ms=0.0, verify_ms=0.0, draft_forwards=0,
                 draft_token_ids=list(drafted_ids), draft_texts=[texts(i) for i in drafted_ids])


def _add_untempered(tokens: list[Token], target_logits: torch.Tensor, draft_logits, texts: TokenTexts) -> None:
    """Each token's top-10 of softmax(target logits) and, where the draft had logits, of softmax(draft logits)."""
    rows = max(token.position for token in tokens)
    target_tops = texts.top(torch.softmax(target_logits[:rows].float(), dim=-1))
    draft_rows = [] if not draft_logits else draft_logits[: min(rows, len(draft_logits))]
    draft_tops = texts.top(torch.softmax(torch.cat(draft_rows).float(), dim=-1)) if draft_rows else []
    for token in tokens:
        token.target_top_untempered = target_tops[token.position - 1]
        if token.kind != BONUS and token.position <= len(draft_tops):
            token.draft_top_untempered = draft_tops[token.position - 1]


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
