"""The only code that runs models: speculative decoding as a generator of rounds, and the plain baseline.

One round (Leviathan et al. 2023, algorithm 1):
1. The drafter proposes x_1..x_k (k ≤ γ) with their distributions q_1..q_k.
2. The target scores the pending tokens and x_1..x_k in ONE forward pass, keeping only the last k+1 logits:
   p_1..p_{k+1}.
3. x_i is accepted while r_i < min(1, p_i(x_i)/q_i(x_i)), r_i ~ U[0, 1).
4. The first rejection is replaced by a draw from norm(max(0, p_i - q_i)); if all k pass, a bonus token is
   drawn from p_{k+1}. The target's cache is cropped to the accepted prefix; the drafter rolls back its own.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Iterator

import torch

from . import models
from .adaptive import COSTLESS_PRIOR_ALPHA, PRIOR_ALPHA, AdaptiveGamma
from .config import DISTILLED_DRAFTER, NGRAM_DRAFTER, QUANTIZED_DRAFTER, DecodeConfig
from .drafters import Drafter, DraftModelDrafter, FeatureDrafter, LookupThenModelDrafter, PromptLookupDrafter
from .sampling import Standardizer, sample
from .trace import ACCEPTED, BONUS, CORRECTED, REJECTED, Baseline, Round, Token, TopToken, Trace
from .verify import verify

TOP_N = 10  # entries of p and q kept per position, enough to draw the p-vs-q bars


@dataclass
class Pipeline:
    """A target, a drafter and the tokenizer they share, ready to decode."""

    target: models.LanguageModel
    drafter: Drafter
    tokenizer: object
    eos_ids: list[int]
    device: torch.device
    dtype: torch.dtype
    draft_model: models.LanguageModel | None = None


def build_pipeline(config: DecodeConfig) -> Pipeline:
    """Load (or reuse) the models named by config and check that they can work together."""
    target = models.load_model(config.target)
    eos_ids = _eos_ids(target)
    model_id, draft_model = config.drafting_model, None
    if model_id == NGRAM_DRAFTER:
        target_model = target.language_model(target.logits_width)
        drafter = PromptLookupDrafter(target_model.vocab_size, config.ngram_size, eos_ids)
    elif model_id == DISTILLED_DRAFTER:
        target_model = target.language_model(target.logits_width, keep_features=True)  # the draft reads its states
        drafter = FeatureDrafter(_shared_draft(target), target_model, DISTILLED_DRAFTER)
    elif model_id == QUANTIZED_DRAFTER:
        target_model = target.language_model(target.logits_width)
        draft_model = models.LanguageModel(_quantized_draft_step(target), target.logits_width, target.device, QUANTIZED_DRAFTER)
        drafter = DraftModelDrafter(draft_model, twin=target_model)  # starts from the target's prompt cache
    else:
        draft = models.load_model(model_id, target.device, target.dtype)
        vocab = models.shared_vocab_size(target, draft)
        target_model, draft_model = target.language_model(vocab), draft.language_model(vocab)
        drafter = DraftModelDrafter(draft_model)
    if config.lookup_first:
        lookup = PromptLookupDrafter(target_model.vocab_size, config.ngram_size, eos_ids)
        drafter = LookupThenModelDrafter(lookup, drafter, config.draft)
    return Pipeline(target_model, drafter, target.tokenizer, eos_ids, target.device, target.dtype, draft_model)


def _shared_draft(target: models.LoadedModel):
    """The distilled draft for this loaded target, loaded once and shared by every pipeline (it holds no state)."""
    return _load_draft(target.model_id, target.device, target.dtype)


@functools.lru_cache(maxsize=2)
def _load_draft(model_id: str, device: torch.device, dtype: torch.dtype):
    from .feature_draft import load_for_target

    return load_for_target(models.load_model(model_id, device, dtype))


def _quantized_draft(target: models.LoadedModel):
    """The target's 4-bit copy, built once per loaded target (about a second) and shared: it holds no state."""
    _check_quantized_kernels(target)
    return _build_quantized_draft(target.model_id, target.device, target.dtype)


