"""Imported traces are checked against the schema before anything renders (trace.py), and refused clearly (app/trace_files.py)."""

import json
import re

import gradio as gr
import pytest

from specviz.app import trace_files
from specviz.app.views import LiveView
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


def _truncated(good: dict) -> str:
    text = json.dumps(good)
    return text[: len(text) // 2]


def _lowered_r(good: dict) -> str:
    """The issue's tampered file: a rejected token's r lowered below its acceptance probability."""
    data = json.loads(json.dumps(good))
    token = next(token for round_ in data["rounds"] for token in round_["tokens"] if token["kind"] == "rejected")
    token["uniform"] = token["accept_prob"] / 2
    return json.dumps(data)


def _deeply_nested(good: dict) -> str:
    data = json.loads(json.dumps(good))
    data["config"]["seed"] = json.loads("[" * 500 + "]" * 500)
    return json.dumps(data)


@pytest.mark.parametrize("content,message", [
    ("{not json", "not valid JSON"),
    ("", "is not a trace"),
    ("[1, 2]", "is not a trace"),
    ('{"schema": 1, "rounds": "x"}', "not a specviz trace"),
    ('{"a":' + "[" * 100_000 + "]" * 100_000 + "}", "not valid JSON"),  # nesting deeper than the parser goes
    (b"\xff\xfe\x00junk", "not text"),
    (_truncated, "not valid JSON"),
    (lambda good: json.dumps(good).replace('"seed": 4', '"seed": "4"'), "seed must be a whole number"),
    (lambda good: json.dumps(good).replace('"seed": 4', '"seed": ' + "9" * 5000), "not valid JSON|digits"),
    (lambda good: json.dumps(good).replace('"wall_ms": ', '"wall_ms": NaN, "x": '), "not a specviz trace"),
    (lambda good: json.dumps(good).replace('"wall_ms": ', '"wall_ms": 1e999, "x": '), "not a specviz trace"),
    (_deeply_nested, "not a specviz trace"),
    (_lowered_r, r"trace.json is not shown: the trace contradicts itself at round \d+, tokens\[\d+\]\.uniform"),
])
def test_the_app_refuses_a_bad_trace_file_in_a_sentence_and_changes_nothing_else(good, tmp_path, content, message):
    path = tmp_path / "trace.json"
    content = content(good) if callable(content) else content
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    *outputs, note = trace_files.import_trace(str(path))
    assert note.startswith("**Not loaded.** ")
    assert re.search(message, note), note
    assert all(output == gr.skip() for output in outputs)  # every other output keeps what the page shows


def test_the_app_refuses_a_huge_trace_file_before_reading_it(tmp_path, monkeypatch):
    path = tmp_path / "huge.json"
    with open(path, "wb") as handle:
        handle.truncate(100 * 2**20)  # sparse: 100 MB that take no disk
    *outputs, note = trace_files.import_trace(str(path))
    assert "huge.json is larger than 20 MB" in note and all(output == gr.skip() for output in outputs)


def test_a_good_trace_file_loads(good, tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(good))
    *outputs, note = trace_files.import_trace(str(path))
    assert note.startswith("**Loaded** run.json: ")
    status = outputs[LiveView.names().index("status")]
    assert status.startswith("**Loaded a saved trace**") and outputs[0] != gr.skip()


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


@pytest.mark.slow
def test_the_replay_button_reruns_the_shown_trace_on_its_models():
    from specviz.config import OFFLINE_MODEL
    from specviz.decoding.pipeline import build_pipeline

    config = DecodeConfig(target=OFFLINE_MODEL, draft="ngram", gamma=3, max_new_tokens=16, temperature=1.0,
                          seed=2).validate()
    trace = Trace.from_json(engine.run_speculative(build_pipeline(config), "Count from one to ten.", config).to_json())
    assert trace_files.replay_check(trace).startswith(f"**All {len(trace.rounds)} rounds reproduce**")
    trace.rounds[1].next_uniform = (trace.rounds[1].next_uniform + 0.5) % 1  # still consistent, not what the seed drew
    assert trace_files.replay_check(trace).startswith("**Round 2 does not reproduce**: the correction/bonus uniform")
    assert trace_files.replay_check(None).startswith("Load a trace")
