"""Every file or folder the docs name exists: README.md, docs/*.md, and the docstrings and comments of the Python files
in specviz/, tests/ and scripts/.

A path is named in prose (`specviz/models/llama_cpp.py`, `models/llama_cpp.py` inside the package, `docs/data/kernels/`,
`tests/conftest.py`) or as a markdown link's target (`[the table](data/...)` in docs/results.md). Prose paths resolve
against the repository root, specviz/ or the naming file's own folder; link targets against the document's own folder,
as a reader's browser resolves them. No models, no network: the files are read as text.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "specviz"
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MODULES = sorted(path for folder in ("specviz", "tests", "scripts") for path in (ROOT / folder).rglob("*.py"))

# What makes a word with a slash a path: it ends in one of these, ends in "/" (a folder, two segments or more), or
# starts with one of the repository's top-level folders. "tokens/s", "q/k/v" and "p/q" are none of these.
EXTENSIONS = {"py", "md", "sh", "json", "jsonl", "txt", "js", "css", "png", "toml", "html", "safetensors", "gguf", "yaml",
              "yml", "cfg", "log", "csv"}
TOP_FOLDERS = ("docs/", "specviz/", "tests/", "scripts/", "assets/", ".ci/")

# Paths named on purpose that are not this repository's files. Kept short and explicit: a path that should exist and
# does not is to be fixed, not listed here.
NOT_OURS = {
    "bench-greedy/results.json",  # what `bench --out bench-greedy` writes (docs/results.md, How the benchmark measures)
    "assets/gallery/NAME.json",  # NAME stands for any gallery entry (`replay assets/gallery/NAME.json --check`)
    "transformers/utils/generic.py",  # a file of the installed transformers package (docs/gpu.md)
}

PATH = re.compile(r"(?<![\w$~@%=/.-])((?:\.{1,2}/)?[\w.+-]+(?:/[\w.+*?<>{}-]*)+)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+")


def prose_paths(text: str) -> set[str]:
    """The repository-relative paths a text names in prose (URLs, absolute and outside paths, globs left out)."""
    found = set()
    for match in PATH.finditer(URL.sub(" ", text)):
        path = match.group(1).rstrip(".")
        if any(char in path for char in "*?<>{}") or path.startswith("../") or "//" in path:
            continue  # a glob, a placeholder (<file>), or a path outside the repository (../shared/...)
        path = path.removeprefix("./")
        last = path.rstrip("/").rsplit("/", 1)[-1]
        ends_in_extension = "." in last and last.rsplit(".", 1)[1] in EXTENSIONS
        folder = path.endswith("/") and path.count("/") >= 2
        if ends_in_extension or folder or path.startswith(TOP_FOLDERS):
            found.add(path)
    return found - NOT_OURS


def link_targets(text: str) -> set[str]:
    """Markdown links' local targets, without their #anchors."""
    targets = set()
    for target in LINK.findall(text):
        target = target.split("#", 1)[0]
        if target and not URL.match(target) and not target.startswith("mailto:"):
            targets.add(target)
    return targets


def exists(path: str, folders: list[Path]) -> bool:
    """Whether `path` names a file or folder under one of `folders`; a module's attribute (`tests/conftest.RATE`,
    `models/int4.quantize`) counts where its module (`tests/conftest.py`) exists."""
    for folder in folders:
        candidate = folder / path
        if candidate.exists():
            return True
        stem, dot, attribute = path.rpartition(".")
        if dot and "/" not in attribute and attribute not in EXTENSIONS and (folder / f"{stem}.py").exists():
            return True
    return False


def comments_and_docstrings(source: str) -> str:
    """A Python file's comments and docstrings (a string that opens a statement), the places a path in it is prose.
    One pass of the tokenizer, no parse, to keep the check fast."""
    parts, opens_statement = [], True
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            parts.append(token.string)
        elif token.type in (tokenize.NL, tokenize.ENCODING):
            continue
        else:
            if token.type == tokenize.STRING and opens_statement:
                parts.append(token.string)
            opens_statement = token.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    return "\n".join(parts)


