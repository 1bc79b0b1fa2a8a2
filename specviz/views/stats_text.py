"""A run's stats as Markdown lines: the app's stats panel and the exported page both show them (no gradio here).

Every number carries its counts in words, and its label the definition from metrics.DEFINITIONS on hover (an
<abbr title>), so two numbers that look alike (α and the draft acceptance rate, tokens per round and the mean
acceptance length, the predicted and the measured speedup) say why they differ.
"""

from __future__ import annotations

import html

from specviz.analysis.metrics import C_BASES, DEFINITIONS, Metrics, doubt_by_verdict
from specviz.analysis.speedup import FEWEST_PAIRS
from specviz.analysis.tree_metrics import TreeMetrics, node_budget, summarize_tree, why_no_tree
from specviz.analysis.vocab_metrics import shared_mass
from specviz.models.requantize import describe as describe_model
from specviz.models.requantize import split_variant
from specviz.trace import USER_STOP, Trace
from specviz.words import count, rate


def defined(key: str, label: str | None = None) -> str:
    """A label with its definition on hover: <abbr title="α = accepted drafts ÷ tested drafts: ...">α</abbr>."""
    definition = DEFINITIONS[key]
    return f'<abbr title="{html.escape(definition.sentence(), quote=True)}">{label or definition.label}</abbr>'


def _rates(values: list[float | None]) -> str:
    return " · ".join(rate(a, 2) for a in values)


def acceptance_lines(metrics: Metrics, tree: TreeMetrics | None = None) -> list[str]:
    """α, the engines' two rates and tokens per round, each with the counts it divides; `tree` (a tree run's
    numbers) words α over depth levels and the drafts as nodes."""
    untested = metrics.drafted_tokens - metrics.tested_positions
    plain_steps = metrics.rounds - metrics.drafting_rounds
    alpha_shown = rate(metrics.alpha if metrics.tested_positions else None, 3)  # "—" until a draft is tested
    if tree is not None:  # the tree line (tree_line) gives acceptance by depth
        alpha = (f"**{defined('alpha_tree')} = {alpha_shown}** ({metrics.accepted_tokens} accepted / "
                 f"{metrics.tested_positions} depth levels tested, {tree.sibling_tests} sibling tests)")
        drafts = f"{metrics.drafted_tokens - metrics.accepted_tokens} nodes off the accepted path) · "
    else:
        alpha = (f"**{defined('alpha')} = {alpha_shown}** ({metrics.accepted_tokens} accepted / "
                 f"{metrics.tested_positions} tested) · {defined('alpha_per_position', 'per position')} "
                 f"{_rates(metrics.alpha_per_position)}")
        drafts = f"{untested} drafted after a rejection, never tested) · " if untested else "every draft was tested) · "
    return [
        alpha,
        f"{defined('draft_acceptance_rate')} **{rate(metrics.draft_acceptance_rate, 3)}** ({metrics.accepted_tokens} "
        f"accepted / {metrics.drafted_tokens} drafted: " + drafts +
        f"{defined('mean_acceptance_length')} **{rate(metrics.mean_acceptance_length, 2)}** (1 + "
        f"{metrics.accepted_tokens} accepted / {metrics.drafting_rounds} drafting rounds)",
        f"**{metrics.tokens_per_round:.2f} {defined('tokens_per_round')}** ({count(metrics.generated_tokens, 'token')} / "
        f"{count(metrics.target_calls, 'target call')}, " + (f"plain steps included: {plain_steps} of them drafted nothing)"
                                                    if plain_steps else "every one of them drafted)"),
    ]


