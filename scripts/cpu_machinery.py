"""What the float32 CPU path's machinery buys now, each part against going without it, in one run.

    python -m scripts.cpu_machinery --out docs/data/cpu-machinery      # about 15 minutes on two cores

llama.cpp runs the GGUFs in their own quantization on a CPU (`--backend llama.cpp`); the app's default still runs
on transformers in float32, and these parts were written to make that path fast. Each is measured here as a user
meets it:

1. The linear kernel (models/cpu_linear.py). `python -m specviz generate --baseline --json` on the default offline
   run (SmolLM2-135M-Instruct drafted for by prompt lookup, else its own 4-bit copy) with each kernel forced
   (SPECVIZ_CPU_LINEAR=stock|few-row|packed), and on the Qwen2.5-Coder pair with stock against packed-only (the
   kernel its size gets): plain decoding's tokens/s and speculative decoding's, the variants in turn, repeat by
   repeat, so that the machine's drift falls on all alike.
2. The lean 4-bit step (models/int4_decoder.py): the default draft's one-token step through it against the same
   4-bit copy through transformers' forward, alternating, in this process.
3. Giving the checkpoint's pages back (models/checkpoint_memory.py): the peak memory of the Qwen pair's run with it
   and with page_out and copy_out_of_checkpoint turned into no-ops.

Prints one JSON object and writes it, with a table (report.md), to the --out folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROMPT = "Write a Python function that checks whether a number is prime, then explain it in two sentences."
OFFLINE_RUN = ["--max-new-tokens", "64"]
PAIR_RUN = ["--preset", "qwen2.5-coder", "--max-new-tokens", "48"]
WITHOUT_PAGE_OUT = """import runpy, sys
from specviz.models import checkpoint_memory, cpu_linear, int4_decoder
nothing = lambda *args, **kwargs: False
for module in (checkpoint_memory, cpu_linear, int4_decoder):
    for name in ("page_out", "copy_out_of_checkpoint"):
        if hasattr(module, name):
            setattr(module, name, nothing)
sys.argv = ["specviz", *sys.argv[1:]]
runpy.run_module("specviz", run_name="__main__")
"""


def generate(args: list[str], env: dict, without_page_out: bool = False) -> dict:
    """One `generate --baseline --json` in a process of its own: its summary, its peak RSS and its stages' times."""
    command = [sys.executable, "-c", WITHOUT_PAGE_OUT] if without_page_out else [sys.executable, "-m", "specviz"]
    command += ["generate", "--prompt", PROMPT, "--baseline", "--json", *args]
    started = time.perf_counter()
    process = subprocess.Popen(["/usr/bin/time", "-f", "peak_kb %M", *command], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, **env, "SPECVIZ_PROGRESS": "1"})
    stages, peak_kb = [], None
    for line in process.stderr:  # the stages as they come, each with its time
        if line.startswith("specviz: "):
            stages.append((time.perf_counter() - started, line.removeprefix("specviz: ").strip()))
        elif line.startswith("peak_kb "):
            peak_kb = int(line.split()[1])
    output = process.stdout.read()
    if process.wait() != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {output[-500:]}")
    summary = json.loads(output)
    return {"tokens_per_s": summary["tokens_per_s"], "plain_tokens_per_s": summary["baseline_tokens_per_s"],
            "speedup": summary["speedup_measured"], "peak_mb": peak_kb / 1024 if peak_kb else None,
            "seconds": time.perf_counter() - started, "stages": stages}


def kernels(repeats: int, calibration: Path) -> dict:
    """Part 1: each kernel forced, in turn, per repeat."""
    variants = {("offline", kernel): (OFFLINE_RUN, kernel) for kernel in ("stock", "few-row", "packed")}
    variants.update({("qwen2.5-coder", kernel): (PAIR_RUN, kernel) for kernel in ("stock", "packed-only")})
    runs: dict[tuple, list[dict]] = {key: [] for key in variants}
    for repeat in range(repeats):
        order = list(variants) if repeat % 2 == 0 else list(reversed(variants))
        for key in order:
            args, kernel = variants[key]
            env = {"SPECVIZ_CPU_LINEAR": kernel,
                   "SPECVIZ_CALIBRATION": str(calibration / f"{key[0]}-{kernel}-{repeat}.json")}
            runs[key].append(generate(args, env))
            print(f"{key}: {runs[key][-1]['plain_tokens_per_s']:.1f} plain, {runs[key][-1]['tokens_per_s']:.1f} "
                  f"speculative tok/s", file=sys.stderr, flush=True)
    return {f"{run} {kernel}": _medians(results) for (run, kernel), results in runs.items()}


