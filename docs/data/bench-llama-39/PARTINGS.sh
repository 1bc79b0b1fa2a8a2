#!/usr/bin/env bash
# The greedy runs of the 0.5B draft at γ 4 that parted from plain decoding in this benchmark (rows.jsonl, T = 0,
# identical false), each run again in the CLI with --baseline, which finds where the two texts part and whether the
# target's two logits there are within the noise of llama.cpp's forward shapes (specviz/analysis/parting.py). One JSON line
# per prompt in partings.jsonl. The prompts are read from Spec-Bench's file at run time, never copied here.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=docs/data/bench-llama-39/partings.jsonl
QUESTIONS=../shared/data/spec_bench/question.jsonl
IDS=$(python - <<'PY'
import json
rows = [json.loads(line) for line in open("docs/data/bench-llama-39/rows.jsonl")]
print(" ".join(sorted({str(r["id"]) for r in rows if r["temperature"] == 0 and r["method"].startswith("specviz[")
                       and r["identical"] is False}, key=int)))
PY
)
: > "$OUT"
for id in $IDS; do
  prompt=$(python -c "import json,sys; print(next(json.loads(l)['turns'][0] for l in open(sys.argv[1]) if json.loads(l)['question_id'] == int(sys.argv[2])))" "$QUESTIONS" "$id")
  python -m specviz generate --backend llama.cpp --target offline:Qwen2.5-Coder-1.5B-Instruct \
    --draft offline:Qwen2.5-Coder-0.5B-Instruct --gamma 4 --no-adaptive --draft-confidence 0 --max-new-tokens 128 \
    --temperature 0 --baseline --json --prompt "$prompt" \
    | python -c "import json,sys; s=json.load(sys.stdin); print(json.dumps({'id': $id, 'identical': s['identical'], 'parting': s.get('parting')}))" >> "$OUT"
  tail -1 "$OUT"
done
