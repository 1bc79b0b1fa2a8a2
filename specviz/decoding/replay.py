"""Exact replay: re-run a recorded trace and confirm that every round reproduces.

The engine draws every random number of a round from the run's seeded generator, in a fixed order (the
drafter's draws, then r_1..r_k, then the uniform of the correction or bonus), and records them. So the trace's
configuration and prompt, run again on the same models and device, must give round by round:

- the same drafts x_1..x_k and the same accepted count;
- the same uniforms r_i (Token.uniform) and the same uniform of the correction or bonus (Round.next_uniform);
- the same final token (the correction or bonus; an accepted EOS when it ended the text);
- p_i(x) and q_i(x) within TOLERANCE (they are recomputed by the models, not copied).

Adaptive γ chooses each round's draft length from measured timings, which no re-run reproduces, so an adaptive
trace is replayed with its recorded lengths (ScriptedGamma: the length asked of the drafter, which draws
random numbers for every token it drafts, and the length kept after an EOS or the policy cut it); the rest of
each round must still come out the same.
`first_difference` stops the re-run at the first round that differs and names it with a one-line reason.

All of this holds on the kernels the trace ran on (Trace.kernels). CPU kernels for another instruction set round
differently: float32 forwards still agree within TOLERANCE, but the 4-bit draft's bfloat16 kernel does not, and
a moved q(x) can move a draft. The reason then says so.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from specviz.config import DecodeConfig
from specviz.decoding.adaptive import ScriptedGamma
from specviz.decoding.engine import speculative_decode
from specviz.decoding.pipeline import Pipeline, build_pipeline
from specviz.models.loading import cpu_kernels
from specviz.trace import Round, Trace

TOLERANCE = 1e-5  # on p(x) and q(x): float32 forwards on the same device agree far closer than this


class Mismatch(NamedTuple):
    round_index: int  # Round.index of the first round that does not reproduce (0-based)
    reason: str  # one line: what differs, the re-run's value first, then the trace's


def first_difference(trace: Trace, pipeline: Pipeline | None = None, rounds: int | None = None) -> Mismatch | None:
    """Re-run trace.prompt with trace.config and compare every round; None when all of them reproduce.

    pipeline: the models to run on (tests pass a scripted one); by default built from trace.config.
    rounds: compare only the first `rounds` rounds and stop the re-run there (None: every round).
    """
    config = DecodeConfig.from_dict(trace.config)
    if pipeline is None:
        pipeline = build_pipeline(config)
    mismatch = _first_difference(trace, config, pipeline, rounds)
    if mismatch is None:
        return None
    here = cpu_kernels(pipeline.device)
    if trace.kernels != here and here:
        recorded_on = f"{trace.kernels} kernels" if trace.kernels else "CPU kernels it does not name"
        return mismatch._replace(reason=f"{mismatch.reason}; the trace ran on {recorded_on} and this machine's are "
                                        f"{here}, which round differently")
    return mismatch


def _first_difference(trace: Trace, config: DecodeConfig, pipeline: Pipeline, rounds: int | None) -> Mismatch | None:
    recorded = trace.rounds
    # A fixed γ is replayed by the engine's own policy; adaptive lengths are read from the trace.
    policy = ScriptedGamma([r.drafted for r in recorded], [r.asked for r in recorded]) if config.adaptive else None
    replayed_count = 0
    for replayed, _ in speculative_decode(pipeline, trace.prompt, config, policy):
        index = replayed_count
        replayed_count += 1
        if index >= len(recorded):
            return Mismatch(index, f"the re-run goes on past the {len(recorded)} recorded rounds")
        reason = round_difference(replayed, recorded[index])
        if reason is not None:
            return Mismatch(index, reason)
        if replayed_count == rounds:
            return None  # the rounds asked for reproduce; the rest are not re-run
    if replayed_count < len(recorded):
        return Mismatch(replayed_count, f"the re-run stopped after {replayed_count} rounds; the trace has {len(recorded)}")
    return None


def round_difference(replayed: Round, recorded: Round) -> str | None:
    """What first differs between a re-run round and the recorded one, in one line; None when nothing does."""
    if replayed.draft_token_ids != recorded.draft_token_ids:
        return f"drafted {replayed.draft_token_ids}, the trace has {recorded.draft_token_ids}"
    if replayed.draft_parents != recorded.draft_parents:
        return f"drafted the tree with parents {replayed.draft_parents}, the trace has {recorded.draft_parents}"
    if replayed.accepted != recorded.accepted:
        return f"accepted {replayed.accepted} of {replayed.drafted}, the trace has {recorded.accepted}"
    if len(replayed.tokens) != len(recorded.tokens):
        return f"{len(replayed.tokens)} tokens tested or drawn, the trace has {len(recorded.tokens)}"
    for again, token in zip(replayed.tokens, recorded.tokens):  # same drafts and count: the same positions
        if token.uniform is not None and again.uniform != token.uniform:
            return f"uniform r_{token.position} = {again.uniform!r}, the trace has {token.uniform!r}"
    if recorded.next_uniform is not None and replayed.next_uniform != recorded.next_uniform:
        return f"the correction/bonus uniform = {replayed.next_uniform!r}, the trace has {recorded.next_uniform!r}"
    final, recorded_final = _final_token(replayed), _final_token(recorded)
    if final != recorded_final:
        return f"final token {final}, the trace has {recorded_final}"
    for again, token in zip(replayed.tokens, recorded.tokens):
        for symbol, value, recorded_value in (("p", again.target_prob, token.target_prob),
                                              ("q", again.draft_prob, token.draft_prob)):
            if not _close(value, recorded_value):
                return (f"{symbol}_{token.position}(x) of token {token.token_id} = {value}, the trace has "
                        f"{recorded_value} (tolerance {TOLERANCE:g})")
    return None


def _final_token(round_: Round) -> int | None:
    """The round's last emitted token: the correction or bonus, or an accepted EOS that ended the text."""
    emitted = round_.emitted
    return emitted[-1].token_id if emitted else None


def _close(value: float | None, recorded: float | None) -> bool:
    if value is None or recorded is None:
        return value is None and recorded is None
    return math.isfinite(value) and abs(value - recorded) <= TOLERANCE
