#!/usr/bin/env bash
# Does llama.cpp's CPU repacking of the 4-bit weights (use_extra_bufts, on by default in its tools) pay for the
# Qwen2.5-Coder-1.5B GGUF on this CPU? One process each way: reading a 1000-token prompt, then the median of 4 timed
# forwards over k tokens after it (cropped back off), and the peak RSS. Output: output.txt.
set -euo pipefail
cd "$(dirname "$0")"
for repack in off on; do python repack.py "$repack" 2>&1 | grep -v "^llama\|^load"; done
