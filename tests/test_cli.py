"""The command line: one JSON object, coloured rounds, one-line errors, the tools' subcommands.

Every test but two calls `specviz.cli.main` in this process; the smoke tests (slow tier) start `python -m specviz` as a
user does.
"""

import json
import os
import runpy
import subprocess
import sys

import pytest

from specviz.cli import build_parser, config_from_args, main
from specviz.config import QUANTIZED_DRAFTER, DrafterSpec
from specviz.trace import Round, Token
from specviz.views.cli_output import format_round
from tests.conftest import worker_threads


def run_cli(*args, **env_vars):
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", **worker_threads(), **env_vars}
    return subprocess.run([sys.executable, "-m", "specviz", *args], capture_output=True, text=True, env=env, timeout=300)


def test_json_output_has_the_contract_keys(offline_target):
    """The one smoke test in a process of its own: `python -m specviz generate ... --json`, with the loading
    stages on stderr (as in a terminal)."""
    result = run_cli("generate", "--prompt", "Say hello twice: hello hello", "--max-new-tokens", "16", "--json", "--baseline",
                     SPECVIZ_PROGRESS="1")
    assert result.returncode == 0, result.stderr
    stages = result.stderr.splitlines()
    assert stages[0].startswith("specviz: Loading offline:SmolLM2-135M-Instruct on cpu"), result.stderr
    assert all(line.startswith("specviz: ") and line.endswith("…") for line in stages), result.stderr
    summary = json.loads(result.stdout)
    for key in ("text", "rounds", "alpha", "alpha_per_position", "tokens_per_round", "c", "speedup_predicted",
                "baseline_text", "speedup_measured", "identical"):
        assert key in summary
    assert summary["identical"] is True and summary["text"] == summary["baseline_text"]
    assert len(summary["alpha_per_position"]) == 4
    counters = summary["engine_counters"]  # llama.cpp's and vLLM's names for the same run
    assert counters["draft_n"] == counters["num_draft_tokens"] == summary["drafted_tokens"]
    assert counters["draft_n_accepted"] == counters["num_accepted_tokens"] == summary["accepted_tokens"]
    assert counters["num_drafts"] <= summary["rounds"] and len(counters["num_accepted_tokens_per_pos"]) == 4


def test_plain_output_marks_kinds_without_colour(offline_target, capsys):
    code = main(["generate", "--prompt", "Count: one two three", "--max-new-tokens", "8", "--no-chat"])
    result = capsys.readouterr()
    assert code == 0, result.err
    assert "legend:" in result.out and "\033[" not in result.out
    assert "round   1" in result.out and "tokens/s" in result.out


@pytest.mark.parametrize("args,fragment", [
    (["generate", "--prompt", "hi", "--gamma", "0"], "argument --gamma: gamma must be a whole number from 1 to 64, got 0"),
    (["generate", "--prompt", "hi", "--temperature", "nan"], "temperature"),
    (["generate", "--prompt", "hi", "--top-p", "1.5"], "top_p"),
    (["generate", "--prompt", "   "], "prompt is empty"),
    (["generate", "--prompt", "hi", "--preset", "nope"], "unknown preset"),
    (["generate", "--prompt", "hi", "--gamma", "two"], "gamma must be a whole number from 1 to 64, got 'two'"),
    (["generate", "--prompt", "hi", "--top-k", "-1"], "top_k must be a whole number from 0 to 1000000 (0 turns it off)"),
    (["generate", "--prompt", "hi", "--seed", "1.5"], "seed must be a whole number"),
    (["generate", "--prompt", "hi", "--draft", "ngram+"], "must be followed by a draft model"),
    (["generate", "--prompt", "hi", "--draft", "ngram+ngram"], "must be followed by a draft model"),
    (["generate", "--prompt", "hi", "--target", "ngram+distilled"], "can only be the drafter"),
    (["generate"], "required: --prompt"),
])
def test_bad_arguments_give_one_line_and_non_zero_exit(args, fragment, capsys):
    code = main(args)
    result = capsys.readouterr()
    assert code != 0
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.err
    assert result.out == ""


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in ("generate", "replay", "verify-cost", "bench", "loadtest"))


def test_bench_and_loadtest_hand_their_arguments_to_the_tools(tmp_path, capsys):
    assert main(["bench", "--categories", "nope", "--out", str(tmp_path / "o")]) == 2
    assert "no prompts" in capsys.readouterr().err  # the benchmark's own check, so it parsed --categories
    assert main(["loadtest", "--sessions", "0"]) == 2
    assert capsys.readouterr().err.startswith("loadtest: --sessions")
    assert not (tmp_path / "o").exists()


