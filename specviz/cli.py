"""The command line: `python -m specviz generate --prompt TEXT ...` and `python -m specviz verify-cost`."""

from __future__ import annotations

import argparse
import json
import sys

from specviz.config import DISTILLED_DRAFTER, LOOKUP_FIRST, NGRAM_DRAFTER, OFFLINE_DRAFTER, OFFLINE_DRAFTER_OFF_CPU, OFFLINE_MODEL, QUANTIZED_DRAFTER, DecodeConfig, check_prompt
from specviz.trace import ACCEPTED, BONUS, CORRECTED, REJECTED, Round
from specviz.pipeline import build_pipeline

COLOURS = {ACCEPTED: "\033[32m", REJECTED: "\033[9;31m", CORRECTED: "\033[34m", BONUS: "\033[1;34m"}
MARKERS = {ACCEPTED: "{}", REJECTED: "[-{}-]", CORRECTED: "[+{}+]", BONUS: "[^{}^]"}
RESET = "\033[0m"


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line on stderr instead of usage + message
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m specviz", description="Exact speculative decoding, shown round by round.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    gen = commands.add_parser("generate", help="decode a prompt speculatively and show every round")
    gen.add_argument("--prompt", required=True, help="the text to continue")
    gen.add_argument("--preset", help="offline, gpt2-xl, smollm2-1.7b or qwen2.5-1.5b")
    gen.add_argument("--target", help=f"target model: hub id, local folder, or {OFFLINE_MODEL}")
    gen.add_argument("--draft", help=f"draft model id or folder, '{NGRAM_DRAFTER}' for prompt lookup, '{DISTILLED_DRAFTER}' for "
                                     f"the offline target's shipped draft or '{QUANTIZED_DRAFTER}' for the target's own 4-bit copy; '{LOOKUP_FIRST}' before a draft tries prompt lookup "
                                     f"first (default: '{OFFLINE_DRAFTER}' for the offline target on a CPU, '{OFFLINE_DRAFTER_OFF_CPU}' on a GPU, "
                                     f"else '{NGRAM_DRAFTER}')")
    defaults = DecodeConfig()
    gen.add_argument("--gamma", type=int, default=defaults.gamma, help="tokens drafted per round (γ)")
    gen.add_argument("--max-new-tokens", type=int, default=defaults.max_new_tokens)
    gen.add_argument("--temperature", type=float, default=defaults.temperature, help="0 means greedy")
    gen.add_argument("--top-k", type=int, default=defaults.top_k, help="0 turns it off")
    gen.add_argument("--top-p", type=float, default=defaults.top_p, help="1 turns it off")
    gen.add_argument("--seed", type=int, default=defaults.seed)
    gen.add_argument("--adaptive", action="store_true",
                     help="choose each round's draft length in [0, γ] from running acceptance and measured costs")
    gen.add_argument("--ngram-size", type=int, default=defaults.ngram_size, help="prompt lookup's longest n-gram")
    gen.add_argument("--chat", action=argparse.BooleanOptionalAction, default=True, help="use the chat template")
    gen.add_argument("--baseline", action="store_true", help="also decode plainly and compare")
    gen.add_argument("--json", action="store_true", help="print one JSON object instead of coloured rounds")
    gen.add_argument("--trace-out", help="write the full trace as JSON to this file")
    cost = commands.add_parser("verify-cost", help="measure v(k), the target's forward time over k tokens")
    cost.add_argument("--target", default=OFFLINE_MODEL)
    cost.add_argument("--context", type=int, default=256, help="tokens already in the cache")
    cost.add_argument("--max-k", type=int, default=16)
    cost.add_argument("--repeats", type=int, default=7)
    cost.add_argument("--json", action="store_true")
    return parser


def config_from_args(args) -> DecodeConfig:
    from specviz.models.loading import offline_drafter, resolve_preset

    target, draft = OFFLINE_MODEL, offline_drafter()
    if args.preset:
        if args.target or args.draft:
            raise ValueError("give either --preset or --target/--draft, not both")
        target, draft = resolve_preset(args.preset)
    target = args.target or target
    draft = args.draft or (draft if target == OFFLINE_MODEL else NGRAM_DRAFTER)  # the shipped draft fits one target
    check_prompt(args.prompt)
    return DecodeConfig(
        target=target, draft=draft, gamma=args.gamma, max_new_tokens=args.max_new_tokens,
        temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed,
        chat=args.chat, ngram_size=args.ngram_size, adaptive=args.adaptive,
    ).validate()


