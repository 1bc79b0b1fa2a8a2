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

from specviz.app.policy import Policy
from specviz.config import (
    DISTILLED_DRAFTER,
    NGRAM_DRAFTER,
    OFFLINE_MODEL,
    QUANTIZED_DRAFTER,
    DecodeConfig,
    DrafterSpec,
    check_field,
    check_flag,
    check_prompt,
    check_system_prompt,
)
from specviz.drafters import registry
from specviz.models import presets, split_gguf

OFFLINE_PAIR = "Offline: SmolLM2-135M-Instruct (embedded)"
CODER_PAIR = "Offline: Qwen2.5-Coder-1.5B-Instruct ← Qwen2.5-Coder-0.5B-Instruct"
CODER_GEMMA_PAIR = "Offline: Qwen2.5-Coder-1.5B-Instruct ← gemma-3-270m"  # a draft of another tokenizer
CUSTOM_PAIR = "Custom"
PAIRS = {  # the pair dropdown: label -> (target, draft); Custom takes both from the text boxes
    OFFLINE_PAIR: (OFFLINE_MODEL, DISTILLED_DRAFTER),
    "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy": (OFFLINE_MODEL, QUANTIZED_DRAFTER),
    CODER_PAIR: presets.PRESETS["qwen2.5-coder"],  # split part packages: listed whether or not they are installed
    "gpt2-xl ← gpt2": presets.PRESETS["gpt2-xl"],
    "SmolLM2-1.7B-Instruct ← SmolLM2-135M-Instruct": presets.PRESETS["smollm2-1.7b"],
    "Qwen2.5-1.5B-Instruct ← Qwen2.5-0.5B-Instruct": presets.PRESETS["qwen2.5-1.5b"],
    "Offline: Qwen2.5-Coder-1.5B-Instruct ← SmolLM2-135M-Instruct": presets.PRESETS["qwen2.5-coder-smollm2-draft"],
    CODER_GEMMA_PAIR: presets.PRESETS["qwen2.5-coder-gemma-draft"],
    "Qwen2.5-1.5B-Instruct ← SmolLM2-135M-Instruct": presets.PRESETS["qwen2.5-1.5b-smollm2-draft"],
    CUSTOM_PAIR: (None, None),
}
MENU_LABELS = {  # what the pair menu shows (short enough to fit it); the values sent stay PAIRS' keys
    OFFLINE_PAIR: "SmolLM2-135M ← distilled draft · offline",
    "Offline: SmolLM2-135M-Instruct ← its own 4-bit copy": "SmolLM2-135M ← its 4-bit copy · offline",
    CODER_PAIR: "Qwen2.5-Coder-1.5B ← 0.5B · offline",
    "gpt2-xl ← gpt2": "gpt2-xl ← gpt2 · hub",
    "SmolLM2-1.7B-Instruct ← SmolLM2-135M-Instruct": "SmolLM2-1.7B ← 135M · hub",
    "Qwen2.5-1.5B-Instruct ← Qwen2.5-0.5B-Instruct": "Qwen2.5-1.5B ← 0.5B · hub",
    "Offline: Qwen2.5-Coder-1.5B-Instruct ← SmolLM2-135M-Instruct": "Qwen2.5-Coder-1.5B ← SmolLM2-135M · offline",
    CODER_GEMMA_PAIR: "Qwen2.5-Coder-1.5B ← Gemma-3-270M · offline",
    "Qwen2.5-1.5B-Instruct ← SmolLM2-135M-Instruct": "Qwen2.5-1.5B ← SmolLM2-135M · hub",
    CUSTOM_PAIR: "Custom: any target and draft",
}
# What the drafter help adds to the registry's line on a pair's built-in drafter (registry.describe).
APP_NOTES = {QUANTIZED_DRAFTER: "agrees ~98%, fastest; few rejections", DISTILLED_DRAFTER: "more rejections to look at"}
DRAFT_MODEL, PROMPT_LOOKUP, LOOKUP_THEN_DRAFT = "draft model", "prompt lookup (n-gram)", "lookup, else draft model"
DRAFTERS = [LOOKUP_THEN_DRAFT, PROMPT_LOOKUP, DRAFT_MODEL]
NUMBERS = ("gamma", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "tree_budget")  # config.check_field
DEFAULT_GAMMA = 4  # γ for a pair without preset settings: short rows that read well
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
    """One Run or Step click. The defaults are the widgets' initial values (the pair's is set per device)."""

    pair: str = OFFLINE_PAIR  # a key of PAIRS
    target: str = ""  # with the Custom pair: the target's hub id or folder
    draft: str = ""  # with the Custom pair: the draft's id or folder, or a built-in drafter ("ngram+…" allowed)
    drafter: str = LOOKUP_THEN_DRAFT  # one of DRAFTERS: how the pair's draft is used
    prompt: str = EXAMPLES[0]  # the user's text (wrapped in the chat template where the target has one)
    gamma: int = 4  # γ: tokens drafted per round
    max_new_tokens: int = 64  # stop after this many generated tokens
    temperature: float = 0.0  # 0 = greedy
    top_k: int = 0  # 0 = off
    top_p: float = 1.0  # 1 = off
    seed: int = 0  # seeds the run's torch.Generator
    compare: bool = False  # also decode plainly, to measure the speedup and check the output is identical
    adaptive: bool = False  # each round drafts 0..γ tokens, chosen from running acceptance and measured costs
    system_prompt: str = ""  # the chat's system message: empty by default, so the model reads nothing hidden
    draft_confidence: float | None = None  # stop a draft after a token it gave less than this (None: the pair's preset)
    tree: bool = False  # draft a token tree each round, verified in one target forward (exact)
    tree_budget: int = 0  # the tree's most nodes; 0: what this machine's measured v(k) affords

    @staticmethod
    def field_names() -> list[str]:
        """The fields in their order: the HTTP API's argument order."""
        return [field.name for field in dataclasses.fields(RunRequest)]

    def api_args(self) -> list:
        """The values in the HTTP API's order, for `Client.predict(*request.api_args(), api_name="/run")`."""
        return [getattr(self, name) for name in self.field_names()]

    def draft_id(self) -> str:
        """The draft as DecodeConfig names it: the pair's or the text box's, after "ngram+" when lookup goes first."""
        if self.drafter == PROMPT_LOOKUP:
            return NGRAM_DRAFTER
        pair_draft = PAIRS.get(self.pair, (None, None))[1]
        draft_id = presets.device_draft(pair_draft) if pair_draft else (self.draft or "").strip()
        spec = _spec(draft_id)
        if self.drafter == LOOKUP_THEN_DRAFT and spec is not None and spec.kind != NGRAM_DRAFTER:
            return str(spec.with_lookup())
        return draft_id  # as it is, or a name to_config refuses in DecodeConfig.validate's words

    def draft_stop(self) -> float:
        """The draft stop asked for; left out (an API caller), the pair's preset (presets.PRESET_SETTINGS)."""
        if self.draft_confidence is None:
            return pair_settings(self.pair)["draft_confidence"]
        return check_field("draft_confidence", self.draft_confidence)

    def to_config(self, policy: Policy) -> DecodeConfig:
        """A validated DecodeConfig that `policy` allows, or ValueError with one sentence a user can act on: the
        first field that is wrong, in the fields' order, named with its allowed values."""
        try:
            numbers = self._checked_fields(policy)
        except ValueError as error:
            raise ValueError(_sentence(error)) from None
        target_id = (PAIRS[self.pair][0] or self.target or "").strip()
        draft_id = self.draft_id()
        if not target_id or not draft_id:
            raise ValueError("Give both a target and a draft model id (or choose prompt lookup).")
        spec = _spec(draft_id)
        missing = split_gguf.first_missing((target_id, spec.model if spec else None))
        if missing is not None:  # a split offline model whose parts are not installed
            raise ValueError(split_gguf.not_installed(missing) + ".")
        try:
            config = DecodeConfig(target=target_id, draft=draft_id, adaptive=self.adaptive, system_prompt=self.system_prompt,
                                  draft_confidence=self.draft_stop(), tree=self.tree, **numbers).validate()
            if config.tree:
                registry.check_trees(config.drafter)
            policy.check(config, self.prompt)
        except ValueError as error:
            raise ValueError(_sentence(error)) from None
        return config

    def _checked_fields(self, policy: Policy) -> dict:
        """Check each field's type and allowed values; return the numeric ones as DecodeConfig takes them."""
        for name, choices in (("pair", list(PAIRS)), ("drafter", DRAFTERS)):
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
        return numbers


