"""How a run prints on a terminal: one coloured (or marked) line per round, then the summary or the JSON."""

from __future__ import annotations

from dataclasses import asdict

from specviz.analysis.counters import engine_counters
from specviz.analysis.speedup import waterfall
from specviz.analysis.tree_metrics import summarize_tree, why_no_tree
from specviz.analysis.vocab_metrics import shared_mass
from specviz.config import TRANSFORMERS
from specviz.trace import ACCEPTED, BONUS, CORRECTED, REJECTED, Round
from specviz.views.stats_text import measurement_words

COLOURS = {ACCEPTED: "\033[32m", REJECTED: "\033[9;31m", CORRECTED: "\033[34m", BONUS: "\033[1;34m"}
MARKERS = {ACCEPTED: "{}", REJECTED: "[-{}-]", CORRECTED: "[+{}+]", BONUS: "[^{}^]"}
RESET = "\033[0m"
LEGEND = "legend: token = accepted, [-x-] = rejected, [+x+] = corrected, [^x^] = bonus"


def format_round(round_: Round, colour: bool) -> str:
    """One line per round: accepted, rejected, corrected and bonus tokens, whitespace made visible."""
    pieces = []
    for token in round_.tokens:
        text = token.text.replace("\n", "\\n").replace("\t", "\\t")
        pieces.append(f"{COLOURS[token.kind]}{text}{RESET}" if colour else MARKERS[token.kind].format(text))
    return f"round {round_.index + 1:3d} ({round_.accepted}/{round_.drafted}): " + "".join(pieces)


def json_summary(trace, metrics, parting=None) -> dict:
    summary = {"text": trace.text, "rounds": metrics.rounds, "prompt": trace.prompt, "config": trace.config,
               "backend": trace.config.get("backend", TRANSFORMERS),
               "device": trace.device, "dtype": trace.dtype, "stop_reason": trace.stop_reason,
               "wall_ms": trace.wall_ms, "forward_ms": trace.forward_ms, **metrics.to_dict(),
               "engine_counters": engine_counters(trace)}  # llama.cpp's and vLLM's names for the same counts
    tree = summarize_tree(trace)
    if tree.is_tree or trace.config.get("tree"):  # metrics.DEFINITIONS["acceptance_by_depth"], [..._sibling_rank"]
        summary.update(acceptance_by_depth=tree.acceptance_by_depth,
                       acceptance_by_sibling_rank=tree.acceptance_by_sibling_rank, tree_drawn=tree.is_tree)
    across = shared_mass(trace)
    if across is not None:  # metrics.DEFINITIONS["shared_mass"]: a draft of another tokenizer
        summary["shared_mass"] = across.overall
    if trace.baseline is not None:
        summary.update(baseline_text=trace.baseline.text, baseline_wall_ms=trace.baseline.wall_ms, cores=trace.cores,
                       speedup_interval=None if metrics.speedup_low is None else [metrics.speedup_low, metrics.speedup_high])
    reconciled = waterfall(trace, metrics.alpha)
    if reconciled is not None:  # speedup.py: predicted ms per token, the named parts, measured ms per token
        summary["speedup_waterfall"] = reconciled.to_dict()
    if parting is not None:
        summary["parting"] = {**asdict(parting), "is_tie": parting.is_tie}
    return summary


def speedup_lines(trace, metrics) -> list[str]:
    """The measured speedup (where a plain run was timed) and the predicted one, then the waterfall between them."""
    predicted = f"predicted {metrics.speedup_predicted:.2f}x from this run's α, c and v(k)" if metrics.speedup_predicted else ""
    if metrics.speedup_measured is None:
        lines = [f"speedup: {predicted or 'none predicted'}; --baseline measures it"]
    else:
        lines = [f"speedup: measured {measurement_words(metrics, trace.cores, 'x')} ({metrics.tokens_per_s:.1f} tokens/s ÷ "
                 f"plain decoding's {metrics.baseline_tokens_per_s:.1f}, timed in turn in this process); {predicted}; "
                 f"identical output: {metrics.identical}"]
    reconciled = waterfall(trace, metrics.alpha)
    if reconciled is not None:
        parts = " ".join(f"{'+' if ms >= 0 else '−'} {name} {abs(ms):.1f}" for name, ms in reconciled.parts)
        lines.append(f"ms per token: predicted {reconciled.predicted_ms:.1f} {parts} = this run {reconciled.measured_ms:.1f}"
                     + ("" if reconciled.plain_ms is None else f"; plain decoding {reconciled.plain_ms:.1f} "
                        f"(one step {reconciled.step_ms:.1f})"))
    return lines


def _rates(values) -> str:
    return ", ".join("-" if a is None else f"{a:.2f}" for a in values)


def tree_line(tree) -> str:
    """The terminal's line for a tree run (tree_metrics.TreeMetrics): nodes and accepted path per round, acceptance by
    depth and by sibling rank."""
    return (f"tree: {tree.draft_nodes_per_round:.2f} nodes drafted per round, path {tree.accepted_path_per_round:.2f} "
            f"per round; acceptance by depth {_rates(tree.acceptance_by_depth)}, by sibling rank "
            f"{_rates(tree.acceptance_by_sibling_rank)}")


def print_summary(trace, metrics, parting=None) -> None:
    per_position = _rates(metrics.alpha_per_position)
    tree = summarize_tree(trace)
    tests = "levels" if tree.is_tree else "tests"  # a tree's α divides by the depth levels tested
    print(f"\n{trace.text}\n")
    print(f"device {trace.device} ({trace.dtype}); stopped by {trace.stop_reason}")
    print(f"α = {metrics.alpha:.3f} ({metrics.accepted_tokens}/{metrics.tested_positions} {tests}); per position: {per_position}")
    print(f"{metrics.generated_tokens} tokens in {metrics.rounds} target calls: {metrics.tokens_per_round:.2f} tokens per round")
    if tree.is_tree:
        print(tree_line(tree))
    elif trace.config.get("tree") and any(round_.drafted for round_ in trace.rounds):
        print(f"tree: {why_no_tree(trace)}")
    if (across := shared_mass(trace)) is not None:
        print(f"across tokenizers: the draft put {across.overall:.1%} of its probability on tokens both vocabularies "
              f"hold (round means {across.lowest_round:.0%}-{across.highest_round:.0%}); it proposes only those")
    print(f"round anatomy: draft {metrics.draft_ms_per_round:.1f} ms + verify {metrics.verify_ms_per_round:.1f} ms per round, "
          f"of which {metrics.overhead_ms_per_round:.1f} ms outside model forwards; "
          f"c = {metrics.c:.3f} ({metrics.c_basis}); {metrics.tokens_per_s:.1f} tokens/s")
    for line in speedup_lines(trace, metrics):
        print(line)
    if parting is not None:
        print(parting.describe())
