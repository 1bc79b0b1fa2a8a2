"""How steady is c between identical runs? `python -m scripts.c_spread`

c (a draft step's time over a target step's) feeds the predicted speedup, so a student who runs the same
prompt twice should see about the same c, also after the server restarted. This builds each pair once, as the
app does on its first Run, then decodes the same prompt `--runs` times in a row with no warm-up and prints c for
every run, its median and its spread: the largest distance from the median, in percent of it (the goal is within
±15%). The app times c's two steps once per pair after loading (pipeline.calibrate), so within one server c does
not move; to show what a restart would, each run here first forgets those timings and takes them afresh, as a new
server's first Run does (`--keep-timings` measures one server's reruns instead).

    python -m scripts.c_spread --draft distilled int4 --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from specviz.analysis.metrics import summarize
from specviz.config import OFFLINE_MODEL, DecodeConfig
from specviz.decoding import engine
from specviz.decoding.pipeline import build_pipeline, calibrate

PROMPT = "Explain what a rainbow is, then list three colours."
GOAL = 0.15
TIMING_KEYS = ("target-forward-ms", "step-ms")  # pipeline.calibrate's entries in the weights cache


def spread(values: list[float]) -> float:
    """The largest distance from the median, relative to it: [0.9, 1.0, 1.1] -> 0.1."""
    middle = statistics.median(values)
    return max(abs(value - middle) for value in values) / middle if middle else float("inf")


def measure(target: str, draft: str, runs: int, max_new_tokens: int, prompt: str, keep_timings: bool = False) -> dict:
    config = DecodeConfig(target=target, draft=draft, max_new_tokens=max_new_tokens).validate()
    os.environ["SPECVIZ_CALIBRATION"] = "off"  # fresh calibrations, not the ratios an earlier start kept on disk
    pipeline = build_pipeline(config)
    cs, rounds = [], []
    for _ in range(runs):
        if not keep_timings:  # a restarted server's first Run: nothing timed yet
            for key in pipeline.cache.keys():
                if key[0] in TIMING_KEYS:
                    pipeline.cache.clear_key(key)
        calibrate(pipeline, config.target, config.gamma + 1)  # as the app and the CLI do after loading
        trace = engine.run_speculative(pipeline, prompt, config)
        metrics = summarize(trace)
        cs.append(metrics.c)
        rounds.append(metrics.rounds)
    return {"draft": draft, "c": cs, "rounds": rounds, "median": statistics.median(cs), "spread": spread(cs),
            "basis": metrics.c_basis}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.c_spread", description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=OFFLINE_MODEL)
    parser.add_argument("--draft", nargs="+", default=["distilled", "int4"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--json", action="store_true", help="one JSON object per drafter instead of the table")
    parser.add_argument("--keep-timings", action="store_true", help="time c's steps once, as one server does")
    args = parser.parse_args(argv)
    if args.runs < 2:
        print("c_spread: --runs must be at least 2", file=sys.stderr)
        return 2
    print(f"c over {args.runs} identical runs, {args.max_new_tokens} tokens, T=0: {args.prompt!r}")
    worst = 0.0
    for draft in args.draft:
        result = measure(args.target, draft, args.runs, args.max_new_tokens, args.prompt, args.keep_timings)
        worst = max(worst, result["spread"])
        if args.json:
            print(json.dumps(result))
            continue
        values = " ".join(f"{c:.3f}" for c in result["c"])
        print(f"{draft:>12}: c = {values} · median {result['median']:.3f} ({result['basis']}) · spread "
              f"±{100 * result['spread']:.1f}% {'within' if result['spread'] <= GOAL else 'OUTSIDE'} ±{100 * GOAL:.0f}%")
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
