"""What the live tab asks for: the /run and /step endpoints' arguments, defined once.

`RunRequest`'s fields are the live tab's controls, in the order of the HTTP API's arguments (gradio_client
callers pass them positionally: keep the order). ui.py maps each field to its widget; `to_config` turns a
request into a validated DecodeConfig. No gradio here, so the load test can build requests too.

`to_config` sees the values as they were sent (the /run and /step events skip Gradio's preprocessing, ui.py), so
it checks every field's type and range itself: text or None or a list where a number goes gets the field's own
sentence (config.check_field), the same one the command line gives, instead of Gradio's generic "error".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from specviz.app.pair_menu import CUSTOM_PAIR, OFFLINE_PAIR, PAIRS, pair_settings
from specviz.app.policy import Policy
from specviz.config import (
    BACKENDS,
    BUILT_IN_DRAFTERS,
    LLAMA_CPP,
    NGRAM_DRAFTER,
    QUANTIZED_DRAFT_MODEL,
    TRANSFORMERS,
    DecodeConfig,
    DrafterSpec,
    check_field,
    check_flag,
    check_prompt,
    check_system_prompt,
)
from specviz.drafters import kinds
from specviz.models import llama_cpp, presets, split_gguf

DRAFT_MODEL, PROMPT_LOOKUP, LOOKUP_THEN_DRAFT = "draft model", "prompt lookup (n-gram)", "lookup, else draft model"
DRAFTERS = [LOOKUP_THEN_DRAFT, PROMPT_LOOKUP, DRAFT_MODEL]
NUMBERS = ("gamma", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "tree_budget")  # config.check_field
EXAMPLES = [
    "Alan Turing theorized that computers would one day become",
    "Repeat this sentence three times: the quick brown fox jumps over the lazy dog.",
    "Summarize in one sentence: The Amazon rainforest covers much of the Amazon basin of South America. "
    "The rainforest is home to millions of species and plays a key role in the global climate.",
    "Write a Python function that checks whether a number is prime.",
    "What is the capital of France? Answer in one word.",
]


@dataclass(frozen=True)
class RunRequest:
    """One Run or Step click. The defaults are the widgets' initial values (the pair's is set per device); a setting
    DecodeConfig has takes its default from there."""

    pair: str = OFFLINE_PAIR  # a key of PAIRS
    target: str = ""  # with the Custom pair: the target's hub id or folder
    draft: str = ""  # with the Custom pair: the draft's id or folder, or a built-in drafter ("ngram+…" allowed)
    drafter: str = LOOKUP_THEN_DRAFT  # one of DRAFTERS: how the pair's draft is used
    prompt: str = EXAMPLES[0]  # the user's text (wrapped in the chat template where the target has one)
    gamma: int = DecodeConfig.gamma  # γ: tokens drafted per round
    max_new_tokens: int = DecodeConfig.max_new_tokens  # stop after this many generated tokens
    temperature: float = DecodeConfig.temperature  # 0 = greedy
    top_k: int = DecodeConfig.top_k  # 0 = off
    top_p: float = DecodeConfig.top_p  # 1 = off
    seed: int = DecodeConfig.seed  # seeds the run's torch.Generator
    compare: bool = True  # also decode plainly, to measure the speedup and check the output is identical
    adaptive: bool = DecodeConfig.adaptive  # each round drafts 0..γ tokens, chosen from running acceptance and measured costs
    system_prompt: str = ""  # the chat's system message: empty by default, so the model reads nothing hidden
    draft_confidence: float | None = None  # stop a draft after a token it gave less than this (None: the pair's preset)
    tree: bool = DecodeConfig.tree  # draft a token tree each round, verified in one target forward (exact)
    tree_budget: int = DecodeConfig.tree_budget  # the tree's most nodes; 0: what this machine's measured v(k) affords
    backend: str = DecodeConfig.backend  # what runs the models (config.BACKENDS); llama.cpp where its bindings are installed

    @staticmethod
    def field_names() -> list[str]:
        """The fields in their order: the HTTP API's argument order."""
        return [field.name for field in dataclasses.fields(RunRequest)]

    def api_args(self) -> list:
        """The values in the HTTP API's order, for `Client.predict(*request.api_args(), api_name="/run")`."""
        return [getattr(self, name) for name in self.field_names()]

    @classmethod
    def from_config(cls, config: dict, prompt: str, compare: bool = False) -> RunRequest:
        """The request that runs a recorded run's settings (a trace's config) again: its pair and drafter where a
        pair of the menu has its models (its draft as recorded, or that draft's 4-bit copy), else the Custom pair."""
        target, spec = config["target"], _spec(config["draft"])
        lookup_only = spec is None or spec.kind == NGRAM_DRAFTER
        base = None if lookup_only else spec.without_lookup()
        drafter = PROMPT_LOOKUP if lookup_only else LOOKUP_THEN_DRAFT if spec.lookup_first else DRAFT_MODEL

        def runs_it(models: tuple) -> bool:  # the pair's target, and its draft as recorded or as a 4-bit copy
            pair_target, pair_draft = models
            backend = config.get("backend", TRANSFORMERS)
            if pair_target is None or target not in (pair_target, presets.backend_model(pair_target, backend)):
                return False
            quantized = pair_draft if pair_draft in BUILT_IN_DRAFTERS else str(DrafterSpec(QUANTIZED_DRAFT_MODEL, pair_draft))
            return lookup_only or str(base) in (pair_draft, quantized, presets.device_draft(pair_draft, backend=backend))

        pair = next((name for name, models in PAIRS.items() if runs_it(models)), CUSTOM_PAIR)
        custom = pair == CUSTOM_PAIR
        fields = {name: config[name] for name in cls.field_names()  # the settings both have, as the trace recorded them
                  if name in config and name not in ("target", "draft", "system_prompt")}
        return cls(pair=pair, target=target if custom else "", draft=(NGRAM_DRAFTER if lookup_only else str(base))
                   if custom else "", drafter=drafter, prompt=prompt, compare=compare,
                   system_prompt=config.get("system_prompt") or "", **fields)

    def draft_id(self) -> str:
        """The draft as DecodeConfig names it: the pair's or the text box's, after "ngram+" when lookup goes first."""
        if self.drafter == PROMPT_LOOKUP:
            return NGRAM_DRAFTER
        pair_draft = PAIRS.get(self.pair, (None, None))[1]
        draft_id = presets.device_draft(pair_draft, backend=self.backend) if pair_draft else (self.draft or "").strip()
        spec = _spec(draft_id)
        if self.drafter == LOOKUP_THEN_DRAFT and spec is not None and spec.kind != NGRAM_DRAFTER:
            return str(spec.with_lookup())
        return draft_id  # as it is, or a name to_config refuses in DecodeConfig.validate's words

    def draft_stop(self) -> float:
        """The draft stop asked for; left out (an API caller), the pair's preset (its row in presets.PAIRS)."""
        if self.draft_confidence is None:
            return pair_settings(self.pair, backend=self.backend)["draft_confidence"]
        return check_field("draft_confidence", self.draft_confidence)

    def to_config(self, policy: Policy) -> DecodeConfig:
        """A validated DecodeConfig that `policy` allows, or ValueError with one sentence a user can act on: the
        first field that is wrong, in the fields' order, named with its allowed values."""
        try:
            numbers = self._checked_fields(policy)
        except ValueError as error:
            raise ValueError(_sentence(error)) from None
        target_id = presets.backend_model(PAIRS[self.pair][0], self.backend) if PAIRS[self.pair][0] else (
            self.target or "").strip()
        draft_id = self.draft_id()
        if not target_id or not draft_id:
            raise ValueError("Give both a target and a draft model id (or choose prompt lookup).")
        spec = _spec(draft_id)
        refusal = split_gguf.unobtainable((target_id, spec.model if spec else None))
        if refusal is not None:  # a pair's GGUF neither here nor to be fetched from the hub
            raise ValueError(refusal + ".")
        # the pair's draft head rows (pair_settings), for a draft that runs a model (prompt lookup runs none)
        draft_vocab = 0 if spec is None or not kinds.KINDS[spec.kind].runs_model else pair_settings(
            self.pair, backend=self.backend)["draft_vocab"]
        try:
            config = DecodeConfig(target=target_id, draft=draft_id, adaptive=self.adaptive, system_prompt=self.system_prompt,
                                  draft_confidence=self.draft_stop(), tree=self.tree, backend=self.backend,
                                  draft_vocab=draft_vocab, **numbers).validate()
            kinds.check(config)
            policy.check(config, self.prompt)
        except ValueError as error:
            raise ValueError(_sentence(error)) from None
        return config

    def _checked_fields(self, policy: Policy) -> dict:
        """Check each field's type and allowed values; return the numeric ones as DecodeConfig takes them."""
        for name, choices in (("pair", list(PAIRS)), ("drafter", DRAFTERS), ("backend", list(BACKENDS))):
            value = getattr(self, name)
            if not isinstance(value, str) or value not in choices:
                raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r:.60}")
        for name in ("target", "draft"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a model id or folder (text), got {getattr(self, name)!r:.60}")
        check_prompt(self.prompt, policy.max_prompt_chars)
        if not isinstance(self.system_prompt, str):  # the page always sends text ("" for none)
            raise ValueError(f"the system prompt must be text, got {self.system_prompt!r:.60}")
        check_system_prompt(self.system_prompt, policy.max_prompt_chars)
        limits = field_limits(policy)
        numbers = {name: check_field(name, getattr(self, name), *limits.get(name, (None, None))) for name in NUMBERS}
        check_flag("compare", self.compare)
        check_flag("adaptive", self.adaptive)
        check_flag("tree", self.tree)
        if self.backend == LLAMA_CPP and not llama_cpp.available():
            raise ValueError(f"the llama.cpp backend needs its bindings on this server: {llama_cpp.INSTALL_COMMAND}")
        return numbers


def field_limits(policy: Policy) -> dict[str, tuple[float, float]]:
    """Where this server narrows a numeric field's range (config.NUMBER_FIELDS): a hosted server's caps on γ and
    max new tokens (app/policy.py); locally every range is the table's, as on the command line."""
    return {"gamma": (1, policy.max_gamma), "max_new_tokens": (1, policy.max_new_tokens)}


def _spec(draft_id: str) -> DrafterSpec | None:
    """The draft name parsed, or None where it names no drafter (DecodeConfig.validate then says why)."""
    try:
        return DrafterSpec.parse(draft_id)
    except ValueError:
        return None


def _sentence(error: Exception) -> str:
    """A refusal as the page shows it: 'the prompt is empty' -> 'The prompt is empty.'; a message that opens with
    a field's name ('gamma must be ...') keeps it as written."""
    text = str(error).rstrip(".")
    return (text[:1].upper() + text[1:] if text.startswith("the ") else text) + "."
