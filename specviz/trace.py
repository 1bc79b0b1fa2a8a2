"""The record of a run: plain dataclasses of ints, floats and strings (no tensors) that round-trip through JSON."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from dataclasses import asdict, dataclass, field

ACCEPTED, REJECTED, CORRECTED, BONUS = "accepted", "rejected", "corrected", "bonus"
KINDS = (ACCEPTED, REJECTED, CORRECTED, BONUS)
SCHEMA_VERSION = 2  # 2: token trees (Round.draft_parents, Token.node / parent); version-1 traces (chains) still load


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
    position: int  # draft position i = 1..γ+1 within its round: the token's depth in the round's tree
    target_prob: float  # p_i(x)
    draft_prob: float | None = None  # q_i(x); None for a bonus (no draft distribution there)
    uniform: float | None = None  # r_i drawn for the acceptance test (drafted tokens only)
    accept_prob: float | None = None  # min(1, p_i(x)/q_i(x)) (drafted tokens only)
    overlap: float | None = None  # β_i = Σ_x min(p_i(x), q_i(x)): this position's acceptance probability
    target_top: list[TopToken] = field(default_factory=list)  # top-10 of p_i
    draft_top: list[TopToken] = field(default_factory=list)  # top-10 of q_i (empty for a bonus)
    residual_top: list[TopToken] = field(default_factory=list)  # top-10 of norm(max(0, p_i - q_i)), corrections only
    # Greedy runs only (T = 0, where p and q are one-hot): top-10 of softmax(logits), the untempered distributions
    # whose argmaxes were compared, so the margin by which the draft won or lost can be seen.
    target_top_untempered: list[TopToken] = field(default_factory=list)
    draft_top_untempered: list[TopToken] = field(default_factory=list)  # empty where the draft has no logits (lookup)
    node: int | None = None  # its index in Round.draft_token_ids; None for a correction or bonus (never drafted)
    parent: int = -1  # the drafted node it follows in its round; -1: the text committed before the round


@dataclass
class Round:
    index: int
    drafted: int  # how many tokens the drafter proposed this round (≤ γ)
    accepted: int  # how many of them were accepted
    tokens: list[Token]  # the tested drafts in the order tested (the accepted path and each rejected sibling), then
    # the correction or bonus; in a chain, the drafts up to the first rejection
    draft_ms: float  # time spent drafting (device synchronized)
    verify_ms: float  # time of the target's single forward pass plus the accept/reject step
    draft_forwards: int  # forward passes the drafter made (0 for prompt lookup)
    draft_token_ids: list[int] = field(default_factory=list)  # every proposed id, also those after a rejection
    draft_texts: list[str] = field(default_factory=list)
    next_uniform: float | None = None  # the uniform that drew the correction or bonus (inverse CDF)
    asked: int | None = None  # the draft length asked for; more than `drafted` when the draft was cut at EOS
    # Of draft_ms and verify_ms, the time inside model forwards (the rest is sampling, tests and bookkeeping)
    draft_forward_ms: float | None = None
    verify_forward_ms: float | None = None
    # Parent of every drafted node (an index into draft_token_ids, -1 for a child of the committed text): the token
    # tree of the round. A chain is [-1, 0, 1, ..]; draft_token_ids[j]'s depth is 1 + its parent's.
    draft_parents: list[int] = field(default_factory=list)
    # A draft of another tokenizer: per drafted token, the share of the draft's own distribution on the tokens both
    # vocabularies hold (drafters/cross_vocab.py); empty for a draft of the target's tokenizer
    shared_mass: list[float] = field(default_factory=list)
    # ... and the draft's own tokens this round, as it wrote them (their texts in its own tokenization): what the
    # target tokens of draft_texts were re-tokenized from; the views align the two by the characters they cover
    draft_own_texts: list[str] = field(default_factory=list)
    # Recording the round for the views, after its commit: part of the run's wall time (Trace.record_ms sums these);
    # None in traces written before it was kept per round
    record_ms: float | None = None

    @property
    def emitted(self) -> list[Token]:
        return [token for token in self.tokens if token.kind != REJECTED]

    @property
    def is_tree(self) -> bool:
        """Whether some drafted node has a sibling (else the round drafted a chain)."""
        return any(parent != index - 1 for index, parent in enumerate(self.draft_parents))


@dataclass
class Baseline:
    """Plain autoregressive decoding on the same target, sampler and seed source."""

    text: str
    token_ids: list[int]
    wall_ms: float
    step_ms: float  # one target forward over one token: the plain run's mean (its median in traces before 2026-12-02)
    # Each plain token's wall ms (the first also reads the prompt; they sum to wall_ms), and the speculative round
    # each was decoded right after (decoding/comparison.py interleaves the two runs; analysis/speedup.py pairs them).
    # after_round is empty where the plain run followed the whole speculative run, and in older traces.
    token_ms: list[float] = field(default_factory=list)
    after_round: list[int] = field(default_factory=list)
    token_texts: list[str] = field(default_factory=list)  # each token's text, as the rows write a token's (the race)


MAX_TRACE_BYTES = 20 * 2**20  # the largest trace file a loader reads (a long run's trace is a few MB)
USER_STOP = "you"  # Trace.stop_reason of a run its user stopped (the stats say "stopped by you after N rounds")


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
    stop_reason: str = ""  # "max_new_tokens", "eos", "context", or USER_STOP
    wall_ms: float = 0.0  # wall time of the speculative generation (model loading excluded)
    forward_ms: float = 0.0  # of which spent inside model forwards
    record_ms: float = 0.0  # recording the rounds for the views, outside wall_ms
    baseline: Baseline | None = None
    templated_prompt: str = ""  # what the target reads: the prompt in the chat template, system prompt included
    # Median ms of one target forward over k = 1, 2, .. new tokens, timed once per target and device before
    # the run (pipeline.target_forward_ms): c's target step and the v(k) curve. Empty when not measured.
    target_forward_ms: list[float] = field(default_factory=list)
    # Median ms of one draft forward over one token, timed alternately with the target's one-token forwards once per
    # model pair and device (pipeline.draft_step_ms): c's draft step. 0 when not measured (prompt lookup).
    draft_step_ms: float = 0.0
    # The instruction set torch's CPU kernels ran on (models.cpu_kernels: AVX512, AVX2, ...): an exact replay
    # needs the same. "" on a GPU, and in traces written before it was recorded.
    kernels: str = ""
    # The CPU cores other processes kept busy, on average, while this run and its plain run were timed
    # (decoding/machine_load.py), and the cores the machine has; None and 0 where not read (not Linux, older traces)
    others_busy_cores: float | None = None
    cores: int = 0
    schema: int = SCHEMA_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Trace:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict) -> Trace:
        """Check data against the schema (every field, its type, nothing unknown) before building anything;
        a ValueError names the first offending field."""
        if not isinstance(data, dict):
            raise ValueError("a trace is a JSON object")
        if data.get("schema") not in (1, SCHEMA_VERSION):
            raise ValueError(f"unsupported trace schema {data.get('schema')!r}; expected 1 or {SCHEMA_VERSION}")
        trace = _build(cls, data, "trace")
        if trace.schema == 1:
            _as_chain_trees(trace)
        from specviz.config import DecodeConfig  # the run's settings must be ones a run could have had

        try:
            trace.config = DecodeConfig.from_dict(trace.config).validate().to_dict()
        except (TypeError, ValueError) as error:
            raise ValueError(f"trace.config: {error}") from None
        return trace


def _as_chain_trees(trace: Trace) -> None:
    """A version-1 trace (every round a chain) in version 2's terms: each round's parents [-1, 0, 1, ..], each
    drafted token node position - 1, each token's parent the node before it."""
    for round_ in trace.rounds:
        round_.draft_parents = list(range(-1, len(round_.draft_token_ids) - 1))
        for token in round_.tokens:
            token.parent = token.position - 2
            token.node = token.position - 1 if token.kind in (ACCEPTED, REJECTED) else None
    trace.schema = SCHEMA_VERSION


