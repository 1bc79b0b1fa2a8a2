"""Every drafter provides what the Drafter protocol states (drafters/base.py), so the engine, the pipeline and
adaptive γ read its members directly instead of probing for them; and each says in one member, chains_only, whether
it drafts token trees, which its propose() keeps to: a tree from a drafter that drafts trees, the one refusal from
one that does not."""

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from specviz.core.sampling import Standardizer
from specviz.core.tree_shape import shape_for
from specviz.drafters import kinds
from specviz.drafters.base import Drafter
from specviz.drafters.distilled import FeatureDrafter
from tests.cross_vocab_toys import cross_vocab_pipeline
from tests.fakes import FakeLanguageModel, fake_pipeline

MEMBERS = [name for name in Drafter.__annotations__] + ["begin", "propose"]
PACKAGE = Path(__file__).resolve().parent.parent / "specviz"
DRAFTERS = {
    "model": lambda: fake_pipeline(8, drafter="model").drafter,
    "ngram": lambda: fake_pipeline(8, drafter="ngram").drafter,
    "ngram+model": lambda: fake_pipeline(8, drafter="ngram+model").drafter,
    "another tokenizer": lambda: cross_vocab_pipeline().drafter,
    "distilled": lambda: FeatureDrafter(SimpleNamespace(config=None), FakeLanguageModel(8, salt=1), "distilled"),
}


@pytest.mark.parametrize("name", DRAFTERS)
def test_each_drafter_has_every_member_of_the_protocol(name):
    drafter = DRAFTERS[name]()
    assert MEMBERS == ["name", "costless", "forward_seconds", "chains_only", "begin", "propose"]
    assert [member for member in MEMBERS if not hasattr(drafter, member)] == []
    assert isinstance(drafter.costless, bool) and drafter.forward_seconds == 0.0 and isinstance(drafter.name, str)
    assert isinstance(drafter.chains_only, str)


@pytest.mark.parametrize("name, trees", [("model", True), ("ngram+model", True), ("ngram", False),
                                         ("another tokenizer", False), ("distilled", False)])
def test_a_drafter_drafts_a_tree_exactly_when_chains_only_is_empty(name, trees):
    drafter = DRAFTERS[name]()
    assert (drafter.chains_only == "") == trees
    if name == "distilled":  # its refusal comes before it reads any state
        sequence = [1, 2, 3]
    else:
        sequence = [3, 1, 2, 0, 1, 2] if name != "another tokenizer" else [0, 1]
        drafter.begin()
    shape = shape_for(3, 6)
    generator = torch.Generator().manual_seed(0)
    if trees:
        draft = drafter.propose(sequence, 3, Standardizer(1.0, 0, 1.0), generator, shape)
        assert draft.tree_parents != list(range(-1, draft.tokens.numel() - 1))  # a real tree, not a chain
    else:
        with pytest.raises(ValueError) as refusal:
            drafter.propose(sequence, 3, Standardizer(1.0, 0, 1.0), generator, shape)
        assert str(refusal.value).startswith(drafter.chains_only[:1].upper() + drafter.chains_only[1:] + ": a token tree")


def test_each_kind_row_names_the_drafter_class_it_builds_and_reads_trees_from_it():
    assert {name: kind.trees for name, kind in kinds.KINDS.items()} == {
        "ngram": False, "suffix": False, "distilled": False, "int4": True, "int4-model": True, "model": True}
    assert all(kind.trees == (kind.drafter.chains_only == "") for kind in kinds.KINDS.values())


def test_no_code_probes_a_drafter_for_a_member_with_getattr():
    probes = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr")
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value in MEMBERS):
                probes.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert probes == []
