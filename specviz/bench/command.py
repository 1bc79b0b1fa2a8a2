"""`python -m specviz.bench`: the benchmark's command line, its files and --resume (the runs are in bench/run.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

from specviz.bench import run as bench_run
from specviz.bench.run import (
    DEFAULT_PROMPTS,
    HF_METHODS,
    LLAMA_METHODS,
    METHODS,
    QUICK,
    Method,
    Runner,
    load_prompts,
    plan_methods,
    run_benchmark,
)
from specviz.config import BACKENDS, LLAMA_CPP, OFFLINE_MODEL, TRANSFORMERS, DecodeConfig
from specviz.models import loading as models
from specviz.paths import check_outputs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specviz.bench", description=bench_run.__doc__.split("\n\n")[0])
    parser.add_argument("--questions", default=str(DEFAULT_PROMPTS),
                        help="Spec-Bench-format JSONL (default: assets/bench_prompts.jsonl)")
    parser.add_argument("--categories", nargs="*", help="only these categories")
    parser.add_argument("--limit", type=int, help="at most this many prompts per category")
    parser.add_argument("--methods", nargs="*", choices=METHODS, default=list(METHODS))
    parser.add_argument("--target", default=OFFLINE_MODEL)
    parser.add_argument("--backend", choices=list(BACKENDS), default=TRANSFORMERS,
                        help="what runs specviz's forwards (plain included): transformers, or llama.cpp on the GGUF "
                             "files (then transformers' methods are left out)")
    parser.add_argument("--draft", nargs="*", default=[],
                        help="draft model ids or folders ('int4:' before one runs its 4-bit copy), 'distilled' for the "
                        "shipped draft of the offline target; "
                        "'ngram+' before any of them drafts by prompt lookup where it matches, with that draft elsewhere "
                        "(prompt lookup always runs)")
    parser.add_argument("--gamma", type=int, default=DecodeConfig.gamma,
                        help="γ for every speculative method (adaptive: the most per round)")
    parser.add_argument("--draft-confidence", type=float, default=0.0,
                        help="a draft model stops a draft after a token it gave less than this (specviz and "
                             "transformers' assisted generation alike; 0: never, and assisted keeps its own default)")
    parser.add_argument("--tree-budget", type=int, default=0,
                        help="specviz_tree's most nodes per round (0: what this machine's measured v(k) affords, chosen "
                             "per run as the app and generate --tree do)")
    parser.add_argument("--draft-window", type=int, default=0, metavar="N",
                        help="specviz's draft models read only N prompt tokens (DecodeConfig.draft_window; 0: all)")
    parser.add_argument("--draft-vocab", type=int, default=0, metavar="N",
                        help="specviz's draft models score only N token ids (DecodeConfig.draft_vocab; 0: all); "
                             "transformers' assisted generation has neither lever")
    parser.add_argument("--skip", nargs="*", default=[], metavar="LABEL",
                        help="leave out these methods, by their label in the report (e.g. 'specviz_adaptive[ngram]')")
    parser.add_argument("--resume", action="store_true",
                        help="keep the rows in OUT/rows.jsonl from an interrupted run with the same arguments, and run "
                        "only the prompts they lack (each prompt's rows are appended there as it finishes)")
    parser.add_argument("--also-gammas", type=int, nargs="*", default=[],
                        help="also run specviz at these fixed γ (to compare adaptive γ with the best fixed one)")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per prompt and method; the median is kept")
    parser.add_argument("--out", default="bench-out", help="folder for results.json, report.md and report.html")
    parser.add_argument("--quick", action="store_true", help="one prompt per category, 32 tokens, greedy, one repeat")
    parser.add_argument("--report-from", metavar="RESULTS_JSON",
                        help="rebuild the summaries and reports from an earlier results.json, or from a run's --out folder "
                        "(its rows so far), running nothing")
    args = parser.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            if getattr(args, key) == parser.get_default(key):
                setattr(args, key, value)
    try:
        check_outputs(folders={"--out": args.out})  # before any model loads (an OutputPathError is a ValueError)
        return _rebuild(args.report_from, args.out) if args.report_from else _main(args)
    except (ValueError, OSError, models.ModelUnavailable) as error:
        print(f"specviz.bench: {error}", file=sys.stderr)
        return 2


def _rebuild(results_path: str, out: str) -> int:
    """Reports from an earlier results.json, or from a run's folder (run.json and rows.jsonl: a run in progress
    or cut short, reported as far as it got)."""
    from specviz.bench import report

    source = Path(results_path)
    if source.is_dir():
        earlier = json.loads((source / "run.json").read_text(encoding="utf-8"))
        earlier["rows"] = _read_rows(source / "rows.jsonl")
        if not earlier["rows"]:
            raise ValueError(f"{source / 'rows.jsonl'} holds no finished prompt yet")
    else:
        earlier = json.loads(source.read_text(encoding="utf-8"))
    verify_costs = {int(k): v for k, v in earlier["verify_costs"].items()}
    results = report.build_results(earlier["args"], earlier["environment"], verify_costs, earlier["rows"])
    _write(results, Path(out))
    return 0


def _write(results: dict, out: Path) -> None:
    from specviz.bench import report

    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    (out / "report.md").write_text(report.markdown(results), encoding="utf-8")
    (out / "report.html").write_text(report.html(results), encoding="utf-8")
    print(report.markdown(results))


RESUME_KEYS = ("target", "draft", "backend", "gamma", "draft_confidence", "max_new_tokens", "draft_window", "draft_vocab")


def _earlier_rows(rows_file: Path, args, plan: list[Method]) -> list[dict]:
    """The rows of an interrupted run, kept per (temperature, prompt) only where every planned method has one, and
    only if that run (its run.json) measured with these RESUME_KEYS' settings. A row's token count is no test of
    that: llama.cpp's speculative decoding may pass max_new_tokens by up to its draft length."""
    if not rows_file.exists():
        return []
    run_file = rows_file.parent / "run.json"
    earlier = json.loads(run_file.read_text(encoding="utf-8"))["args"] if run_file.exists() else {}
    changed = [key for key in RESUME_KEYS if earlier.get(key) != vars(args).get(key)]
    if changed:
        print(f"not resuming: {run_file} was run with other {', '.join(changed)}", file=sys.stderr)
        return []
    rows = _read_rows(rows_file)
    labels = {method.label for method in plan}
    by_prompt: dict[tuple, list[dict]] = {}
    for row in rows:
        by_prompt.setdefault((row["temperature"], row["id"]), []).append(row)
    kept = [row for group in by_prompt.values() if {r["method"] for r in group} == labels for row in group]
    print(f"resuming: {len(kept) // max(1, len(labels))} prompt runs kept from {rows_file}", file=sys.stderr)
    return kept


