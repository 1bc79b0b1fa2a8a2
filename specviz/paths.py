"""Output paths checked before any work: a command that would fail to write its result fails at once instead.

Every command-line tool that writes files (`generate --trace-out`, `bench --out`, `distill --out/--cache-dir`)
calls `check_outputs` right after parsing its arguments, before a model loads. A path that cannot be written is
one sentence naming the option and the path (OutputPathError); the tools print it as one line and exit 2.

Nothing is created here: a check can pass and the write still fail later (a full disk, a folder removed in the
meantime), but the usual mistakes (a typo in a folder, a folder given for a file, no permission) are caught.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository: app.py, assets/, specviz/
ASSETS = ROOT / "assets"  # what ships beside the code: the distilled head, the gallery, the CSS, recorded regimes


class OutputPathError(ValueError):
    """An output path that cannot be written: the message names the option and the path."""


def check_outputs(files: dict[str, str | None] | None = None, folders: dict[str, str | None] | None = None) -> None:
    """Raise OutputPathError for the first option whose path cannot be written; options set to None are skipped.

    files: option -> a file to write (its folder must exist and be writable; it must not be a folder).
    folders: option -> a folder to fill, created if missing (then its parent must exist and be writable).

    >>> try:
    ...     check_outputs(files={"--trace-out": "/nonexistent-dir/x.json"})
    ... except OutputPathError as error:
    ...     print(error)
    --trace-out /nonexistent-dir/x.json: the folder /nonexistent-dir does not exist
    """
    for option, path in (files or {}).items():
        if path is not None:
            _check(option, path, _file_problem(Path(path)))
    for option, path in (folders or {}).items():
        if path is not None:
            _check(option, path, _folder_problem(Path(path)))


def _check(option: str, path: str, problem: str | None) -> None:
    if problem:
        raise OutputPathError(f"{option} {path}: {problem}")


def _file_problem(path: Path) -> str | None:
    if str(path).strip() == "":
        return "no file named"
    if path.is_dir():
        return "is a folder; give a file name"
    if path.exists():
        return None if os.access(path, os.W_OK) else "the file cannot be written (no permission)"
    return _writable_folder(path.absolute().parent)


def _folder_problem(path: Path) -> str | None:
    if str(path).strip() == "":
        return "no folder named"
    if path.exists():
        if not path.is_dir():
            return "is a file, not a folder"
        return None if os.access(path, os.W_OK | os.X_OK) else "the folder cannot be written (no permission)"
    return _writable_folder(path.absolute().parent)  # the tool creates the last folder, never a whole chain (a typo)


def _writable_folder(folder: Path) -> str | None:
    if not folder.exists():
        return f"the folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} cannot be written (no permission)"
    return None
