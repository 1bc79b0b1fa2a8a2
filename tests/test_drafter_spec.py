"""Draft names are parsed once, in config.DrafterSpec: every name accepted before reads back the same, every
refusal keeps its sentence, and no module outside config.py reads a name apart."""

import ast
from pathlib import Path

import pytest

from specviz.config import (
    BUILT_IN_DRAFTERS,
    DISTILLED_DRAFTER,
    DRAFT_MODEL,
    DRAFTER_KINDS,
    NGRAM_DRAFTER,
    QUANTIZED_DRAFT_MODEL,
    QUANTIZED_DRAFTER,
    DecodeConfig,
    DrafterSpec,
)

PACKAGE = Path(__file__).resolve().parent.parent / "specviz"
MODELS = ["gpt2", "HuggingFaceTB/SmolLM2-135M-Instruct", "offline:Qwen2.5-Coder-0.5B-Instruct", "./models/tiny/",
          "/abs/folder", " spaced ", "ngram+x"]
ACCEPTED = [*BUILT_IN_DRAFTERS, "ngram+distilled", "ngram+int4", *MODELS, *(f"int4:{m}" for m in MODELS),
            *(f"ngram+{m}" for m in MODELS), *(f"ngram+int4:{m}" for m in MODELS), "int4:int4:x", " ngram", "ngram "]
REFUSED = ["", " ", "\t", None, 3, "ngram+", "ngram+ ", "ngram+ngram", "ngram+ ngram ", "int4:", "int4: ", "int4:ngram",
           "int4:distilled", "int4:int4", "ngram+int4:", "ngram+int4:distilled"]


def _old_reading(draft):
    """The names as DecodeConfig read them before DrafterSpec (its lookup_first, drafting_model, draft_model_id
    properties and validate()), kept here as the reference: (lookup_first, drafting model, model id) or the sentence."""
    if not isinstance(draft, str) or not draft.strip():
        return "draft model must be a non-empty id or path"
    lookup_first, drafting = draft.startswith("ngram+"), draft.removeprefix("ngram+")
    model_id = drafting.removeprefix("int4:")
    if lookup_first and drafting.strip() in ("", "ngram"):
        return f"'ngram+' must be followed by a draft model or 'distilled', got {draft!r}"
    if drafting.startswith("int4:") and (not model_id.strip() or model_id in ("ngram", "distilled", "int4")):
        return f"'int4:' must be followed by a draft model id or folder, got {draft!r}"
    return lookup_first, drafting, model_id


@pytest.mark.parametrize("name", ACCEPTED)
def test_every_name_accepted_before_reads_as_before_and_writes_back_the_same(name):
    spec = DrafterSpec.parse(name)
    assert str(spec) == name and DrafterSpec.parse(str(spec)) == spec
    lookup_first, drafting, model_id = _old_reading(name)
    # without lookup, a model whose id begins 'ngram+' (named only by 'ngram+ngram+…') has no name of its own
    assert spec.lookup_first == lookup_first
    assert (spec.model if spec.kind == DRAFT_MODEL else str(spec.without_lookup())) == drafting
    assert (spec.model if spec.model is not None else spec.kind) == model_id
    assert spec.kind == (drafting if drafting in BUILT_IN_DRAFTERS else
                         QUANTIZED_DRAFT_MODEL if drafting.startswith("int4:") else DRAFT_MODEL)


@pytest.mark.parametrize("name", REFUSED)
def test_every_name_refused_before_is_refused_with_the_same_sentence(name):
    with pytest.raises(ValueError) as refused:
        DrafterSpec.parse(name)
    assert str(refused.value) == _old_reading(name)
    with pytest.raises(ValueError) as by_config:
        DecodeConfig(draft=name).validate()
    assert str(by_config.value) == _old_reading(name)


