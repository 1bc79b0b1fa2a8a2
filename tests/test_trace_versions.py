"""Trace schema 2 (token trees) reads version-1 traces: a JSON file and an exported HTML page written by specviz
before trees (tests/data/trace-v1.*: `generate --draft ngram+int4 --temperature 1 --seed 5` on cf00e55, on the
AVX-512 machine of docs/results.md; the page without plotly's inlined script), as chains, and they still replay
exactly on the kernels they ran on."""

import json
from pathlib import Path

import pytest
import torch

from specviz import cli
from specviz.models.loading import cpu_kernels
from specviz.trace import ACCEPTED, REJECTED, SCHEMA_VERSION, Trace
from specviz.views.export import trace_from_text

DATA = Path(__file__).parent / "data"
RECORDED_ON = "AVX512"  # the CPU kernels trace-v1.* ran on (version 1 did not record Trace.kernels)


def test_a_version_1_json_trace_loads_as_a_trace_of_chains():
    raw = json.loads((DATA / "trace-v1.json").read_text(encoding="utf-8"))
    assert raw["schema"] == 1 and "draft_parents" not in raw["rounds"][0]
    trace = Trace.from_dict(raw)
    assert trace.schema == SCHEMA_VERSION == 2
    for round_ in trace.rounds:
        assert round_.draft_parents == list(range(-1, len(round_.draft_token_ids) - 1))
        assert not round_.is_tree
        for token in round_.tokens:
            assert token.parent == token.position - 2
            assert token.node == (token.position - 1 if token.kind in (ACCEPTED, REJECTED) else None)
    assert Trace.from_json(trace.to_json()) == trace  # and it is written back as version 2


def test_a_version_1_html_page_loads_as_the_same_trace():
    page = trace_from_text((DATA / "trace-v1.html").read_text(encoding="utf-8"))
    assert page == Trace.from_json((DATA / "trace-v1.json").read_text(encoding="utf-8"))


def test_a_tree_round_is_told_from_a_chain():
    trace = Trace.from_json((DATA / "trace-v1.json").read_text(encoding="utf-8"))
    round_ = trace.rounds[1]
    round_.draft_parents = [-1] * len(round_.draft_token_ids)  # every node a child of the committed text
    assert round_.is_tree == (len(round_.draft_token_ids) > 1)
    assert Trace.from_json(trace.to_json()).rounds[1].draft_parents == round_.draft_parents


@pytest.mark.slow
@pytest.mark.parametrize("name", ["trace-v1.json", "trace-v1.html"])
def test_a_version_1_trace_still_replays_exactly(name, offline_target, capsys):
    here = cpu_kernels(torch.device("cpu"))
    if here != RECORDED_ON:  # its 4-bit draft's bfloat16 kernel rounds otherwise: tests/test_replay.py names it
        pytest.skip(f"recorded on {RECORDED_ON} kernels; this CPU's are {here}")
    assert cli.main(["replay", str(DATA / name), "--check"]) == 0
    assert "rounds reproduce" in capsys.readouterr().out
