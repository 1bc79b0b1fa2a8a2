"""Turning a draft's own tokens into the target's: decode them to text, then tokenize that text the target's way.

Used by the cross-tokenizer drafter at temperature 0 (cross_vocab.py), as transformers' universal assisted
generation does. Two boundaries need care:

- **Where the draft starts.** The draft's text follows text the target has already committed in its own tokens,
  which must not change. So the last few committed target tokens (a window) are decoded and re-tokenized together
  with the draft's text; if the window comes back as the same tokens, what follows them continues the sequence.
  If the draft's text merged into the window (committed "hel", drafted "lo"), the text is tokenized alone.
- **Where the draft ends.** The last target tokens could still merge with text the draft has not written yet
  ("retur" might become "return"). A target token is proposed only if appending the draft's next piece of text
  (its lookahead) leaves it unchanged; the rest are held back and drafted again next round.
"""

from __future__ import annotations

from specviz.drafters.base import common_prefix_length

WINDOW = 4  # committed target tokens re-tokenized with the draft's text
TAIL = 8  # draft-context tokens decoded with the new ones, so that a decoder's handling of a leading space holds
INCOMPLETE = "\ufffd"  # what decoding yields for a character whose UTF-8 bytes are not all drafted yet


def own_text(tokenizer, context_ids: list[int], new_ids: list[int]) -> str | None:
    """The text `new_ids` add after `context_ids`, in the tokenizer's own decoding (decoded with a tail of the
    context, less the tail's own text); trailing incomplete characters are left out (their bytes are still coming).
    None if the tail's text is not a prefix of the two decoded together (a decoder that rewrites across them)."""
    tail = list(context_ids[-TAIL:])
    before = tokenizer.decode(tail, skip_special_tokens=False)
    both = tokenizer.decode(tail + list(new_ids), skip_special_tokens=False)
    if not both.startswith(before):
        return None
    return both[len(before):].rstrip(INCOMPLETE)


def continuation(tokenizer, committed_ids: list[int], text: str) -> list[int]:
    """Target ids for `text` following `committed_ids`, which stay as they are: the text re-tokenized after the
    last WINDOW committed tokens' text, or alone where it merged into them."""
    window = list(committed_ids[-WINDOW:])
    window_text = tokenizer.decode(window, skip_special_tokens=False)
    ids = list(tokenizer(window_text + text, add_special_tokens=False)["input_ids"])
    if ids[: len(window)] == window:
        return ids[len(window):]
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def stable_continuation(tokenizer, committed_ids: list[int], text: str, lookahead: str) -> list[int]:
    """The target ids of `text` after `committed_ids` that appending `lookahead` (the draft's next text) leaves
    unchanged: those that can no longer merge with what follows. An empty lookahead (the draft ended) keeps all."""
    now = continuation(tokenizer, committed_ids, text)
    if not lookahead:
        return now
    later = continuation(tokenizer, committed_ids, text + lookahead)
    return now[: common_prefix_length(now, later)]
