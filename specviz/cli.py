"""The command line: `python -m specviz generate | replay | verify-cost | bench | loadtest`.

`bench` and `loadtest` hand the rest of the command line to their tools (specviz/bench/), imported only then.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from specviz import job
from specviz.config import (
    BACKENDS,
    NGRAM_DRAFTER,
    OFFLINE_DRAFTER,
    OFFLINE_DRAFTER_OFF_CPU,
    OFFLINE_MODEL,
    TRANSFORMERS,
    DecodeConfig,
    as_number,
    check_prompt,
    parse_field,
    shown,
)
from specviz.decoding.calibration import calibrate, calibration_sizes
from specviz.decoding.pipeline import build_pipeline
from specviz.drafters import kinds
from specviz.job import Job
from specviz.models import presets
from specviz.paths import OutputPathError, check_outputs
from specviz.trace import trace_text
from specviz.views.cli_output import LEGEND, format_round, json_summary, print_summary

FORWARDED = {  # subcommands whose arguments belong to a tool: `python -m specviz bench --help` shows them
    "bench": "the benchmark against plain decoding and transformers (python -m specviz bench --help)",
    "loadtest": "concurrent sessions against the launched app (python -m specviz loadtest --help)",
}


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line on stderr instead of usage + message
        raise UsageError(message)


def field(name: str):
    """An argparse type for the DecodeConfig field `name`: `--gamma abc` and `--gamma 0` get the sentence the app
    gives for the same value (config.check_field)."""
    def parse(text: str):
        try:
            return parse_field(name, text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    parse.__name__ = name  # argparse names the type in some messages
    return parse


def whole_rounds(text: str) -> int:
    """An argparse type for `replay --rounds`: a whole number of rounds, 1 or more."""
    number = as_number(text, whole=True, from_text=True)
    if number is None or number < 1:
        raise argparse.ArgumentTypeError(f"rounds must be a whole number of 1 or more, got {shown(text)}")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m specviz", description="Exact speculative decoding, shown round by round.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    gen = commands.add_parser("generate", help="decode a prompt speculatively and show every round")
    gen.add_argument("--prompt", required=True, help="the text to continue")
    gen.add_argument("--preset", help=presets.preset_help())
    gen.add_argument("--target", help=f"target model: hub id, local folder, or {OFFLINE_MODEL}")
    gen.add_argument("--draft", help=f"the drafter, one of {kinds.help_text()} (default: '{OFFLINE_DRAFTER}' for the "
                                     f"offline target on a CPU, '{OFFLINE_DRAFTER_OFF_CPU}' on a GPU, else '{NGRAM_DRAFTER}')")
    defaults = DecodeConfig()
    gen.add_argument("--gamma", type=field("gamma"), help=f"tokens drafted per round (γ; default {defaults.gamma}, or the "
                                                          "preset's)")
    gen.add_argument("--draft-confidence", type=field("draft_confidence"),
                     help="a draft model stops a round's draft after a token it gave less than this probability (0 "
                          "never; default 0, or the preset's); exact either way")
    gen.add_argument("--draft-window", type=field("draft_window"), metavar="N",
                     help="a draft model reads only N prompt tokens, the first 4 and the latest (0: all, the default "
                          "unless the preset's; the int4 draft copies the target's prompt cache and ignores it); the "
                          "output stays exact")
    gen.add_argument("--draft-vocab", type=field("draft_vocab"), metavar="N",
                     help="a draft model's head scores only the N lowest token ids (a BPE tokenizer's most frequent), "
                          "the prompt's and EOS (0: all, the default unless the preset's); the output stays exact")
    gen.add_argument("--max-new-tokens", type=field("max_new_tokens"), default=defaults.max_new_tokens)
    gen.add_argument("--temperature", type=field("temperature"), default=defaults.temperature, help="0 means greedy")
    gen.add_argument("--top-k", type=field("top_k"), default=defaults.top_k, help="0 turns it off")
    gen.add_argument("--top-p", type=field("top_p"), default=defaults.top_p, help="1 turns it off")
    gen.add_argument("--seed", type=field("seed"), default=defaults.seed)
    gen.add_argument("--adaptive", action=argparse.BooleanOptionalAction, default=None,
                     help="choose each round's draft length in [0, γ] from running acceptance and measured costs")
    gen.add_argument("--tree", action="store_true",
                     help="draft a token tree each round, γ deep, verified in one target forward with the node budget "
                          "this machine affords (its measured v(k); a chain where no tree pays)")
    gen.add_argument("--tree-budget", type=field("tree_budget"),
                     help="draft token trees of at most this many nodes (implies --tree; 0: measured)")
    gen.add_argument("--ngram-size", type=field("ngram_size"), default=defaults.ngram_size, help="prompt lookup's longest n-gram")
    gen.add_argument("--chat", action=argparse.BooleanOptionalAction, default=True, help="use the chat template")
    gen.add_argument("--system-prompt", help="the chat's system message ('' for none; default: the template's own)")
    gen.add_argument("--backend", choices=list(BACKENDS), default=TRANSFORMERS,
                     help="what runs the models: " + "; ".join(f"{name}: {what}" for name, what in BACKENDS.items()))
    gen.add_argument("--baseline", action="store_true", help="also decode plainly and compare")
    gen.add_argument("--json", action="store_true", help="print one JSON object instead of coloured rounds")
    gen.add_argument("--trace-out", help="write the full trace as JSON to this file")
    gen.add_argument("--html-out", help="write the run as one self-contained HTML page (rows, plots, stats; opens "
                                        "offline, and loads back like the trace JSON)")
    replay_command = commands.add_parser("replay",
                                         help="show a trace written by generate --trace-out, or check that it reproduces")
    replay_command.add_argument("trace", help="the trace JSON file")
    replay_command.add_argument("--check", action="store_true",
                                help="re-run its configuration and prompt and compare every round: drafts, accepted "
                                     "count, uniforms, final token, p(x) and q(x) within 1e-5; exit 1 naming the "
                                     "first that differs")
    replay_command.add_argument("--rounds", type=whole_rounds, metavar="N",
                                help="with --check: re-run and compare only the first N rounds (a quick check of a "
                                     "long trace)")
    cost = commands.add_parser("verify-cost", help="measure v(k), the target's forward time over k tokens")
    cost.add_argument("--target", default=OFFLINE_MODEL)
    cost.add_argument("--backend", choices=list(BACKENDS), default=TRANSFORMERS, help="what runs the target's forwards")
    cost.add_argument("--context", type=int, default=256, help="tokens already in the cache")
    cost.add_argument("--max-k", type=int, default=16)
    cost.add_argument("--repeats", type=int, default=7)
    cost.add_argument("--json", action="store_true")
    for name, description in FORWARDED.items():  # listed for --help; main() forwards them before parsing
        commands.add_parser(name, help=description, add_help=False)
    return parser


def config_from_args(args) -> DecodeConfig:
    """The run the arguments ask for. Any local folder may be a model here: the command line is a local tool, run by
    the machine's own user (the app allows folders under its models directory only, app/policy.py)."""
    from specviz.drafters import kinds
    from specviz.models.presets import offline_drafter, preset_settings, resolve_preset

    target, draft = OFFLINE_MODEL, offline_drafter(backend=args.backend)
    if args.preset:
        if args.target or args.draft:
            raise ValueError("give either --preset or --target/--draft, not both")
        target, draft = resolve_preset(args.preset, args.backend)
    target = args.target or target
    # a preset's draft goes with its target; the default offline draft fits only the offline target
    draft = args.draft or (draft if args.preset or target == OFFLINE_MODEL else NGRAM_DRAFTER)
    check_prompt(args.prompt)
    settings = {**DecodeConfig().to_dict(), **preset_settings(args.preset, args.backend)}  # the preset's, where unset
    config = DecodeConfig(
        target=target, draft=draft, max_new_tokens=args.max_new_tokens,
        temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed,
        chat=args.chat, ngram_size=args.ngram_size, adaptive=settings["adaptive"] if args.adaptive is None else args.adaptive,
        system_prompt=args.system_prompt,
        tree=args.tree or args.tree_budget is not None, tree_budget=args.tree_budget or 0, backend=args.backend,
        **{name: settings[name] if getattr(args, name) is None else getattr(args, name)
           for name in ("gamma", "draft_confidence", "draft_window", "draft_vocab")},
    ).validate()
    kinds.check(config)  # what the drafter's kind cannot do, said before any model loads
    return config