def tree_line(trace: Trace, tree: TreeMetrics) -> str:
    """A tree run's own numbers: nodes drafted and path accepted per round, acceptance by depth and by sibling rank."""
    budget = node_budget(trace)
    said = f", budget {budget}" if budget else ""
    # the draft model grows at most `budget` nodes; "lookup, else draft model" adds lookup's copy as one more branch
    over = sum(round_.drafted > budget for round_ in trace.rounds) if budget else 0
    if over:
        said += f"; {over} of them drafted more: prompt lookup's copy joined the tree"
    return (f"**tree**: **{tree.draft_nodes_per_round:.2f} {defined('draft_nodes_per_round')}** ({tree.drafted_nodes} "
            f"nodes / {tree.rounds} rounds" + said + f"), accepted path "
            f"{tree.accepted_path_per_round:.2f} per round · {defined('acceptance_by_depth', 'acceptance by depth')} "
            f"{_rates(tree.acceptance_by_depth)} · {defined('acceptance_by_sibling_rank', 'by sibling rank')} "
            f"{_rates(tree.acceptance_by_sibling_rank)} ("
            + " · ".join(f"{a}/{t}" for a, t in zip(tree.accepted_per_rank, tree.tests_per_rank)) + ")")


def interval_words(metrics: Metrics) -> str:
    """The measured speedup's interval in brackets, "(1.05–1.41)"; why there is none where a run measured too few
    rounds for one; else ""."""
    if metrics.speedup_low is None or metrics.speedup_high is None:
        if metrics.speedup_measured is not None and metrics.rounds < FEWEST_PAIRS:
            return f"(no interval: {count(metrics.rounds, 'round')}, too few to tell)"
        return ""
    return f"({metrics.speedup_low:.2f}–{metrics.speedup_high:.2f})"


def machine_words(metrics: Metrics, cores: int = 0) -> str:
    """How quiet the machine was while the runs were timed, in one clause: "the machine was busy: other programs kept
    0.9 of its 2 cores busy, and plain tokens varied by 38%"; where the load was not read, the spread alone, with no
    verdict; "" without a plain run's timings."""
    spread = "" if metrics.plain_spread is None else f"plain tokens varied by {metrics.plain_spread:.0%}"
    if metrics.busy is None:
        return spread
    of = f" of its {cores} cores" if cores else ""
    load = f"other programs kept {metrics.others_busy_cores:.1f}{of} busy"
    said = ", and ".join(part for part in (load, spread) if part)
    return f"the machine was busy: {said}" if metrics.busy else f"a quiet machine: {said}"


def measurement_words(metrics: Metrics, cores: int = 0, times: str = "×") -> str:
    """THE measured speedup as the page and the CLI word it: the value, its interval, and how noisy the machine was,
    with a plain warning where the interval includes 1×. "" where no plain run was timed. `times`: the sign after
    the value (the terminal's is "x")."""
    if metrics.speedup_measured is None:
        return ""
    said = f"{metrics.speedup_measured:.2f}{times}"
    interval = interval_words(metrics)
    if interval:
        said += f" {interval}"
    noise = machine_words(metrics, cores)
    if noise:
        said += f": {noise}"
    if metrics.speedup_low is not None and metrics.speedup_low <= 1.0 <= metrics.speedup_high:
        said += ". The interval includes 1×: on this run, speculative decoding cannot be told from plain decoding"
    return said


def speedup_line(trace: Trace, metrics: Metrics) -> str:
    """THE measured speedup, where a plain run was timed, with its interval and the machine's noise, and the
    predicted one beside it, each named (speedup.py); Round anatomy's waterfall reconciles the two."""
    predicted = ("" if metrics.speedup_predicted is None else
                 f"{defined('speedup_predicted')} **{metrics.speedup_predicted:.2f}×** (from this run's α, c and v(k))")
    if metrics.speedup_measured is None:
        return (f"{defined('speedup_measured')}: tick *compare with plain decoding* to measure it"
                + (f" · {predicted}" if predicted else ""))
    interval = interval_words(metrics)
    noise = machine_words(metrics, trace.cores)
    return (f"{defined('speedup_measured')} **{metrics.speedup_measured:.2f}×**"
            + (f" {defined('speedup_interval', interval)}" if interval else "")
            + f" ({metrics.tokens_per_s:.1f} {defined('tokens_per_s')} ÷ plain decoding's "
            f"{metrics.baseline_tokens_per_s:.1f}, timed {_when_plain(trace)} in this process)"
            + (f" · {noise}" if noise else "")
            + (f" · {predicted}; Round anatomy shows where they part" if predicted else "")
            + f" · {_sameness(trace, metrics)}")


