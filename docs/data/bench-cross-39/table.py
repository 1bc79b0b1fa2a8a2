"""docs/results.md's cross-tokenizer tables from rows.jsonl (issue 35), one row per Spec-Bench category (its 3
prompts), beside the same-family draft's rows for the same prompts in ../bench-trees-39 (the chain preset; its
speedups are over plain decoding in that run).

    python docs/data/bench-cross-39/table.py 0      # or 1; add "gemma" for ../bench-cross-39-gemma

Speedups: tokens/s over plain's on the same prompt, geometric means over a category's prompts; α: the median, tokens
a round: pooled. "nll": the target's mean −log p per token of the method's text at T = 1 (bench/quality.py), where
a lossless method scores like plain sampling (means over the prompts). A run of transformers that raised (the row's
"error") is left out of its figures, which then cover the prompts where both ran; the count says how many failed."""

import json
import statistics
import sys
from math import exp, log, sqrt
from pathlib import Path

here = Path(__file__).parent
temperature = float(sys.argv[1])
draft = sys.argv[2] if len(sys.argv) > 2 else "SmolLM2"
folder = here.parent / "bench-cross-39-gemma" if draft == "gemma" else here
rows = [json.loads(line) for line in (folder / "rows.jsonl").open() if json.loads(line)["temperature"] == temperature]
sibling = {row["id"]: row for row in map(json.loads, (here.parent / "bench-trees-39" / "rows.jsonl").open())
           if row["temperature"] == temperature and row["kind"] == "specviz"}
prompts: dict = {}
for row in rows:
    prompts.setdefault(row["id"], {"category": row["category"]})[row["kind"]] = row
geo = lambda values: exp(statistics.mean(log(v) for v in values)) if values else float("nan")  # noqa: E731
both = lambda group: [g for g in group if "error" not in g["hf_assisted"]]  # noqa: E731  prompts where both ran
nll = temperature > 0
print(f"| category | prompts | plain tok/s | specviz, {draft} draft | transformers, same draft | specviz ÷ transformers "
      "| α | tokens/round | same-family 0.5B (chain) |" + (" nll plain / specviz / transformers |" if nll else
                                                           " identical specviz / transformers |"))
print("|---|---|---|---|---|---|---|---|---|---|")
categories: dict = {}
for runs in prompts.values():
    categories.setdefault(runs["category"], []).append(runs)
for category, group in sorted(categories.items()):
    ran, failed = both(group), len(group) - len(both(group))
    peer = f"{geo([g['hf_assisted']['speedup'] for g in ran]):.2f}×" if ran else "failed"
    ratio = f"{geo([g['specviz']['tokens_per_s'] / g['hf_assisted']['tokens_per_s'] for g in ran]):.2f}" if ran else "–"
    note = f" ({failed} failed)" if failed else ""
    if nll:
        tail = " / ".join(f"{statistics.mean(g[kind]['target_nll'] for g in (ran if kind == 'hf_assisted' else group)):.2f}"
                          if (ran or kind != "hf_assisted") else "–" for kind in ("plain", "specviz", "hf_assisted"))
    else:
        tail = (f"{sum(g['specviz']['identical'] for g in group)}/{len(group)} / "
                f"{sum(g['hf_assisted']['identical'] for g in ran)}/{len(ran)}")
    print(f"| {category} | {len(group)} | {statistics.mean(g['plain']['tokens_per_s'] for g in group):.1f} | "
          f"{geo([g['specviz']['speedup'] for g in group]):.2f}× | {peer}{note} | {ratio} | "
          f"{statistics.median(g['specviz']['alpha'] for g in group):.2f} | "
          f"{sum(g['specviz']['tokens'] for g in group) / sum(g['specviz']['rounds'] for g in group):.2f} | "
          f"{geo([sibling[g['plain']['id']]['speedup'] for g in group]):.2f}× | {tail} |")
groups = list(prompts.values())
ran = both(groups)
failures = [f"#{g['hf_assisted']['id']} ({g['category']}): {g['hf_assisted']['error'][:90]}" for g in groups
            if "error" in g["hf_assisted"]]
if failures:
    print("\ntransformers failed on " + "; ".join(failures))
ratios = [g["specviz"]["tokens_per_s"] / g["hf_assisted"]["tokens_per_s"] for g in ran]
print(f"\nall {len(groups)} prompts: specviz {geo([g['specviz']['speedup'] for g in groups]):.2f}× plain, same-family "
      f"0.5B {geo([sibling[g['plain']['id']]['speedup'] for g in groups]):.2f}×")
print(f"the {len(ran)} prompts both ran: specviz {geo([g['specviz']['speedup'] for g in ran]):.2f}×, transformers "
      f"{geo([g['hf_assisted']['speedup'] for g in ran]):.2f}×, specviz ÷ transformers {geo(ratios):.2f} (faster on "
      f"{sum(r > 1.02 for r in ratios)}, level within 2% on {sum(0.98 <= r <= 1.02 for r in ratios)}, slower on "
      f"{sum(r < 0.98 for r in ratios)})")
print(f"median α {statistics.median(g['specviz']['alpha'] for g in groups):.2f}, tokens/round "
      f"{sum(g['specviz']['tokens'] for g in groups) / sum(g['specviz']['rounds'] for g in groups):.2f} (pooled), "
      f"c {statistics.median(g['specviz']['c'] for g in groups):.3f}; same-family α "
      f"{statistics.median(sibling[g['plain']['id']]['alpha'] for g in groups):.2f}, "
      f"c {statistics.median(sibling[g['plain']['id']]['c'] for g in groups):.3f}")
if nll:
    for kind, chosen in (("plain", groups), ("specviz", groups), ("hf_assisted", ran)):
        print(f"mean nll {kind}: {statistics.mean(g[kind]['target_nll'] for g in chosen):.3f} over {len(chosen)}")
    differences = [g["specviz"]["target_nll"] - g["plain"]["target_nll"] for g in groups]
    print(f"specviz − plain nll: {statistics.mean(differences):+.3f}, standard error "
          f"{statistics.stdev(differences) / sqrt(len(differences)):.3f} over {len(differences)} prompts")
else:
    print(f"identical: specviz {sum(g['specviz']['identical'] for g in groups)}/{len(groups)}, transformers "
          f"{sum(g['hf_assisted']['identical'] for g in ran)}/{len(ran)}")