def generate(args) -> int:
    from specviz.analysis.metrics import summarize
    from specviz.decoding import comparison, engine

    check_outputs(files={"--trace-out": args.trace_out, "--html-out": args.html_out})  # before any model loads
    config = config_from_args(args)
    pipeline = build_pipeline(config)
    calibrate(pipeline, config.target, calibration_sizes(config))  # c's target step and v(k), timed once per target
    if args.baseline:
        comparison.warm_up(pipeline, config)  # so the first-call costs of a fresh process tilt neither run
    colour = sys.stdout.isatty()
    trace = None
    if not args.json and not colour:
        print(LEGEND)
    decode = comparison.compared_decode if args.baseline else engine.speculative_decode  # plain decoding in turn
    for round_, trace in decode(pipeline, args.prompt, config):
        if not args.json:
            print(format_round(round_, colour), flush=True)
    parting = None
    if args.baseline:
        if config.temperature == 0:  # greedy: the runs should agree; where not, say whether it is a rounding tie
            from specviz.analysis.parting import find_parting

            prompt_ids = engine.checked_prompt_ids(pipeline, args.prompt, config)
            parting = find_parting(pipeline.target, prompt_ids, trace.baseline.token_ids, trace.token_ids,
                                   pipeline.dtype)
    metrics = summarize(trace)
    if args.html_out:
        from specviz.views.export import write_run_html

        write_run_html(trace, args.html_out)
    if args.trace_out:
        with open(args.trace_out, "w", encoding="utf-8") as handle:
            handle.write(trace.to_json())
    if args.json:
        print(json.dumps(json_summary(trace, metrics, parting), ensure_ascii=False))
    else:
        print_summary(trace, metrics, parting)
    return 0


