#!/usr/bin/env bash
# docs/gpu.md, "The fast path, timed": SPECVIZ_CUDA_GRAPHS=0 against 1 on random-weight bf16 models of the real
# architectures, one process per (pair, setting): v(k), the one-token forwards and c, plain and speculative
# tokens/s with the baseline (greedy), and transformers' generate() and assisted generation (the first pair's eager
# process only).
# Run from the repository root on a CUDA machine:
#   TOKENIZER=FOLDER OUT=DIR bash docs/data/gpu-cuda-graphs/COMMAND.sh
# TOKENIZER: any local tokenizer folder (the lease used SmolLM2-135M-Instruct's, saved from the offline GGUF; a
# forward's time depends on the model's shapes only). Cheapest and most important first (the Qwen2.5 pair); it
# stops starting new steps when BUDGET seconds are spent. Each step writes its JSON as it goes, so a cut run keeps
# its figures. PAIRS, MAX_K (MAX_K_EAGER for the eager process), DRAFT_MAX_K, TOKENS, CONTEXT, REPEATS, WARMUP and
# ORDER change what it measures (EXTRA: more measure.py arguments, e.g. "--tree-sizes --tree-budget 0"); on a CPU the graphs setting falls back to the dynamic cache, so both settings time
# the same code there.
#   PAIRS="smollm2-135m:smollm2-135m" MAX_K=4 DRAFT_MAX_K=2 CONTEXT=32 TOKENS=8 REPEATS=1 WARMUP=1 ... (CPU try)
set -uo pipefail
OUT=${OUT:-out/gpu-cuda-graphs}
TOKENIZER=${TOKENIZER:-.tok/smollm2}
WORK=${WORK:-/tmp/specviz-random-weights}
BUDGET=${BUDGET:-400}
PAIRS=${PAIRS:-"qwen2.5-1.5b:qwen2.5-0.5b smollm2-1.7b:smollm2-135m"}
MAX_K=${MAX_K:-64} DRAFT_MAX_K=${DRAFT_MAX_K:-16} CONTEXT=${CONTEXT:-256} TOKENS=${TOKENS:-128}
REPEATS=${REPEATS:-7} WARMUP=${WARMUP:-3} ORDER=${ORDER:-"1 0"} EXTRA=${EXTRA:-}  # graphs first: its compile time is the unknown
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD HF_HUB_OFFLINE=1
mkdir -p "$OUT" "$WORK"

left() { echo $((BUDGET - SECONDS)); }

measure() {  # measure PAIR_LABEL TARGET DRAFT GRAPHS [extra arguments]
  local label=$1 target=$2 draft=$3 graphs=$4; shift 4
  local limit; limit=$(left)
  if [ "$limit" -lt 30 ]; then echo "skip $label graphs=$graphs: $limit s left"; return; fi
  local logs="" max_k=$MAX_K  # with graphs: why dynamo recompiled, and any CUDA graph skipped (and why)
  if [ "$graphs" = 1 ]; then logs=${TORCH_LOGS:-recompiles,perf_hints}; else max_k=${MAX_K_EAGER:-$MAX_K}; fi
  echo "== $label SPECVIZ_CUDA_GRAPHS=$graphs (at most $limit s) =="
  env ${logs:+TORCH_LOGS=$logs} SPECVIZ_CUDA_GRAPHS=$graphs timeout "$limit" python docs/data/gpu-cuda-graphs/measure.py \
    --target "$target" --draft "$draft" --out "$OUT/$label-g$graphs.json" --max-k "$max_k" \
    --draft-max-k "$DRAFT_MAX_K" --context "$CONTEXT" --tokens "$TOKENS" --repeats "$REPEATS" --warmup "$WARMUP" $EXTRA "$@" \
    || echo "!! $label graphs=$graphs exited $?"
}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null || echo "no nvidia-smi"
  python -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'transformers', transformers.__version__, 'device', torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu')"
  nproc
  hf=--hf  # transformers' generate() and assisted generation: on the first pair only
  for pair in $PAIRS; do
    target=${pair%%:*} draft=${pair##*:} label=${pair%%:*}
    for name in $(echo "$target $draft" | tr ' ' '\n' | sort -u); do  # both models built side by side
      [ -d "$WORK/$name" ] || { python docs/data/gpu-cuda-graphs/build.py "$name" "$TOKENIZER" "$WORK/$name" \
        || python -m scripts.random_weights "$name" --tokenizer "$TOKENIZER" --out "$WORK/$name"; } >/dev/null &
    done
    wait
    echo "built $target and $draft at $SECONDS s"
    for graphs in $ORDER; do
      if [ "$graphs" = 0 ]; then measure "$label" "$WORK/$target" "$WORK/$draft" 0 $hf
      else measure "$label" "$WORK/$target" "$WORK/$draft" 1; fi
    done
    hf=""
  done
  echo "finished at $SECONDS s"
} 2>&1 | tee "$OUT/log"
