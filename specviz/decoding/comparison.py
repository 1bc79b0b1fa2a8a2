"""Speculative and plain decoding of one prompt, timed in turn so that a busy moment slows both alike.

A class laptop drifts: another program wakes, a core is taken, and a run timed after another measures the machine
as much as the method. So the two runs go in turn, in one process. After each speculative round, plain decoding, on
a second KV cache over the same weights, catches up to the tokens the rounds have emitted; each plain token records
the round it followed. analysis/speedup.py then pairs each round with the plain tokens decoded right after it: the
measured speedup is the ratio of their sums, and its interval comes from resampling those pairs.

    for round_, trace in compared_decode(pipeline, prompt, config):   # as speculative_decode; each trace carries
        ...                                                           # the Baseline and the machine's load so far

A pipeline with no second cache (one built by hand over a scripted model) decodes plainly after the last round.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from specviz.config import DecodeConfig
from specviz.decoding import machine_load
from specviz.decoding.adaptive import GammaPolicy
from specviz.decoding.engine import run_speculative, speculative_decode
from specviz.decoding.pipeline import Pipeline, encode_prompt
from specviz.decoding.plain import PlainRun
from specviz.trace import Round, Trace


def compared_decode(pipeline: Pipeline, prompt: str, config: DecodeConfig,
                    policy: GammaPolicy | None = None) -> Iterator[tuple[Round, Trace]]:
    """speculative_decode's rounds, with plain decoding of the same prompt in between (module docstring). Each trace
    holds the Baseline so far (each plain token's ms and the round it followed: as many tokens as the rounds, so a
    run stopped midway is measured over what it decoded), the cores other processes kept busy so far and the
    machine's cores. Without a second cache, the Baseline comes with the last trace only."""
    plain_model = pipeline.plain_target()
    in_turn = plain_model is not pipeline.target  # else both would write one cache: plain decoding waits to the end
    plain = PlainRun(pipeline, prompt, config, plain_model)
    start, cores = machine_load.CpuLoad.read(), machine_load.cores()
    for round_, trace in speculative_decode(pipeline, prompt, config, policy):
        if in_turn:
            while not plain.finished and len(plain.generated) < len(trace.token_ids):
                plain.step(after_round=round_.index)
            trace.baseline = plain.baseline()  # so far: a run stopped now still has its measured speedup
        if trace.stop_reason:
            while not plain.finished:
                plain.step(after_round=round_.index if in_turn else None)
            trace.baseline = plain.baseline()
        if trace.baseline is not None:  # the load so far, with the Baseline so far: a run stopped now keeps its verdict
            now = machine_load.CpuLoad.read()
            trace.others_busy_cores = now.others_busy_cores(start) if start and now else None
            trace.cores = cores
        yield round_, trace


def compare(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> Trace:
    """compared_decode to the end: the finished trace with its Baseline."""
    trace = None
    for _, trace in compared_decode(pipeline, prompt, config):
        pass
    return trace


WARM_UP_PROMPT = "Say hello twice: hello hello"


def warm_up(pipeline: Pipeline, config: DecodeConfig) -> None:
    """Run each path once, briefly, before a timed comparison, so that first-call costs (a CPU kernel set up for
    each new row count, lazy imports) land in neither run. Once per process for each model pair and γ: the
    pipeline's cache remembers which pairs are warm."""
    key = ("warm-up", config.target, config.draft, config.gamma, str(pipeline.device))
    if key not in pipeline.cache:
        pipeline.cache.get(key, lambda: _warm(pipeline, config))


def _warm(pipeline: Pipeline, config: DecodeConfig) -> bool:
    target = pipeline.target
    prompt_ids = encode_prompt(pipeline.tokenizer, WARM_UP_PROMPT, config.chat)
    if len(prompt_ids) + 2 * (config.gamma + 2) >= pipeline.context_limit:
        return False  # a context this short leaves no room to warm up (nor much to time)
    target.reset()
    target.feed(torch.tensor(prompt_ids, dtype=torch.long, device=pipeline.device))
    for rows in range(1, config.gamma + 2):  # every verification width a run can use
        target.feed(torch.tensor(prompt_ids[-1:] * rows, dtype=torch.long, device=pipeline.device))
        target.crop(len(prompt_ids))
    short = DecodeConfig(**{**config.to_dict(), "max_new_tokens": config.gamma + 2})
    run_speculative(pipeline, WARM_UP_PROMPT, short)  # the drafter's own first calls
    compare(pipeline, WARM_UP_PROMPT, short)  # and both in turn, the plain run on its own cache
    return True