def _check_quantized_kernels(target: models.LoadedModel) -> None:
    from . import quantized_draft

    if not quantized_draft.available(target.device):
        raise ValueError(f"the {QUANTIZED_DRAFTER!r} draft runs on a CPU with torch's 4-bit kernels; this target is on "
                         f"{target.device.type}: choose another drafter")


@functools.lru_cache(maxsize=2)
def _build_quantized_draft(model_id: str, device: torch.device, dtype: torch.dtype):
    from .quantized_draft import quantized_copy

    return quantized_copy(models.load_model(model_id, device, dtype).hf_model)


def _quantized_draft_step(target: models.LoadedModel):
    """What the int4 drafter calls: the lean 4-bit decode step for a plain Llama (the copy's numbers, less
    overhead), else the 4-bit copy itself. Built once per loaded target and shared: it holds no state."""
    from . import int4_decoder

    _check_quantized_kernels(target)
    if not int4_decoder.supports(target.hf_model):
        return _quantized_draft(target)
    return _build_int4_decoder(target.model_id, target.device, target.dtype)


@functools.lru_cache(maxsize=2)
def _build_int4_decoder(model_id: str, device: torch.device, dtype: torch.dtype):
    from .int4_decoder import Int4LlamaDecoder

    return Int4LlamaDecoder(models.load_model(model_id, device, dtype).hf_model)


def encode_prompt(tokenizer, prompt: str, chat: bool) -> list[int]:
    """Token ids of the prompt, wrapped in the chat template when asked for and the tokenizer has one."""
    if chat and getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
        return tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer(prompt)["input_ids"]


def context_limit(pipeline: Pipeline) -> int:
    """The longest sequence both models can hold."""
    if pipeline.draft_model is None:
        return pipeline.target.max_length
    return min(pipeline.target.max_length, pipeline.draft_model.max_length)


