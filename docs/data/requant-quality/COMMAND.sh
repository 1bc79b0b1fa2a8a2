#!/usr/bin/env bash
# Issue 61, part 2: how far the Qwen2.5-Coder-1.5B target requantized to Q4_0 (what the pair verifies with on
# llama.cpp) is from the shipped Q4_K_M: mean KL of the next-token distribution and greedy agreement, teacher-forced
# on 1,024 tokens each of code and prose that no benchmark here reads. Output: q4_0.json here; the table on stdout.
set -euo pipefail
cd "$(dirname "$0")/../../.."
python -m specviz.bench.requant_quality --model offline:Qwen2.5-Coder-1.5B-Instruct --to Q4_0 \
  --out docs/data/requant-quality/q4_0.json "$@"