def field_limits(policy: Policy) -> dict[str, tuple[float, float]]:
    """The live tab's range for a numeric field where it is narrower than DecodeConfig's: the sliders' ends,
    narrowed by the hosted caps. ui.py draws the sliders from it; to_config holds every request to it."""
    return {"gamma": (1, min(16, policy.max_gamma)), "max_new_tokens": (1, min(512, policy.max_new_tokens)),
            "temperature": (0, 2), "top_p": (0.05, 1), "tree_budget": (0, 64)}


def pair_choices() -> list[tuple[str, str]]:
    """The pair menu as (shown, value) pairs: short labels, and "not installed" on a pair whose split offline models
    are missing (pair_help gives the command). The values are PAIRS' keys on every machine, so API callers send
    the same names."""
    return [(MENU_LABELS[name] + ("" if split_gguf.first_missing(PAIRS[name]) is None else " · not installed"), name)
            for name in PAIRS]


def _preset_name(pair: str) -> str | None:
    return next((name for name, models in presets.PRESETS.items() if models == PAIRS.get(pair)), None)


def pair_settings(pair: str, policy: Policy | None = None) -> dict:
    """γ and the draft stop the pair runs with unless the user moves them: its preset's (presets.PRESET_SETTINGS),
    else γ = DEFAULT_GAMMA and no stop; γ held to `policy`'s cap.

    >>> pair_settings(CODER_PAIR), pair_settings(OFFLINE_PAIR)
    ({'gamma': 12, 'draft_confidence': 0.6}, {'gamma': 4, 'draft_confidence': 0.0})
    """
    settings = {"gamma": DEFAULT_GAMMA, "draft_confidence": 0.0, **presets.preset_settings(_preset_name(pair))}
    if policy is not None:
        settings["gamma"] = min(settings["gamma"], policy.max_gamma)
    return settings


