#!/usr/bin/env bash
# Issue 61, part 1: v(k) for k = 1..9 and one-token ms on llama.cpp's CPU kernels, for the Qwen2.5-Coder-1.5B target
# as shipped (Q4_K_M) and requantized from it (Q4_K, Q4_0, IQ4_NL, Q8_0; models/requantize.py), repacking off and on,
# and for the 0.5B draft as shipped and as Q4_0. Two threads, logits kept for every position, a 256-token context,
# every configuration timed in turn over 7 repeats. Output: results.json and table.md here; the table on stdout.
# Needs: pip install -r requirements-llama.txt; pip install --no-deps --require-hashes -r requirements-pair.txt.
set -euo pipefail
cd "$(dirname "$0")/../../.."
python -m specviz.bench.kernels --out docs/data/kernels "$@"
