"""The real p and q behind a recorded run, for the verification-rule lab: one forward of each model over the text.

Every draft position that was tested was drafted from a prefix of the final text (drafts after a rejection are
never tested), so one target forward and one draft forward over prompt + generated tokens give p and q at every
tested position, as the run standardized them (temperature, top-k, top-p). At T = 0 the run's distributions
are one-hot and every rule agrees; the lab then takes the untempered (T = 1) ones, and says so.

q is the draft model's. Where a lookup-first run copied a round from the context, its real q was one-hot; the
lab shows what the draft model would have proposed there.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.config import DecodeConfig
from specviz.core.sampling import Standardizer
from specviz.decoding.pipeline import Pipeline, encode_prompt
from specviz.trace import ACCEPTED, REJECTED, Trace


@dataclass(frozen=True)
class RunDistributions:
    target_rows: torch.Tensor  # [n, V]: p for each generated token, from the prefix before it
    draft_rows: torch.Tensor  # [n, V]: q for each generated token
    untempered: bool  # the run was greedy, so these are the T = 1 distributions instead


def run_distributions(pipeline: Pipeline, trace: Trace) -> RunDistributions:
    """p and q at every generated position of `trace` (which `pipeline` decoded)."""
    if pipeline.draft_model is None:
        raise ValueError("the rule lab needs a run with a draft model (a model, or the target's 4-bit copy): "
                         "prompt lookup's q is one token, and the distilled head's q comes from the target's states")
    config = DecodeConfig.from_dict(trace.config)
    prompt_ids = encode_prompt(pipeline.tokenizer, trace.prompt, config.chat, config.system_prompt)
    sequence = torch.tensor(prompt_ids + trace.token_ids, dtype=torch.long, device=pipeline.device)  # [m + n]
    generated = len(trace.token_ids)
    if generated == 0:
        raise ValueError("the run generated no tokens")
    untempered = config.greedy
    standardize = Standardizer(1.0) if untempered else Standardizer(config.temperature, config.top_k, config.top_p)
    rows = []
    for model in (pipeline.target, pipeline.draft_model):
        model.reset()
        logits = model.feed(sequence, logits_to_keep=generated + 1)[:-1]  # [n, V]: row k predicts generated token k
        model.reset()
        rows.append(standardize(logits).cpu())
    return RunDistributions(rows[0], rows[1], untempered)


def tested_positions(trace: Trace) -> list[tuple[int, list[int]]]:
    """(round number, its tested draft positions) for every round that tested a draft, 1-based, in order. Round 1
    reads the prompt and drafts nothing, so a run's first tested position is in round 2 at the earliest."""
    tested = []
    for number, round_ in enumerate(trace.rounds, 1):
        positions = [token.position for token in round_.tokens if token.kind in (ACCEPTED, REJECTED)]
        if positions:
            tested.append((number, positions))
    return tested


def first_tested(trace: Trace | None) -> tuple[int, int] | None:
    """(round, position) of the run's first tested draft, or None (no run, or a run that tested none)."""
    tested = tested_positions(trace) if trace is not None else []
    return (tested[0][0], tested[0][1][0]) if tested else None


def most_disputed(trace: Trace | None) -> tuple[int, int] | None:
    """(round, position) of the tested draft where the draft and the target agree least, where the rules part most:
    the smallest overlap Σ min(p, q) over the recorded top tokens (untempered T = 1 ones after a greedy run, where
    the run's own p and q are one-hot and every rule agrees). None where no draft was tested. Read from the trace's
    records alone: no model is loaded to choose it."""
    best, where = None, None
    for number, round_ in enumerate(trace.rounds if trace is not None else [], 1):
        for token in round_.tokens:
            if token.kind not in (ACCEPTED, REJECTED):
                continue
            target = token.target_top_untempered or token.target_top
            draft = {entry.token_id: entry.prob for entry in (token.draft_top_untempered or token.draft_top)}
            overlap = sum(min(entry.prob, draft.get(entry.token_id, 0.0)) for entry in target)
            if best is None or overlap < best:
                best, where = overlap, (number, token.position)
    return where


def tested_summary(trace: Trace, shown: int = 3) -> str:
    """The tested positions in words, the first `shown` rounds of them: 'round 2 positions 1–4, round 3 position 1, …'."""
    tested = tested_positions(trace)
    if not tested:
        return "none (every round was a plain step)"
    words = [f"round {number} position{'s' if len(positions) > 1 else ''} "
             + (f"{positions[0]}–{positions[-1]}" if len(positions) > 1 else f"{positions[0]}")
             for number, positions in tested[:shown]]
    return ", ".join(words) + (f", … ({len(tested)} rounds in all)" if len(tested) > shown else "")


def generated_index(trace: Trace, round_number: int, position: int) -> int:
    """The index in trace.token_ids of round `round_number`'s (1-based) draft position `position`, which must
    have been tested (not the bonus, not a draft after the rejection); else ValueError naming the tested ones."""
    if not 1 <= round_number <= len(trace.rounds):
        raise ValueError(f"round {round_number} is not in this run (1..{len(trace.rounds)}); tested: "
                         f"{tested_summary(trace)}")
    round_ = trace.rounds[round_number - 1]
    tested = [token.position for token in round_.tokens if token.kind in (ACCEPTED, REJECTED)]
    if position not in tested:
        plain = (" (round 1 reads the prompt and drafts nothing)" if round_number == 1 else " (a plain step)"
                 ) if round_.drafted == 0 else ""
        said = (f"round {round_number} tested no draft positions{plain}" if not tested else
                f"round {round_number} tested draft position{'s' if len(tested) > 1 else ''} "
                f"{', '.join(map(str, tested))}, not {position}")
        raise ValueError(f"{said}; tested: {tested_summary(trace)}")
    before = sum(len(earlier.emitted) for earlier in trace.rounds[: round_number - 1])
    return before + position - 1
