"""Distil the shipped draft (distilled.py) from the offline target. Seeded and reproducible.

    python -m specviz.distill                      # the shipped recipe (its time: docs/research.md)
    python -m specviz.distill --prompts 16 --requests 8 --passages 8 --max-new-tokens 24 --steps 3 --out /tmp/d.safetensors

1. Data (data.py): the target answers the project's own prompts and requests it writes itself; we keep
   every token and the target's final-norm hidden state h_j there. Cached under $SPECVIZ_CACHE/distill/, keyed by the
   data arguments.
2. Head support S: the most frequent tokens the target generated (frequency-ranked drafting).
3. Training, with training-time test (HASS / EAGLE-3, unrolled.py): block 1 reads the true states h_j; block k reads the
   states predicted by block k-1 and attends to true pairs only up to where drafting would have started, so
   training sees exactly the inputs that drafting step k sees. Loss per block:
       KL(p̃ ‖ q) + λ·SmoothL1(ĥ_{j+1}, h_{j+1}),   p̃ = softmax(W_S h_{j+1}),  q = softmax(W_S ĥ_{j+1})
   p̃ is the target's own next-token distribution renormalised over S: the teacher is recomputed from h.
4. Save the FC and the layer in float16 with the head's token ids, and print the file's sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path

import torch

from specviz.config import OFFLINE_MODEL
from specviz.distill.data import Corpus, build_corpus
from specviz.distill.unrolled import block_losses, evaluate
from specviz.drafters import distilled
from specviz.models import loading as models
from specviz.models.offline import cache_root
from specviz.paths import OutputPathError, check_outputs

VALIDATION_EVERY = 40  # every 40th sequence is held out


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m specviz.distill", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(distilled.ASSET), help="where to write the draft (.safetensors)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prompts", type=int, default=600, help="first-stage templated prompts")
    parser.add_argument("--requests", type=int, default=1000,
                        help="first-stage requests the target writes itself from its bare chat template (Magpie)")
    parser.add_argument("--passages", type=int, default=500, help="second-stage prompts quoting first-stage answers")
    parser.add_argument("--word-prompts", action="store_true",
                        help="build half the first-stage prompts around random words of the target's vocabulary")
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--gen-batch", type=int, default=64, help="sequences generated at once")
    parser.add_argument("--gen-dtype", choices=("bfloat16", "target"), default="target",
                        help="the target's precision while it writes the data: a bfloat16 copy (1.7x faster batched "
                             "on this CPU; its top token is the float32 target's at 98.8%% of positions) or the target's own")
    parser.add_argument("--head-size", type=int, default=4096, help="S, the tokens the draft can propose")
    parser.add_argument("--epochs", type=float, default=5.0)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: run all epochs)")
    parser.add_argument("--batch", type=int, default=8, help="sequences per training step")
    parser.add_argument("--max-length", type=int, default=384, help="tokens of a sequence used in training")
    parser.add_argument("--unroll", type=int, default=2, help="drafting steps simulated in training (training-time test)")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--regression", type=float, default=0.2, help="λ, weight of the hidden-state regression")
    parser.add_argument("--noise", type=float, default=0.05, help="uniform noise on input states, times their RMS")
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True,
                        help="train under bfloat16 autocast, weights kept in float32 (1.5x faster on this CPU)")
    parser.add_argument("--score", choices=("all", "generated"), default="all",
                        help="positions whose predictions are scored: all, or only those of generated tokens")
    parser.add_argument("--train-every", type=int, default=1,
                        help="train on every K-th training sequence only (data-scaling studies; held-out set unchanged)")
    parser.add_argument("--data-only", action="store_true", help="build (or find) the data, then stop")
    parser.add_argument("--current-token", action=argparse.BooleanOptionalAction, default=True,
                        help="each pair also carries the token read at its position (lets one layer copy)")
    parser.add_argument("--without-states", action="store_true",
                        help="ablation: the head sees tokens only (a 1-layer LM on frozen embeddings), for comparison")
    parser.add_argument("--cache-dir", default=None, help="where generated data is kept (default $SPECVIZ_CACHE/distill)")
    return parser.parse_args(argv)


# Options added after drafts were shipped, with the value that keeps the old behaviour: left out of a draft's
# metadata at that value, so a file written before them still matches `parse_args([])`.
_LATER_OPTIONS = {"train_every": 1, "gen_dtype": "target"}


def main(argv=None) -> int:
    args = parse_args(argv)
    try:  # before the target loads: hours of training must not end in a failed write
        check_outputs(files={"--out": args.out}, folders={"--cache-dir": args.cache_dir})
    except OutputPathError as error:
        print(f"specviz.distill: {error}", file=sys.stderr)
        return 2
    torch.set_num_threads(max(1, torch.get_num_threads()))
    target = models.load_model(OFFLINE_MODEL)
    corpus = load_or_build_corpus(target, args)
    print(f"data: {len(corpus.sequences)} sequences, {corpus.token_count:,} tokens ({corpus.generated_count:,} generated), "
          f"built in {corpus.seconds / 60:.1f} min")
    if args.data_only:
        return 0
    started = time.perf_counter()
    draft, report = train(target.hf_model, corpus, args)
    report.update(sequences=len(corpus.sequences), tokens=corpus.token_count, generated_tokens=corpus.generated_count,
                  args={k: v for k, v in vars(args).items() if k not in ("out", "cache_dir", "data_only")
                        and _LATER_OPTIONS.get(k, object()) != v})
    digest = distilled.save(draft, args.out, report)  # no timings inside: a rerun writes the same bytes
    print(json.dumps(report, indent=1))
    print(f"data {corpus.seconds / 60:.1f} min, training {(time.perf_counter() - started) / 60:.1f} min")
    print(f"wrote {args.out} ({Path(args.out).stat().st_size / 1e6:.1f} MB), sha256 {digest}")
    return 0


def load_or_build_corpus(target, args) -> Corpus:
    dtype = target.dtype if args.gen_dtype == "target" else getattr(torch, args.gen_dtype)
    key = [args.seed, args.prompts, args.passages, args.max_new_tokens, args.gen_batch, str(dtype)]
    key += ["words"] if args.word_prompts else []  # runs without these keep their old cache
    key = json.dumps(key + [f"requests={args.requests}"] if args.requests else key)
    folder = Path(args.cache_dir) if args.cache_dir else cache_root() / "distill"
    path = folder / f"corpus-{hashlib.sha256(key.encode()).hexdigest()[:16]}.pt"
    if path.exists():
        return Corpus.load(path)
    from specviz.decoding.pipeline import eos_ids

    print(f"generating data with {OFFLINE_MODEL} on {target.device} in {dtype} ...")
    writer = target if dtype == target.dtype else models.load_model(OFFLINE_MODEL, target.device, dtype)
    corpus = build_corpus(writer.hf_model, target.tokenizer, eos_ids(target), args.prompts, args.passages,
                          args.max_new_tokens, args.gen_batch, args.seed, word_prompts=args.word_prompts,
                          request_count=args.requests)
    path.parent.mkdir(parents=True, exist_ok=True)
    corpus.save(path)
    return corpus


def frequent_tokens(corpus: Corpus, size: int, always: list[int]) -> torch.Tensor:
    """The `size` ids the target generated most often (ties by id), with the `always` ids (EOS) included."""
    counts = torch.zeros(max(max(s.token_ids) for s in corpus.sequences) + 1, dtype=torch.long)
    for s in corpus.sequences:
        counts += torch.bincount(torch.tensor(s.token_ids[s.prompt_length:], dtype=torch.long), minlength=counts.numel())
    ranked = sorted(range(counts.numel()), key=lambda i: (-int(counts[i]), i))
    chosen = list(dict.fromkeys(always + ranked))[:size]
    return torch.tensor(sorted(chosen))


# ---------------------------------------------------------------- training


def train(hf_model, corpus: Corpus, args) -> tuple[distilled.FeatureDraft, dict]:
    generator = torch.Generator().manual_seed(args.seed)
    eos = [i for i in [hf_model.generation_config.eos_token_id] if isinstance(i, int)]
    head_ids = frequent_tokens(corpus, args.head_size, eos)
    embedding = hf_model.get_input_embeddings().weight.detach().float()
    head_weight = hf_model.get_output_embeddings().weight.detach().float()[head_ids.to(embedding.device)]
    draft = distilled.FeatureDraft(hf_model.config, head_ids, embedding, head_weight.clone(), args.current_token)
    _initialise(draft, generator)
    draft.to(embedding.device).train()  # trained in float32 on the target's device (a GPU when there is one)

    train_set = [s for i, s in enumerate(corpus.sequences) if i % VALIDATION_EVERY != VALIDATION_EVERY - 1]
    valid_set = [s for i, s in enumerate(corpus.sequences) if i % VALIDATION_EVERY == VALIDATION_EVERY - 1]
    train_set = train_set[:: args.train_every]
    coverage = _coverage(valid_set, head_ids)
    feature_rms = float(torch.cat([s.features[:64].float() for s in train_set[:200]]).pow(2).mean().sqrt()) if train_set else 1.0
    steps_per_epoch = math.ceil(len(train_set) / args.batch)
    total = args.steps or max(1, int(args.epochs * steps_per_epoch))
    trainable = [p for p in draft.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=args.lr, betas=(0.9, 0.95), weight_decay=args.weight_decay)
    warmup = min(100, total // 10 + 1)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup) * (
        0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(step, total) / total))))
    print(f"training {sum(p.numel() for p in trainable):,} parameters for {total} steps ({steps_per_epoch} per epoch); "
          f"head covers {coverage:.1%} of held-out generated tokens")
    step, started, order = 0, time.perf_counter(), []
    while step < total:
        if not order:
            order = torch.randperm(len(train_set), generator=generator).tolist()
        batch = [train_set[i] for i in order[: args.batch]]
        order = order[args.batch:]
        with torch.autocast(draft.fc.weight.device.type, dtype=torch.bfloat16, enabled=args.bf16):
            losses = block_losses(draft, batch, args, feature_rms, generator)
        loss = sum(losses)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        schedule.step()
        step += 1
        if step % 25 == 0 or step == total:
            print(f"  step {step}/{total}  loss {loss.item():.3f} ({' '.join(f'{x.item():.3f}' for x in losses)})  "
                  f"{(time.perf_counter() - started) / 60:.1f} min", flush=True)
    draft.eval()
    report = {"head_size": args.head_size, "head_coverage": round(coverage, 4), "steps": total}
    report.update(evaluate(draft, hf_model, valid_set, args))
    return draft, report


def _initialise(draft, generator) -> None:
    """Normal(0, 0.02) weights drawn from the run's generator (no global seeding); norms at 1, biases at 0."""
    for name, parameter in draft.named_parameters():
        if not parameter.requires_grad:
            continue
        with torch.no_grad():
            if name.endswith("norm.weight"):
                parameter.fill_(1.0)
            elif name.endswith("bias"):
                parameter.zero_()
            else:
                parameter.normal_(0.0, 0.02, generator=generator)


def _coverage(sequences, head_ids: torch.Tensor) -> float:
    generated = torch.tensor([t for s in sequences for t in s.token_ids[s.prompt_length:]], dtype=torch.long)
    return float(torch.isin(generated, head_ids).float().mean()) if generated.numel() else 0.0

