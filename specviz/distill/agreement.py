"""How often the distilled draft's top token is the target's, on the target's own greedy answers, by category.

    python -m specviz.distill.agreement --questions ../shared/data/spec_bench/question.jsonl --limit 4

The target answers each prompt greedily (T = 0), keeping its hidden state at every token. The draft then reads
those answers as it does in training (distill.evaluate): step 1 from the target's true states, step 2 from its
own predicted state. Nothing is timed and nothing is sampled, so the figures do not move between runs; the
benchmark's α follows from these agreements (and those of later steps).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

import torch

from specviz.bench.run import DEFAULT_PROMPTS, load_prompts
from specviz.config import OFFLINE_MODEL
from specviz.decoding.pipeline import encode_prompt, eos_ids
from specviz.distill import train as distill
from specviz.distill.data import generate_batch
from specviz.drafters import distilled
from specviz.models import loading as models


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m specviz.distill.agreement", description=__doc__.split("\n")[0])
    parser.add_argument("--questions", default=str(DEFAULT_PROMPTS), help="Spec-Bench-format JSONL")
    parser.add_argument("--categories", nargs="*", help="only these categories")
    parser.add_argument("--limit", type=int, default=4, help="at most this many prompts per category")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--draft-file", help="a trained draft other than the shipped one (no pinned hash then)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    items = load_prompts(args.questions, args.categories, args.limit)
    if not items:
        raise ValueError(f"{args.questions}: no questions to answer")
    target = models.load_model(OFFLINE_MODEL)
    path = Path(args.draft_file) if args.draft_file else distilled.ASSET
    if not path.is_file():
        raise ValueError(f"no draft file at {path}")
    draft = distilled.load(path, target.hf_model, None if args.draft_file else distilled.ASSET_SHA256)
    stop_ids, head = eos_ids(target), target.hf_model.get_output_embeddings()
    by_category: dict[str, list] = {}
    for item in items:
        prompt = encode_prompt(target.tokenizer, item["prompt"], chat=True)
        answer = generate_batch(target.hf_model, [prompt], args.max_new_tokens, 0.0, torch.Generator(), stop_ids)[0]
        by_category.setdefault(item["category"], []).append(answer)

    evaluation = argparse.Namespace(batch=1, max_length=1 << 20, without_states=False)
    print("| category | prompts | tokens | step 1 | step 2 | target's top probability |")
    print("|---|---|---|---|---|---|")
    totals = [0, 0.0, 0.0]
    for category, answers in by_category.items():
        with contextlib.redirect_stdout(io.StringIO()):  # evaluate prints its own summary line
            agreement = distill.evaluate(draft, target.hf_model, answers, evaluation)
        tokens = sum(len(a.token_ids) - a.prompt_length for a in answers)
        with torch.inference_mode():
            states = torch.cat([a.features[a.prompt_length - 1: -1] for a in answers]).to(head.weight.dtype)
            confidence = float(torch.softmax(head(states).float(), -1).amax(-1).mean()) if len(states) else 0.0
        step1, step2 = agreement.get("valid_top1_step1", 0.0), agreement.get("valid_top1_step2", 0.0)
        totals = [totals[0] + tokens, totals[1] + step1 * tokens, totals[2] + step2 * tokens]
        print(f"| {category} | {len(answers)} | {tokens} | {step1:.3f} | {step2:.3f} | {confidence:.2f} |")
    count = max(1, totals[0])
    print(f"| all | {len(items)} | {totals[0]} | {totals[1] / count:.3f} | {totals[2] / count:.3f} | |")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ValueError, OSError) as error:
        print(f"specviz.distill.agreement: {error}", file=sys.stderr)
        sys.exit(1)
