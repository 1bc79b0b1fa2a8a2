"""The shape of the package, read from its import graph (every `import` in every module, lazy ones too).

The folders are the layers, bottom to top (docs/architecture.md): core (the pure maths) -> models -> drafters -> decoding ->
analysis -> views -> labs -> app, with bench and distill as tools and a few base modules beneath them all. A module's
layer is its first folder (LAYERS); it imports only from its own layer and those below it, but for edges named in
ALLOWED_RIGHTWARD, each with its reason. Only specviz/app/ imports gradio; the core never imports the tools (app,
bench, distill); nothing imports in a cycle.
"""

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specviz"
TOOLS = ("specviz.app", "specviz.bench", "specviz.distill")
ENTRY_POINTS = {"specviz.cli", "specviz.__main__"}  # they dispatch to the tools by name (`python -m specviz bench`)
# Files split by idea, not by size (docs/architecture.md): about 250 lines reads in one sitting; one idea may take longer, and
# a file past this is a question to answer by splitting it where its ideas part.
MAX_LINES = 400


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of every module this file imports, at any depth of the file (lazy imports count)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return set(_imports_in(path.read_text(encoding="utf-8"), package))


@functools.cache
def _imports_in(source: str, package: str) -> frozenset[str]:
    """_imports of a file's text, parsed once per text (the checks below read every module several times)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
    return frozenset(names)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: {other for other in _imports(path) if other in modules and other != name}
            for name, path in modules.items()}


def _in(module: str, packages) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def test_only_the_app_imports_gradio():
    offenders = sorted(_module_name(path) for path in PACKAGE.rglob("*.py")
                       if not _in(_module_name(path), ["specviz.app"])
                       and any(name == "gradio" or name.startswith("gradio.") for name in _imports(path)))
    assert offenders == []


def test_the_core_never_imports_the_tools():
    graph = _graph()
    offenders = sorted((module, other) for module, others in graph.items() for other in others
                       if not _in(module, TOOLS) and module not in ENTRY_POINTS and _in(other, TOOLS))
    assert offenders == []


MODEL_STAGES = ("specviz.models", "specviz.drafters", "specviz.decoding")
ENGINE_LABS = {  # labs that run the real engine (on the live pair, or on simulated models) to show what it does
    "specviz.labs.losslessness.checks", "specviz.labs.verification_rules.on_run", "specviz.labs.you_are_the_drafter",
    "specviz.labs.simulated_models.experiments", "specviz.labs.simulated_models.models"}
MEASURING_LABS = {"specviz.labs.memory_bandwidth.bandwidth"}  # times this machine's matrix products through models.profiling


def test_labs_are_pure_maths_and_figures_except_those_that_run_the_engine():
    """No lab imports the tools (app, bench, distill). The labs named in ENGINE_LABS and MEASURING_LABS reach the
    models or the engine, and each really does; every other lab is pure maths and figures, with no model stage."""
    graph = _graph()
    labs = {module for module in graph if _in(module, ["specviz.labs"]) and module != "specviz.labs"}
    assert sorted((module, other) for module in labs for other in graph[module] if _in(other, TOOLS)) == []
    reaching = {module for module in labs if any(_in(other, MODEL_STAGES) for other in graph[module])}
    assert reaching == ENGINE_LABS | MEASURING_LABS
    assert all(any(_in(other, ["specviz.decoding"]) for other in graph[module]) for module in ENGINE_LABS)


def test_there_is_no_import_cycle():
    graph = _graph()
    # Package __init__ modules are namespaces here, not importers of their children.
    edges = {module: {other for other in others if not (module + ".").startswith(other + ".")}
             for module, others in graph.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(module, path):
        state[module] = 1
        for other in sorted(edges.get(module, ())):
            if state.get(other) == 1:
                cycles.append(path[path.index(other):] + [other])
            elif other not in state:
                visit(other, path + [other])
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


# The layers, bottom to top: a module's layer is its first folder under specviz/ (docs/architecture.md's layers). The few
# top-level modules are the base every layer reads (config, trace, job, paths, words) or the entry points.
BASE = ("specviz.config", "specviz.trace", "specviz.job", "specviz.paths", "specviz.words")
LAYERS = (
    ("base", BASE),  # the config every stage reads, the trace's plain data, the cancel flag, output paths, counts in words
    ("core", ("specviz.core",)),  # the pure maths: sampling, the accept/reject steps, the acceptance rules, theory
    ("models", ("specviz.models",)),  # loading, caches, kernels (cpu_linear, int4), v(k) measurement, presets
    ("drafters", ("specviz.drafters",)),
    ("decoding", ("specviz.decoding",)),  # pipeline, calibration, the engine's rounds, γ and tree policies, recording, replay
    ("analysis", ("specviz.analysis",)),  # trace -> numbers
    ("views", ("specviz.views",)),  # numbers and traces -> figures, HTML, Markdown, terminal lines, the gallery
    ("labs", ("specviz.labs",)),  # the app's teaching tabs: maths and figures, a few on the engine
    ("app", ("specviz.app",)),
    ("tools", ("specviz.bench", "specviz.distill")),  # use the engine (bench drives the app too); nothing imports them
    ("entry points", tuple(sorted(ENTRY_POINTS))),
)

# Edges that point to a layer right of the importer's. Each is named, with its reason; any other rightward import
# fails. Today there are none.
ALLOWED_RIGHTWARD: dict[tuple[str, str], str] = {}


def _layer(module: str) -> int | None:
    """The index in LAYERS of the layer that holds `module`; None for the root package and unplaced modules."""
    return next((index for index, (_, members) in enumerate(LAYERS) if _in(module, members)), None)


def _rightward_imports() -> list[tuple[str, str]]:
    """(importer, imported) for every import of a module in a layer right of the importer's."""
    graph = _graph()
    return sorted((module, other) for module, others in graph.items() for other in others
                  if not (module + ".").startswith(other + ".")  # a package's __init__ is a namespace, not a stage
                  and _layer(module) is not None and _layer(other) is not None and _layer(other) > _layer(module))