def _checked_prompt_ids(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> list[int]:
    prompt_ids = encode_prompt(pipeline.tokenizer, prompt, config.chat)
    if not prompt_ids:
        raise ValueError("the prompt encodes to no tokens")
    if len(prompt_ids) >= context_limit(pipeline):
        raise ValueError(f"the prompt has {len(prompt_ids)} tokens; the models' context holds {context_limit(pipeline)}")
    return prompt_ids


def new_trace(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> tuple[Trace, list[int]]:
    """An empty trace for this run, and the prompt's token ids."""
    prompt_ids = _checked_prompt_ids(pipeline, prompt, config)
    return Trace(
        config=config.to_dict(),
        prompt=prompt,
        prompt_token_count=len(prompt_ids),
        target_name=config.target,
        draft_name=config.draft,
        device=models.describe_device(pipeline.device),
        dtype=str(pipeline.dtype).removeprefix("torch."),
        token_ids=[],
    ), prompt_ids


def speculative_decode(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> Iterator[tuple[Round, Trace]]:
    """Yield (round, trace so far) after every draft/verify cycle. The trace is complete after the last one."""
    trace, prompt_ids = new_trace(pipeline, prompt, config)
    target, drafter, device = pipeline.target, pipeline.drafter, pipeline.device
    standardize = Standardizer(config.temperature, config.top_k, config.top_p)
    generator = torch.Generator(device=device).manual_seed(config.seed)
    texts = _TokenTexts(pipeline.tokenizer)
    sequence = list(prompt_ids)
    limit = context_limit(pipeline)
    target.reset()
    drafter.begin()
    costless = getattr(drafter, "costless", False)  # proposing costs nothing next to a forward (prompt lookup)
    adaptive = AdaptiveGamma(config.gamma, COSTLESS_PRIOR_ALPHA if costless else PRIOR_ALPHA) if config.adaptive else None
    forward_before = _forward_seconds(pipeline)
    engine_seconds, resumed = 0.0, time.perf_counter()  # time inside this generator, not in its consumer
    while True:
        with torch.inference_mode():  # per round, never across the yield (the consumer runs in between)
            remaining = config.max_new_tokens - (len(sequence) - len(prompt_ids))
            room = limit - len(sequence)
            gamma = min(config.gamma, remaining - 1, room - 1)  # a round emits at most gamma + 1 tokens
            if adaptive and not costless:
                gamma = adaptive.choose(gamma, costless=False)

            # 1. Draft (a costless drafter proposes up to γ, and adaptive γ then keeps the first k).
            round_started = time.perf_counter()
            draft = drafter.propose(sequence, gamma, standardize, generator) if gamma > 0 else None
            proposed, proposed_probs = _trim_at_eos(draft, pipeline, device)
            keep = proposed.numel()
            if adaptive and costless:
                adaptive.watch_proposal(len(sequence), proposed.tolist())
                keep = adaptive.choose(keep, costless=True)
            drafted, draft_probs = proposed[:keep], proposed_probs[:keep]  # [k], [k, V]
            models.synchronize(device)
            drafted_at = time.perf_counter()

            # 2. One target forward over the pending tokens and the k drafts; keep the last k+1 logits.
            k = drafted.numel()
            pending = torch.tensor(sequence[target.cached_length :], dtype=torch.long, device=device)
            logits = target.feed(torch.cat([pending, drafted]), logits_to_keep=k + 1)  # [k+1, V]
            target_probs = standardize(logits)  # [k+1, V]

            # 3-4. Accept a prefix, then draw the correction or the bonus; crop the target cache to the prefix.
            uniforms = torch.rand(k, generator=generator, device=device)  # [k]
            result = verify(drafted, draft_probs, target_probs, uniforms, generator=generator, lenience=config.lenience)
            target.crop(len(sequence) + result.accepted_count)
            models.synchronize(device)
            verified_at = time.perf_counter()

            drafted_ids = drafted.tolist()
            emitted = drafted_ids[: result.accepted_count]
            ends_with_eos = bool(emitted) and emitted[-1] in pipeline.eos_ids
            if not ends_with_eos:  # after an accepted EOS nothing follows, not even the bonus
                emitted.append(result.next_token)
            sequence.extend(emitted)
            if adaptive:
                _observe(adaptive, costless, result, sequence, drafted_at - round_started, draft.forwards if draft else 0,
                         verified_at - drafted_at, pending.numel() + k, len(trace.rounds))
            round_ = _record_round(
                len(trace.rounds), drafted_ids, draft_probs, target_probs, uniforms, result, texts, not ends_with_eos
            )
            round_.draft_ms = (drafted_at - round_started) * 1e3
            round_.verify_ms = (verified_at - drafted_at) * 1e3
            round_.draft_forwards = draft.forwards if draft is not None else 0
            trace.rounds.append(round_)
            trace.token_ids = sequence[len(prompt_ids) :]
            trace.text = pipeline.tokenizer.decode(trace.token_ids, skip_special_tokens=True)
            trace.stop_reason = _stop_reason(emitted[-1], pipeline, len(trace.token_ids), config, len(sequence), limit)
            trace.forward_ms = (_forward_seconds(pipeline) - forward_before) * 1e3
        engine_seconds += time.perf_counter() - resumed
        trace.wall_ms = engine_seconds * 1e3
        yield round_, trace
        resumed = time.perf_counter()
        if trace.stop_reason:
            return


def _observe(adaptive, costless, result, sequence, draft_s, draft_forwards, verify_s, fed, index):
    """Tell adaptive γ how the round went. Round 0 also encoded the prompt, so its timings are left out."""
    if costless:
        adaptive.score_proposals(sequence)
    else:
        adaptive.observe_acceptance(result.accept_probs[: result.accepted_count + 1])
    if index > 0:
        adaptive.observe_costs(draft_s * 1e3, draft_forwards, verify_s * 1e3, fed)


def _stop_reason(last_token, pipeline, generated, config, length, limit) -> str:
    if last_token in pipeline.eos_ids:
        return "eos"
    if generated >= config.max_new_tokens:
        return "max_new_tokens"
    if length >= limit:
        return "context"
    return ""


WARM_UP_PROMPT = "Say hello twice: hello hello"
_WARMED: set[tuple] = set()  # (target, draft, γ, device) already warmed in this process


def warm_up(pipeline: Pipeline, config: DecodeConfig) -> None:
    """Run each path once, briefly, before a timed comparison, so that first-call costs (a CPU kernel set up for
    each new row count, lazy imports) land in neither run. Once per process for each model pair and γ."""
    key = (config.target, config.draft, config.gamma, str(pipeline.device))
    if key in _WARMED:
        return
    target = pipeline.target
    prompt_ids = encode_prompt(pipeline.tokenizer, WARM_UP_PROMPT, config.chat)
    if len(prompt_ids) + 2 * (config.gamma + 2) >= context_limit(pipeline):
        return  # a context this short leaves no room to warm up (nor much to time)
    target.reset()
    target.feed(torch.tensor(prompt_ids, dtype=torch.long, device=pipeline.device))
    for rows in range(1, config.gamma + 2):  # every verification width a run can use
        target.feed(torch.tensor(prompt_ids[-1:] * rows, dtype=torch.long, device=pipeline.device))
        target.crop(len(prompt_ids))
    short = DecodeConfig(**{**config.to_dict(), "max_new_tokens": config.gamma + 2})
    run_speculative(pipeline, WARM_UP_PROMPT, short)  # the drafter's own first calls
    baseline_decode(pipeline, WARM_UP_PROMPT, short)
    _WARMED.add(key)


def run_speculative(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> Trace:
    """Run to the end and return the finished trace."""
    trace = None
    for _, trace in speculative_decode(pipeline, prompt, config):
        pass
    return trace


def baseline_decode(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> Baseline:
    """Plain autoregressive decoding on the same target, with the same sampling and seed source."""
    target, device = pipeline.target, pipeline.device
    prompt_ids = _checked_prompt_ids(pipeline, prompt, config)
    standardize = Standardizer(config.temperature, config.top_k, config.top_p)
    generator = torch.Generator(device=device).manual_seed(config.seed)
    target.reset()
    with torch.inference_mode():
        started = time.perf_counter()
        logits = target.feed(torch.tensor(prompt_ids, dtype=torch.long, device=device))  # [1, V]
        generated: list[int] = []
        step_seconds = []
        while True:
            token = int(sample(standardize(logits)[0], generator))
            generated.append(token)
            if token in pipeline.eos_ids or len(generated) >= config.max_new_tokens:
                break
            if len(prompt_ids) + len(generated) >= context_limit(pipeline):
                break
            step_started = time.perf_counter()
            logits = target.feed(torch.tensor([token], device=device))
            models.synchronize(device)
            step_seconds.append(time.perf_counter() - step_started)
    wall_ms = (time.perf_counter() - started) * 1e3
    step_ms = 1e3 * sum(step_seconds) / len(step_seconds) if step_seconds else wall_ms
    text = pipeline.tokenizer.decode(generated, skip_special_tokens=True)
    return Baseline(text=text, token_ids=generated, wall_ms=wall_ms, step_ms=step_ms)


# ---------------------------------------------------------------- helpers


def _eos_ids(loaded: models.LoadedModel) -> list[int]:
    ids = set()
    for source in (loaded.tokenizer.eos_token_id, getattr(loaded.hf_model.generation_config, "eos_token_id", None)):
        if isinstance(source, int):
            ids.add(source)
        elif source:
            ids.update(int(value) for value in source)
    return sorted(ids)


def _forward_seconds(pipeline: Pipeline) -> float:
    total = pipeline.target.forward_seconds
    if pipeline.draft_model is not None:
        return total + pipeline.draft_model.forward_seconds
    return total + getattr(pipeline.drafter, "forward_seconds", 0.0)  # a feature drafter times its own head


def _trim_at_eos(draft, pipeline: Pipeline, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Drafted ids [k] and q [k, V] on the target's device, cut after the first EOS (nothing follows an EOS)."""
    vocab = pipeline.target.vocab_size
    if draft is None or draft.tokens.numel() == 0:
        return torch.empty(0, dtype=torch.long, device=device), torch.empty(0, vocab, device=device)
    tokens, probs = draft.tokens.to(device), draft.probs.to(device)
    is_eos = torch.isin(tokens, torch.tensor(pipeline.eos_ids, device=device))
    if bool(is_eos.any()):
        keep = int(is_eos.int().argmax()) + 1
        tokens, probs = tokens[:keep], probs[:keep]
    return tokens, probs


class _TokenTexts:
    """Memoized single-token decoding: the same ids recur in every round's top-10 lists."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.cache: dict[int, str] = {}

    def __call__(self, token_id: int) -> str:
        text = self.cache.get(token_id)
        if text is None:
            text = self.cache[token_id] = self.tokenizer.decode([token_id])
        return text

    def top(self, probs: torch.Tensor) -> list[list[TopToken]]:
        """Top-N of each row of probs [n, V] with prob > 0, in one topk call."""
        if probs.shape[0] == 0:
            return []
        values, indices = probs.topk(min(TOP_N, probs.shape[-1]), dim=-1)
        return [
            [TopToken(i, self(i), round(v, 6)) for v, i in zip(row_values, row_ids) if v > 0]
            for row_values, row_ids in zip(values.tolist(), indices.tolist())
        ]


def _record_round(index, drafted_ids, draft_probs, target_probs, uniforms, result, texts, with_next) -> Round:
    """Turn one verify step into plain data: every drafted token, then the correction or bonus."""
    k, accepted = len(drafted_ids), result.accepted_count
    tested = min(accepted + 1, k)  # positions whose acceptance test ran
    target_tops = texts.top(target_probs[: min(accepted + 1, k + 1)])
    draft_tops = texts.top(draft_probs[:tested])
    rows = torch.arange(tested, device=target_probs.device)
    drafted = torch.tensor(drafted_ids[:tested], dtype=torch.long, device=target_probs.device)
    target_at = target_probs[rows, drafted].tolist()
    draft_at = draft_probs[rows, drafted].tolist()
    uniform_list = uniforms.tolist()
    overlaps = torch.minimum(target_probs[:tested], draft_probs[:tested]).sum(dim=-1).tolist()  # β per position
    tokens = []
    for i in range(tested):
        tokens.append(Token(
            token_id=drafted_ids[i], text=texts(drafted_ids[i]), kind=ACCEPTED if i < accepted else REJECTED,
            position=i + 1, target_prob=target_at[i], draft_prob=draft_at[i], uniform=uniform_list[i],
            accept_prob=result.accept_probs[i], overlap=overlaps[i], target_top=target_tops[i], draft_top=draft_tops[i],
        ))
    if with_next:
        y, position = result.next_token, accepted
        correction = result.next_kind == CORRECTED
        tokens.append(Token(
            token_id=y, text=texts(y), kind=CORRECTED if correction else BONUS, position=position + 1,
            target_prob=float(target_probs[position, y]),
            draft_prob=float(draft_probs[position, y]) if correction else None,
            overlap=overlaps[position] if correction else None,
            target_top=target_tops[position], draft_top=draft_tops[position] if correction else [],
            residual_top=texts.top(result.next_probs.view(1, -1))[0] if correction else [],
        ))
    return Round(index=index, drafted=k, accepted=accepted, tokens=tokens, draft_ms=0.0, verify_ms=0.0, draft_forwards=0,
                 draft_token_ids=list(drafted_ids), draft_texts=[texts(i) for i in drafted_ids])
