"""The record of a run: plain dataclasses of ints, floats and strings (no tensors) that round-trip through JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

ACCEPTED, REJECTED, CORRECTED, BONUS = "accepted", "rejected", "corrected", "bonus"
KINDS = (ACCEPTED, REJECTED, CORRECTED, BONUS)
SCHEMA_VERSION = 1


@dataclass
class TopToken:
    token_id: int
    text: str
    prob: float


@dataclass
class Token:
    token_id: int
    text: str
    kind: str  # one of KINDS
    position: int  # draft position i = 1..γ+1 within its round
    target_prob: float  # p_i(x)
    draft_prob: float | None = None  # q_i(x); None for a bonus (no draft distribution there)
    uniform: float | None = None  # r_i drawn for the acceptance test (drafted tokens only)
    accept_prob: float | None = None  # min(1, p_i(x)/q_i(x)) (drafted tokens only)
    overlap: float | None = None  # β_i = Σ_x min(p_i(x), q_i(x)): this position's acceptance probability
    target_top: list[TopToken] = field(default_factory=list)  # top-10 of p_i
    draft_top: list[TopToken] = field(default_factory=list)  # top-10 of q_i (empty for a bonus)
    residual_top: list[TopToken] = field(default_factory=list)  # top-10 of norm(max(0, p_i - q_i)), corrections only


@dataclass
class Round:
    index: int
    drafted: int  # how many tokens the drafter proposed this round (≤ γ)
    accepted: int  # how many of them were accepted
    tokens: list[Token]  # the tested drafts in order (up to the first rejection), then the correction or bonus
    draft_ms: float  # time spent drafting (device synchronized)
    verify_ms: float  # time of the target's single forward pass plus the accept/reject step
    draft_forwards: int  # forward passes the drafter made (0 for prompt lookup)
    draft_token_ids: list[int] = field(default_factory=list)  # every proposed id, also those after a rejection
    draft_texts: list[str] = field(default_factory=list)

    @property
    def emitted(self) -> list[Token]:
        return [token for token in self.tokens if token.kind != REJECTED]


@dataclass
class Baseline:
    """Plain autoregressive decoding on the same target, sampler and seed source."""

    text: str
    token_ids: list[int]
    wall_ms: float
    step_ms: float  # mean time of one target forward over one token


@dataclass
class Trace:
    config: dict
    prompt: str
    prompt_token_count: int
    target_name: str
    draft_name: str
    device: str
    dtype: str
    rounds: list[Round] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)  # generated ids, prompt excluded
    text: str = ""
    stop_reason: str = ""  # "max_new_tokens", "eos" or "context"
    wall_ms: float = 0.0  # wall time of the speculative generation (model loading excluded)
    forward_ms: float = 0.0  # of which spent inside model forwards
    baseline: Baseline | None = None
    schema: int = SCHEMA_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "Trace":
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict) -> "Trace":
        data = dict(data)
        if data.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"unsupported trace schema {data.get('schema')!r}; expected {SCHEMA_VERSION}")
        data["rounds"] = [_round_from_dict(item) for item in data.get("rounds", [])]
        if data.get("baseline") is not None:
            data["baseline"] = Baseline(**data["baseline"])
        return cls(**data)


def _round_from_dict(data: dict) -> Round:
    tokens = []
    for item in data["tokens"]:
        item = dict(item)
        if item["kind"] not in KINDS:
            raise ValueError(f"unknown token kind {item['kind']!r}")
        for key in ("target_top", "draft_top", "residual_top"):
            item[key] = [TopToken(**top) for top in item.get(key, [])]
        tokens.append(Token(**item))
    return Round(**{**data, "tokens": tokens})
