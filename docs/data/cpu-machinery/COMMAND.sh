#!/usr/bin/env bash
# What the float32 CPU path's machinery buys (issue 63), each part against going without it, in one run: every linear
# kernel forced on the default offline run and on the Qwen2.5-Coder pair, the lean 4-bit draft step against the 4-bit
# copy through transformers, and the pair's peak memory with and without the checkpoint's pages given back. About 25
# minutes on two cores. This run (2026-12-02) also timed the kernel race at a load, since removed (results.json "race").
# Needs: requirements-pair.txt (or the hub).
set -euo pipefail
cd "$(dirname "$0")/../../.."
python -m scripts.cpu_machinery --repeats 3 --out docs/data/cpu-machinery