@functools.cache
def _hints(cls) -> dict:
    """A record class's field types, resolved once (typing.get_type_hints is slow, and every parsed object asks)."""
    return typing.get_type_hints(cls)


def _build(cls, data, where: str):
    """An instance of dataclass cls from a JSON object, each field checked against its annotation."""
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be an object")
    fields = {item.name: item for item in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{where} has unknown fields: {', '.join(map(str, unknown[:5]))}")
    hints = _hints(cls)
    values = {}
    for name, item in fields.items():
        if name in data:
            values[name] = _checked(hints[name], data[name], f"{where}.{name}")
        elif item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
            raise ValueError(f"{where} lacks the field {name!r}")
    built = cls(**values)
    if isinstance(built, Token) and built.kind not in KINDS:
        raise ValueError(f"{where}.kind must be one of {', '.join(KINDS)}, got {built.kind!r}")
    return built


def _checked(hint, value, where: str):
    """value if it has the annotated type: int, float (finite), str, dict, list[X], X | None or a dataclass."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [option for option in typing.get_args(hint) if option is not type(None)]
        return None if value is None else _checked(options[0], value, where)
    if typing.get_origin(hint) is list:
        if not isinstance(value, list):
            raise ValueError(f"{where} must be a list")
        (item_hint,) = typing.get_args(hint)
        return [_checked(item_hint, item, f"{where}[{index}]") for index, item in enumerate(value)]
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, where)
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        raise ValueError(f"{where} must be a finite number, got {value!r}"[:200])
    if hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if hint in (str, dict) and isinstance(value, hint):
        return value
    raise ValueError(f"{where} must be {getattr(hint, '__name__', hint)}, got {type(value).__name__}")


def trace_text(path) -> str:
    """The text of a file that may hold a trace (trace JSON, or a page exported as HTML), read with nothing heavy
    imported; ValueError in one sentence when it is too large, not text, or neither JSON nor HTML."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TRACE_BYTES + 1)
    except OSError as error:
        raise ValueError(f"cannot be read ({error.strerror or error})") from None
    if len(data) > MAX_TRACE_BYTES:
        raise ValueError(f"is larger than {MAX_TRACE_BYTES // 2**20} MB, and a trace is far smaller")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("is not text (UTF-8): a trace is JSON, or a page exported as HTML") from None
    if not text.lstrip().startswith(("{", "<")):
        raise ValueError("is not a trace: a trace is a JSON object, or a page exported as HTML")
    return text