def pair_help(pair: str, policy: Policy | None = None) -> str:
    """One line under the pair menu: the two models in full, why the pair's γ and draft stop are what they are,
    the install command where its offline models are missing, and the terms of a model that has its own (Gemma)."""
    if pair == CUSTOM_PAIR:
        return ("Any two models, hub ids or folders inside the models directory; a draft of another tokenizer "
                "proposes only the tokens both vocabularies spell alike.")
    target, draft = PAIRS[pair]
    models = f"{target.removeprefix('offline:')} drafted for by {draft.removeprefix('offline:')}"
    if draft in (DISTILLED_DRAFTER, QUANTIZED_DRAFTER):
        models = f"{target.removeprefix('offline:')} drafted for by {registry.describe(draft)}"
    settings, preset = pair_settings(pair, policy), presets.preset_settings(_preset_name(pair))
    if preset:
        capped = f" (γ capped at {settings['gamma']} on this server)" if settings["gamma"] < preset["gamma"] else ""
        models += (f". Preset: γ {preset['gamma']} with a draft stop of {preset['draft_confidence']}{capped}: long "
                   "drafts where the two agree (code, maths), short ones in prose; the fastest setting measured on "
                   "39 Spec-Bench prompts (docs/results.md), and exact either way")
    commands = dict.fromkeys(split_gguf.SPLIT_MODELS[model].install_command for model in PAIRS[pair]
                             if split_gguf.first_missing((model,)) is not None)  # each missing model's, in order
    terms = presets.model_terms(*PAIRS[pair])
    return (models + (f". Not installed: {' and '.join(commands)}" if commands else "")
            + (f". {terms}" if terms else "") + ".")


def drafter_help(pair: str) -> str:
    """The drafter choices' help for this pair: what "draft model" is here, what lookup does."""
    draft = PAIRS.get(pair, (None, None))[1]
    if draft in APP_NOTES:  # a built-in drafter: what the registry says it is, and what the page shows of it
        model = f"{registry.describe(draft)} ({APP_NOTES[draft]})"
    elif draft is None:
        model = "the draft named below"
    else:
        model = draft.removeprefix("offline:") + (" (on a CPU, its 4-bit copy)" if draft in presets.INT4_ON_CPU else "")
    return (f"Draft model: {model}. Prompt lookup: {registry.describe(NGRAM_DRAFTER)}. Lookup, else draft model: "
            f"{registry.LOOKUP_FIRST_DESCRIPTION}")


def default_pair() -> str:
    """The offline pair whose draft is the offline default on this machine (presets.offline_drafter)."""
    drafter = str(DrafterSpec.parse(presets.offline_drafter()).without_lookup())
    return next(name for name, (target, draft) in PAIRS.items() if target == OFFLINE_MODEL and draft == drafter)


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
