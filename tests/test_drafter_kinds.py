"""drafters/kinds.py: every kind a DrafterSpec names has one builder and one line that says what it is, and the
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
from specviz.drafters import kinds


def test_the_kinds_table_lists_every_kind_a_spec_can_name_once_in_order():
    assert tuple(kinds.KINDS) == DRAFTER_KINDS
    for name, kind in kinds.KINDS.items():
        assert kind.name == name and callable(kind.build)
        assert kind.description and "\n" not in kind.description and len(kind.description) < 100
        assert DrafterSpec.parse(kind.written).kind == name  # the form shown is a name that asks for this kind


def test_the_written_forms_are_the_names_a_user_types():
    assert [kind.written for kind in kinds.KINDS.values()] == ["ngram", "suffix", "distilled", "int4", "int4:MODEL", "MODEL"]
    assert kinds.lookup_first_written() == "ngram+DRAFT"


def test_the_cli_help_lists_every_kind_from_the_kinds_table():
    from specviz.cli import build_parser

    generate = build_parser()._subparsers._group_actions[0].choices["generate"]
    draft_help = next(action.help for action in generate._actions if "--draft" in action.option_strings)
    assert kinds.help_text() in draft_help
    for kind in kinds.KINDS.values():
        assert f"'{kind.written}': {kind.description}" in draft_help
    assert f"'ngram+DRAFT': {kinds.LOOKUP_FIRST_DESCRIPTION}" in draft_help


def test_the_app_describes_its_built_in_drafters_with_the_kinds_table_line():
    from specviz.app.pair_menu import OFFLINE_PAIR, PAIRS, drafter_help, pair_help

    int4_pair = next(name for name, (_, draft) in PAIRS.items() if draft == QUANTIZED_DRAFTER)
    assert kinds.describe(DISTILLED_DRAFTER) in pair_help(OFFLINE_PAIR)
    assert kinds.describe(DISTILLED_DRAFTER) in drafter_help(OFFLINE_PAIR)
    assert kinds.describe(QUANTIZED_DRAFTER) in pair_help(int4_pair) and kinds.describe(QUANTIZED_DRAFTER) in \
        drafter_help(int4_pair)
    assert kinds.describe(NGRAM_DRAFTER) in drafter_help(OFFLINE_PAIR)  # the "Prompt lookup" choice
    assert kinds.describe(DrafterSpec(QUANTIZED_DRAFT_MODEL, "gpt2")) == kinds.describe(QUANTIZED_DRAFT_MODEL)


@pytest.mark.parametrize("draft, assistant", [("ngram", False), ("distilled", False), ("int4", True), ("gpt2", True),
                                               ("int4:gpt2", True), ("ngram+int4", False), ("ngram+gpt2", False)])
def test_the_benchmark_runs_as_transformers_assistants_the_kinds_the_kinds_table_marks(draft, assistant):
    from specviz.bench.run import _assistant

    assert _assistant(draft) == assistant


def test_each_kind_builds_what_the_pipeline_built_for_it(offline_target):
    from specviz.decoding.pipeline import build_pipeline, eos_ids
    from specviz.drafters.lookup import LookupThenModelDrafter, PromptLookupDrafter
    from specviz.drafters.model import DraftModelDrafter

    config = DecodeConfig(draft=NGRAM_DRAFTER).validate()
    target_model, drafter, draft_model = kinds.build(config.drafter, offline_target, config, eos_ids(offline_target))
    assert isinstance(drafter, PromptLookupDrafter) and draft_model is None
    assert target_model.vocab_size == drafter.vocab_size == offline_target.logits_width

    pipeline = build_pipeline(DecodeConfig(draft="ngram+int4").validate())
    assert isinstance(pipeline.drafter, LookupThenModelDrafter) and pipeline.drafter.name == "ngram+int4"
    model = pipeline.drafter.model
    assert isinstance(model, DraftModelDrafter) and model.twin is pipeline.target and model.model is pipeline.draft_model
    assert pipeline.draft_model.name == QUANTIZED_DRAFTER


def _bytes_tokenizer(folder):
    """A tokenizer of another vocabulary than the offline target's: byte-level, one token per byte, no merges."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {token: index for index, token in enumerate(["<unk>", "<s>", "</s>", *sorted(alphabet)])}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>"), len(vocab)


@pytest.fixture(scope="module")
def pair_of_two_tokenizers(tmp_path_factory):
    """Two local checkpoints as a user's folders would be: a target with the offline model's tokenizer, a draft with
    a byte-level tokenizer of its own (tiny random Llamas, built here)."""
    from transformers import AutoTokenizer

    from specviz.models.offline import offline_checkpoint
    from tests.conftest import save_tiny_llama

    folder = tmp_path_factory.mktemp("two-tokenizers")
    target_tokenizer = AutoTokenizer.from_pretrained(offline_checkpoint())
    draft_tokenizer, draft_vocab = _bytes_tokenizer(folder)
    return (save_tiny_llama(folder / "target", target_tokenizer, len(target_tokenizer)),
            save_tiny_llama(folder / "draft", draft_tokenizer, draft_vocab, seed=1))


def test_a_draft_of_another_tokenizer_is_refused_a_tree_in_true_words_before_any_forward(pair_of_two_tokenizers):
    """Its kind (a draft model) drafts trees, so the row cannot tell; the drafter built for it can, and says why."""
    from specviz.decoding.pipeline import build_pipeline
    from specviz.drafters.cross_vocab import CrossVocabDrafter

    target, draft = pair_of_two_tokenizers
    config = DecodeConfig(target=target, draft=draft, gamma=3, max_new_tokens=6, chat=False, tree=True).validate()
    kinds.check(config)  # the row: a draft model may draft trees
    with pytest.raises(ValueError) as refusal:
        build_pipeline(config)
    assert str(refusal.value) == (f"{CrossVocabDrafter.chains_only[0].upper()}{CrossVocabDrafter.chains_only[1:]}: a "
                                  "token tree needs a draft model of the target's own tokenizer (the "
                                  f"'{draft} (across tokenizers)' drafter drafts chains only)")
    chains = build_pipeline(DecodeConfig(target=target, draft=draft, gamma=3, chat=False))  # the same pair, chains
    assert isinstance(chains.drafter, CrossVocabDrafter) and chains.target.forward_seconds == 0.0


def test_the_command_line_refuses_it_in_one_line(pair_of_two_tokenizers, capsys):
    from specviz import cli

    target, draft = pair_of_two_tokenizers
    assert cli.main(["generate", "--prompt", "hi", "--target", target, "--draft", draft, "--tree"]) != 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specviz: A draft of another tokenizer drafts one chain")
