#!/usr/bin/env bash
# The Qwen2.5-Coder pair's adaptive lookup-then-draft after commit ca1f141, on the first Spec-Bench prompt of each
# category (13), T = 0; the same prompts' "before" rows are in ../../bench-qwen-coder-39/rows.jsonl.
set -euo pipefail
D=int4:offline:Qwen2.5-Coder-0.5B-Instruct
exec python -m specviz.bench --questions ../shared/data/spec_bench/question.jsonl --limit 1 \
  --target offline:Qwen2.5-Coder-1.5B-Instruct --draft "ngram+$D" --gamma 12 --draft-confidence 0.6 \
  --methods plain specviz_adaptive --skip "specviz_adaptive[ngram]" \
  --max-new-tokens 128 --temperatures 0 --repeats 1 --out "${1:-bench-pair-adaptive}"