def _read_rows(rows_file: Path) -> list[dict]:
    return [json.loads(line) for line in rows_file.read_text(encoding="utf-8").splitlines() if line.strip()]


def _environment(runner: Runner, started: float) -> dict:
    environment = {"device": models.describe_device(runner.target.device), "cpu": cpu_description(),
                   "dtype": str(runner.target.dtype), "linear_kernel": runner.target.linear_kernel,
                   "torch_threads": torch.get_num_threads(), "torch": torch.__version__, "cpu_count": os.cpu_count(),
                   "seconds": round(time.perf_counter() - started, 1)}
    if runner.target.device.type == "cuda":
        environment["cuda_peak_mb"] = round(torch.cuda.max_memory_allocated() / (1 << 20), 1)
    return environment


def cpu_description() -> str:
    """The CPU's model name (loading.cpu_name) and widest vector extension, from /proc/cpuinfo."""
    from specviz.models.loading import cpu_name

    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return cpu_name()
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    widest = next((flag for flag in ("amx_tile", "avx512f", "avx2") if flag in flags), None)
    return f"{cpu_name()} ({widest})" if widest else cpu_name()


def _llama_tools_or_not(methods: list[str], named: bool) -> list[str]:
    """The methods to run: llama.cpp's own tools only where they are built (llama_peer.build). Asked for by name
    without them: refused before any model loads; in the default list: left out, with a line on stderr."""
    from specviz.bench import llama_peer

    wanted = [method for method in methods if method in LLAMA_METHODS]
    if not wanted or llama_peer.built():
        return methods
    why = "llama.cpp's own tools are not built here (python -m specviz.bench.llama_peer build, about 10 minutes)"
    if named:
        raise ValueError(f"{', '.join(wanted)}: {why}")
    print(f"leaving out {', '.join(wanted)}: {why}", file=sys.stderr, flush=True)
    return [method for method in methods if method not in LLAMA_METHODS]


def _main(args) -> int:
    from transformers.utils import logging

    from specviz.bench import report

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    if args.repeats < 1 or (args.limit is not None and args.limit < 1):
        raise ValueError("--repeats and --limit must be at least 1")
    prompts = load_prompts(args.questions, args.categories, args.limit)
    if not prompts:
        raise ValueError(f"no prompts in {args.questions} match the categories {args.categories}")
    started = time.perf_counter()
    named = args.methods != list(METHODS)  # methods asked for by name, not the default list
    if args.backend == LLAMA_CPP:  # transformers' methods need its models
        asked = set(args.methods) & set(HF_METHODS)
        if asked and named:
            raise ValueError(f"{', '.join(sorted(asked))} cannot run with --backend llama.cpp")
        args.methods = [method for method in args.methods if method not in HF_METHODS]
    args.methods = _llama_tools_or_not(args.methods, named)
    runner = Runner(args.target, args.draft, args.gamma, args.max_new_tokens, draft_confidence=args.draft_confidence,
                    tree_budget=args.tree_budget, trees="specviz_tree" in args.methods, draft_window=args.draft_window,
                    draft_vocab=args.draft_vocab, backend=args.backend)
    plan = [method for method in plan_methods(args.methods, args.draft, [g for g in args.also_gammas if g != args.gamma])
            if method.label not in args.skip]
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    widest = max([args.gamma, *args.also_gammas]) + 1  # a chain verifies γ + 1 tokens, a tree its nodes + 1
    if "specviz_tree" in args.methods:
        widest = max(widest, (args.tree_budget or 2 * args.gamma) + 1)
    verify_costs = runner.verify_costs(prompts[0]["prompt"], widest)
    log(f"v(k) for k = 1..{len(verify_costs)}: " + ", ".join(f"{v:.2f}" for v in verify_costs.values()))
    rows_file = Path(args.out) / "rows.jsonl"
    done = _earlier_rows(rows_file, args, plan) if args.resume else []
    rows_file.parent.mkdir(parents=True, exist_ok=True)
    rows_file.write_text("".join(json.dumps(row) + "\n" for row in done), encoding="utf-8")
    (rows_file.parent / "run.json").write_text(json.dumps(  # what --report-from needs beside the rows, mid-run
        {"args": vars(args), "environment": _environment(runner, started), "verify_costs": verify_costs}, indent=1))

    def append(new_rows: list[dict]) -> None:
        with rows_file.open("a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(row) + "\n" for row in new_rows))

    rows = run_benchmark(runner, prompts, plan, args.temperatures, args.repeats, log, done, append)
    environment = _environment(runner, started)
    results = report.build_results(vars(args), environment, verify_costs, rows)
    _write(results, Path(args.out))
    log(f"wrote {Path(args.out) / 'results.json'}, report.md and report.html in {environment['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
