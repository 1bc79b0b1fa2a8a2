#!/usr/bin/env bash
# Lookup-then-draft before and after each source got its own acceptance record (docs/results.md). From the repository
# root with ../shared beside it: run once on fa8b174 (out: before) and once on 9faf4d2 (out: after).
# SmolLM2-135M-Instruct (the offline default), 39 Spec-Bench prompts, 64 new tokens, γ 4, T = 0 and 1.
set -euo pipefail
exec python -m specviz bench --questions ../shared/data/spec_bench/question.jsonl --limit 3 \
  --methods plain specviz specviz_adaptive --draft int4 ngram+int4 \
  --skip "specviz[ngram]" "specviz_adaptive[ngram]" "specviz_adaptive[int4]" \
  --temperatures 0 1 --repeats 1 --max-new-tokens 64 --out "${1:-bench-lookup-source}"
