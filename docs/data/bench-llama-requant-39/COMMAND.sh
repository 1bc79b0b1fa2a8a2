#!/usr/bin/env bash
# Issue 61's goals: 39 Spec-Bench prompts (3 a category), 128 tokens, T = 0 and T = 1, one run each. specviz verifies
# with the 1.5B target requantized to Q4_0 and repacked (offline:…@Q4_0): plain decoding, adaptive γ ≤ 3 with prompt
# lookup, with suffix drafting, and with suffix drafting before the 0.5B draft (Q4_0); against llama.cpp's own tools:
# plain decoding of the shipped Q4_K_M (the peer) and of the same Q4_0 file, speculative decoding with the same Q4_0
# draft, n-gram drafting. A prompt's methods run one after another; --resume goes on prompt by prompt (rows.jsonl).
# Pass --temperatures 0 (or 1) to run one temperature at a time.
# Needs: pip install -r requirements-llama.txt; python -m specviz.bench.llama_peer build; requirements-pair.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
T=offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0
D=offline:Qwen2.5-Coder-0.5B-Instruct@Q4_0
python -m specviz bench --backend llama.cpp --questions ../shared/data/spec_bench/question.jsonl --limit 3 \
  --target "$T" --draft suffix "suffix+$D" "$D" --gamma 3 \
  --methods plain specviz_adaptive llama_plain llama_plain_shipped llama_speculative llama_ngram \
  --skip "specviz_adaptive[$D]" --max-new-tokens 128 --temperatures 0 1 --repeats 1 --resume \
  --out docs/data/bench-llama-requant-39 "$@"