def missing_paths() -> list[str]:
    """'FILE: PATH' for every path named in the docs or in the Python files' prose that is not in the repository."""
    missing = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for path in sorted(prose_paths(text)):
            if not exists(path, [ROOT, PACKAGE, document.parent]):
                missing.append(f"{document.relative_to(ROOT)}: {path}")
        for target in sorted(link_targets(text)):
            if not (document.parent / target).exists():
                missing.append(f"{document.relative_to(ROOT)}: link ({target})")
    for module in MODULES:
        for path in sorted(prose_paths(comments_and_docstrings(module.read_text(encoding="utf-8")))):
            if not exists(path, [ROOT, PACKAGE, module.parent]):
                missing.append(f"{module.relative_to(ROOT)}: {path}")
    return missing


def test_every_path_the_docs_and_docstrings_name_exists():
    assert missing_paths() == []


@pytest.mark.parametrize("text, named", [
    ("see `specviz/models/llama_cpp.py` and models/threads.py.", {"specviz/models/llama_cpp.py", "models/threads.py"}),
    ("rows in docs/data/trees-llama/ and docs/data/kernels", {"docs/data/trees-llama/", "docs/data/kernels"}),
    ("42 tokens/s, q/k/v, 30.5 GB/s, and/or", set()),
    ("https://example.com/a/b.py, ../shared/data/x.jsonl, /proc/stat, ~/.cache/specviz", set()),
    ("tests/test_browser*.py, assets/gallery/<name>.json", set()),
])
def test_what_counts_as_a_path(text, named):
    assert prose_paths(text) == named


def test_a_missing_path_is_caught():
    assert not exists("specviz/models/no_such_module.py", [ROOT, PACKAGE])
    assert not exists("docs/data/no-such-run/", [ROOT])
    assert exists("models/llama_cpp.py", [ROOT, PACKAGE])
    assert exists("tests/conftest.shared_worker_groups", [ROOT])
    assert link_targets("[a](gpu.md#x) [b](#top) [c](https://x.org/y.md) ![d](screenshots/a.png)") == {
        "gpu.md", "screenshots/a.png"}


def named_attributes(text: str) -> set[tuple[str, str]]:
    """The `module.NAME` and `path/module.NAME` references in `text`: (module file stem or path, attribute)."""
    found = set()
    for token in re.findall(r"`([a-z_][\w/]*)\.([A-Za-z_]\w*)(?:\.\w+)?`", text):  # a module: lower case
        if token[1] != "py":
            found.add(token)
    return found


def resolve(module: str, attribute: str) -> bool:
    """Whether specviz has a module `module` (its stem, or a path under specviz/) with `attribute` at its top."""
    import importlib

    candidates = [PACKAGE / f"{module}.py"] if "/" in module else sorted(PACKAGE.rglob(f"{module}.py"))
    for path in candidates:
        if path.exists():
            name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
            if hasattr(importlib.import_module(name), attribute):
                return True
    return False


def test_every_place_the_where_a_fact_lives_table_names_exists():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("## Where a fact lives", 1)[1].split("\n## ", 1)[0]
    named = named_attributes(table)
    assert len(named) >= 10
    missing = sorted(f"{module}.{attribute}" for module, attribute in named if not resolve(module, attribute))
    assert missing == [], f"docs/architecture.md names what the code no longer has: {missing}"


def test_the_fact_table_check_can_fail():
    assert named_attributes("`presets.PAIRS` and `views/export.trace_from_text` and `cli.py`") == {
        ("presets", "PAIRS"), ("views/export", "trace_from_text")}
    assert resolve("presets", "PAIRS") and resolve("views/export", "trace_from_text")
    assert not resolve("presets", "NO_SUCH_TABLE") and not resolve("no_such_module", "PAIRS")


def test_results_md_stays_a_reference_of_at_most_400_lines():
    lines = (ROOT / "docs" / "results.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 400, f"docs/results.md has {lines} lines: today's figures only (git keeps the history)"
