#!/usr/bin/env bash
# Issue 24's benchmark: 3 Spec-Bench prompts × 13 categories = 39, 128 new tokens, T = 0 then T = 1, the
# Qwen2.5-Coder pair on the CPU. Run from the repository root with the pair installed (README) and ../shared
# beside it. Rows are appended to rows.jsonl as each prompt finishes; --resume keeps them, so the run can be
# stopped and started again (by a later session too) and only the missing prompts are run.
#   report as far as it got: python -m specviz.bench --report-from docs/data/bench-qwen-coder-39 --out DIR
set -euo pipefail
D=int4:offline:Qwen2.5-Coder-0.5B-Instruct
exec python -m specviz.bench --questions ../shared/data/spec_bench/question.jsonl --limit 3 \
  --target offline:Qwen2.5-Coder-1.5B-Instruct --draft "$D" int4 "ngram+$D" --gamma 12 --draft-confidence 0.6 \
  --methods plain specviz specviz_adaptive hf_prompt_lookup hf_assisted \
  --skip "specviz[ngram]" "specviz[ngram+$D]" "specviz_adaptive[ngram]" "specviz_adaptive[$D]" \
         "specviz_adaptive[int4]" "hf_assisted[int4]" \
  --max-new-tokens 128 --temperatures 0 1 --repeats 1 --resume --out docs/data/bench-qwen-coder-39
