#!/usr/bin/env bash
# llama.cpp (llama-bench, the benchmark's build) on the pair's Q4_0 target: 1 thread against 2, quiet and with one of
# the two cores kept busy by a spinner, in alternation, 2 rounds of 3 repeats (about 4 minutes). output.txt beside it.
set -euo pipefail
cd "$(dirname "$0")/../../.."
python -m scripts.llama_threads_busy --rounds 2 "$@"
