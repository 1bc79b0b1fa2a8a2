#!/usr/bin/env bash
# Issue 35's benchmark: a draft of another family (SmolLM2-135M-Instruct, 49,152 tokens) for Qwen2.5-Coder-1.5B-Instruct
# (151,936 tokens), on the CPU. Three Spec-Bench prompts from each of the 13 categories (39), 128 new tokens, T = 0 then
# T = 1, one repeat, every method back to back on each prompt in one process: plain decoding; specviz with the draft at
# the Qwen2.5-Coder preset's settings (γ 12, draft stop 0.6); transformers' generate(assistant_model=, tokenizer=,
# assistant_tokenizer=) with the same draft and settings. The same-family 0.5B draft on the same prompts and settings is
# in ../bench-trees-39. Run from the repository root with the pair installed (README) and ../shared beside it.
# Rows are appended as each prompt finishes and --resume goes on from them: the first prompt of each category comes
# from the 13-prompt run of 2026-11-26 16:40-19:40 UTC (its rows were copied in), the other 26 from 2026-11-26 20:10 UTC on.
# Table: python docs/data/bench-cross-39/table.py 0 (or 1). The HTML report (4.8 MB, not kept): python -m specviz.bench --report-from docs/data/bench-cross-39 --out DIR
set -euo pipefail
exec python -m specviz.bench --questions ../shared/data/spec_bench/question.jsonl --limit 3 \
  --target offline:Qwen2.5-Coder-1.5B-Instruct --draft offline:SmolLM2-135M-Instruct --gamma 12 --draft-confidence 0.6 \
  --methods plain specviz hf_assisted --skip "specviz[ngram]" \
  --max-new-tokens 128 --temperatures 0 1 --repeats 1 --resume --out docs/data/bench-cross-39
