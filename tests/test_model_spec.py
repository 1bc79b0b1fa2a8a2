"""Model names are parsed once, in config.ModelSpec: the `offline:` prefix and the `@Q4_0` ending read back the same,
and no module outside config.py reads them apart with string methods."""

import ast
from pathlib import Path

import pytest

from specviz.config import OFFLINE_MODEL, ModelSpec
from specviz.models.requantize import split_variant, variant

PACKAGE = Path(__file__).resolve().parent.parent / "specviz"
NAMES = [OFFLINE_MODEL, "offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0", "gpt2", "Qwen/Qwen2.5-0.5B-Instruct", "./m/x@2/",
         "/abs/run@home/model", "model@Q8_0", "offline:gemma-3-270m", "a@b@IQ4_NL", "@Q4_0", "x@q4_0"]


@pytest.mark.parametrize("name", NAMES)
def test_a_name_reads_back_the_same(name):
    assert str(ModelSpec.parse(name)) == name


@pytest.mark.parametrize("name, spec", [
    ("offline:SmolLM2-135M-Instruct", ModelSpec("SmolLM2-135M-Instruct", offline=True)),
    ("offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0", ModelSpec("Qwen2.5-Coder-1.5B-Instruct", True, "Q4_0")),
    ("/abs/run@home/model", ModelSpec("/abs/run@home/model")),  # an "@" inside a path is the path's
    ("@Q4_0", ModelSpec("@Q4_0")),  # nothing before the ending: a name, not a requantization
    ("x@q4_0", ModelSpec("x@q4_0")),  # quantization types are upper case
    ("a@b@IQ4_NL", ModelSpec("a@b", requantized="IQ4_NL")),
])
def test_the_parts(name, spec):
    assert ModelSpec.parse(name) == spec


def test_requantize_reads_the_spec():
    base, requantization = split_variant("offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0")
    assert (base, requantization.name) == ("offline:Qwen2.5-Coder-1.5B-Instruct", "Q4_0")
    assert variant(base, requantization) == "offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0"
    with pytest.raises(ValueError, match="Q9_9, which is none of"):
        split_variant("gpt2@Q9_9")


def _reads_a_name(node) -> bool:
    """A string method or concatenation with a literal "offline:" or "@", or a use of the prefix's constant."""
    if isinstance(node, ast.Name) and node.id in ("OFFLINE", "REQUANTIZED"):
        return True
    if isinstance(node, ast.alias) and node.name in ("OFFLINE", "REQUANTIZED"):
        return True
    literals = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
            "removeprefix", "removesuffix", "startswith", "endswith", "split", "rsplit", "partition", "rpartition",
            "replace", "find", "index"):
        literals = node.args
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        literals = [node.left, node.right]
    texts = [value.value for literal in literals for value in ast.walk(literal) if isinstance(value, ast.Constant)]
    return any(isinstance(text, str) and text in ("offline:", "offline", "@") for text in texts)


def test_no_module_outside_config_reads_a_model_name_apart():
    offenders = [f"{path.relative_to(PACKAGE)}:{node.lineno}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path != PACKAGE / "config.py"
                 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if _reads_a_name(node)]
    assert offenders == [], "ask config.ModelSpec (name, offline, requantized) instead: " + ", ".join(offenders)


def test_the_check_sees_the_parsing_it_forbids():
    for source in ('model.removeprefix("offline:")', 'model.startswith("offline:")', '"offline:" + name',
                   'model.rpartition("@")', 'from specviz.config import OFFLINE'):
        assert any(_reads_a_name(node) for node in ast.walk(ast.parse(source))), source
    assert not any(_reads_a_name(node) for node in ast.walk(ast.parse('ModelSpec.parse(model).name')))
