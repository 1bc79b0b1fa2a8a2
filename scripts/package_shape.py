"""The package's shape in numbers: top-level modules, files and lines, the longest functions and the median one.

    python -m scripts.package_shape            # this checkout
    python -m scripts.package_shape ../other   # another checkout of the repository
"""

from __future__ import annotations

import argparse
import ast
import statistics
from pathlib import Path


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m scripts.package_shape", description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=".", help="the repository's folder (default: here)")
    package = Path(parser.parse_args(argv).root) / "specviz"
    top = sorted(path.stem for path in package.glob("*.py") if path.name not in ("__init__.py", "__main__.py"))
    lengths, lines = [], 0
    files = sorted(package.rglob("*.py"))
    for path in files:
        source = path.read_text(encoding="utf-8")
        lines += len(source.splitlines())
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lengths.append((node.end_lineno - node.lineno + 1, f"{path.relative_to(package.parent)}:{node.name}"))
    lengths.sort(reverse=True)
    print(f"top-level modules besides __init__ and __main__: {len(top)} ({', '.join(top)})")
    print(f"files: {len(files)}, lines: {lines}")
    print("longest functions: " + "; ".join(f"{name} {length}" for length, name in lengths[:5]))
    print(f"median function: {statistics.median(length for length, _ in lengths)} lines")


if __name__ == "__main__":
    main()
