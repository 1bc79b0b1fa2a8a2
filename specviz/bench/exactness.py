"""Does a sampler emit the target's tokens? A test of every generated token of real runs, on the real models.

At each position t a lossless method draws x_t from the target's own p_t = p(· | prompt, x_<t), whatever the drafts
were. Two facts then hold token by token, given the history, so they pool over positions, prompts and seeds:

1. PIT (probability integral transform). Order the vocabulary by falling p_t and draw U ~ Uniform(0, 1):
   u_t = P_t(tokens ranked before x_t) + U·p_t(x_t) is uniform on (0, 1). Its ten deciles are tested with χ².
2. Surprise. s_t = −log p_t(x_t) − H(p_t) has mean 0 and variance Var_t = Σ p log² p − H². So
   z = Σ s_t / √(Σ Var_t) is about N(0, 1). A sampler whose texts the target finds less likely than its own
   (the benchmark's nll, bench/quality.py) has z > 0.

Plain sampling is the target, so it must pass. A lenient rule (Leviathan et al.'s lenience below 1 accepts too
often) leaves p; the test catches it once the drift is large against the noise of the tokens sampled (how large,
on the real pairs: docs/results.md, "Are the texts sampled across tokenizers the target's?"). One teacher-forced
target forward per text gives every p_t; nothing here is timed.

    python -m specviz.bench.exactness --target offline:Qwen2.5-Coder-1.5B-Instruct \
        --draft offline:gemma-3-270m --prompts 4 --seeds 4 --tokens 48 --lenience 0.5 --out DIR
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

import torch

from specviz.analysis.metrics import SIGNIFICANCE, chi_square_test
from specviz.bench.run import load_prompts
from specviz.config import BACKENDS, TRANSFORMERS, DecodeConfig
from specviz.core.sampling import Standardizer
from specviz.decoding import engine, plain
from specviz.decoding.pipeline import Pipeline, build_pipeline
from specviz.models.offline import ModelUnavailable

DECILES = 10


@dataclasses.dataclass
class Terms:
    """Per generated token: the PIT value u, the surprise s and its variance under p (float64, shape [n] each)."""

    pit: torch.Tensor
    surprise: torch.Tensor
    variance: torch.Tensor

    @staticmethod
    def join(parts: list[Terms]) -> Terms:
        return Terms(*(torch.cat([getattr(part, name) for part in parts]) for name in ("pit", "surprise", "variance")))


def position_terms(probs: torch.Tensor, token_ids: torch.Tensor, uniforms: torch.Tensor) -> Terms:
    """probs [n, V]: p_t at each generated position; token_ids [n]: the tokens drawn; uniforms [n]: the U's.
    p = [0.5, 0.3, 0.2], token 1, U = 0.5 -> u = 0.5 + 0.5·0.3 = 0.65."""
    probs = probs.double()
    chosen = probs.gather(1, token_ids.view(-1, 1)).squeeze(1)  # [n]
    # Tokens ranked before x_t: strictly more likely, or as likely with a lower id (a fixed order breaks ties).
    ids = torch.arange(probs.shape[1]).view(1, -1)  # [1, V]
    before = (probs > chosen.view(-1, 1)) | ((probs == chosen.view(-1, 1)) & (ids < token_ids.view(-1, 1)))
    pit = (probs * before).sum(dim=1) + uniforms.double() * chosen  # [n]
    logs = torch.where(probs > 0, probs.log(), torch.zeros_like(probs))  # 0·log 0 = 0
    entropy = -(probs * logs).sum(dim=1)  # [n]
    variance = (probs * logs.square()).sum(dim=1) - entropy.square()  # [n]
    return Terms(pit.clamp(0.0, 1.0), -chosen.log() - entropy, variance.clamp(min=0.0))


def verdict(terms: Terms) -> dict:
    """The pooled tests: the PIT's decile counts against uniform (χ²), and the surprise's z with its two-sided p."""
    counts = torch.bincount((terms.pit * DECILES).long().clamp(max=DECILES - 1), minlength=DECILES)
    _, _, pit_p = chi_square_test(counts.tolist(), [1.0 / DECILES] * DECILES)
    z = float(terms.surprise.sum() / terms.variance.sum().sqrt()) if float(terms.variance.sum()) > 0 else 0.0
    z_p = math.erfc(abs(z) / math.sqrt(2))
    return {"tokens": int(terms.pit.numel()), "deciles": counts.tolist(), "pit_p": pit_p, "z": z, "z_p": z_p,
            "excess_nll": float(terms.surprise.mean()), "follows_target": min(pit_p, z_p) >= SIGNIFICANCE}


def target_probs(pipeline: Pipeline, prompt: str, config: DecodeConfig, token_ids: list[int]) -> torch.Tensor:
    """p_t for every generated token, as the engine samples it (same template, warpers, target): one forward
    over prompt + text. Shape [n, V]."""
    prompt_ids = engine.checked_prompt_ids(pipeline, prompt, config)
    pipeline.target.reset()
    ids = torch.tensor(prompt_ids + token_ids, dtype=torch.long, device=pipeline.device)  # [P + n]
    logits = pipeline.target.feed(ids, logits_to_keep=len(token_ids) + 1)[:-1]  # [n, V]: row t → token t
    return Standardizer(config.temperature, config.top_k, config.top_p)(logits).cpu()


def generate(pipeline: Pipeline, prompt: str, config: DecodeConfig, method: str) -> list[int]:
    """One seeded run's tokens: "plain" is the target alone, anything else the pipeline's speculative decoding."""
    if method == "plain":
        return plain.baseline_decode(pipeline, prompt, config).token_ids
    return engine.run_speculative(pipeline, prompt, config).token_ids


def run_terms(pipeline: Pipeline, prompts: list[str], config: DecodeConfig, seeds: int, method: str) -> Terms:
    """The terms of every token of seeds × prompts runs (seed config.seed + i; the U's from their own generator)."""
    parts, uniform_source = [], torch.Generator().manual_seed(config.seed + 10_007)
    for prompt in prompts:
        for index in range(seeds):
            run_config = dataclasses.replace(config, seed=config.seed + index).validate()
            tokens = generate(pipeline, prompt, run_config, method)
            if tokens:
                probs = target_probs(pipeline, prompt, run_config, tokens)
                uniforms = torch.rand(len(tokens), generator=uniform_source, dtype=torch.float64)
                parts.append(position_terms(probs, torch.tensor(tokens), uniforms))
    if not parts:
        raise ValueError("no run generated a token")
    return Terms.join(parts)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m specviz.bench.exactness", description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--backend", choices=list(BACKENDS), default=TRANSFORMERS, help="what runs the forwards")
    parser.add_argument("--draft", nargs="+", required=True, help="each draft is tested with the exact rule")
    parser.add_argument("--questions", default="../shared/data/spec_bench/question.jsonl")
    parser.add_argument("--prompts", type=int, default=4, help="the first N prompts, one category after another")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--gamma", type=int, default=12)
    parser.add_argument("--draft-confidence", type=float, default=0.6)
    parser.add_argument("--lenience", type=float, nargs="*", default=[],
                        help="also run the first draft with each lenience (below 1: negative controls)")
    parser.add_argument("--controls-only", action="store_true", help="run only the --lenience cases")
    parser.add_argument("--out", help="write results.json here")
    args = parser.parse_args(argv)
    if args.temperature <= 0 or args.seeds < 1 or args.prompts < 1 or args.tokens < 1:
        parser.error("--temperature must be above 0 and --seeds, --prompts and --tokens at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        prompts = [item["prompt"] for item in load_prompts(args.questions, None, None)][: args.prompts]
        base = DecodeConfig(target=args.target, gamma=args.gamma, draft_confidence=args.draft_confidence,
                            temperature=args.temperature, max_new_tokens=args.tokens, backend=args.backend)
        exact = [("plain", args.draft[0], 1.0)] + [("specviz", draft, 1.0) for draft in args.draft]
        cases = ([] if args.controls_only else exact) + [("specviz", args.draft[0], value) for value in args.lenience]
        rows = []
        for method, draft, lenience in cases:
            config = dataclasses.replace(base, draft=draft, lenience=lenience).validate()
            terms = run_terms(build_pipeline(config), prompts, config, args.seeds, method)
            rows.append({"method": method, "draft": None if method == "plain" else draft, "lenience": lenience,
                         **verdict(terms)})
            row = rows[-1]
            print(f"{method:8} {row['draft'] or '':40} lenience {lenience:<4g} {row['tokens']:5d} tokens  "
                  f"PIT χ² p {row['pit_p']:.3g}  z {row['z']:+.2f} (p {row['z_p']:.3g})  "
                  f"excess nll {row['excess_nll']:+.3f}  {'follows' if row['follows_target'] else 'DOES NOT follow'}"
                  " the target", flush=True)
    except (ValueError, OSError, ModelUnavailable) as error:  # one line on stderr, exit 2
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "results.json").write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
