#!/usr/bin/env bash
# Issue 34's benchmark: 3 Spec-Bench prompts × 13 categories = 39, 128 new tokens, T = 0 then T = 1, the
# Qwen2.5-Coder pair on the CPU: plain decoding, the chain preset (γ 12, draft stop 0.6), the token tree with the
# same draft (its budget measured on this machine, as the app and generate --tree choose it), and transformers'
# assisted generation with the same draft at the same settings and at its defaults. Run from the repository root
# with the pair installed (README) and ../shared beside it. Rows are appended to rows.jsonl as each prompt
# finishes; --resume keeps them, so the run can be stopped and started again (by a later session too).
#   report as far as it got: python -m specviz.bench --report-from docs/data/bench-trees-39 --out DIR
set -euo pipefail
D=int4:offline:Qwen2.5-Coder-0.5B-Instruct
exec python -m specviz.bench --questions ../shared/data/spec_bench/question.jsonl --limit 3 \
  --target offline:Qwen2.5-Coder-1.5B-Instruct --draft "$D" --gamma 12 --draft-confidence 0.6 \
  --methods plain specviz specviz_tree hf_assisted hf_assisted_defaults --skip "specviz[ngram]" \
  --max-new-tokens 128 --temperatures 0 1 --repeats 1 --resume --out docs/data/bench-trees-39
