"""The load script against the launched app, and its cross-talk check against a client that mixes sessions up."""

import html
import json

from specviz.bench import loadtest


def test_concurrent_sessions_each_get_their_own_trace(app_server, capsys):
    url, process = app_server
    code = loadtest.main(["--url", url, "--pid", str(process.pid), "--sessions", "3", "--runs", "2",
                          "--memory-runs", "6", "--max-new-tokens", "6"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0, summary
    assert (summary["sessions"], summary["runs"], summary["errors"], summary["crosstalk"]) == (3, 6, 0, 0)
    assert 0 < summary["p50_s"] <= summary["p95_s"]
    assert set(summary["memory_runs"]) == {"5", "6"} and summary["rss_growth"] is not None


class _MixedUpClient:
    """Answers every run with the trace of somebody else's prompt."""

    def __init__(self, tmp_path):
        self.path = tmp_path / "other.json"

    def predict(self, *args, api_name):
        trace = {"prompt": "somebody else's prompt", "config": {"seed": args[10]}, "text": "hi", "rounds": [{}],
                 "token_ids": [1]}
        self.path.write_text(json.dumps(trace))
        return ['<div class="sv-row">', html.escape("hi"), "", str(self.path)]


def test_a_trace_of_another_prompt_counts_as_crosstalk(tmp_path):
    outcome = loadtest.one_run(_MixedUpClient(tmp_path), "my prompt", seed=3, max_new_tokens=4, temperature=0.0)
    assert outcome["own"] is False
    assert loadtest.summarize(1, 1, {"results": [outcome], "errors": []},
                              {"rss_mb": {}, "growth": None, "errors": [], "crosstalk": 0})["crosstalk"] == 1


def test_bad_arguments_are_one_line_and_exit_2(capsys):
    assert loadtest.main(["--sessions", "0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
