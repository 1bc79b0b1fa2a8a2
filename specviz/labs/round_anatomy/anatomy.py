"""Round anatomy: where a run's time went, round by round, against the same tokens decoded plainly.

Leviathan et al.'s Figure 5 draws speculative rounds as γ draft steps and one target step, above the
plain decoder's one step per token; here the same picture is measured. Each round's wall time splits into

- draft forwards: the draft model's forward passes (0 for prompt lookup);
- drafting overhead: the rest of drafting (sampling q, lookup, copying caches);
- verify forward: the target's one forward over the pending tokens and the k drafts;
- accept/reject and bookkeeping: standardizing p, the acceptance tests, the residual draw, cache rollback.

Below it the plain decoder spends one target step per emitted token (metrics.step_costs' target step, the one c
uses). The summary covers every round after round 1 (which also encodes the prompt), the timeline the rounds it
draws, and each says which. Beside them stand the run's measured and predicted speedups and the waterfall between
them (speedup.py), so "slow despite high acceptance" has its reasons in view: a verify forward that costs several
plain steps (v(k) > 1 on a CPU), a draft that is not cheap (c), or time outside the forwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.analysis.metrics import step_costs, summarize
from specviz.analysis.speedup import DRAFTING, PART_NOTES, VERIFYING, waterfall
from specviz.trace import Trace
from specviz.views.stats_text import defined, speedup_line

DRAFT_FORWARDS, DRAFT_OVERHEAD = "draft forwards", "drafting overhead"
VERIFY_FORWARD, VERIFY_OVERHEAD = "verify forward", "accept/reject and bookkeeping"
KINDS = (DRAFT_FORWARDS, DRAFT_OVERHEAD, VERIFY_FORWARD, VERIFY_OVERHEAD)
SLOWER_SHARE = 0.25  # drafting and verifying each this far over the prediction: the machine slowed, say so
TIMELINE_ROUNDS = 12  # rounds the timeline draws: more would be too thin to read
STEP_BASIS = {"calibrated": "timed once per model pair on this device", "calibrated target": "timed once per model on "
              "this device", "baseline": "the plain run's median step", "verify": "estimated from this run's verify "
              "forwards (timed once per model when the app or the CLI loads it)"}


@dataclass(frozen=True)
class Segment:
    round_number: int  # 1-based
    kind: str  # one of KINDS
    start_ms: float  # from the start of the first round shown
    ms: float


def round_parts(round_) -> dict[str, float]:
    """A round's time by kind; a trace recorded before the split existed puts everything under the forwards."""
    draft_forward = round_.draft_ms if round_.draft_forward_ms is None else min(round_.draft_forward_ms, round_.draft_ms)
    verify_forward = round_.verify_ms if round_.verify_forward_ms is None else min(round_.verify_forward_ms, round_.verify_ms)
    return {DRAFT_FORWARDS: draft_forward, DRAFT_OVERHEAD: round_.draft_ms - draft_forward,
            VERIFY_FORWARD: verify_forward, VERIFY_OVERHEAD: round_.verify_ms - verify_forward}


def timeline(trace: Trace, first: int = 1,
             count: int = TIMELINE_ROUNDS) -> tuple[list[Segment], list[tuple[int, float, float]]]:
    """Rounds first..first+count-1 as consecutive segments, and the plain decoder's steps for the same tokens as
    (round number, start ms, ms) per token."""
    _, step_ms, _ = step_costs(trace)
    segments, plain, clock, plain_clock = [], [], 0.0, 0.0
    for number, round_ in enumerate(trace.rounds[first - 1: first - 1 + count], first):
        for kind, ms in round_parts(round_).items():
            segments.append(Segment(number, kind, clock, ms))
            clock += ms
        for _ in round_.emitted:
            plain.append((number, plain_clock, step_ms))
            plain_clock += step_ms
    return segments, plain


def summary(trace: Trace) -> dict:
    """Totals by kind over the rounds after the first (all of them when there is one), the plain time for their
    tokens, and the run's measured and predicted speedups with the waterfall between them (speedup.py)."""
    first = 2 if len(trace.rounds) > 1 else 1
    rounds = trace.rounds[first - 1:]
    totals = {kind: sum(round_parts(round_)[kind] for round_ in rounds) for kind in KINDS}
    _, step_ms, basis = step_costs(trace)
    tokens = sum(len(round_.emitted) for round_ in rounds)
    plain_ms, spent = tokens * step_ms, sum(totals.values())
    drafted_rounds = [round_ for round_ in rounds if round_.drafted]
    metrics = summarize(trace)
    return {
        "first_round": first, "last_round": len(trace.rounds), "rounds": len(rounds), "tokens": tokens,
        "totals_ms": totals, "spent_ms": spent, "plain_ms": plain_ms, "step_ms": step_ms, "step_basis": basis,
        "speedup_measured": metrics.speedup_measured, "speedup_predicted": metrics.speedup_predicted,
        "speedup_line": speedup_line(trace, metrics), "waterfall": waterfall(trace, metrics.alpha),
        "alpha": metrics.alpha, "c": metrics.c,
        "verify_in_steps": (sum(round_parts(r)[VERIFY_FORWARD] for r in rounds) / len(rounds) / step_ms
                            if rounds and step_ms else None),  # a verify forward, in plain steps: v(k) at this k
        "draft_in_steps": (sum(round_parts(r)[DRAFT_FORWARDS] for r in drafted_rounds) / len(drafted_rounds) / step_ms
                           if drafted_rounds and step_ms else None),
        "tokens_per_round": tokens / len(rounds) if rounds else 0.0,
    }


