"""docs/results.md's token-tree table at one temperature, from rows.jsonl (issue 34).

    python docs/data/bench-trees-39/table.py 0      # or 1

Speedups: the median over the prompts of each method's tokens/s over plain's on the same prompt; the ratios (tree ÷
chain, tree ÷ assisted) are medians of per-prompt ratios; tokens/round and tree nodes per round are pooled
(all tokens over all rounds)."""

import json
import statistics
import sys
from math import exp, log
from pathlib import Path

temperature = float(sys.argv[1])
rows = [json.loads(line) for line in (Path(__file__).parent / "rows.jsonl").open()]
rows = [row for row in rows if row["temperature"] == temperature]
by_prompt: dict = {}
for row in rows:
    by_prompt.setdefault((row["category"], row["id"]), {})[row["kind"]] = row
prompts = {key: runs for key, runs in by_prompt.items() if len(runs) == 5}  # every method ran on it
KINDS = ("specviz", "specviz_tree", "hf_assisted", "hf_assisted_defaults")


def line(label: str, group: list[dict]) -> tuple[str, dict]:
    median = lambda values: statistics.median(values)  # noqa: E731
    speed = {kind: median([runs[kind]["speedup"] for runs in group]) for kind in KINDS}
    tree_chain = median([runs["specviz_tree"]["tokens_per_s"] / runs["specviz"]["tokens_per_s"] for runs in group])
    tree_peer = median([runs["specviz_tree"]["tokens_per_s"] / runs["hf_assisted"]["tokens_per_s"] for runs in group])
    pooled = lambda kind, key: sum(runs[kind][key] for runs in group) / sum(runs[kind]["rounds"] for runs in group)  # noqa: E731
    chain_tpr, tree_tpr = pooled("specviz", "tokens"), pooled("specviz_tree", "tokens")
    nodes = sum(sum(runs["specviz_tree"]["draft_lengths"]) for runs in group) / sum(
        runs["specviz_tree"]["rounds"] for runs in group)
    plain = median([runs["plain"]["tokens_per_s"] for runs in group])
    text = (f"| {label} | {plain:.1f} | {speed['specviz']:.2f}× | {speed['specviz_tree']:.2f}× | {tree_chain:.2f} | "
            f"{tree_peer:.2f} | {speed['hf_assisted']:.2f}× | {speed['hf_assisted_defaults']:.2f}× | "
            f"{chain_tpr:.2f} → {tree_tpr:.2f} ({nodes:.1f}) |")
    return text, speed


print("| category | plain tok/s | chain | tree | tree ÷ chain | tree ÷ assisted | transformers assisted | assisted, its "
      "defaults | tokens/round chain → tree (tree nodes) |")
print("|---|---|---|---|---|---|---|---|---|")
categories = sorted({category for category, _ in prompts})
per_category = {}
for category in categories:
    text, per_category[category] = line(category, [runs for (c, _), runs in prompts.items() if c == category])
    print(text)
print(line(f"**all {len(prompts)}** (median of prompts)", list(prompts.values()))[0])
geomean = {kind: exp(statistics.mean(log(speed[kind]) for speed in per_category.values())) for kind in KINDS}
print("\ngeometric mean over categories: " + ", ".join(f"{kind} {value:.2f}×" for kind, value in geomean.items()))
greedy = [runs[kind].get("identical") for runs in prompts.values() for kind in KINDS]
print(f"identical to plain: {sum(1 for v in greedy if v)} of {sum(1 for v in greedy if v is not None)}")
budgets = sorted({runs["specviz_tree"]["tree_budget"] for runs in prompts.values()})
print(f"tree budgets: {budgets}")