def replay(args) -> int:
    """Print a recorded trace's rounds or, with --check, re-run it and name the first round that differs."""
    from specviz.views.export import trace_from_file  # plotly and the figures load only when a trace is read

    try:
        trace = trace_from_file(args.trace)  # trace JSON, or a page from --html-out, checked to hold together
    except ValueError as error:
        raise UsageError(f"{args.trace} {error}") from None
    if args.rounds is not None and not args.check:
        raise UsageError("--rounds goes with --check: it says how many rounds to re-run")
    if not args.check:
        colour = sys.stdout.isatty()
        if not colour:
            print(LEGEND)
        for round_ in trace.rounds:
            print(format_round(round_, colour))
        print(f"\n{trace.text}")
        return 0
    from specviz.decoding.replay import first_difference
    from specviz.views.gallery import changed_models

    changed = changed_models(args.trace)
    if changed:  # a gallery entry recorded on other weights than this code pins: a replay would compare other models
        raise ValueError(f"{args.trace}: " + "; ".join(changed))
    mismatch = first_difference(trace, rounds=args.rounds)
    total = len(trace.rounds)
    if mismatch is None:
        if args.rounds is None or args.rounds >= total:
            print(f"all {total} rounds reproduce")
        else:
            print(f"the first {args.rounds} of {total} rounds reproduce (the other {total - args.rounds} were not re-run)")
        return 0
    # numbered from 1, as the rounds are listed
    print(f"round {mismatch.round_index + 1} does not reproduce: {mismatch.reason}", file=sys.stderr)
    return 1


def forward(command: str, argv: list[str]) -> int:
    """Run a tool's own main() on the rest of the command line (its own parser, errors and exit codes)."""
    if command == "bench":
        from specviz.bench.command import main as tool_main
    else:
        from specviz.bench.loadtest import main as tool_main
    return tool_main(argv)


def verify_cost(args) -> int:
    from specviz.models import loading as models
    from specviz.models.profiling import measure_verify_costs, relative_costs

    if not 1 <= args.max_k <= 64 or not 1 <= args.context <= 8000 or not 1 <= args.repeats <= 100:
        raise ValueError("need 1 ≤ --max-k ≤ 64, 1 ≤ --context ≤ 8000 and 1 ≤ --repeats ≤ 100")
    loaded = models.load_model(args.target, backend=args.backend)
    model = loaded.language_model(loaded.logits_width)
    context = [(i * 7919) % 1000 + 100 for i in range(args.context)]  # ordinary token ids, fixed
    timings = measure_verify_costs(model, context, args.max_k, args.repeats)
    relative = relative_costs(timings)
    if args.json:
        print(json.dumps({"device": models.describe_device(loaded.device), "backend": args.backend, "context": args.context,
                          "ms": timings, "v": relative}))
    else:
        print(f"verify cost on {models.describe_device(loaded.device)} ({args.backend}) after {args.context} cached tokens")
        for k in timings:
            print(f"k={k:2d}  {timings[k]:7.2f} ms  v(k)={relative[k]:.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from specviz.models.loading import IncompatibleModels, ModelUnavailable

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in FORWARDED:
        return forward(argv[0], argv[1:])
    try:
        args = build_parser().parse_args(argv)
        if args.command == "replay":  # a file that cannot be a trace is refused before anything heavy loads
            try:
                trace_text(args.trace)
            except ValueError as error:
                raise UsageError(f"{args.trace} {error}") from None
        _quiet_transformers()
        if args.command != "replay" or args.check:  # a model will run: torch's threads fit the CPU quota
            from specviz.models.threads import size_torch_threads

            size_torch_threads()
        with job.running(Job(on_stage=_stage_line if _show_progress(getattr(args, "json", False)) else None)):
            return {"generate": generate, "replay": replay, "verify-cost": verify_cost}[args.command](args)
    except (UsageError, OutputPathError) as error:
        print(f"specviz: {error}", file=sys.stderr)
        return 2
    except (ValueError, ModelUnavailable, IncompatibleModels) as error:
        print(f"specviz: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("specviz: interrupted", file=sys.stderr)
        return 130


def _show_progress(json_out: bool) -> bool:
    """Loading stages go to stderr in a terminal, and always beside --json's object on stdout, as the app's status line
    shows them (SPECVIZ_PROGRESS=1 asks for them, 0 silences them); other scripts get only the errors."""
    wanted = os.environ.get("SPECVIZ_PROGRESS", "")
    return wanted != "0" and (sys.stderr.isatty() or json_out or wanted == "1")


def _stage_line(stage: str) -> None:
    print(f"specviz: {stage}…", file=sys.stderr, flush=True)


def _quiet_transformers() -> None:
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()
