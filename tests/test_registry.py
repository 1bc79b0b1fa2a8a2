"""drafters/registry.py: every kind a DrafterSpec names has one builder and one line that says what it is, and the
CLI, the app and the benchmark read those instead of listing the kinds themselves."""

import pytest

from specviz.config import (
    DISTILLED_DRAFTER,
    DRAFTER_KINDS,
    NGRAM_DRAFTER,
    QUANTIZED_DRAFT_MODEL,
    QUANTIZED_DRAFTER,
    DecodeConfig,
    DrafterSpec,
)
from specviz.drafters import registry


def test_the_registry_lists_every_kind_a_spec_can_name_once_in_order():
    assert tuple(registry.KINDS) == DRAFTER_KINDS
    for name, kind in registry.KINDS.items():
        assert kind.name == name and callable(kind.build)
        assert kind.description and "\n" not in kind.description and len(kind.description) < 100
        assert DrafterSpec.parse(kind.written).kind == name  # the form shown is a name that asks for this kind


def test_the_written_forms_are_the_names_a_user_types():
    assert [kind.written for kind in registry.KINDS.values()] == ["ngram", "distilled", "int4", "int4:MODEL", "MODEL"]
    assert registry.lookup_first_written() == "ngram+DRAFT"


def test_the_cli_help_lists_every_kind_from_the_registry():
    from specviz.cli import build_parser

    generate = build_parser()._subparsers._group_actions[0].choices["generate"]
    draft_help = next(action.help for action in generate._actions if "--draft" in action.option_strings)
    assert registry.help_text() in draft_help
    for kind in registry.KINDS.values():
        assert f"'{kind.written}': {kind.description}" in draft_help
    assert f"'ngram+DRAFT': {registry.LOOKUP_FIRST_DESCRIPTION}" in draft_help


def test_the_app_describes_its_built_in_drafters_with_the_registry_line():
    from specviz.app.pair_menu import OFFLINE_PAIR, PAIRS, drafter_help, pair_help

    int4_pair = next(name for name, (_, draft) in PAIRS.items() if draft == QUANTIZED_DRAFTER)
    assert registry.describe(DISTILLED_DRAFTER) in pair_help(OFFLINE_PAIR)
    assert registry.describe(DISTILLED_DRAFTER) in drafter_help(OFFLINE_PAIR)
    assert registry.describe(QUANTIZED_DRAFTER) in pair_help(int4_pair) and registry.describe(QUANTIZED_DRAFTER) in \
        drafter_help(int4_pair)
    assert registry.describe(NGRAM_DRAFTER) in drafter_help(OFFLINE_PAIR)  # the "Prompt lookup" choice
    assert registry.describe(DrafterSpec(QUANTIZED_DRAFT_MODEL, "gpt2")) == registry.describe(QUANTIZED_DRAFT_MODEL)


@pytest.mark.parametrize("draft, assistant", [("ngram", False), ("distilled", False), ("int4", True), ("gpt2", True),
                                               ("int4:gpt2", True), ("ngram+int4", False), ("ngram+gpt2", False)])
def test_the_benchmark_runs_as_transformers_assistants_the_kinds_the_registry_marks(draft, assistant):
    from specviz.bench.run import _assistant

    assert _assistant(draft) == assistant


def test_each_kind_builds_what_the_pipeline_built_for_it(offline_target):
    from specviz.decoding.pipeline import build_pipeline, eos_ids
    from specviz.drafters.lookup import LookupThenModelDrafter, PromptLookupDrafter
    from specviz.drafters.model import DraftModelDrafter

    config = DecodeConfig(draft=NGRAM_DRAFTER).validate()
    target_model, drafter, draft_model = registry.build(config.drafter, offline_target, config, eos_ids(offline_target))
    assert isinstance(drafter, PromptLookupDrafter) and draft_model is None
    assert target_model.vocab_size == drafter.vocab_size == offline_target.logits_width

    pipeline = build_pipeline(DecodeConfig(draft="ngram+int4").validate())
    assert isinstance(pipeline.drafter, LookupThenModelDrafter) and pipeline.drafter.name == "ngram+int4"
    model = pipeline.drafter.model
    assert isinstance(model, DraftModelDrafter) and model.twin is pipeline.target and model.model is pipeline.draft_model
    assert pipeline.draft_model.name == QUANTIZED_DRAFTER
