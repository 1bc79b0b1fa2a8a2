"""Every kind of drafter a DrafterSpec can name: how it is written, what it is (one line for the app's menus and
the CLI's --draft help) and how it is built for a loaded target.

    built = build(config.drafter, target, config, eos_ids)   # -> Built(target_model, drafter, draft_model)

A builder makes the per-run wrappers (the target's LanguageModel at the vocabulary both share, the drafter, and
the draft model whose forwards the pipeline times); the weights behind them come from the WeightsCache
(weights.py). Prompt lookup first is no kind: pipeline.build_pipeline wraps any drafter but prompt lookup in it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from specviz.config import (
    BACKENDS,
    BUILT_IN_DRAFTERS,
    DISTILLED_DRAFTER,
    DRAFT_MODEL,
    LLAMA_CPP,
    MODEL_FREE_DRAFTERS,
    NGRAM_DRAFTER,
    QUANTIZED_DRAFT_MODEL,
    QUANTIZED_DRAFTER,
    TRANSFORMERS,
    DecodeConfig,
    DrafterSpec,
)
from specviz.drafters.base import Drafter
from specviz.drafters.lookup import PromptLookupDrafter
from specviz.drafters.model import DraftModelDrafter
from specviz.drafters.weights import distilled_draft, int4_draft_step, int4_model_step
from specviz.models import loading as models
from specviz.models.cache import WEIGHTS, WeightsCache


class Built(NamedTuple):
    target_model: models.LanguageModel  # the target at the vocabulary it shares with the draft
    drafter: Drafter
    draft_model: models.LanguageModel | None  # the model the drafter runs, where the pipeline times it; else None


Builder = Callable[[DrafterSpec, models.LoadedModel, DecodeConfig, list[int], WeightsCache], Built]


@dataclass(frozen=True)
class DrafterKind:
    name: str  # DrafterSpec.kind
    description: str  # what it is, in one line: the app's menus and the CLI's --draft help
    build: Builder
    assistant: bool  # transformers' generate(assistant_model=…) can run it too (the benchmark's hf_assisted)
    trees: bool = True  # it drafts token trees (a draft model grows them; drafters/tree.py), not only chains
    backends: tuple[str, ...] = tuple(BACKENDS)  # the backends (config.BACKENDS) whose models it drafts with

    @property
    def written(self) -> str:
        """How a draft name asks for it: 'int4:MODEL'."""
        return str(DrafterSpec(self.name, None if self.name in BUILT_IN_DRAFTERS else "MODEL"))

    @property
    def runs_model(self) -> bool:
        """It drafts with a causal LM of its own, which draft_window and draft_vocab shape (DecodeConfig.validate
        refuses them for the others, config.MODEL_FREE_DRAFTERS: the config may not import the registry)."""
        return self.name not in MODEL_FREE_DRAFTERS


def _ngram(spec, target, config, eos_ids, cache) -> Built:
    target_model = target.language_model(target.logits_width)
    return Built(target_model, PromptLookupDrafter(target_model.vocab_size, config.ngram_size, eos_ids), None)


def _distilled(spec, target, config, eos_ids, cache) -> Built:
    from specviz.drafters.distilled import FeatureDrafter

    target_model = target.language_model(target.logits_width, keep_features=True)  # the draft reads its states
    return Built(target_model, FeatureDrafter(distilled_draft(target, cache), target_model, DISTILLED_DRAFTER), None)


def _drafter(draft_model, config, eos_ids, twin=None) -> DraftModelDrafter:
    """A draft model's drafter with the run's draft settings: its confidence stop, prompt window and head subset."""
    return DraftModelDrafter(draft_model, twin, config.draft_confidence, config.draft_window, config.draft_vocab, eos_ids)


def _own_int4(spec, target, config, eos_ids, cache) -> Built:
    target_model = target.language_model(target.logits_width)
    step = int4_draft_step(target, cache)
    draft_model = models.TransformersModel(step, target.logits_width, target.device, QUANTIZED_DRAFTER)
    drafter = _drafter(draft_model, config, eos_ids, twin=target_model)  # starts from the target's prompt cache
    return Built(target_model, drafter, draft_model)


def _int4_model(spec, target, config, eos_ids, cache) -> Built:
    step, vocab = int4_model_step(spec.model, target, cache)
    target_model = target.language_model(vocab)
    draft_model = models.TransformersModel(step, vocab, target.device, str(spec.without_lookup()))
    return Built(target_model, _drafter(draft_model, config, eos_ids), draft_model)


def _model(spec, target, config, eos_ids, cache) -> Built:
    draft = models.load_model(spec.model, target.device, target.dtype, cache=cache, backend=config.backend)
    try:
        vocab = models.shared_vocab_size(target, draft)
    except models.IncompatibleModels as mismatch:
        return _across_tokenizers(draft, target, config, cache, mismatch)
    target_model, draft_model = target.language_model(vocab), draft.language_model(vocab)
    return Built(target_model, _drafter(draft_model, config, eos_ids), draft_model)


def _across_tokenizers(draft, target, config, cache, mismatch) -> Built:
    """A draft model of another tokenizer (issue 35): it drafts the tokens both vocabularies spell alike, through
    a VocabBridge built once per pair. IncompatibleModels, naming both, where they share no token."""
    from specviz.drafters.cross_vocab import CrossVocabDrafter
    from specviz.drafters.vocab_bridge import VocabBridge

    if config.draft_window or config.draft_vocab:
        raise ValueError("draft_window and draft_vocab shape a draft of the target's own tokenizer; this draft "
                         f"tokenizes differently ({mismatch}): set both to 0")

    def bridge() -> VocabBridge:
        try:
            return VocabBridge.between(draft.tokenizer, target.tokenizer, draft.logits_width, target.logits_width)
        except ValueError:
            raise models.IncompatibleModels(f"{mismatch} They share no token either, so the draft could propose "
                                            "nothing the target can read.") from None

    joined = cache.get(("vocab-bridge", draft.model_id, target.model_id, str(target.device)), bridge)
    target_model, draft_model = target.language_model(target.logits_width), draft.language_model(draft.logits_width)
    drafter = CrossVocabDrafter(draft_model, joined, target.tokenizer, draft.tokenizer, config.draft_confidence)
    return Built(target_model, drafter, draft_model)


KINDS = {kind.name: kind for kind in (
    DrafterKind(NGRAM_DRAFTER, "copies the tokens that followed the last few tokens' earlier match in the text, no "
                               "model", _ngram, assistant=False, trees=False),  # prompt lookup
    DrafterKind(DISTILLED_DRAFTER, "the small head distilled from the offline target, shipped in assets/", _distilled,
                assistant=False, trees=False, backends=(TRANSFORMERS,)),  # it reads the target's hidden states of one path
    DrafterKind(QUANTIZED_DRAFTER, "the target's own 4-bit copy, on a CPU", _own_int4, assistant=True,
                backends=(TRANSFORMERS,)),  # torch's 4-bit kernels over the float model
    DrafterKind(QUANTIZED_DRAFT_MODEL, "a draft model run as its 4-bit copy, on a CPU", _int4_model, assistant=True,
                backends=(TRANSFORMERS,)),
    DrafterKind(DRAFT_MODEL, "a draft model, hub id or folder; one of another tokenizer drafts the tokens both "
                             "vocabularies share", _model, assistant=True),
)}
# Prompt lookup first is no kind of its own: build_pipeline wraps any kind but prompt lookup in it.
LOOKUP_FIRST_DESCRIPTION = "copies where prompt lookup matches and copying has paid off, drafts with the draft model elsewhere"


def lookup_first_written() -> str:
    """How a draft name puts prompt lookup first: 'ngram+DRAFT'."""
    return str(DrafterSpec(DRAFT_MODEL, "DRAFT", lookup_first=True))


def describe(spec: DrafterSpec | str) -> str:
    """The one line that says what a drafter (or a kind, by name) is."""
    return KINDS[spec if isinstance(spec, str) else spec.kind].description


def help_text() -> str:
    """Every way to name a drafter, one clause each: "'ngram': copies …; …; 'ngram+DRAFT': copies where …"."""
    clauses = [f"'{kind.written}': {kind.description}" for kind in KINDS.values()]
    return "; ".join([*clauses, f"'{lookup_first_written()}': {LOOKUP_FIRST_DESCRIPTION}"])


def check_trees(spec: DrafterSpec) -> None:
    """ValueError in words when a token tree is asked of a drafter that drafts chains only."""
    if not KINDS[spec.kind].trees:
        what = {NGRAM_DRAFTER: "Prompt lookup", DISTILLED_DRAFTER: "The distilled head"}.get(spec.kind, "This drafter")
        raise ValueError(f"{what} drafts one continuation: a token tree needs a draft model (the {spec.kind!r} drafter "
                         "drafts chains only)")


def check_backend(spec: DrafterSpec, backend: str) -> None:
    """ValueError in words when the drafter cannot draft on this backend (before any model loads)."""
    if backend not in KINDS[spec.kind].backends:
        raise ValueError(f"the {str(spec)!r} drafter runs on the {' or '.join(KINDS[spec.kind].backends)} backend, not "
                         f"{backend}: on {LLAMA_CPP} draft with prompt lookup ('ngram') or a draft model's GGUF")


def build(spec: DrafterSpec, target: models.LoadedModel, config: DecodeConfig, eos_ids: list[int],
          cache: WeightsCache = WEIGHTS) -> Built:
    """The target model, drafter and draft model of `spec`'s kind, without prompt lookup first."""
    return KINDS[spec.kind].build(spec, target, config, eos_ids, cache)
