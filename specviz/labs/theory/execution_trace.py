"""The execution-trace picture of Leviathan et al. 2023, Figure 5: the same N tokens decoded with γ = 7, with γ = 3
and plainly, one row each, on a time axis counted in target steps. This is the expected picture from (α, c); the
Round anatomy tab draws the measured one.

A speculative round is γ draft steps (width c each) and one target step (width 1), and yields on average
E = (1 − α^(γ+1)) / (1 − α) tokens (Leviathan eq. 1). The layout is deterministic: every round yields exactly E
tokens, so N tokens take N / E rounds; when that is not a whole number the last round is drawn in part, every block
scaled by the fraction of a round still needed. A row then ends at exactly N / E · (γc + 1) target steps, and the
plain row, one target step per token, at N. (The paper's figure also draws each model's encoder call, as its
models are encoder-decoders; specviz's are decoder-only, so there is none.)

>>> rows = execution_trace(0.75, 0.02, tokens=40)
>>> [(name, round(row_end(blocks), 2)) for name, blocks in rows.items()]
[('γ = 7', 12.67), ('γ = 3', 15.51), ('plain', 40.0)]
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from specviz.core import theory
from specviz.labs.theory.calculator import validate_inputs

DRAFT_STEP, TARGET_STEP = "draft step", "target step"
PLAIN = "plain"
PAPER_GAMMAS = (7, 3)  # the two speculative rows of Figure 5
MAX_TOKENS = 1000  # a plain row draws one block per token
PICTURE_TOKENS = 40  # the tokens the Theory tab's picture decodes


@dataclass(frozen=True)
class Block:
    kind: str  # DRAFT_STEP (the draft model M_q, width c) or TARGET_STEP (the target M_p, width 1)
    start: float  # in target steps from the start of decoding
    width: float  # c or 1, times the fraction of a round for the last, partial one
    round_number: int  # 1-based; for the plain row the token's number
    tokens: float  # tokens the round yields on average (E, or its fraction), on its target block; 0 on draft blocks


def row_label(gamma: int) -> str:
    return f"γ = {gamma}"


def speculative_row(alpha: float, gamma: int, c: float, tokens: int) -> list[Block]:
    """Rounds of γ draft blocks and one target block until `tokens` tokens at E per round; the last one partial."""
    alpha, gamma, c = validate_inputs(alpha, gamma, c)
    tokens = _check_tokens(tokens)
    expected = theory.expected_tokens(alpha, gamma)
    rounds = tokens / expected
    blocks, clock = [], 0.0
    for number in range(1, math.ceil(rounds - 1e-9) + 1):
        fraction = min(1.0, rounds - (number - 1))  # 1 for every whole round
        for _ in range(gamma):
            blocks.append(Block(DRAFT_STEP, clock, c * fraction, number, 0.0))
            clock += c * fraction
        blocks.append(Block(TARGET_STEP, clock, fraction, number, expected * fraction))
        clock += fraction
    return blocks


def plain_row(tokens: int) -> list[Block]:
    """One target step per token."""
    return [Block(TARGET_STEP, float(index), 1.0, index + 1, 1.0) for index in range(_check_tokens(tokens))]


def execution_trace(alpha: float, c: float, tokens: int = PICTURE_TOKENS,
                    gammas=PAPER_GAMMAS) -> dict[str, list[Block]]:
    """Figure 5's rows: {"γ = 7": blocks, "γ = 3": blocks, "plain": blocks}, each producing `tokens` tokens."""
    rows = {row_label(int(gamma)): speculative_row(alpha, gamma, c, tokens) for gamma in gammas}
    rows[PLAIN] = plain_row(tokens)
    return rows


def row_end(blocks: list[Block]) -> float:
    """When the row's last block ends, in target steps: N / E · (γc + 1) for a speculative row, N for plain."""
    return max((block.start + block.width for block in blocks), default=0.0)


def _check_tokens(tokens) -> int:
    if isinstance(tokens, bool) or not isinstance(tokens, numbers.Integral) or not 1 <= tokens <= MAX_TOKENS:
        raise ValueError(f"tokens must be an integer in [1, {MAX_TOKENS}], got {tokens!r}")
    return int(tokens)
