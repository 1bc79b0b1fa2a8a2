"""How far a requantized GGUF is from the file it was made from: the next-token distributions on held-out text.

    python -m specviz.bench.requant_quality --model offline:Qwen2.5-Coder-1.5B-Instruct --to Q4_0

Speculative decoding on the requantized target is exact relative to that file, not to the shipped one, so the page
and docs say what the rounding costs. Both files read the same held-out texts (teacher-forced, on llama.cpp, in
chunks of `--chunk` tokens); at every position this reports KL(shipped ‖ requantized) of the next-token distribution
(nats), and whether the two files' most likely tokens agree (greedy agreement). The texts are not Spec-Bench's: the
source of Python's own `textwrap` module (code) and the Python reference's chapter on assignment (prose), both from
the interpreter that runs this, the first `--tokens` tokens of each.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import textwrap
from pathlib import Path


def held_out_texts() -> dict[str, str]:
    """Texts every Python install holds and no benchmark here reads: code and prose."""
    from pydoc_data.topics import topics

    return {"code (Python's textwrap.py)": inspect.getsource(textwrap), "prose (Python's reference: assignment)":
            topics["assignment"]}


def compare(model_id: str, to: str, tokens: int, chunk: int) -> dict:
    import torch

    from specviz.models.llama_cpp import load_gguf
    from specviz.models.requantize import REQUANTIZATIONS, variant

    shipped = load_gguf(model_id)
    requantized = load_gguf(variant(model_id, REQUANTIZATIONS[to]))
    results = {}
    for name, text in held_out_texts().items():
        ids = shipped.tokenizer(text)["input_ids"][:tokens]
        first, second = (loaded.language_model(loaded.logits_width) for loaded in (shipped, requantized))
        kl_sum, agree, positions, worst = 0.0, 0, 0, 0.0
        for start in range(0, len(ids), chunk):
            piece = torch.tensor(ids[start:start + chunk])
            p = torch.log_softmax(first.feed(piece, logits_to_keep=len(piece)).double(), dim=-1)  # [n, V]
            q = torch.log_softmax(second.feed(piece, logits_to_keep=len(piece)).double(), dim=-1)
            kl = (p.exp() * (p - q)).sum(dim=-1)  # [n]: KL(shipped ‖ requantized) at each position
            kl_sum += float(kl.sum())
            worst = max(worst, float(kl.max()))
            agree += int((p.argmax(dim=-1) == q.argmax(dim=-1)).sum())
            positions += len(piece)
        results[name] = {"positions": positions, "mean_kl_nats": kl_sum / positions, "max_kl_nats": worst,
                         "greedy_agreement": agree / positions}
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specviz.bench.requant_quality", description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="offline:Qwen2.5-Coder-1.5B-Instruct")
    parser.add_argument("--to", default="Q4_0")
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--chunk", type=int, default=256)
    parser.add_argument("--out", type=Path, help="a JSON file for the results")
    args = parser.parse_args(argv)
    from specviz.models.requantize import REQUANTIZATIONS

    if args.to not in REQUANTIZATIONS:
        print(f"--to must be one of {', '.join(REQUANTIZATIONS)}, not {args.to!r}", file=sys.stderr)
        return 2
    if args.tokens < 1 or args.chunk < 1:
        print("--tokens and --chunk must each be at least 1", file=sys.stderr)
        return 2
    results = compare(args.model, args.to, args.tokens, args.chunk)
    print("| text | positions | mean KL (nats) | largest KL | greedy agreement |")
    print("|---|---|---|---|---|")
    for name, row in results.items():
        print(f"| {name} | {row['positions']} | {row['mean_kl_nats']:.4f} | {row['max_kl_nats']:.2f} | "
              f"{100 * row['greedy_agreement']:.1f}% |")
    if args.out:
        args.out.write_text(json.dumps({"model": args.model, "to": args.to, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
