#!/usr/bin/env bash
# Issue 43: the per-token test of T = 1 sampling (bench/exactness.py) on the llama.cpp backend: the Qwen2.5-Coder
# pair's Q4_K_M GGUFs, plain sampling, the 0.5B draft and prompt lookup with the exact rule, and lenience 0.1 as
# the control the test must catch. Nothing is timed. Needs: requirements-llama.txt and requirements-pair.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
exec python -m specviz.bench.exactness --backend llama.cpp --target offline:Qwen2.5-Coder-1.5B-Instruct \
  --draft offline:Qwen2.5-Coder-0.5B-Instruct ngram --gamma 4 --prompts 4 --seeds 4 --tokens 48 --lenience 0.1 \
  --out docs/data/exactness-llama "$@"
