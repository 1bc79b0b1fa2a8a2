#!/usr/bin/env bash
# Issue 34, item 6: the draft model's LM-head subset (draft_vocab) and prompt window (draft_window) on the
# Qwen2.5-Coder pair, 48 new tokens, T = 0, γ 12, draft stop 0.6, the settings interleaved prompt by prompt.
# Run from the repository root with the pair installed (README) and ../shared beside it; about 15 + 15 minutes.
set -euo pipefail
Q=../shared/data/spec_bench/question.jsonl
T=offline:Qwen2.5-Coder-1.5B-Instruct
D=int4:offline:Qwen2.5-Coder-0.5B-Instruct
python -m scripts.draft_levers --questions $Q --limit 1 --target $T --draft $D \
  --vocab 0 16000 32000 64000 --json docs/data/draft-levers/vocab.json > docs/data/draft-levers/vocab.md
python -m scripts.draft_levers --questions $Q --limit 3 --categories rag summarization --target $T --draft $D \
  --window 0 64 128 256 --json docs/data/draft-levers/window.json > docs/data/draft-levers/window.md
