"""One pair, one setting of SPECVIZ_CUDA_GRAPHS, one process: every figure of docs/gpu.md's "The fast path, timed".

    SPECVIZ_CUDA_GRAPHS=1 python docs/data/gpu-cuda-graphs/measure.py --target T --draft D --out FILE.json [--hf]

In this order, writing FILE.json after each step (so a run cut short keeps what it measured):
1. v(k): the target's forward over k = 1..--max-k new tokens after --context cached ones, as `python -m specviz
   verify-cost` times it (same context, same interleaving; --warmup untimed passes first, so that each size's
   compilation and CUDA-graph recording stay out of the medians), then the draft's over 1..--draft-max-k;
2. a short speculative run and a plain one, untimed (every forward size the timed runs use is compiled and recorded);
3. speculative decoding with --baseline, timed, as `python -m specviz generate --baseline` runs it (greedy);
4. token trees (issue 34): the target's verify time for trees of --tree-sizes nodes (tree mask, position ids by
   depth) beside the chain's v(k), and the same greedy run drafting trees of --tree-budget nodes γ deep;
5. with --hf: transformers' own generate() and assisted generation (same draft, γ, no stop), a short warm-up each.
Both models are driven through ONE pipeline, so each compiled graph is built once per process.
"""

import argparse
import json
import os
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--max-k", type=int, default=64)
    parser.add_argument("--draft-max-k", type=int, default=16)
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--gamma", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--warm-tokens", type=int, default=24)
    parser.add_argument("--prompt", default="Write a story.")
    parser.add_argument("--tree-sizes", type=int, nargs="*", default=[2, 4, 8, 16, 24, 32, 48, 64],
                        help="time the target verifying token trees of these many nodes (tree mask; issue 34)")
    parser.add_argument("--tree-budget", type=int, default=16, help="the tree run's node budget (0: no tree run)")
    parser.add_argument("--hf", action="store_true", help="also time transformers' generate() and assisted generation")
    args = parser.parse_args()

    import torch
    import transformers
    from transformers.utils import logging

    from specviz.analysis.metrics import summarize
    from specviz.bench import hf_baselines
    from specviz.config import DecodeConfig
    from specviz.decoding import engine
    from specviz.decoding.pipeline import build_pipeline, calibrate, encode_prompt
    from specviz.models import loading as models
    from specviz.models.profiling import measure_tree_verify_costs, measure_verify_costs

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    result = {"target": args.target, "draft": args.draft, "graphs": os.environ.get("SPECVIZ_CUDA_GRAPHS", "0"),
              "args": vars(args), "torch": torch.__version__, "transformers": transformers.__version__}

    def save(step: str, started: float) -> None:
        result.setdefault("seconds", {})[step] = round(time.perf_counter() - started, 2)
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)
        print(f"[{result['graphs']}] {step}: {result['seconds'][step]} s", flush=True)

    started = time.perf_counter()
    config = DecodeConfig(target=args.target, draft=args.draft, gamma=args.gamma, max_new_tokens=args.tokens,
                          temperature=0).validate()
    pipeline = build_pipeline(config)
    target, draft = pipeline.target, pipeline.draft_model
    result.update(device=models.describe_device(pipeline.device), dtype=str(pipeline.dtype),
                  target_class=type(target).__name__, draft_class=type(draft).__name__)
    save("load", started)

    context = [(i * 7919) % 1000 + 100 for i in range(args.context)]  # verify-cost's context
    for name, model, max_k in (("target", target, args.max_k), ("draft", draft, args.draft_max_k)):
        started = time.perf_counter()
        ms = measure_verify_costs(model, context, max_k, args.repeats, args.warmup)
        result[f"{name}_ms"] = {k: round(v, 4) for k, v in ms.items()}
        result[f"{name}_v"] = {k: round(v / ms[1], 4) for k, v in ms.items()}
        result[f"{name}_timed_s"] = round(args.repeats * sum(ms.values()) / 1e3, 2)  # the rest of the step: warm-up
        save(f"{name}_vk", started)
    result["c_forward"] = result["draft_ms"][1] / result["target_ms"][1]

    started = time.perf_counter()
    calibrate(pipeline, config.target, config.gamma + 1)  # as `generate` does: c's fallback and the trace's v(k)
    warm = DecodeConfig(**{**config.to_dict(), "max_new_tokens": args.warm_tokens})
    engine.warm_up(pipeline, config)
    engine.run_speculative(pipeline, args.prompt, warm)
    engine.baseline_decode(pipeline, args.prompt, warm)
    save("warm_up", started)

    started = time.perf_counter()
    trace = engine.run_speculative(pipeline, args.prompt, config)
    trace.baseline = engine.baseline_decode(pipeline, args.prompt, config)
    metrics = summarize(trace).to_dict()
    for bulky in ("alpha_per_position", "reached_per_position", "accepted_per_position"):
        metrics.pop(bulky)
    plain, spec = trace.baseline, trace.token_ids
    first_difference = next((i for i, (a, b) in enumerate(zip(plain.token_ids, spec)) if a != b), None)
    result["speculative"] = {**metrics, "wall_ms": trace.wall_ms, "forward_ms": trace.forward_ms,
                             "record_ms": trace.record_ms, "prompt_tokens": trace.prompt_token_count,
                             "first_difference": first_difference,
                             "draft_forward_ms": sum(r.draft_forward_ms for r in trace.rounds),
                             "verify_forward_ms": sum(r.verify_forward_ms for r in trace.rounds)}
    result["plain"] = {"tokens": len(plain.token_ids), "wall_ms": plain.wall_ms, "step_ms": plain.step_ms,
                       "tokens_per_s": 1e3 * len(plain.token_ids) / plain.wall_ms}
    save("generate", started)

    if args.tree_sizes:
        started = time.perf_counter()
        ms = measure_tree_verify_costs(target, context, args.tree_sizes, args.repeats, args.warmup)
        result["target_tree_ms"] = {k: round(v, 4) for k, v in ms.items()}
        result["target_tree_v"] = {k: round(v / result["target_ms"][1], 4) for k, v in ms.items()}
        save("tree_vk", started)
    if args.tree_budget:
        started = time.perf_counter()
        tree_config = DecodeConfig(**{**config.to_dict(), "tree": True, "tree_budget": args.tree_budget}).validate()
        engine.run_speculative(pipeline, args.prompt, DecodeConfig(**{**tree_config.to_dict(), "max_new_tokens":
                                                                      args.warm_tokens}))  # warm-up
        tree = engine.run_speculative(pipeline, args.prompt, tree_config)
        tree_metrics = summarize(tree).to_dict()
        result["tree"] = {key: tree_metrics.get(key) for key in (
            "target_calls", "tokens_per_round", "alpha", "draft_nodes_per_round", "draft_ms_per_round",
            "verify_ms_per_round", "overhead_ms_per_round", "c")}
        result["tree"].update(wall_ms=tree.wall_ms, forward_ms=tree.forward_ms, tokens=len(tree.token_ids),
                              tokens_per_s=1e3 * len(tree.token_ids) / tree.wall_ms,
                              rounds_drawing_trees=sum(r.is_tree for r in tree.rounds),
                              draft_forward_ms=sum(r.draft_forward_ms for r in tree.rounds),
                              verify_forward_ms=sum(r.verify_forward_ms for r in tree.rounds),
                              identical_to_plain=tree.token_ids == plain.token_ids,
                              speedup_vs_plain=(1e3 * len(tree.token_ids) / tree.wall_ms) / result["plain"]["tokens_per_s"])
        save("tree_generate", started)

    if args.hf:
        started = time.perf_counter()
        target_loaded = models.load_model(args.target)
        draft_loaded = models.load_model(args.draft, target_loaded.device, target_loaded.dtype)
        prompt_ids = encode_prompt(target_loaded.tokenizer, args.prompt, config.chat)
        result["hf"] = {}
        for method in ("generate", "assisted"):
            hf_baselines.run_hf(target_loaded, prompt_ids, warm, method, draft_loaded)  # warm-up
            run = hf_baselines.run_hf(target_loaded, prompt_ids, config, method, draft_loaded)
            result["hf"][method] = {"tokens": len(run.token_ids), "wall_ms": run.wall_ms,
                                    "tokens_per_s": run.tokens_per_s, "identical_to_plain": run.token_ids == plain.token_ids}
            save(f"hf_{method}", started)

    from torch._dynamo.utils import counters

    result["dynamo"] = {group: dict(counters[group]) for group in ("stats", "inductor") if counters[group]}
    if pipeline.device.type == "cuda":
        result["cuda_peak_mb"] = round(torch.cuda.max_memory_allocated() / (1 << 20), 1)
    save("done", started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
