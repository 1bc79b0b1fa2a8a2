"""The default live run on a quiet and on a busy machine, in one invocation: does the measured speedup hold?

A class laptop is rarely quiet. This runs the app's default run (its pair, prompt and settings, compared with plain
decoding as the page does) `--runs` times with the machine left alone and `--runs` times while a second process
keeps one core busy, alternating quiet and busy so that the machine's drift falls on both alike. For each run it
reports the measured speedup, its interval, the prediction and their ratio, and whether the page's headline says the
machine was busy; then the goals:

- measured ÷ predicted within 0.9–1.1 on every run;
- the busy runs' intervals hold the quiet runs' median speedup in at least 4 of 5 (the same share of more runs);
- every busy run's headline says the machine was busy.

    python -m specviz.bench.busy_machine --runs 5 --out busy.json     # about 4 minutes on two cores
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager

BUSY_LOOP = "while True: pass"  # one core kept busy, as another program on a class laptop would
RATIO_GOAL = (0.9, 1.1)
HELD_SHARE = 0.8  # of the busy runs whose interval must hold the quiet runs' median


@contextmanager
def busy_core(busy: bool):
    """A second process spinning on one core while the block runs (nothing when not busy)."""
    if not busy:
        yield
        return
    spinner = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    try:
        time.sleep(0.5)  # let the scheduler place it
        yield
    finally:
        spinner.kill()
        spinner.wait()


def one_run(busy: bool) -> dict:
    """The default run as the page runs it (a pipeline built for the run, plain decoding in turn), on a busy machine
    or a quiet one; its figures as the page shows them."""
    from specviz.analysis.metrics import summarize
    from specviz.app.pair_menu import default_pair
    from specviz.app.policy import current_policy
    from specviz.app.request import RunRequest
    from specviz.decoding import comparison
    from specviz.decoding.calibration import calibrated_pipeline
    from specviz.views.stats_text import headline

    request = RunRequest(pair=default_pair())  # the page's first Run: the pair its menu opens on, on this machine
    config = request.to_config(current_policy())
    pipeline = calibrated_pipeline(config)
    comparison.warm_up(pipeline, config)
    with busy_core(busy):
        trace = comparison.compare(pipeline, request.prompt, config)
    metrics = summarize(trace)
    return {"pair": request.pair, "draft": config.draft, "busy_core": busy, "measured": metrics.speedup_measured,
            "low": metrics.speedup_low, "high": metrics.speedup_high, "predicted": metrics.speedup_predicted,
            "ratio": metrics.speedup_measured / metrics.speedup_predicted, "alpha": metrics.alpha,
            "others_busy_cores": metrics.others_busy_cores, "plain_spread": metrics.plain_spread,
            "said_busy": bool(metrics.busy), "identical": metrics.identical, "plain_step_ms": metrics.target_step_ms,
            "headline": re.sub(r"\*\*", "", headline(trace, metrics))}


def goals(runs: list[dict]) -> dict:
    """The three goals (module docstring), each with what was measured."""
    quiet = [run for run in runs if not run["busy_core"]]
    busy = [run for run in runs if run["busy_core"]]
    quiet_median = statistics.median(run["measured"] for run in quiet)
    held = sum(1 for run in busy if run["low"] is not None and run["low"] <= quiet_median <= run["high"])
    ratios = [run["ratio"] for run in runs]
    return {
        "ratio_within": {"goal": RATIO_GOAL, "worst": [min(ratios), max(ratios)],
                         "met": all(RATIO_GOAL[0] <= ratio <= RATIO_GOAL[1] for ratio in ratios)},
        "busy_intervals_hold_quiet_median": {"quiet_median": quiet_median, "held": held, "of": len(busy),
                                             "met": held >= HELD_SHARE * len(busy)},
        "busy_said": {"said": sum(run["said_busy"] for run in busy), "of": len(busy),
                      "met": all(run["said_busy"] for run in busy)},
        "quiet_said_quiet": {"said_quiet": sum(not run["said_busy"] for run in quiet), "of": len(quiet)},
    }


def report(runs: list[dict], met: dict, machine: str) -> str:
    """The runs and the goals as Markdown."""
    lines = [f"The page's default run ({runs[0]['pair']}: {runs[0]['draft']}, γ 4, 64 tokens, T = 0), {machine}:", "",
             "| run | one core kept busy | measured (interval) | predicted | measured ÷ predicted | others' cores | "
             "plain spread | page says busy |", "|---|---|---|---|---|---|---|---|"]
    for index, run in enumerate(runs, 1):
        load = "—" if run["others_busy_cores"] is None else f"{run['others_busy_cores']:.2f}"
        lines.append(f"| {index} | {'yes' if run['busy_core'] else 'no'} | {run['measured']:.2f}× "
                     f"({run['low']:.2f}–{run['high']:.2f}) | {run['predicted']:.2f}× | {run['ratio']:.3f} | {load} | "
                     f"{run['plain_spread']:.0%} | {'yes' if run['said_busy'] else 'no'} |")
    ratio, held, said = met["ratio_within"], met["busy_intervals_hold_quiet_median"], met["busy_said"]
    lines += ["", f"- measured ÷ predicted within {ratio['goal'][0]}–{ratio['goal'][1]} on every run: "
                  f"{'met' if ratio['met'] else 'MISSED'} ({ratio['worst'][0]:.3f}–{ratio['worst'][1]:.3f})",
              f"- busy runs' intervals holding the quiet median {held['quiet_median']:.2f}×: {held['held']} of "
              f"{held['of']} ({'met' if held['met'] else 'MISSED'})",
              f"- busy runs whose headline says the machine was busy: {said['said']} of {said['of']} "
              f"({'met' if said['met'] else 'MISSED'}); quiet runs called quiet: {met['quiet_said_quiet']['said_quiet']} "
              f"of {met['quiet_said_quiet']['of']}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specviz.bench.busy_machine", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs on each of the quiet and the busy machine")
    parser.add_argument("--out", help="also write the runs and the goals to this JSON file")
    args = parser.parse_args(argv)
    if args.runs < 1:
        print("--runs must be at least 1", file=sys.stderr)
        return 2
    from specviz.models.loading import cpu_name

    runs = []
    for index in range(2 * args.runs):  # quiet, busy, quiet, busy, ...: drift falls on both alike
        run = one_run(busy=index % 2 == 1)
        print(f"run {index + 1}: {'busy' if run['busy_core'] else 'quiet'} {run['measured']:.2f}× "
              f"({run['low']:.2f}–{run['high']:.2f}), predicted {run['predicted']:.2f}×", file=sys.stderr, flush=True)
        runs.append(run)
    met = goals(runs)
    machine = f"{cpu_name()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"
    print(report(runs, met, machine))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump({"machine": machine, "runs": runs, "goals": met}, handle, indent=1, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
