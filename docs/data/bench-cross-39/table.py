"""docs/results.md's cross-tokenizer tables from rows.jsonl (issue 35), beside the same-family draft's rows for the
same prompts in ../bench-trees-39 (the chain preset; its speedups are over plain decoding in that run).

    python docs/data/bench-cross-13/table.py 0      # or 1; add "gemma" for ../bench-cross-13-gemma

Speedup: tokens/s over plain's on the same prompt; "nll": the target's mean −log p per token of the method's text
at T = 1 (bench/quality.py), where a lossless method scores like plain sampling. A run of transformers that raised
(the row's "error") shows as "failed" and is left out of the geomeans, which then cover the prompts where both ran."""

import json
import statistics
import sys
from math import exp, log
from pathlib import Path

here = Path(__file__).parent
temperature = float(sys.argv[1])
draft = sys.argv[2] if len(sys.argv) > 2 else "SmolLM2"
folder = here.parent / "bench-cross-13-gemma" if draft == "gemma" else here
rows = [json.loads(line) for line in (folder / "rows.jsonl").open() if json.loads(line)["temperature"] == temperature]
sibling = {row["id"]: row for row in map(json.loads, (here.parent / "bench-trees-39" / "rows.jsonl").open())
           if row["temperature"] == temperature and row["kind"] == "specviz"}
prompts: dict = {}
for row in rows:
    prompts.setdefault((row["category"], row["id"]), {})[row["kind"]] = row
nll = temperature > 0
print(f"| category | plain tok/s | specviz, {draft} draft | transformers, same draft | specviz ÷ transformers | α | "
      "tokens/round | same-family 0.5B (chain) |" + (" nll plain / specviz / transformers |" if nll else " identical |"))
print("|---|---|---|---|---|---|---|---|" + "---|")
for (category, prompt_id), runs in sorted(prompts.items()):
    ours, peer, plain = runs["specviz"], runs["hf_assisted"], runs["plain"]
    failed = "error" in peer
    tail = (f" {plain['target_nll']:.2f} / {ours['target_nll']:.2f} / "
            f"{'failed' if failed else format(peer['target_nll'], '.2f')} |" if nll else
            f" {'yes' if ours['identical'] else 'NO'} / {'failed' if failed else 'yes' if peer['identical'] else 'NO'} |")
    print(f"| {category} | {plain['tokens_per_s']:.1f} | {ours['speedup']:.2f}× | "
          f"{'failed' if failed else format(peer['speedup'], '.2f') + '×'} | "
          f"{'–' if failed else format(ours['tokens_per_s'] / peer['tokens_per_s'], '.2f')} | {ours['alpha']:.2f} | "
          f"{ours['tokens_per_round']:.2f} | {sibling[prompt_id]['speedup']:.2f}× |{tail}")
failures = [f"#{runs['hf_assisted']['id']}: {runs['hf_assisted']['error']}" for runs in prompts.values()
            if "error" in runs["hf_assisted"]]
if failures:
    print("\ntransformers failed on " + "; ".join(failures))
groups = [runs for runs in prompts.values() if "error" not in runs["hf_assisted"]]  # where both ran
geo = lambda values: exp(statistics.mean(log(v) for v in values))  # noqa: E731
print(f"\ngeomean over the {len(groups)} prompts: specviz {geo([g['specviz']['speedup'] for g in groups]):.2f}×, "
      f"transformers {geo([g['hf_assisted']['speedup'] for g in groups]):.2f}×, specviz ÷ transformers "
      f"{geo([g['specviz']['tokens_per_s'] / g['hf_assisted']['tokens_per_s'] for g in groups]):.2f}, same-family "
      f"0.5B {geo([sibling[i]['speedup'] for (_, i) in prompts]):.2f}×")
print(f"median α {statistics.median(g['specviz']['alpha'] for g in groups):.2f}, tokens/round "
      f"{sum(g['specviz']['tokens'] for g in groups) / sum(g['specviz']['rounds'] for g in groups):.2f} (pooled), "
      f"c {statistics.median(g['specviz']['c'] for g in groups):.3f}; same-family α "
      f"{statistics.median(sibling[i]['alpha'] for (_, i) in prompts):.2f}, "
      f"c {statistics.median(sibling[i]['c'] for (_, i) in prompts):.3f}")
if nll:
    for kind in ("plain", "specviz", "hf_assisted"):
        print(f"mean nll {kind}: {statistics.mean(g[kind]['target_nll'] for g in groups):.3f}")
else:
    print(f"identical: specviz {sum(g['specviz']['identical'] for g in groups)}/{len(groups)}, transformers "
          f"{sum(g['hf_assisted']['identical'] for g in groups)}/{len(groups)}")
