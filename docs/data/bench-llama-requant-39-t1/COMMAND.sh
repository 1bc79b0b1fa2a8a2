#!/usr/bin/env bash
# Issue 61's goals at T = 1: the same 39 prompts, methods and files as ../bench-llama-requant-39 (its COMMAND.sh),
# sampled, in a folder of its own (--resume keeps rows only for the same arguments).
set -euo pipefail
cd "$(dirname "$0")/../../.."
bash docs/data/bench-llama-requant-39/COMMAND.sh --temperatures 1 --out docs/data/bench-llama-requant-39-t1 "$@"
