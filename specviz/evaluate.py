"""Speculative against plain decoding on Spec-Bench-format prompts, per category. A script that reports figures.

    python -m specviz.evaluate --questions ../shared/data/spec_bench/question.jsonl --per-category 3 \
        --max-new-tokens 96 --temperatures 0 1 [--draft ngram|MODEL] [--out results.json]

For every prompt it runs the speculative decoder and the plain baseline in the same process on the same
target, and reports pooled α, tokens per round, c, measured and theoretical speedup, greedy identity, and
the engine's own overhead (wall time outside model forwards).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

from . import engine, theory
from .config import NGRAM_DRAFTER, OFFLINE_MODEL, DecodeConfig
from .metrics import summarize


def load_questions(path: str, per_category: int, categories: list[str] | None) -> list[dict]:
    chosen, seen = [], defaultdict(int)
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            category = item["category"]
            if (categories and category not in categories) or seen[category] >= per_category:
                continue
            seen[category] += 1
            chosen.append({"category": category, "prompt": item["turns"][0], "id": item["question_id"]})
    return chosen


def evaluate(questions, target, draft, gamma, max_new_tokens, temperature, seed=0) -> list[dict]:
    rows = []
    base_config = DecodeConfig(target=target, draft=draft, gamma=gamma, max_new_tokens=max_new_tokens,
                               temperature=temperature, seed=seed).validate()
    pipeline = engine.build_pipeline(base_config)
    engine.run_speculative(pipeline, "Warm up.", base_config)  # first-call costs stay out of the figures
    for question in questions:
        trace = engine.run_speculative(pipeline, question["prompt"], base_config)
        trace.baseline = engine.baseline_decode(pipeline, question["prompt"], base_config)
        metrics = summarize(trace)
        rows.append({**question, "temperature": temperature, "tokens": metrics.generated_tokens,
                     "rounds": metrics.rounds, "tested": metrics.tested_positions, "accepted": metrics.accepted_tokens,
                     "alpha": metrics.alpha, "c": metrics.c, "speedup_measured": metrics.speedup_measured,
                     "identical": metrics.identical, "wall_ms": trace.wall_ms, "forward_ms": trace.forward_ms,
                     "baseline_ms": trace.baseline.wall_ms, "baseline_tokens": len(trace.baseline.token_ids)})
        print(f"{question['category']:>15} #{question['id']:<4} T={temperature} α={metrics.alpha:.2f} "
              f"tok/round={metrics.tokens_per_round:.2f} speedup={metrics.speedup_measured:.2f} "
              f"identical={metrics.identical}", file=sys.stderr, flush=True)
    return rows


def pool(rows: list[dict], gamma: int) -> dict:
    """Pooled figures over rows: α over all tests, speedup as ratio of per-token times."""
    tested = sum(r["tested"] for r in rows)
    alpha = sum(r["accepted"] for r in rows) / tested if tested else 0.0
    c = sum(r["c"] for r in rows) / len(rows)
    spec_ms_per_token = sum(r["wall_ms"] for r in rows) / sum(r["tokens"] for r in rows)
    base_ms_per_token = sum(r["baseline_ms"] for r in rows) / sum(r["baseline_tokens"] for r in rows)
    wall = sum(r["wall_ms"] for r in rows)
    return {"prompts": len(rows), "alpha": alpha, "tokens_per_round": sum(r["tokens"] for r in rows) / sum(r["rounds"] for r in rows),
            "c": c, "speedup_measured": base_ms_per_token / spec_ms_per_token,
            "speedup_theoretical": theory.speedup(alpha, gamma, c),
            "identical": f"{sum(bool(r['identical']) for r in rows)}/{len(rows)}",
            "overhead": 1 - sum(r["forward_ms"] for r in rows) / wall}


def markdown_table(summary: dict) -> str:
    lines = ["| T | category | prompts | α | tokens/round | c | measured | theoretical | identical | overhead |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for (temperature, category), s in summary.items():
        lines.append(f"| {temperature} | {category} | {s['prompts']} | {s['alpha']:.3f} | {s['tokens_per_round']:.2f} | "
                     f"{s['c']:.4f} | {s['speedup_measured']:.2f}x | {s['speedup_theoretical']:.2f}x | "
                     f"{s['identical']} | {100 * s['overhead']:.1f}% |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specviz.evaluate")
    parser.add_argument("--questions", required=True, help="Spec-Bench-format JSONL")
    parser.add_argument("--categories", nargs="*")
    parser.add_argument("--per-category", type=int, default=3)
    parser.add_argument("--target", default=OFFLINE_MODEL)
    parser.add_argument("--draft", default=NGRAM_DRAFTER)
    parser.add_argument("--gamma", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 1.0])
    parser.add_argument("--out", help="write every row and the pooled summary as JSON here")
    args = parser.parse_args(argv)
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    questions = load_questions(args.questions, args.per_category, args.categories)
    if not questions:
        print("specviz.evaluate: no questions matched", file=sys.stderr)
        return 1
    rows = []
    for temperature in args.temperatures:
        rows += evaluate(questions, args.target, args.draft, args.gamma, args.max_new_tokens, temperature)
    summary = {}
    for temperature in args.temperatures:
        at_t = [r for r in rows if r["temperature"] == temperature]
        for category in dict.fromkeys(r["category"] for r in at_t):
            summary[(temperature, category)] = pool([r for r in at_t if r["category"] == category], args.gamma)
        summary[(temperature, "ALL")] = pool(at_t, args.gamma)
    print(markdown_table(summary))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump({"args": vars(args), "rows": rows,
                       "summary": [{"temperature": t, "category": c, **s} for (t, c), s in summary.items()]}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