def _when_plain(trace: Trace) -> str:
    """When the plain run was timed: in turn with the rounds (decoding/comparison.py), or after them (older traces)."""
    return "in turn" if trace.baseline is not None and trace.baseline.after_round else "after the run"


def headline(trace: Trace, metrics: Metrics) -> str:
    """The run in one line, beside the rows on the first screen: the measured speedup with its interval and the
    machine's noise (or, where no plain run was timed, the predicted one, said so), α, tokens per round and the
    rejections the rows show in red.

    The same numbers as the stats panel's lines below, fewer of them."""
    rejected = sum(1 for round_ in trace.rounds for token in round_.tokens if token.kind == "rejected")
    if metrics.speedup_measured is not None:
        interval, value = interval_words(metrics), f"{metrics.speedup_measured:.2f}×"
        if metrics.speedup_low is None:  # too few rounds for an interval: a number, no claim (and not in bold)
            speed = f"{value} {interval}".rstrip() + ", measured so far"
        elif metrics.speedup_low <= 1.0 <= metrics.speedup_high:
            speed = (f"**{value}** {interval}: not clearly faster or slower than plain decoding, measured (the "
                     "interval includes 1×)")
        elif metrics.speedup_measured >= 1:
            speed = f"**{value} faster** {interval} than plain decoding, measured"
        else:
            speed = f"**{value}** {interval}: slower than plain decoding, measured"
        if metrics.busy:
            speed += f" · {machine_words(metrics, trace.cores)}"
    elif metrics.speedup_predicted is not None:
        speed = (f"**{metrics.speedup_predicted:.2f}× predicted** (measured after the run where *Compare with plain "
                 "decoding* is ticked)")
    else:
        speed = "speedup not measured"
    alpha = rate(metrics.alpha if metrics.tested_positions else None, 2)
    return (f"{speed} · α {alpha} · {metrics.tokens_per_round:.2f} tokens per round · "
            f"{count(rejected, 'rejection')} in {count(metrics.generated_tokens, 'token')}")


def stats_markdown(trace: Trace, metrics: Metrics) -> str:
    tree = summarize_tree(trace)
    lines = [
        *acceptance_lines(metrics, tree if tree.is_tree else None),
        f"{defined('c')} = {metrics.c:.3f} = {defined('draft_step')} {metrics.draft_step_ms:.1f} ms / "
        f"{defined('target_step')} {metrics.target_step_ms:.1f} ms ({C_BASES[metrics.c_basis]}) · this run, each round: "
        f"draft {metrics.draft_ms_per_round:.1f} ms + verify {metrics.verify_ms_per_round:.1f} ms, of which "
        f"{metrics.overhead_ms_per_round:.1f} ms {defined('overhead')} · {metrics.tokens_per_s:.1f} {defined('tokens_per_s')}",
        speedup_line(trace, metrics),
        _engine_terms(metrics, tree if tree.is_tree else None),
        f"{_plain(trace.target_name)} ← {_plain(trace.draft_name)} on **{_plain(trace.device)}** ({_plain(trace.dtype)}); "
        + _stop_text(trace) + _requantized_words(trace),
    ]
    doubt = doubt_by_verdict(trace)
    if doubt is not None:
        lines.insert(3, f"**where drafts fail**: the target's doubt (1 − its top choice's p) averaged **{doubt[0]:.2f}** at "
                        f"the {doubt[2]} rejected drafts against **{doubt[1]:.2f}** at the {doubt[3]} accepted ones "
                        "(tick *shade by the target's doubt* above the rows to see it token by token)")
    if trace.config.get("adaptive"):
        lengths = [round_.drafted for round_ in trace.rounds]
        lines.insert(5, f"adaptive γ ≤ {trace.config['gamma']}: {sum(lengths) / len(lengths):.2f} drafts per round on average, "
                        f"{lengths.count(0)} of {len(lengths)} rounds were plain steps (drafting would not have paid)")
    across = shared_mass(trace)
    if across is not None:
        how = ("at T = 0 it writes its own text over its whole vocabulary, and the target's tokenizer re-reads that "
               "text (the rows show both)" if float(trace.config.get("temperature", 1)) == 0 else
               "the draft proposes only tokens both vocabularies spell alike, its belief renormalized over them")
        lines.insert(3, f"**across tokenizers**: {defined('shared_mass')} {across.overall:.1%} over {across.drafted} "
                        f"draft steps (round means {across.lowest_round:.0%}–{across.highest_round:.0%}): {how}")
    if tree.is_tree:
        lines.insert(3, tree_line(trace, tree))
    elif trace.config.get("tree") and any(round_.drafted for round_ in trace.rounds):
        lines.insert(3, no_tree_line(trace))
    return "\n\n".join(lines)


