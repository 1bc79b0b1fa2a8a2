"""Two vocabularies joined where their tokens spell the same bytes: the draft side of cross-tokenizer drafting.

A draft from another model family numbers its tokens differently, and many of its tokens have no counterpart in
the target's vocabulary. The exact rule needs q over the target's vocabulary, so the draft may only propose tokens
that both vocabularies hold (the token-level intersection, Timor et al. 2025): a draft token whose bytes equal a
target token's is that target token, and nothing else is proposed at all.

Tokens are compared by the bytes they stand for, not by their strings, because tokenizers write bytes differently:
- byte-level BPE (GPT-2, SmolLM2, Qwen) writes every byte as a printable character ("Ġ" for a space, "Ċ" for a
  newline), undone with the inverse of GPT-2's bytes_to_unicode table;
- SentencePiece (Gemma, Llama 2) writes a space as "▁" and a byte it has no piece for as "<0x0A>";
- special tokens ("<|im_start|>") match by their exact text, and only each other.

>>> byte_level_bytes("Ġhello"), byte_level_bytes("Ċ"), sentencepiece_bytes("▁hello"), sentencepiece_bytes("<0x0A>")
(b' hello', b'\\n', b' hello', b'\\n')
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import torch

SPECIAL = b"\x00special:"  # the key prefix of a special token: it matches only the same special token


@cache
def _byte_decoder() -> dict[str, int]:
    """GPT-2's bytes_to_unicode, inverted: the printable character byte-level BPE writes for each byte -> the byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[chr(byte)] = byte
        else:
            chars[chr(256 + extra)] = byte
            extra += 1
    return chars


def byte_level_bytes(piece: str) -> bytes | None:
    """The bytes a byte-level BPE token stands for; None if it holds a character outside the byte alphabet."""
    decoder = _byte_decoder()
    if not all(char in decoder for char in piece):
        return None
    return bytes(decoder[char] for char in piece)


def sentencepiece_bytes(piece: str) -> bytes:
    """The bytes a SentencePiece token stands for: "▁" is a space, "<0xNN>" the byte NN."""
    if is_byte_piece(piece):
        return bytes([int(piece[3:5], 16)])
    return piece.replace("▁", " ").encode("utf-8")


def is_byte_piece(piece: str | None) -> bool:
    """A SentencePiece byte-fallback token ("<0x0A>"): a model predicts it only for bytes it has no piece for."""
    return piece is not None and len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">")


def token_keys(tokenizer, width: int) -> list[bytes | None]:
    """For each id below `width` (the model's logits width: padding rows have no token), the bytes it stands for,
    a special token's marked key, or None where it has no token. An added token that is not special (Gemma's "\n",
    "\t", "<h1>") is plain text written as itself, so it is keyed by its text's bytes."""
    pieces = tokenizer.convert_ids_to_tokens(list(range(min(width, len(tokenizer)))))
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    plain_added = {token.content for token in added.values() if not getattr(token, "special", True)}
    special = set(getattr(tokenizer, "all_special_tokens", [])) | set(getattr(tokenizer, "added_tokens_encoder", {}))
    special -= plain_added
    byte_level = sum("Ġ" in (piece or "") for piece in pieces) >= sum("▁" in (piece or "") for piece in pieces)
    keys: list[bytes | None] = []
    for piece in pieces:
        if piece is None:
            keys.append(None)
        elif piece in special:
            keys.append(SPECIAL + piece.encode("utf-8"))
        elif piece in plain_added:
            keys.append(piece.encode("utf-8"))
        else:
            keys.append(byte_level_bytes(piece) if byte_level else sentencepiece_bytes(piece))
    return keys + [None] * (width - len(keys))


def _preference(tokenizer, width: int) -> list[int]:
    """The ids below `width`, ordinary tokens first, then byte-fallback ones: where two tokens spell the same bytes
    ("a" and "<0x61>"), the bridge pairs the one a model actually predicts."""
    pieces = tokenizer.convert_ids_to_tokens(list(range(min(width, len(tokenizer)))))
    return sorted(range(width), key=lambda i: (i < len(pieces) and is_byte_piece(pieces[i]), i))


@dataclass
class VocabBridge:
    """The ids of the tokens both vocabularies hold, in pairs: draft_ids[j] spells what target_ids[j] spells.

    Each target token has at most one draft token (an ordinary token before a byte-fallback one, then the lowest
    id that spells it), so the map is one to one."""

    draft_ids: torch.Tensor  # [N] long
    target_ids: torch.Tensor  # [N] long
    draft_width: int  # V_D: the draft's logits width
    target_width: int  # V_T: the target's

    @classmethod
    def between(cls, draft_tokenizer, target_tokenizer, draft_width: int, target_width: int) -> VocabBridge:
        target_of, target_keys = {}, token_keys(target_tokenizer, target_width)
        for target_id in _preference(target_tokenizer, target_width):
            if target_keys[target_id] is not None:
                target_of.setdefault(target_keys[target_id], target_id)  # a duplicate spelling keeps the preferred
        pairs, taken, draft_keys = [], set(), token_keys(draft_tokenizer, draft_width)
        for draft_id in _preference(draft_tokenizer, draft_width):
            target_id = target_of.get(draft_keys[draft_id])
            if target_id is not None and target_id not in taken:
                pairs.append((draft_id, target_id))
                taken.add(target_id)
        if not pairs:
            raise ValueError("the draft's and the target's vocabularies share no token")
        draft_ids, target_ids = zip(*sorted(pairs))
        return cls(torch.tensor(draft_ids), torch.tensor(target_ids), draft_width, target_width)

    def __len__(self) -> int:
        return self.draft_ids.numel()

    def to(self, device: torch.device) -> VocabBridge:
        return VocabBridge(self.draft_ids.to(device), self.target_ids.to(device), self.draft_width, self.target_width)

    def target_logits(self, draft_logits: torch.Tensor) -> torch.Tensor:
        """The draft's logits [..., V_D] as logits over the target's vocabulary [..., V_T]: each shared token's
        score at its target id, -inf everywhere else. Softmax then renormalizes the draft's distribution over the
        shared tokens, so q sums to 1 over what the draft can propose."""
        out = draft_logits.new_full((*draft_logits.shape[:-1], self.target_width), float("-inf"))
        out[..., self.target_ids] = draft_logits[..., self.draft_ids]
        return out

    @property
    def draft_of(self) -> dict[int, int]:
        """target id -> draft id, for feeding a proposed target token back to the draft."""
        return dict(zip(self.target_ids.tolist(), self.draft_ids.tolist()))

    def shared_mass(self, draft_probs: torch.Tensor) -> torch.Tensor:
        """The share of the draft's own distribution [..., V_D] that falls on shared tokens: [...]."""
        return draft_probs[..., self.draft_ids].sum(-1)
