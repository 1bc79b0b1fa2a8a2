"""The docstring examples in specviz/ are tests: pytest collects them (pyproject.toml), in the fast tier too."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_suite_runs_the_docstring_examples_in_specviz(pytestconfig):
    assert pytestconfig.option.doctestmodules, "pyproject.toml's addopts must keep --doctest-modules"
    assert "specviz" in pytestconfig.getini("testpaths"), "pyproject.toml's testpaths must include specviz"


def test_every_module_with_an_example_has_one_that_doctest_finds():
    # An example in a comment or a nested function's docstring would never run: keep them where doctest looks.
    import doctest
    import importlib

    files = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "specviz").rglob("*.py")
                   if ">>>" in path.read_text(encoding="utf-8"))
    assert files, "specviz's docstrings have examples"
    for file in files:
        module = importlib.import_module(file.removesuffix(".py").replace("/", "."))
        found = sum(len(test.examples) for test in doctest.DocTestFinder().find(module))
        written = (ROOT / file).read_text().count(">>>")
        assert found == written, f"{file}: {written} '>>>' lines, {found} examples that doctest runs"