def test_every_module_has_a_layer():
    assert sorted(module for module in _graph() if module != "specviz" and _layer(module) is None) == []


def test_no_module_imports_from_a_layer_to_its_right():
    offenders = [edge for edge in _rightward_imports() if edge not in ALLOWED_RIGHTWARD]
    assert offenders == [], "\n".join(f"{module} ({LAYERS[_layer(module)][0]}) imports {other} "
                                       f"({LAYERS[_layer(other)][0]})" for module, other in offenders)


def test_the_allow_list_names_only_rightward_imports_that_exist():
    # An entry whose import was removed, or whose modules moved, is dropped here rather than left to excuse a new one.
    assert sorted(set(ALLOWED_RIGHTWARD) - set(_rightward_imports())) == []


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_file_is_over_the_line_limit(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


def test_the_graph_reader_sees_a_planted_cycle_and_a_planted_gradio_import(tmp_path, monkeypatch):
    """Negative control: the checks above can fail."""
    fake = tmp_path / "specviz"
    (fake / "labs").mkdir(parents=True)
    (fake / "app").mkdir()
    (fake / "app" / "ui.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "labs" / "__init__.py").write_text("")
    (fake / "a.py").write_text("from specviz import b\n")
    (fake / "b.py").write_text("def f():\n    from specviz.a import x\n")
    (fake / "labs" / "tab.py").write_text("import gradio as gr\nfrom specviz.app import ui\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    with pytest.raises(AssertionError):
        test_there_is_no_import_cycle()
    with pytest.raises(AssertionError):
        test_only_the_app_imports_gradio()
    with pytest.raises(AssertionError):
        test_the_core_never_imports_the_tools()


def test_the_layer_check_sees_a_planted_rightward_import_and_an_unplaced_module(tmp_path, monkeypatch):
    """Negative control: a model back-end that imports a drafter (lazily, inside a function) fails the layer order,
    and so does a top-level module that no layer holds; leftward imports pass."""
    fake = tmp_path / "specviz"
    for package in ("core", "models", "drafters", "decoding"):
        (fake / package).mkdir(parents=True)
        (fake / package / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "trace.py").write_text("")
    (fake / "core" / "verify.py").write_text("import torch\n")
    (fake / "drafters" / "lookup.py").write_text("from specviz.models import presets\nfrom specviz.core import verify\n")
    (fake / "models" / "presets.py").write_text("import torch\n")
    (fake / "decoding" / "engine.py").write_text("from specviz import trace\nfrom specviz.drafters import lookup\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    test_no_module_imports_from_a_layer_to_its_right()  # drafters -> models and core, decoding -> drafters and base
    test_every_module_has_a_layer()

    (fake / "models" / "presets.py").write_text("def offline_drafter():\n    from specviz.drafters.lookup import x\n")
    with pytest.raises(AssertionError, match="specviz.models.presets .models. imports specviz.drafters.lookup"):
        test_no_module_imports_from_a_layer_to_its_right()
    (fake / "tree.py").write_text("")
    with pytest.raises(AssertionError):
        test_every_module_has_a_layer()


TESTS = PACKAGE.parent / "tests"


def _imports_of_other_tests_or_scripts(source: str, package: str = "tests") -> list[str]:
    """The modules a file under tests/ imports (at any depth, relative imports too) that are a test file
    (tests.test_*, or test_* as pytest's rootdir path would find it) or the scripts."""
    return sorted(name for name in _imports_in(source, package)
                  if name.startswith("tests.test_") or name.split(".")[0].startswith("test_")
                  or _in(name, ["scripts"]))


def test_no_test_file_imports_another_test_file_or_the_scripts():
    """Helpers shared by tests live in support modules (tests/fakes.py, builders.py, stats.py, decoding.py,
    cross_vocab_toys.py, conftest.py, ..), never in a test file: importing one runs its tests' module code a second
    time and ties its tests to another file's. Nor does a test import scripts/ (the scripts are not the package).
    Negative control: the scanner sees each kind of such import in a source string, a lazy one too."""
    planted = ("from tests import fakes, test_engine\nfrom .test_verify import x\nimport test_metrics\n"
               "def f():\n    from scripts.gallery_runs import run\n")
    assert _imports_of_other_tests_or_scripts(planted) == [
        "scripts.gallery_runs", "scripts.gallery_runs.run", "test_metrics", "tests.test_engine", "tests.test_verify",
        "tests.test_verify.x"]
    assert _imports_of_other_tests_or_scripts("from tests.fakes import fake_pipeline\nimport specviz.scripts\n") == []
    offenders = [f"{path.relative_to(TESTS.parent)} imports {name}" for path in sorted(TESTS.rglob("*.py"))
                 for name in _imports_of_other_tests_or_scripts(
                     path.read_text(encoding="utf-8"), ".".join(path.relative_to(TESTS.parent).parent.parts))]
    assert offenders == [], "\n".join(offenders)
