"""Calibration: this machine's costs, timed before a pair's first run and kept (calibration_store.py).

v(k), the target's forward over k = 1..K new tokens after a context, prices a round's verification (the predicted
speedup, adaptive γ and the tree budget read it); c's two steps, one draft forward and one target forward, timed
alternately so that a busy moment slows both alike, give c. Each is timed once per target (or pair) and device, then
read from the pipeline's cache, and kept on disk so that the app's next start only rescales them.
"""

from __future__ import annotations

import statistics
import time

import torch

from specviz import job
from specviz.config import DecodeConfig
from specviz.core.sampling import Standardizer
from specviz.decoding import calibration_store
from specviz.decoding import pipeline as pipelines
from specviz.decoding.pipeline import Pipeline
from specviz.drafters.lookup import LookupThenModelDrafter
from specviz.models import loading as models

CALIBRATION_PROMPT = "The quick brown fox jumps over the lazy dog. " * 8  # a context to time forwards after
MIN_CALIBRATED_K = 5
STEP_SAMPLES, STEP_WARM_UP = 16, 2  # c's steps: timed proposals (one target step each), after untimed ones
CALIBRATION_DRAFTS = 4  # drafts per timed proposal, each one draft forward over one token


def calibration_sizes(config: DecodeConfig) -> int:
    """How far v(k) is measured before a run: the γ + 1 tokens a chain verifies, or a tree's budget + 1 (2γ + 1 when
    the budget is to be chosen: tree_budget.choose_budget reads v(k) that far)."""
    if not config.tree:
        return config.gamma + 1
    return (config.tree_budget or 2 * config.gamma) + 1


def calibrate(pipeline: Pipeline, target_id: str, max_k: int) -> list[float]:
    """Set (and return) pipeline.target_forward_ms: the median ms of one target forward over k = 1..max(max_k,
    MIN_CALIBRATED_K) new tokens, timed once per target, device and dtype, then read from the cache (a larger k
    measures again): 4 × k timed forwards. Every trace of the pipeline then carries them, for a steady c and the
    v(k) curve. Leaves the target's cache empty.

    For a drafter that runs a model, c's two steps are then timed once per pair (step_times):
    pipeline.draft_step_ms, and target_forward_ms[0] from the same alternating forwards."""
    from specviz.models import profiling

    sizes = max(max_k, MIN_CALIBRATED_K)
    key = ("target-forward-ms", target_id, pipeline.device, pipeline.dtype)
    context = pipeline.tokenizer(CALIBRATION_PROMPT, add_special_tokens=False)["input_ids"]

    def time_step() -> float:  # one target step now, to rescale the timings an earlier start kept
        job.stage(f"Timing one {target_id} step (v(k) and c as this machine timed them before)")
        step = profiling.measure_verify_costs(pipeline.target, context, max_k=1, repeats=5, warmup=1)[1]
        pipeline.target.reset()
        return step

    kept = calibration_store.KeptTimings(calibration_store.machine_key(
        type(pipeline.target).__name__, target_id, pipeline.device, pipeline.dtype), time_step)

    def measure() -> list[float]:
        forwards = kept.forwards(sizes)
        if forwards is not None:
            return forwards
        job.stage(f"Timing {target_id}'s forward over 1..{sizes} tokens, once (for c and v(k))")
        timings = profiling.measure_verify_costs(pipeline.target, context, max_k=sizes, repeats=3, warmup=1)
        pipeline.target.reset()
        forwards = [timings[k] for k in range(1, sizes + 1)]
        kept.keep_forwards(forwards)
        return forwards

    if key in pipeline.cache and len(pipeline.cache.get(key, measure)) < sizes:
        pipeline.cache.clear_key(key)  # measured for a smaller γ: measure again, up to this one
    pipeline.target_forward_ms = pipeline.cache.get(key, measure)[:sizes]
    kept.align(pipeline.target_forward_ms[0])  # timed earlier in this process: c's kept steps scale to it
    steps = step_times(pipeline, target_id, kept)
    if steps is not None:
        pipeline.draft_step_ms = steps[0]
        pipeline.target_forward_ms = [steps[1], *pipeline.target_forward_ms[1:]]
    return pipeline.target_forward_ms


def calibrated_pipeline(config: DecodeConfig) -> Pipeline:
    """The pipeline `config` asks for, with its target's forward timed (once per target and device: c and v(k)),
    as the app's Run, Step and background warm-up build it."""
    pipeline = pipelines.build_pipeline(config)
    calibrate(pipeline, config.target, calibration_sizes(config))
    return pipeline


def step_times(pipeline: Pipeline, target_id: str, kept: calibration_store.KeptTimings | None = None
               ) -> tuple[float, float] | None:
    """(draft step ms, target step ms): the medians of STEP_SAMPLES one-token forwards of each, alternating, timed
    once per pair and device, then read from the cache; None for prompt lookup (no model: c ≈ 0).

    Each proposal drafts CALIBRATION_DRAFTS tokens after the target has read one more token of a fixed context,
    as a round does, so every draft forward reads one token; the target's one-token forward that follows is its
    step. Alternating makes a busy moment slow both alike, so their ratio c holds; one measurement per pair makes
    identical reruns show the same c. Leaves the target's and the drafter's caches empty. `kept`: the steps an
    earlier start timed on this machine, read in place of timing them and kept once timed."""
    drafter = pipeline.drafter.model if isinstance(pipeline.drafter, LookupThenModelDrafter) else pipeline.drafter
    if drafter.costless:
        return None
    target, device = pipeline.target, pipeline.device

    def measure() -> tuple[float, float] | None:
        steps = kept.steps(drafter.name) if kept is not None else None
        if steps is not None:
            return steps
        steps = timed()
        if steps is not None and kept is not None:
            kept.keep_steps(drafter.name, *steps)
        return steps

    def timed() -> tuple[float, float] | None:
        job.stage(f"Timing the draft's step ({drafter.name}) against the target's ({target_id}), once (for c)")
        context = pipeline.tokenizer(CALIBRATION_PROMPT, add_special_tokens=False)["input_ids"]
        first = len(context) - STEP_SAMPLES - STEP_WARM_UP
        standardize, generator = Standardizer(0.0, 0, 1.0), torch.Generator(device=device).manual_seed(0)
        draft_ms, target_ms = [], []
        target.reset()
        drafter.begin()
        with torch.inference_mode():
            target.feed(torch.tensor(context[: first - 1], dtype=torch.long, device=device))
            for end in range(first, len(context)):  # the sequence is context[:end]; the target has read all but one
                started = time.perf_counter()
                draft = drafter.propose(context[:end], CALIBRATION_DRAFTS, standardize, generator)
                models.synchronize(device)
                drafted = time.perf_counter()
                target.feed(torch.tensor(context[end - 1: end], dtype=torch.long, device=device))
                models.synchronize(device)
                if end - first >= STEP_WARM_UP and draft.forwards:
                    draft_ms.append((drafted - started) * 1e3 / draft.forwards)
                    target_ms.append((time.perf_counter() - drafted) * 1e3)
        target.reset()
        drafter.begin()
        if not draft_ms:
            return None
        # c is the median of the per-sample ratios: a busy moment slows a draft step and the target step right
        # after it alike, so their ratio holds where either median alone would move (`python -m
        # scripts.c_spread` measures the spread; docs/usage.md). The target step shown is the draft step over that c.
        c = statistics.median(draft / target for draft, target in zip(draft_ms, target_ms))
        return statistics.median(draft_ms), statistics.median(draft_ms) / c

    return pipeline.cache.get(("step-ms", target_id, drafter.name, device, pipeline.dtype), measure)
