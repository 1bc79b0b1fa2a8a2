"""A run as files: the trace JSON and the exported page to download, named for what they hold, and a saved trace
(or exported page) loaded back with no model. Used by the live tab (live.py) and its Download, Export and Load
buttons (ui.py)."""

from __future__ import annotations

import json
import re
import tempfile
import time
from pathlib import Path

import gradio as gr

from specviz.app.views import views
from specviz.trace import Trace
from specviz.views.export import run_html, trace_from_text

MAX_TRACE_BYTES = 20 * 1024 * 1024
TRACE_FILE_TTL_S = 3600  # downloadable trace files are kept this long


def write_trace_file(trace: Trace, suffix: str = ".json") -> str:
    """The trace as a file to download, named for what it holds (download_name): its JSON, or (suffix ".html") the
    self-contained page of export.py. Each file gets a folder of its own, so equal names never collide; folders
    older than TRACE_FILE_TTL_S are removed on the way, so a server that runs for weeks does not fill its disk
    (Gradio serves its own copy, pruned by delete_cache)."""
    root = Path(tempfile.gettempdir()) / "specviz-traces"
    root.mkdir(exist_ok=True)
    remove_expired(root, time.time() - TRACE_FILE_TTL_S)
    path = Path(tempfile.mkdtemp(dir=root)) / download_name(trace, suffix, time.localtime())
    path.write_text(run_html(trace) if suffix == ".html" else trace.to_json(), encoding="utf-8")
    return str(path)


def remove_expired(root: Path, expired: float) -> None:
    """Remove the files under root's folders written before `expired`, and their folders. Other sessions prune the
    same folders at the same time, so each folder is listed on its own and one that vanishes mid-way is skipped
    (a glob over root/*/* raises when a folder goes between two of its listings)."""
    for folder in list(root.iterdir()):
        try:
            for old in list(folder.iterdir()):
                if old.stat().st_mtime < expired:
                    old.unlink()
                    folder.rmdir()
        except OSError:  # another session removed it first
            continue


def download_name(trace: Trace, suffix: str, when: time.struct_time) -> str:
    """What a downloaded run is called: the pair and the time it was saved.

    >>> trace = Trace({}, "", 0, target_name="offline:SmolLM2-135M-Instruct", draft_name="ngram+int4", device="cpu",
    ...               dtype="float32")
    >>> download_name(trace, ".html", time.strptime("2026-11-26 06:12", "%Y-%m-%d %H:%M"))
    'specviz-run-SmolLM2-135M-Instruct-from-ngram+int4-2026-11-26-0612.html'
    """
    def short(name: str) -> str:
        return re.sub(r"[^A-Za-z0-9.+-]+", "-", name.removeprefix("offline:").rsplit("/", 1)[-1]).strip("-")[:48]

    return f"specviz-run-{short(trace.target_name)}-from-{short(trace.draft_name)}-{time.strftime('%Y-%m-%d-%H%M', when)}{suffix}"


def export_page(trace: Trace | None):
    """The run as one self-contained HTML page, offered for download."""
    if trace is None or not trace.rounds:
        raise gr.Error("Nothing to export yet: Run, Step or load a trace first.")
    return gr.update(value=write_trace_file(trace, ".html"), visible=True)


def import_trace(path):
    """Load a saved trace and render it with no model at all."""
    if not path:
        raise gr.Error("Choose a trace file first (JSON, or a page exported as HTML).")
    file = Path(path)
    if file.stat().st_size > MAX_TRACE_BYTES:
        raise gr.Error(f"That file is larger than {MAX_TRACE_BYTES // 2**20} MB; a trace is far smaller.")
    try:
        trace = trace_from_text(file.read_text(encoding="utf-8"))  # trace JSON, or an exported page
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise gr.Error(f"That file is not valid JSON ({str(error)[:200]}).") from error
    except (KeyError, TypeError, ValueError) as error:
        raise gr.Error(f"That JSON is not a specviz trace ({error}).") from error
    view = views(trace)
    view.status, view.download = f"**Loaded a saved trace**: {len(trace.rounds)} rounds, replayed with no model", None
    return (*view.values(), None)  # and no Step session: the next Step starts afresh
