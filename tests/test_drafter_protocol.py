"""Every drafter provides what the Drafter protocol states (drafters/base.py), so the engine, the pipeline and
adaptive γ read its members directly instead of probing for them."""

import ast
import inspect
from pathlib import Path

import pytest

from specviz.drafters.base import Drafter
from tests.fakes import fake_pipeline

MEMBERS = [name for name in Drafter.__annotations__] + ["begin", "propose"]
PACKAGE = Path(__file__).resolve().parent.parent / "specviz"


@pytest.mark.parametrize("kind", ["model", "ngram", "ngram+model"])
def test_each_drafter_has_every_member_of_the_protocol(kind):
    drafter = fake_pipeline(8, drafter=kind).drafter
    assert MEMBERS == ["name", "costless", "forward_seconds", "drafts_trees", "begin", "propose"]
    assert [name for name in MEMBERS if not hasattr(drafter, name)] == []
    assert isinstance(drafter.costless, bool) and drafter.forward_seconds == 0.0


def test_the_distilled_drafter_states_them_too():
    from specviz.drafters.distilled import FeatureDrafter

    source = inspect.getsource(FeatureDrafter)
    assert "costless = " in source and "self.forward_seconds = " in source and "self.name = " in source
    assert "self.drafts_trees = " in source


def test_no_code_probes_a_drafter_for_a_member_with_getattr():
    probes = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr")
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value in ("costless", "forward_seconds")):
                probes.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert probes == []