def no_tree_line(trace: Trace) -> str:
    """The stats line for a run with Token tree ticked that drew only chains (tree_metrics.why_no_tree)."""
    return f"**tree**: {why_no_tree(trace)}"


def _engine_terms(metrics: Metrics, tree: TreeMetrics | None = None) -> str:
    """The same counts in llama.cpp's and vLLM's names (counters.py), for comparing with a server; a tree run in
    llama.cpp's speculative example's (its server drafts chains only)."""
    if tree is not None:
        return (f"as engines count it: llama.cpp's speculative example `n_drafted` = {tree.draft_levels} (depth levels), "
                f"`n_accept` = {tree.accepted_tokens} · vLLM `num_draft_tokens` = {tree.drafted_nodes} (every node), "
                f"`num_drafts` = {metrics.drafting_rounds}, `num_accepted_tokens_per_pos` = {metrics.accepted_per_position}")
    return (f"as engines count it: llama.cpp `draft_n` = {metrics.drafted_tokens}, `draft_n_accepted` = "
            f"{metrics.accepted_tokens} · vLLM `num_drafts` = {metrics.drafting_rounds}, "
            f"`num_accepted_tokens_per_pos` = {metrics.accepted_per_position}")


HALF_PRECISION = ("bfloat16", "float16")


def _sameness(trace: Trace, metrics: Metrics) -> str:
    """Whether the speculative output equals the plain run's, and what that means at this temperature."""
    if float(trace.config.get("temperature", 0)) == 0:
        if metrics.identical:
            return "identical output: yes, as greedy decoding must give"
        if trace.dtype in HALF_PRECISION:  # measured on an H100 in bf16: both runs part at near-ties (docs/gpu.md)
            return (f"identical output: no. In {trace.dtype} a forward over several tokens rounds the logits "
                    "differently from a forward over one, so two near-equal logits can swap places and the runs "
                    "part there (transformers' assisted generation does the same); in float32 this would be a bug")
        return ("identical output: NO: at T = 0 it must be the same, so this is a bug (or float noise between "
                "batched and single-token forwards); please report it")
    return ("identical output: not expected at T > 0. Both texts are samples from the target's distribution, drawn "
            "with different random numbers, so they differ; the *Losslessness* tab checks that the distributions "
            "are the same")


def _stop_text(trace: Trace) -> str:
    """How the run ended: "stopped by eos" (or max_new_tokens, context), "stopped by you after 18 rounds", or
    "stopped by …" while it runs."""
    reason = trace.stop_reason
    if reason in (USER_STOP, "Stop"):  # "Stop": traces saved before the reason was worded
        return f"stopped by you after {count(len(trace.rounds), 'round')}"
    return f"stopped by {_plain(reason) or '…'}"


def _plain(text) -> str:
    """A string from a trace shown as literal text in Markdown: HTML escaped, Markdown's marks backslashed."""
    escaped = html.escape(str(text), quote=True)
    return "".join("\\" + char if char in "\\`*_[]()|~!" else char for char in escaped)


def _requantized_words(trace: Trace) -> str:
    """What a requantized target is ("…@Q4_0"), and what the output is exact to; "" for any other target."""
    try:
        _, requantization = split_variant(trace.target_name)
    except ValueError:
        return ""
    if requantization is None:
        return ""
    return (f" · the target is {_plain(describe_model(trace.target_name))}: the output follows that file's "
            "distribution exactly, and the plain run decoded the same file")
