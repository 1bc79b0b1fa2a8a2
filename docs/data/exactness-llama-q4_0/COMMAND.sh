#!/usr/bin/env bash
# Issue 61: the per-token test of T = 1 sampling (bench/exactness.py) on the llama.cpp backend with the pair
# requantized to Q4_0 (what it verifies with there): plain sampling, the 0.5B draft (Q4_0) and suffix drafting with
# the exact rule, and lenience 0.1 as the control the test must catch. Nothing is timed.
# Needs: requirements-llama.txt and requirements-pair.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
exec python -m specviz.bench.exactness --backend llama.cpp --target offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0 \
  --draft offline:Qwen2.5-Coder-0.5B-Instruct@Q4_0 suffix --gamma 3 --prompts 4 --seeds 4 --tokens 48 \
  --lenience 0.1 --out docs/data/exactness-llama-q4_0 "$@"