@pytest.mark.parametrize("spec", [
    DrafterSpec(NGRAM_DRAFTER), DrafterSpec(DISTILLED_DRAFTER), DrafterSpec(DISTILLED_DRAFTER, lookup_first=True),
    DrafterSpec(QUANTIZED_DRAFTER), DrafterSpec(QUANTIZED_DRAFTER, lookup_first=True),
    DrafterSpec(QUANTIZED_DRAFT_MODEL, "Qwen/Qwen2.5-0.5B-Instruct"), DrafterSpec(QUANTIZED_DRAFT_MODEL, "gpt2", True),
    DrafterSpec(DRAFT_MODEL, "gpt2"), DrafterSpec(DRAFT_MODEL, "./tiny", True), DrafterSpec(DRAFT_MODEL, "ngram+x", True),
], ids=str)
def test_every_spec_round_trips_through_its_name(spec):
    assert DrafterSpec.parse(str(spec)) == spec
    if spec.kind == NGRAM_DRAFTER:
        with pytest.raises(ValueError, match="must be followed by a draft model"):
            spec.with_lookup()
    else:
        assert spec.with_lookup() == DrafterSpec(spec.kind, spec.model, lookup_first=True)
    if spec.model is None or not spec.model.startswith("ngram+"):
        assert spec.without_lookup() == DrafterSpec(spec.kind, spec.model)


@pytest.mark.parametrize("kind, model, lookup_first", [
    ("tree", None, False), (NGRAM_DRAFTER, "gpt2", False), (DRAFT_MODEL, None, False), (QUANTIZED_DRAFT_MODEL, None, False),
    (NGRAM_DRAFTER, None, True), (DRAFT_MODEL, "int4", False), (DRAFT_MODEL, "int4:gpt2", False),
    (DRAFT_MODEL, "ngram+gpt2", False), (DRAFT_MODEL, "", False), (QUANTIZED_DRAFT_MODEL, "ngram", False),
    (DISTILLED_DRAFTER, None, "yes"),
])
def test_a_spec_that_no_name_writes_is_refused(kind, model, lookup_first):
    with pytest.raises(ValueError):
        DrafterSpec(kind, model, lookup_first)


def test_the_config_keeps_the_name_and_parses_it_once():
    config = DecodeConfig(draft="ngram+int4:gpt2").validate()
    assert config.draft == "ngram+int4:gpt2" and config.to_dict()["draft"] == "ngram+int4:gpt2"  # traces keep the text
    assert config.drafter == DrafterSpec(QUANTIZED_DRAFT_MODEL, "gpt2", lookup_first=True)
    assert config.drafter is config.drafter  # parsed once
    assert DecodeConfig.from_dict(config.to_dict()) == config and "drafter" not in config.to_dict()
    assert set(DRAFTER_KINDS) == {*BUILT_IN_DRAFTERS, QUANTIZED_DRAFT_MODEL, DRAFT_MODEL}


NAME_PARTS = ("LOOKUP_FIRST", "QUANTIZED_MODEL")  # config's constants for the parts of a name
STRING_METHODS = {"removeprefix", "removesuffix", "startswith", "endswith", "split", "rsplit", "partition",
                  "rpartition", "replace", "find", "index"}


def _reads_a_name(node) -> bool:
    """A use of a name part, or a string method or concatenation with a literal that holds a drafter's name."""
    if isinstance(node, ast.Name) and node.id in NAME_PARTS or isinstance(node, ast.alias) and node.name in NAME_PARTS:
        return True
    literals = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STRING_METHODS:
        literals = [arg for arg in node.args if isinstance(arg, (ast.Constant, ast.Tuple))]
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        literals = [node.left, node.right]
    texts = [value.value for literal in literals for value in ast.walk(literal) if isinstance(value, ast.Constant)]
    return any(isinstance(text, str) and any(part in text for part in ("ngram", "int4", "distilled")) for text in texts)


def test_no_module_outside_config_reads_a_drafter_name_apart():
    offenders = [f"{path.relative_to(PACKAGE)}:{node.lineno}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path != PACKAGE / "config.py"
                 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if _reads_a_name(node)]
    assert offenders == [], "ask config.DrafterSpec (kind, model, lookup_first) instead: " + ", ".join(offenders)


def test_the_check_sees_the_parsing_it_forbids():
    for source in ('draft.removeprefix(LOOKUP_FIRST)', 'draft.startswith("int4:")', '"ngram+" + draft',
                   'from specviz.config import QUANTIZED_MODEL', 'draft.partition("ngram+")'):
        assert any(_reads_a_name(node) for node in ast.walk(ast.parse(source))), source