def format_round(round_: Round, colour: bool) -> str:
    """One line per round: accepted, rejected, corrected and bonus tokens, whitespace made visible."""
    pieces = []
    for token in round_.tokens:
        text = token.text.replace("\n", "\\n").replace("\t", "\\t")
        pieces.append(f"{COLOURS[token.kind]}{text}{RESET}" if colour else MARKERS[token.kind].format(text))
    return f"round {round_.index + 1:3d} ({round_.accepted}/{round_.drafted}): " + "".join(pieces)


def generate(args) -> int:
    from specviz import engine
    from specviz.metrics import summarize

    config = config_from_args(args)
    pipeline = build_pipeline(config)
    if args.baseline:
        engine.warm_up(pipeline, config)  # so the first-call costs of a fresh process tilt neither run
    colour = sys.stdout.isatty()
    trace = None
    if not args.json and not colour:
        print("legend: token = accepted, [-x-] = rejected, [+x+] = corrected, [^x^] = bonus")
    for round_, trace in engine.speculative_decode(pipeline, args.prompt, config):
        if not args.json:
            print(format_round(round_, colour), flush=True)
    if args.baseline:
        trace.baseline = engine.baseline_decode(pipeline, args.prompt, config)
    metrics = summarize(trace)
    if args.trace_out:
        with open(args.trace_out, "w", encoding="utf-8") as handle:
            handle.write(trace.to_json())
    if args.json:
        print(json.dumps(_json_summary(trace, metrics), ensure_ascii=False))
    else:
        _print_summary(trace, metrics)
    return 0


def _json_summary(trace, metrics) -> dict:
    summary = {"text": trace.text, "rounds": metrics.rounds, "prompt": trace.prompt, "config": trace.config,
               "device": trace.device, "dtype": trace.dtype, "stop_reason": trace.stop_reason,
               "wall_ms": trace.wall_ms, "forward_ms": trace.forward_ms, **metrics.to_dict()}
    if trace.baseline is not None:
        summary.update(baseline_text=trace.baseline.text, baseline_wall_ms=trace.baseline.wall_ms)
    return summary


def _print_summary(trace, metrics) -> None:
    per_position = ", ".join("-" if a is None else f"{a:.2f}" for a in metrics.alpha_per_position)
    print(f"\n{trace.text}\n")
    print(f"device {trace.device} ({trace.dtype}); stopped by {trace.stop_reason}")
    print(f"α = {metrics.alpha:.3f} ({metrics.accepted_tokens}/{metrics.tested_positions} tests); per position: {per_position}")
    print(f"{metrics.generated_tokens} tokens in {metrics.rounds} target calls: {metrics.tokens_per_round:.2f} tokens per round")
    print(f"draft {metrics.draft_ms_per_round:.1f} ms + verify {metrics.verify_ms_per_round:.1f} ms per round; "
          f"c = {metrics.c:.3f} ({metrics.c_basis}); {metrics.tokens_per_s:.1f} tokens/s")
    line = f"theoretical speedup {metrics.speedup_theoretical:.2f}x"
    if metrics.speedup_measured is not None:
        line += f"; measured {metrics.speedup_measured:.2f}x against plain decoding; identical output: {metrics.identical}"
    print(line)


def verify_cost(args) -> int:
    from specviz.models import loading as models
    from specviz.models.profiling import measure_verify_costs, relative_costs

    if not 1 <= args.max_k <= 64 or not 1 <= args.context <= 8000 or not 1 <= args.repeats <= 100:
        raise ValueError("need 1 ≤ --max-k ≤ 64, 1 ≤ --context ≤ 8000 and 1 ≤ --repeats ≤ 100")
    loaded = models.load_model(args.target)
    model = loaded.language_model(loaded.logits_width)
    context = [(i * 7919) % 1000 + 100 for i in range(args.context)]  # ordinary token ids, fixed
    timings = measure_verify_costs(model, context, args.max_k, args.repeats)
    relative = relative_costs(timings)
    if args.json:
        print(json.dumps({"device": models.describe_device(loaded.device), "context": args.context,
                          "ms": timings, "v": relative}))
    else:
        print(f"verify cost on {models.describe_device(loaded.device)} after {args.context} cached tokens")
        for k in timings:
            print(f"k={k:2d}  {timings[k]:7.2f} ms  v(k)={relative[k]:.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from specviz.models.loading import IncompatibleModels, ModelUnavailable

    try:
        args = build_parser().parse_args(argv)
        _quiet_transformers()
        return generate(args) if args.command == "generate" else verify_cost(args)
    except UsageError as error:
        print(f"specviz: {error}", file=sys.stderr)
        return 2
    except (ValueError, ModelUnavailable, IncompatibleModels) as error:
        print(f"specviz: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("specviz: interrupted", file=sys.stderr)
        return 130


def _quiet_transformers() -> None:
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
