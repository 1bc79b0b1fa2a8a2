#!/usr/bin/env bash
# Issue 35's benchmark: drafts of another family for Qwen2.5-Coder-1.5B-Instruct, on the CPU. One Spec-Bench prompt
# from each of the 13 categories, 128 new tokens, T = 0 then T = 1, one repeat, every method back to back on each
# prompt in one process: plain decoding; specviz with the draft of another tokenizer (SmolLM2-135M-Instruct, and
# Gemma-3-270M where its parts are installed: requirements-gemma.txt) at the Qwen2.5-Coder preset's settings (γ 12,
# draft stop 0.6); transformers' generate(assistant_model=, tokenizer=, assistant_tokenizer=) with the same draft
# and settings. The same-family 0.5B draft on the same prompts and settings is in ../bench-trees-39 (its rows for
# these prompts; speedups there are over plain decoding in that run). Run from the repository root with the pair
# installed (README) and ../shared beside it; rows are appended as each prompt finishes, and --resume goes on.
#   report: python -m specviz.bench --report-from docs/data/bench-cross-13 --out DIR
set -euo pipefail
DRAFTS=(offline:SmolLM2-135M-Instruct ${GEMMA:+"$GEMMA"})
exec python -m specviz.bench --questions ../shared/data/spec_bench/question.jsonl --limit 1 \
  --target offline:Qwen2.5-Coder-1.5B-Instruct --draft "${DRAFTS[@]}" --gamma 12 --draft-confidence 0.6 \
  --methods plain specviz hf_assisted --skip "specviz[ngram]" \
  --max-new-tokens 128 --temperatures 0 1 --repeats 1 --resume --out docs/data/bench-cross-13
