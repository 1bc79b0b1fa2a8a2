"""A run as files: the trace JSON and the exported page to download, named for what they hold, and a saved trace
(or exported page) loaded back with no model. Used by the live tab (live.py) and its Download, Export and Load
buttons (ui.py)."""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path

import gradio as gr

from specviz.app import worker
from specviz.app.callbacks import refused
from specviz.app.policy import current_policy
from specviz.app.views import LiveView, views
from specviz.config import DecodeConfig, ModelSpec
from specviz.decoding.pipeline import build_pipeline
from specviz.models.loading import IncompatibleModels, ModelUnavailable
from specviz.trace import Trace
from specviz.views.export import run_html, trace_from_file

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
        return re.sub(r"[^A-Za-z0-9.+-]+", "-", ModelSpec.parse(name).name.rsplit("/", 1)[-1]).strip("-")[:48]

    return f"specviz-run-{short(trace.target_name)}-from-{short(trace.draft_name)}-{time.strftime('%Y-%m-%d-%H%M', when)}{suffix}"


def export_page(trace: Trace | None):
    """The run as one self-contained HTML page, offered for download."""
    if trace is None or not trace.rounds:
        raise gr.Error("Nothing to export yet: Run, Step or load a trace first.")
    return gr.update(value=write_trace_file(trace, ".html"), visible=True)


def import_trace(path):
    """Load a saved trace and render it with no model at all. A file that is no trace, or one that contradicts itself
    (analysis/consistency.py), is refused in a sentence under the button, and nothing else on the page changes."""
    try:
        trace = read_trace(path)
    except ValueError as error:
        sentence = str(error)
        refused(sentence)  # the server's log: one line
        gr.Warning(sentence)
        return (*LiveView().values(), gr.skip(), f"**Not loaded.** {sentence}")
    view = views(trace)
    view.status, view.download = f"**Loaded a saved trace**: {len(trace.rounds)} rounds, replayed with no model", None
    note = (f"**Loaded** {Path(path).name}: {len(trace.rounds)} rounds, {len(trace.token_ids)} tokens; its rows and "
            "plots are on *Watch it run*.")
    return (*view.values(), None, note)  # and no Step session: the next Step starts afresh


def read_trace(path) -> Trace:
    """The trace a file holds (trace JSON, or a page run_html exported), checked; ValueError in one sentence."""
    if not path:
        raise ValueError("Choose a trace file first (JSON, or a page exported as HTML).")
    try:
        return trace_from_file(path)
    except ValueError as error:
        raise ValueError(f"{Path(path).name} {error}.") from None


def replay_check(trace: Trace | None) -> str:
    """Re-run the shown trace on its own models and say whether every round reproduces (the CLI's `replay --check`):
    the uniforms from its seed, p and q from the models. A sentence for the note under Load."""
    if trace is None or not trace.rounds:
        return "Load a trace (or run one) first: the check re-runs the trace on its own models."
    from specviz.decoding.replay import first_difference

    try:
        config = DecodeConfig.from_dict(trace.config).validate()
        current_policy().check(config, trace.prompt)
        pipeline = worker.call(build_pipeline, config)
        mismatch = worker.call(first_difference, trace, pipeline)
    except (ValueError, ModelUnavailable, IncompatibleModels) as error:
        refused(str(error))
        return f"**Not checked.** {error}"
    if mismatch is None:
        return (f"**All {len(trace.rounds)} rounds reproduce** on {trace.target_name} ← {trace.draft_name}: the same "
                "drafts, uniforms, verdicts and tokens, p and q within 1e-5.")
    return f"**Round {mismatch.round_index + 1} does not reproduce**: {mismatch.reason}."
