"""Imported traces are checked against the schema before anything renders (trace.py), and refused clearly (app/trace_files.py)."""

import json

import gradio as gr
import pytest

from specviz.app import trace_files
from specviz.config import DecodeConfig
from specviz.decoding import engine
from specviz.trace import Trace
from tests.fakes import fake_pipeline


@pytest.fixture(scope="module")
def good() -> dict:
    trace = engine.run_speculative(fake_pipeline(vocab_size=5), "a b", DecodeConfig(gamma=3, max_new_tokens=12, chat=False,
                                                                                    temperature=1.0, seed=4))
    return json.loads(trace.to_json())


def _edit(data: dict, path: str, value) -> dict:
    """A deep copy of data with the item at a dotted path ('rounds.0.tokens.1.kind') set, or deleted if value is ..."""
    data = json.loads(json.dumps(data))
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is ...:
        del node[last]
    else:
        node[int(last) if isinstance(node, list) else last] = value
    return data


def test_a_real_trace_passes(good):
    assert Trace.from_dict(good).to_json() == json.dumps(good, ensure_ascii=False)


@pytest.mark.parametrize("path,value,message", [
    ("rounds", "x", "trace.rounds must be a list"),
    ("rounds.0.tokens.0.text", 5, r"trace.rounds\[0\].tokens\[0\].text must be str"),
    ("rounds.0.tokens.0.kind", "mystery", "kind must be one of"),
    ("rounds.0.tokens.0.target_prob", float("nan"), "target_prob must be a finite number"),
    ("rounds.0.tokens.0.position", True, "position must be int"),
    ("rounds.0.accepted", ..., "lacks the field 'accepted'"),
    ("rounds.0.surprise", 1, "unknown fields: surprise"),
    ("token_ids", [1, "2"], r"token_ids\[1\] must be int"),
    ("config.gamma", 0, "trace.config: gamma must be a whole number from 1 to 64, got 0"),
    ("config", [], "trace.config must be dict"),
    ("baseline", {"text": "x"}, "trace.baseline lacks the field"),
    ("schema", 3, "unsupported trace schema"),
])
def test_wrong_schema_is_refused_naming_the_field(good, path, value, message):
    with pytest.raises(ValueError, match=message):
        Trace.from_dict(_edit(good, path, value))


@pytest.mark.parametrize("content,message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not a specviz trace"),
    ('{"schema": 1, "rounds": "x"}', "not a specviz trace"),
    ("[" * 100_000 + "]" * 100_000, "not valid JSON"),  # nesting deeper than the parser goes
    (b"\xff\xfe\x00junk", "not valid JSON"),
])
def test_the_app_refuses_a_bad_trace_file_with_a_reason(tmp_path, content, message):
    path = tmp_path / "trace.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(gr.Error, match=message):
        trace_files.import_trace(str(path))


def test_the_app_refuses_a_huge_trace_file_before_reading_it(tmp_path, monkeypatch):
    path = tmp_path / "huge.json"
    with open(path, "wb") as handle:
        handle.truncate(trace_files.MAX_TRACE_BYTES + 1)  # sparse: 20 MB that take no disk
    with pytest.raises(gr.Error, match="larger than 20 MB"):
        trace_files.import_trace(str(path))


def test_downloadable_trace_files_expire_so_a_long_running_server_keeps_its_disk(good, tmp_path, monkeypatch):
    import os
    import tempfile
    import time

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    trace = Trace.from_dict(good)
    first = trace_files.write_trace_file(trace)
    stale = time.time() - trace_files.TRACE_FILE_TTL_S - 60
    os.utime(first, (stale, stale))
    second = trace_files.write_trace_file(trace)
    assert not os.path.exists(first) and Trace.from_json(open(second, encoding="utf-8").read()) == trace
    assert os.path.dirname(second) != os.path.dirname(first)  # a folder each: equal names never clash
    assert os.path.basename(second).startswith("specviz-run-") and os.path.basename(second).endswith(".json")


def test_sessions_that_prune_expired_trace_files_at_once_all_get_their_file(good, tmp_path, monkeypatch):
    """A class downloads at once: each write prunes the same expired folders while the others do, and none fails."""
    import os
    import tempfile
    import time
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stale = time.time() - trace_files.TRACE_FILE_TTL_S - 60
    for number in range(600):
        old = tmp_path / "specviz-traces" / f"old{number}" / "run.json"
        old.parent.mkdir(parents=True)
        old.write_text("{}")
        os.utime(old, (stale, stale))
    trace = Trace.from_dict(good)
    with ThreadPoolExecutor(6) as pool:
        written = list(pool.map(lambda _: trace_files.write_trace_file(trace), range(24)))
    assert all(os.path.exists(path) for path in written)
    assert sorted(os.listdir(tmp_path / "specviz-traces")) == sorted(os.path.basename(os.path.dirname(path)) for path in written)
