"""A run's stats as Markdown lines: the app's stats panel and the exported page both show them (no gradio here)."""

from __future__ import annotations

import html

from specviz.counters import engine_counters
from specviz.metrics import Metrics
from specviz.trace import Trace


def _engine_terms(trace: Trace) -> str:
    """The run in llama.cpp's and vLLM's counters (counters.py), for comparing with a server."""
    counts = engine_counters(trace)
    rate, length = counts["draft_acceptance_rate"], counts["mean_acceptance_length"]
    return (f"as engines count it: llama.cpp `draft_n` = {counts['draft_n']}, `draft_n_accepted` = "
            f"{counts['draft_n_accepted']} · vLLM `num_drafts` = {counts['num_drafts']}, `num_accepted_tokens_per_pos` = "
            f"{counts['num_accepted_tokens_per_pos']} · draft acceptance rate "
            f"{'–' if rate is None else f'{rate:.3f}'}, mean acceptance length {'–' if length is None else f'{length:.2f}'}")


def stats_markdown(trace: Trace, metrics: Metrics) -> str:
    per_position = " · ".join("–" if a is None else f"{a:.2f}" for a in metrics.alpha_per_position)
    lines = [
        f"**α = {metrics.alpha:.3f}** ({metrics.accepted_tokens}/{metrics.tested_positions} drafts accepted; "
        f"per position {per_position})",
        f"**{metrics.tokens_per_round:.2f} tokens per round**: {metrics.generated_tokens} tokens from "
        f"{metrics.target_calls} target calls",
        f"c = {metrics.c:.3f} = draft step {metrics.draft_step_ms:.1f} ms / target step {metrics.target_step_ms:.1f} ms "
        f"({C_BASIS[metrics.c_basis]}) · each round: draft {metrics.draft_ms_per_round:.1f} ms + verify "
        f"{metrics.verify_ms_per_round:.1f} ms, of which {metrics.overhead_ms_per_round:.1f} ms outside model forwards · "
        f"{metrics.tokens_per_s:.1f} tokens/s",
        f"theoretical speedup **{metrics.speedup_theoretical:.2f}×**"
        + (f" · measured **{metrics.speedup_measured:.2f}×** against plain decoding · {_sameness(trace, metrics)}"
           if metrics.speedup_measured is not None else " · tick *compare with plain decoding* to measure it"),
        _engine_terms(trace),
        f"{_plain(trace.target_name)} ← {_plain(trace.draft_name)} on **{_plain(trace.device)}** ({_plain(trace.dtype)}); "
        f"stopped by {_plain(trace.stop_reason) or '…'}",
    ]
    if trace.config.get("adaptive"):
        lengths = [round_.drafted for round_ in trace.rounds]
        lines.insert(3, f"adaptive γ ≤ {trace.config['gamma']}: {sum(lengths) / len(lengths):.2f} drafts per round on average, "
                        f"{lengths.count(0)} of {len(lengths)} rounds were plain steps (drafting would not have paid)")
    return "\n\n".join(lines)


C_BASIS = {  # where c's target step came from (metrics.step_costs)
    "baseline": "target step: the plain run's median step",
    "calibrated": "target step timed once per model and device",
    "verify": "target step: this run's median verify forward",
}


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


def _plain(text) -> str:
    """A string from a trace shown as literal text in Markdown: HTML escaped, Markdown's marks backslashed."""
    escaped = html.escape(str(text), quote=True)
    return "".join("\\" + char if char in "\\`*_[]()|~!" else char for char in escaped)