def lean_step(repeats: int) -> dict:
    """Part 2: the 4-bit draft's one-token step, through int4_decoder and through transformers' forward."""
    import torch

    from specviz.config import OFFLINE_MODEL
    from specviz.drafters.weights import int4_copy
    from specviz.models import int4_decoder
    from specviz.models import loading as models
    from specviz.models.profiling import measure_verify_costs

    torch.set_num_threads(min(2, os.cpu_count() or 1))
    target = models.load_fresh(OFFLINE_MODEL, torch.device("cpu"), torch.float32)
    steps = {"lean step (int4_decoder)": int4_decoder.Int4Decoder(target.hf_model),
             "4-bit copy through transformers": int4_copy(target)}
    context = target.tokenizer(PROMPT)["input_ids"]
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for repeat in range(repeats):
        for name in steps if repeat % 2 == 0 else reversed(steps):
            model = models.TransformersModel(steps[name], target.logits_width, target.device, name)
            samples[name].append(measure_verify_costs(model, context, max_k=1, repeats=9, warmup=2)[1])
    medians = {name: statistics.median(ms) for name, ms in samples.items()}
    return {"step_ms": medians, "samples_ms": samples,
            "ratio": medians["4-bit copy through transformers"] / medians["lean step (int4_decoder)"]}


def page_out(repeats: int, calibration: Path) -> dict:
    """Part 3: the Qwen pair's peak memory with the checkpoint's pages given back and without."""
    peaks: dict[str, list[float]] = {"with": [], "without": []}
    for repeat in range(repeats):
        for name in ("with", "without") if repeat % 2 == 0 else ("without", "with"):
            env = {"SPECVIZ_CALIBRATION": str(calibration / f"memory-{name}-{repeat}.json")}
            peaks[name].append(generate(PAIR_RUN, env, without_page_out=name == "without")["peak_mb"])
    return {"peak_mb": peaks, "median_mb": {name: statistics.median(values) for name, values in peaks.items()}}


def _medians(results: list[dict]) -> dict:
    return {key: statistics.median(r[key] for r in results) for key in ("tokens_per_s", "plain_tokens_per_s", "speedup")} | {
        "runs": [{key: r[key] for key in ("tokens_per_s", "plain_tokens_per_s", "speedup", "peak_mb")} for r in results]}


def report(results: dict) -> str:
    lines = ["# What the float32 CPU path's machinery buys", "", f"{results['machine']}, {results['date']}; "
             f"`python -m scripts.cpu_machinery --repeats {results['repeats']}`", "",
             "| run, linear kernel | plain tok/s | speculative tok/s | measured speedup |", "|---|---|---|---|"]
    for name, figures in results["kernels"].items():
        lines.append(f"| {name} | {figures['plain_tokens_per_s']:.1f} | {figures['tokens_per_s']:.1f} | "
                     f"{figures['speedup']:.2f}× |")
    lean = results["lean_step"]
    lines += ["", "The default draft's one-token step: " + ", ".join(f"{name} {ms:.1f} ms" for name, ms in
                                                                 lean["step_ms"].items()) + f" ({lean['ratio']:.2f}×).",
              "", "The Qwen pair's peak memory (transformers, packed-only): " + ", ".join(
                  f"{name} page_out {mb / 1024:.2f} GB" for name, mb in results["page_out"]["median_mb"].items()) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="cpu-machinery")
    parser.add_argument("--parts", nargs="*", default=["kernels", "lean", "memory"])
    args = parser.parse_args(argv)
    from specviz.bench.command import cpu_description

    results = {"machine": f"{cpu_description()}, {os.cpu_count()} cores", "date": time.strftime("%Y-%m-%d"),
               "repeats": args.repeats}
    with tempfile.TemporaryDirectory() as folder:
        calibration = Path(folder)
        if "lean" in args.parts:
            results["lean_step"] = lean_step(args.repeats * 3)
        if "kernels" in args.parts:
            results["kernels"] = kernels(args.repeats, calibration)
        if "memory" in args.parts:
            results["page_out"] = page_out(max(1, args.repeats - 1), calibration)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    if {"kernels", "lean", "memory"} <= set(args.parts):
        (out / "report.md").write_text(report(results), encoding="utf-8")
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