def test_python_m_specviz_bench_still_runs_the_benchmark(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["specviz.bench", "--categories", "nope", "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("specviz.bench", run_name="__main__")  # what `python -m specviz.bench` runs
    assert exit_.value.code == 2 and "no prompts" in capsys.readouterr().err


def test_the_offline_target_drafts_with_lookup_then_its_4bit_copy_on_a_cpu_unless_told_otherwise(monkeypatch):
    parser = build_parser()
    monkeypatch.setenv("SPECVIZ_DEVICE", "cpu")  # on a GPU machine the default device would be CUDA
    config = config_from_args(parser.parse_args(["generate", "--prompt", "hi"]))
    assert config.draft == "ngram+int4" and config.drafter == DrafterSpec(QUANTIZED_DRAFTER, lookup_first=True)
    assert config_from_args(parser.parse_args(["generate", "--prompt", "hi", "--preset", "offline"])).draft == "ngram+int4"
    monkeypatch.setenv("SPECVIZ_DEVICE", "meta")  # off the CPU there is no 4-bit kernel: the distilled draft instead
    assert config_from_args(parser.parse_args(["generate", "--prompt", "hi"])).draft == "ngram+distilled"
    monkeypatch.setenv("SPECVIZ_DEVICE", "cpu")
    assert config_from_args(parser.parse_args(["generate", "--prompt", "hi", "--draft", "ngram"])).draft == "ngram"
    other = config_from_args(parser.parse_args(["generate", "--prompt", "hi", "--target", "some/model"]))
    assert other.draft == "ngram" and not other.drafter.lookup_first  # the shipped draft only fits the offline target


def test_format_round_uses_markers_and_shows_whitespace():
    tokens = [Token(1, " a", "accepted", 1, 0.9), Token(2, "\n", "rejected", 2, 0.1), Token(3, "b", "corrected", 2, 0.5)]
    line = format_round(Round(0, 2, 1, tokens, 1.0, 2.0, 2), colour=False)
    assert line.endswith(" a[-\\n-][+b+]")
    assert "\033[32m" in format_round(Round(0, 2, 1, tokens, 1.0, 2.0, 2), colour=True)


NO_FOLDER = "/nonexistent-dir/x.json"


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if anything starts loading a model or running a tool's work."""
    import specviz.bench.command
    import specviz.cli
    import specviz.models.loading

    def refuse(*args, **kwargs):
        raise AssertionError("work started before the output path was checked")

    monkeypatch.setattr(specviz.models.loading, "load_model", refuse)
    monkeypatch.setattr(specviz.cli, "build_pipeline", refuse)
    monkeypatch.setattr(specviz.bench.command, "_main", refuse)  # the whole benchmark
    monkeypatch.setattr(specviz.bench.command, "_rebuild", refuse)


@pytest.mark.parametrize("args,option", [
    (["generate", "--prompt", "hi", "--trace-out", NO_FOLDER], "--trace-out"),
    (["generate", "--prompt", "hi", "--trace-out", "{tmp}"], "--trace-out"),  # a folder where a file goes
    (["bench", "--quick", "--out", "/nonexistent-dir/out"], "--out"),
    (["bench", "--quick", "--out", "{tmp}/file"], "--out"),  # a file where a folder goes
    (["bench", "--report-from", "results.json", "--out", "/nonexistent-dir/out"], "--out"),
])
def test_an_unwritable_output_path_is_one_line_and_exit_2_before_any_model_loads(args, option, tmp_path, no_model,
                                                                                   capsys):
    (tmp_path / "file").write_text("")
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    code = main(args)  # no_model fails the test if any model or tool's work starts first
    lines = capsys.readouterr().err.strip().splitlines()
    path = args[args.index(option) + 1]
    assert code == 2 and len(lines) == 1 and f"{option} {path}" in lines[0], lines


def test_distill_checks_its_output_paths_before_loading_the_target(no_model, tmp_path, capsys):
    from specviz.distill.train import main as distill_main

    assert distill_main(["--out", "/nonexistent-dir/draft.safetensors"]) == 2
    assert capsys.readouterr().err.strip() == ("specviz.distill: --out /nonexistent-dir/draft.safetensors: "
                                               "the folder /nonexistent-dir does not exist")
    (tmp_path / "file").write_text("")
    assert distill_main(["--out", str(tmp_path / "d.safetensors"), "--cache-dir", str(tmp_path / "file" / "c")]) == 2
    assert "--cache-dir" in capsys.readouterr().err


def test_the_specviz_module_run_as_main_with_an_unwritable_trace_out_prints_one_line_and_exits_2(
        no_model, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["specviz", "generate", "--prompt", "hi", "--trace-out", NO_FOLDER])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("specviz", run_name="__main__")  # what `python -m specviz` runs
    captured = capsys.readouterr()
    assert exit_.value.code == 2 and captured.out == ""
    assert captured.err == f"specviz: --trace-out {NO_FOLDER}: the folder /nonexistent-dir does not exist\n"


@pytest.mark.slow  # a process of its own; the same in this process above
def test_python_m_specviz_with_an_unwritable_trace_out_prints_no_traceback():
    result = run_cli("generate", "--prompt", "hi", "--trace-out", NO_FOLDER)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"specviz: --trace-out {NO_FOLDER}: the folder /nonexistent-dir does not exist\n"


@pytest.mark.slow
def test_the_installed_package_runs_from_any_folder(tmp_path):
    """README's commands install specviz itself (`pip install --no-deps -e .`): the `specviz` command and `python -m
    specviz` answer from a folder that is not the repository's, with no PYTHONPATH."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    command = os.path.join(os.path.dirname(sys.executable), "specviz")
    for argv in ([command, "generate", "--help"], [sys.executable, "-m", "specviz", "generate", "--help"]):
        result = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 0 and "--prompt" in result.stdout, (argv, result.stderr[-500:])
