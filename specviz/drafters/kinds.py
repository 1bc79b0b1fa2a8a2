"""Every kind of drafter a DrafterSpec can name, one row each: how it is written, what it is called in a sentence,
what it is (one line for the app's menus and the CLI's --draft help), how it is built for a loaded target, and the
drafter class it builds, whose `chains_only` says whether it drafts token trees. The app, the CLI, the benchmark and
the checks read these rows; a new kind is one row here, its builder, and its name in config.py's grammar.

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
    NGRAM_DRAFTER,
    QUANTIZED_DRAFT_MODEL,
    QUANTIZED_DRAFTER,
    SUFFIX_DRAFTER,
    TRANSFORMERS,
    DecodeConfig,
    DrafterSpec,
)
from specviz.drafters.base import Drafter, refuse_tree
from specviz.drafters.distilled import FeatureDrafter
from specviz.drafters.lookup import PromptLookupDrafter
from specviz.drafters.model import DraftModelDrafter
from specviz.drafters.suffix import SuffixDrafter
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
    label: str  # what a sentence calls it: "prompt lookup"
    description: str  # what it is, in one line: the app's menus and the CLI's --draft help
    build: Builder
    drafter: type  # the drafter class it builds: its chains_only says whether it drafts token trees
    assistant: bool  # transformers' generate(assistant_model=…) can run it too (the benchmark's hf_assisted)
    runs_model: bool = True  # it drafts with a causal LM of its own, which draft_window and draft_vocab shape
    backends: tuple[str, ...] = tuple(BACKENDS)  # the backends (config.BACKENDS) whose models it drafts with

    @property
    def trees(self) -> bool:
        """It drafts token trees (a draft model grows them; drafters/tree.py), not only chains. A draft model of
        another tokenizer is built as a chain drafter: check_built refuses its trees once the tokenizers are read."""
        return not self.drafter.chains_only

    @property
    def written(self) -> str:
        """How a draft name asks for it: 'int4:MODEL'."""
        return str(DrafterSpec(self.name, None if self.name in BUILT_IN_DRAFTERS else "MODEL"))


def _ngram(spec, target, config, eos_ids, cache) -> Built:
    target_model = target.language_model(target.logits_width)
    return Built(target_model, PromptLookupDrafter(target_model.vocab_size, config.ngram_size, eos_ids), None)


def _suffix(spec, target, config, eos_ids, cache) -> Built:
    target_model = target.language_model(target.logits_width)
    return Built(target_model, SuffixDrafter(target_model.vocab_size), None)


def _distilled(spec, target, config, eos_ids, cache) -> Built:
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
    target_model, draft_model = (model.language_model(vocab, trees=config.tree) for model in (target, draft))
    return Built(target_model, _drafter(draft_model, config, eos_ids), draft_model)


def _across_tokenizers(draft, target, config, cache, mismatch) -> Built:
    """A draft model of another tokenizer: it drafts the tokens both vocabularies spell alike, through
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
    DrafterKind(NGRAM_DRAFTER, "prompt lookup", "copies the tokens that followed the last few tokens' earlier match in "
                "the text, no model", _ngram, PromptLookupDrafter, assistant=False, runs_model=False),
    DrafterKind(SUFFIX_DRAFTER, "suffix drafting", "continues the text as its ending was most often continued before in "
                "the text, no model", _suffix, SuffixDrafter,
                assistant=False, runs_model=False),
    DrafterKind(DISTILLED_DRAFTER, "the distilled head", "the small head distilled from the offline target, shipped in "
                "assets/", _distilled, FeatureDrafter, assistant=False, runs_model=False,
                backends=(TRANSFORMERS,)),  # it reads the target's hidden states of one path
    DrafterKind(QUANTIZED_DRAFTER, "the target's 4-bit copy", "the target's own 4-bit copy, on a CPU", _own_int4,
                DraftModelDrafter, assistant=True, backends=(TRANSFORMERS,)),  # torch's 4-bit kernels over the float model
    DrafterKind(QUANTIZED_DRAFT_MODEL, "a 4-bit draft model", "a draft model run as its 4-bit copy, on a CPU",
                _int4_model, DraftModelDrafter, assistant=True, backends=(TRANSFORMERS,)),
    DrafterKind(DRAFT_MODEL, "a draft model", "a draft model, hub id or folder; one of another tokenizer drafts the "
                "tokens both vocabularies share", _model, DraftModelDrafter, assistant=True),
)}
# Prompt lookup first is no kind of its own: build_pipeline wraps any kind but prompt lookup in it.
LOOKUP_FIRST_DESCRIPTION = "copies where prompt lookup matches and copying has paid off, drafts with the draft model elsewhere"
SUFFIX_FIRST_DESCRIPTION = "the same with suffix drafting as the copying source"


def lookup_first_written() -> str:
    """How a draft name puts prompt lookup first: 'ngram+DRAFT'."""
    return str(DrafterSpec(DRAFT_MODEL, "DRAFT", lookup_first=True))


def describe(spec: DrafterSpec | str) -> str:
    """The one line that says what a drafter (or a kind, by name) is."""
    return KINDS[spec if isinstance(spec, str) else spec.kind].description


def help_text() -> str:
    """Every way to name a drafter, one clause each: "'ngram': copies …; …; 'ngram+DRAFT': copies where …"."""
    clauses = [f"'{kind.written}': {kind.description}" for kind in KINDS.values()]
    suffix_first = str(DrafterSpec(DRAFT_MODEL, "DRAFT", lookup_first=True, first=SUFFIX_DRAFTER))
    return "; ".join([*clauses, f"'{lookup_first_written()}': {LOOKUP_FIRST_DESCRIPTION}",
                      f"'{suffix_first}': {SUFFIX_FIRST_DESCRIPTION}"])


def check(config: DecodeConfig) -> None:
    """ValueError in words for what the drafter's row says it cannot do with this config, before any model loads:
    settings that shape a draft model when it runs none, a backend it cannot draft on, a token tree it cannot draft."""
    spec = config.drafter
    kind = KINDS[spec.kind]
    for name, what in (("draft_window", "prompt a draft model reads"), ("draft_vocab", "tokens a draft model scores")):
        if getattr(config, name) and not kind.runs_model:
            raise ValueError(f"{name} limits the {what}, and {kind.label} runs none: set it to 0 or choose a draft model")
    if config.backend not in kind.backends:
        raise ValueError(f"the {str(spec)!r} drafter runs on the {' or '.join(kind.backends)} backend, not "
                         f"{config.backend}: on {LLAMA_CPP} draft with prompt lookup ('ngram'), suffix drafting "
                         "('suffix') or a draft model's GGUF")
    if config.tree and not kind.trees:
        raise refuse_tree(_Named(spec.kind, kind.drafter.chains_only))


def check_built(drafter: Drafter, config: DecodeConfig) -> None:
    """ValueError in words when a token tree is asked of the drafter actually built and it drafts chains only (a
    draft model of another tokenizer, which its row could not tell before the tokenizers were read)."""
    if config.tree and drafter.chains_only:
        raise refuse_tree(drafter)


class _Named(NamedTuple):
    name: str  # how the refusal names the drafter
    chains_only: str


def build(spec: DrafterSpec, target: models.LoadedModel, config: DecodeConfig, eos_ids: list[int],
          cache: WeightsCache = WEIGHTS) -> Built:
    """The target model, drafter and draft model of `spec`'s kind, without prompt lookup first."""
    return KINDS[spec.kind].build(spec, target, config, eos_ids, cache)
