"""What a draft model's prompt window and LM-head subset buy: `python -m scripts.draft_levers`

Both levers (DecodeConfig.draft_window, draft_vocab) keep the output exact: they change what the draft reads or
scores, so q changes and α may fall, while the draft step gets cheaper. This decodes the same Spec-Bench prompts
with each setting, interleaved prompt by prompt (a slow moment of the machine hits every setting alike), and
reports per setting: the draft step and c (timed once per setting, alternating with the target's step), α,
tokens per round and ms per generated token, the last also relative to the first setting. At T = 0 every setting
must give the first one's text (all are the target's greedy output).

    python -m scripts.draft_levers --questions ../shared/data/spec_bench/question.jsonl --limit 1 \\
        --target offline:Qwen2.5-Coder-1.5B-Instruct --draft int4:offline:Qwen2.5-Coder-0.5B-Instruct \\
        --gamma 12 --draft-confidence 0.6 --vocab 0 16000 32000 64000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from specviz.analysis.metrics import summarize
from specviz.bench.run import load_prompts
from specviz.config import DecodeConfig
from specviz.decoding import engine
from specviz.decoding.pipeline import build_pipeline, calibrate, calibration_sizes


def settings_grid(windows: list[int], vocabs: list[int]) -> list[tuple[int, int]]:
    """Each (draft_window, draft_vocab) to run: the whole prompt and head first, then one lever at a time, then
    each pair of non-zero values.

    >>> settings_grid([0, 128], [0, 32000])
    [(0, 0), (128, 0), (0, 32000), (128, 32000)]
    """
    grid = [(0, 0)] + [(w, 0) for w in windows if w] + [(0, v) for v in vocabs if v]
    return grid + [(w, v) for w in windows if w for v in vocabs if v]


def measure(args) -> list[dict]:
    prompts = load_prompts(args.questions, args.categories, args.limit)
    if not prompts:
        raise ValueError(f"no prompts in {args.questions} match the categories {args.categories}")
    runs = {}
    for window, vocab in settings_grid(args.window, args.vocab):
        config = DecodeConfig(target=args.target, draft=args.draft, gamma=args.gamma, tree=args.tree,
                              draft_confidence=args.draft_confidence, max_new_tokens=args.max_new_tokens,
                              temperature=args.temperature, draft_window=window, draft_vocab=vocab).validate()
        pipeline = build_pipeline(config)  # the models load once (the weights cache); the drafter is per setting
        calibrate(pipeline, config.target, calibration_sizes(config))
        engine.run_speculative(pipeline, prompts[0]["prompt"], DecodeConfig(**{**config.to_dict(), "max_new_tokens": 8}))
        runs[(window, vocab)] = (config, pipeline, [])
    for item in prompts:  # interleaved: every setting decodes this prompt before the next prompt
        for config, pipeline, traces in runs.values():
            traces.append(engine.run_speculative(pipeline, item["prompt"], config))
        print(f"{item['category']:>20} #{item['id']} done", file=sys.stderr, flush=True)
    return [_figures(window, vocab, traces, runs[(0, 0)][2]) for (window, vocab), (_, _, traces) in runs.items()]


def _figures(window: int, vocab: int, traces: list, first: list) -> dict:
    metrics = [summarize(trace) for trace in traces]
    tokens = sum(m.generated_tokens for m in metrics)
    tested = sum(m.tested_positions for m in metrics)
    return {"draft_window": window, "draft_vocab": vocab, "prompts": len(traces),
            "draft_step_ms": statistics.median(m.draft_step_ms for m in metrics),
            "target_step_ms": statistics.median(m.target_step_ms for m in metrics),
            "c": statistics.median(m.c for m in metrics),
            "alpha": sum(m.accepted_tokens for m in metrics) / tested if tested else 0.0,
            "tokens_per_round": tokens / sum(m.rounds for m in metrics),
            "draft_ms_per_round": sum(m.draft_ms_per_round * m.rounds for m in metrics) / sum(m.rounds for m in metrics),
            "ms_per_token": sum(t.wall_ms for t in traces) / tokens,
            "ms_per_token_by_prompt": [t.wall_ms / max(len(t.token_ids), 1) for t in traces],
            "same_text_as_first": [t.token_ids == f.token_ids for t, f in zip(traces, first)]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.draft_levers", description=__doc__.splitlines()[0])
    parser.add_argument("--questions", required=True, help="Spec-Bench-format JSONL")
    parser.add_argument("--categories", nargs="*")
    parser.add_argument("--limit", type=int, default=1, help="prompts per category")
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", required=True)
    parser.add_argument("--gamma", type=int, default=12)
    parser.add_argument("--draft-confidence", type=float, default=0.6)
    parser.add_argument("--tree", action="store_true", help="draft token trees (the measured budget)")
    parser.add_argument("--window", type=int, nargs="*", default=[0], help="draft_window values (0: the whole prompt)")
    parser.add_argument("--vocab", type=int, nargs="*", default=[0], help="draft_vocab values (0: every token)")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    try:
        results = measure(args)
    except ValueError as error:
        print(f"draft_levers: {error}", file=sys.stderr)
        return 2
    base = results[0]["ms_per_token_by_prompt"]
    print("| draft_window | draft_vocab | draft step ms | c | α | tokens/round | draft ms/round | ms/token | "
          "vs first (median of prompts) | same text |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ratio = statistics.median(b / m for b, m in zip(base, r["ms_per_token_by_prompt"]))
        same = f"{sum(r['same_text_as_first'])}/{r['prompts']}" if args.temperature == 0 else "–"
        print(f"| {r['draft_window'] or 'whole'} | {r['draft_vocab'] or 'all'} | {r['draft_step_ms']:.1f} | {r['c']:.3f} "
              f"| {r['alpha']:.3f} | {r['tokens_per_round']:.2f} | {r['draft_ms_per_round']:.1f} | {r['ms_per_token']:.1f} "
              f"| {ratio:.2f}x | {same} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"args": vars(args), "results": results}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