def rounds_covered(facts: dict) -> str:
    """'rounds 2–15' (or 'round 1'): exactly the rounds the summary covers."""
    first, last = facts["first_round"], facts["last_round"]
    return f"round {first}" if first == last else f"rounds {first}–{last}"


def waterfall_line(facts: dict) -> str:
    """From the predicted to the measured speedup in this run's milliseconds per token, each part named."""
    reconciled = facts["waterfall"]
    if reconciled is None:
        return ""
    parts = " ".join(f"{'+' if ms >= 0 else '−'} {defined_part(name)} **{abs(ms):.1f}**" for name, ms in reconciled.parts)
    beside = reconciled.plain_beyond_step_ms
    plain = ("" if reconciled.plain_ms is None else f" Plain decoding took **{reconciled.plain_ms:.1f} ms** a token "
             + (f"(one step {reconciled.step_ms:.1f} ms and {beside:.1f} ms beside it: reading the prompt, sampling)"
                if beside >= 0 else f"(its median step {reconciled.step_ms:.1f} ms; most steps were quicker)")
             + f", so the measured speedup is {reconciled.plain_ms:.1f} ÷ {reconciled.measured_ms:.1f} = "
             f"**{reconciled.measured:.2f}×**.")
    parts_ms = dict(reconciled.parts)
    slower = (" Drafting and verifying both took far longer than the forwards timed before the run: the machine ran "
              "slower during the run than when c and v(k) were timed (a busy machine), not the method."
              if min(parts_ms[DRAFTING], parts_ms[VERIFYING]) > SLOWER_SHARE * reconciled.predicted_ms else "")
    unit = ("one step" if not reconciled.unit_ms else "a plain token as measured")
    return (f"From predicted to measured, in ms per token (every round): predicted **{reconciled.predicted_ms:.1f}** "
            f"({unit}, {reconciled.unit_ms or reconciled.step_ms:.1f} ms, ÷ {reconciled.predicted:.2f}×) {parts} = "
            f"this run **{reconciled.measured_ms:.1f}**.{plain}{slower}")


def defined_part(name: str) -> str:
    """A waterfall part's name, its meaning on hover (as defined() does for the metrics)."""
    import html

    return f'<abbr title="{html.escape(PART_NOTES[name], quote=True)}">{name}</abbr>'


def explanation(facts: dict) -> str:
    """Where the time went, in sentences (Markdown)."""
    if not facts["spent_ms"] or not facts["step_ms"]:
        return "Not enough rounds to tell where the time went."
    totals, spent = facts["totals_ms"], facts["spent_ms"]
    shares = " · ".join(f"{kind} **{100 * ms / spent:.0f}%**" for kind, ms in totals.items())
    covered = rounds_covered(facts) + (" (every round after round 1)" if facts["first_round"] == 2 else "")
    lines = [
        f"Over {covered}, {facts['tokens']} tokens: {shares}.",
        f"A plain step costs {facts['step_ms']:.1f} ms (the {defined('target_step')} c uses, "
        f"{STEP_BASIS.get(facts['step_basis'], facts['step_basis'])}). Each round yields "
        f"{facts['tokens_per_round']:.2f} tokens for one verify forward of **{facts['verify_in_steps']:.2f} plain steps**"
        + (f" and drafting worth **{facts['draft_in_steps']:.2f} steps**" if facts["draft_in_steps"] else "") + ".",
        facts["speedup_line"],
        waterfall_line(facts),
    ]
    speedup = facts["speedup_measured"] or facts["speedup_predicted"]
    if speedup and facts["tokens_per_round"] >= 2.5 and speedup < facts["tokens_per_round"] / 2:
        largest = max(totals, key=totals.get)
        which = "measured" if facts["speedup_measured"] else "predicted"
        lines.append(f"High acceptance, little speed: {facts['tokens_per_round']:.2f} tokens a round, yet {speedup:.2f}× "
                     f"{which}. The time goes to {largest} ({100 * totals[largest] / spent:.0f}%), not to rejected drafts.")
    return "\n\n".join(line for line in lines if line)
