"""Losslessness lab on the real target: does speculative decoding sample exactly what the target samples?

Three checks, all through the real engine:
1. Distribution: for one prompt, the first tokens of many seeded speculative runs against plain target
   sampling and against the target's exact next-token distribution p (one forward), with the total variation
   distance (TVD), the band that sampling noise alone gives it, and a chi-square test.
2. Greedy equality: at temperature 0 both must produce the same tokens; a divergence is located and explained.
3. Lenience (Leviathan et al.): accepting with min(1, p/(l·q)) raises α and makes the output drift from p.
   It is measured here, and it is off everywhere else.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from specviz.analysis.metrics import chi_square_test, summarize, total_variation
from specviz.config import DecodeConfig
from specviz.core.acceptance import rule_for_lenience
from specviz.core.sampling import Standardizer
from specviz.core.verify import verify
from specviz.decoding import engine, plain
from specviz.decoding.pipeline import Pipeline, encode_prompt
from specviz.drafters.lookup import PromptLookupDrafter
from specviz.words import count

NOISE_TRIALS = 200  # simulated samples behind each noise band
MIN_EXPECTED = 5  # chi-square bins with fewer expected counts are pooled into one "other" bin
OUTSIDE = -1  # the bin of every token outside p's listed top


@dataclass
class DistributionCheck:
    """Counts of the first `tokens` generated tokens over `runs` seeded runs of each kind (plain data)."""

    prompt: str
    tokens: int
    lenience: float
    runs: int = 0
    speculative: Counter = field(default_factory=Counter)  # tuple of token ids -> count
    plain: Counter = field(default_factory=Counter)
    exact_first: dict[int, float] = field(default_factory=dict)  # the target's p of the first token (its top)
    texts: dict[int, str] = field(default_factory=dict)  # token id -> text, for labels
    tested: int = 0  # draft positions tested (accepted or rejected) over all speculative runs
    accepted: int = 0

    @property
    def alpha(self) -> float | None:
        return self.accepted / self.tested if self.tested else None


def exact_next_token_probs(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> torch.Tensor:
    """p(x | prompt) as the engine samples it (same template and warpers): one target forward. Shape [V]."""
    prompt_ids = encode_prompt(pipeline.tokenizer, prompt, config.chat)
    pipeline.target.reset()
    logits = pipeline.target.feed(torch.tensor(prompt_ids, dtype=torch.long, device=pipeline.device))  # [1, V]
    return Standardizer(config.temperature, config.top_k, config.top_p)(logits)[0].cpu()


def check_distribution(pipeline: Pipeline, prompt: str, config: DecodeConfig, runs: int, tokens: int = 1,
                       every: int = 10) -> Iterator[DistributionCheck]:
    """Run `runs` seeded speculative runs and as many plain ones; yield the counts every `every` pairs.

    Run i uses seed config.seed + i for both kinds. Each speculative run asks for tokens + 1 new tokens, so
    the first round drafts (min(γ, tokens) tokens) and the first tokens go through the accept/reject test; it
    stops as soon as it has `tokens`. Plain decoding of a single token is one draw from p itself.
    """
    if runs < 1 or tokens < 1:
        raise ValueError("runs and tokens must be at least 1")
    exact = exact_next_token_probs(pipeline, prompt, config)
    top = torch.topk(exact, k=min(200, exact.numel()))
    check = DistributionCheck(prompt, tokens, config.lenience,
                              exact_first={int(i): float(p) for p, i in zip(top.values, top.indices) if p > 0})
    check.texts = {token_id: pipeline.tokenizer.decode([token_id]) for token_id in check.exact_first}
    for index in range(runs):
        run_config = dataclasses.replace(config, seed=config.seed + index, max_new_tokens=tokens + 1).validate()
        trace = _first_tokens(pipeline, prompt, run_config, tokens)
        if tokens == 1:  # plain decoding of one token is one draw from p: no second forward needed
            generator = torch.Generator().manual_seed(run_config.seed)
            plain_ids = [int(torch.multinomial(exact, 1, generator=generator))]
        else:
            plain_ids = plain.baseline_decode(pipeline, prompt, dataclasses.replace(run_config, max_new_tokens=tokens)).token_ids
        check.speculative[tuple(trace.token_ids[:tokens])] += 1
        check.plain[tuple(plain_ids[:tokens])] += 1
        metrics = summarize(trace)
        check.tested += metrics.tested_positions
        check.accepted += metrics.accepted_tokens
        for token_id in trace.token_ids[:tokens] + plain_ids[:tokens]:
            check.texts.setdefault(token_id, pipeline.tokenizer.decode([token_id]))
        check.runs = index + 1
        if check.runs % every == 0 or check.runs == runs:
            yield check


def check_first_token(pipeline: Pipeline, prompt: str, config: DecodeConfig, runs: int) -> DistributionCheck:
    """check_distribution for the first token, in milliseconds a run: the lenience sweep's check.

    With prompt lookup the first round is the same in every run but for its random numbers: the drafter copies
    from the prompt (it draws none), so its draft and q, and the target's p over them (one forward), do not depend
    on the seed. Only the uniforms do. So the round's draft and forward are computed once, and each run draws its
    uniforms from its own seed in the engine's order (r_1..r_k, then the next token's) and goes through verify(),
    the engine's own step 3: run i's first token is what engine.speculative_decode gives with seed config.seed + i
    (tests/test_labs_lossless.py checks it). A drafter that draws random numbers would differ run to run: refused.
    """
    if runs < 1:
        raise ValueError("runs must be at least 1")
    if not isinstance(pipeline.drafter, PromptLookupDrafter):
        raise ValueError("the one-forward check needs prompt lookup, whose draft is the same in every run")
    config = engine.resolved_config(pipeline, dataclasses.replace(config, max_new_tokens=2).validate())
    prompt_ids = engine.checked_prompt_ids(pipeline, prompt, config)
    standardize = Standardizer(config.temperature, config.top_k, config.top_p)
    room = min(config.gamma, config.max_new_tokens - 1)  # the engine's first round, asked for 2 tokens: drafts 1
    with torch.inference_mode():
        pipeline.target.reset()
        pipeline.drafter.begin()
        draft = pipeline.drafter.propose(prompt_ids, room, standardize, torch.Generator().manual_seed(config.seed))
        drafted, draft_probs = draft.tokens.cpu(), draft.probs.cpu()  # [k], [k, V]
        fed = torch.cat([torch.tensor(prompt_ids, dtype=torch.long, device=pipeline.device), draft.tokens])
        target_probs = standardize(pipeline.target.feed(fed, logits_to_keep=drafted.numel() + 1)).cpu()  # [k+1, V]
    exact = target_probs[0]
    top = torch.topk(exact, k=min(200, exact.numel()))
    check = DistributionCheck(prompt, 1, config.lenience,
                              exact_first={int(i): float(p) for p, i in zip(top.values, top.indices) if p > 0})
    k = drafted.numel()
    for index in range(runs):
        generator = torch.Generator().manual_seed(config.seed + index)
        uniforms = torch.rand(k, generator=generator)  # [k]: as the engine draws them, after a draft that drew none
        next_uniform = float(torch.rand((), generator=generator))
        result = verify(drafted, draft_probs, target_probs, uniforms, next_uniform, rule=rule_for_lenience(config.lenience))
        first = int(drafted[0]) if result.accepted_count else int(result.next_token)
        plain = int(torch.multinomial(exact, 1, generator=torch.Generator().manual_seed(config.seed + index)))
        check.speculative[(first,)] += 1
        check.plain[(plain,)] += 1
        check.tested += min(k, 1)
        check.accepted += min(result.accepted_count, 1)
    check.runs = runs
    check.texts = {token_id: pipeline.tokenizer.decode([token_id])
                   for token_id in {*check.exact_first, *(ids[0] for ids in (*check.speculative, *check.plain))}}
    return check


def _first_tokens(pipeline: Pipeline, prompt: str, config: DecodeConfig, tokens: int):
    """Run the engine only until it has produced `tokens` tokens (usually one round, one target forward)."""
    rounds = engine.speculative_decode(pipeline, prompt, config)
    try:
        for _, trace in rounds:
            if len(trace.token_ids) >= tokens:
                return trace
    finally:
        rounds.close()
    return trace


def first_token_counts(counts: Counter) -> Counter:
    first = Counter()
    for sequence, times in counts.items():
        first[sequence[0]] += times
    return first


def tvd_to_exact(counts: Counter, exact: dict[int, float]) -> float:
    """TVD of first-token counts from p, with the tokens outside `exact` (p's top) pooled into one bin on both sides."""
    listed = {token: counts.get(token, 0) for token in exact}
    listed[OUTSIDE] = sum(count for token, count in counts.items() if token not in exact)
    return total_variation(listed, {**exact, OUTSIDE: max(0.0, 1.0 - sum(exact.values()))})


def noise_band(exact: dict[int, float], runs: int, seed: int = 0, two_samples: bool = False, level: float = 0.99) -> float:
    """The TVD that sampling noise alone reaches with probability `level`: of an empirical distribution of
    `runs` draws from `exact` against `exact`, or (two_samples) of two independent empirical ones."""
    probs = torch.tensor(list(exact.values()), dtype=torch.float64)
    probs = torch.cat([probs, (1 - probs.sum()).clamp(min=0).view(1)])  # the mass outside the listed tokens
    generator = torch.Generator().manual_seed(seed)
    values = []
    for _ in range(NOISE_TRIALS):
        first = torch.bincount(torch.multinomial(probs, runs, replacement=True, generator=generator), minlength=len(probs))
        if two_samples:
            second = torch.bincount(torch.multinomial(probs, runs, replacement=True, generator=generator), minlength=len(probs))
        values.append(total_variation(first, second if two_samples else probs))
    return float(torch.tensor(values).quantile(level))


def chi_square_against_exact(counts: Counter, exact: dict[int, float]) -> tuple[float, int, float]:
    """(statistic, degrees of freedom, p-value) of first-token counts against p, bins with fewer than
    MIN_EXPECTED expected counts pooled (with every unlisted token) into one."""
    runs = sum(counts.values())
    kept = [token for token, prob in exact.items() if prob * runs >= MIN_EXPECTED]
    observed = [counts.get(token, 0) for token in kept]
    expected = [exact[token] for token in kept]
    observed.append(runs - sum(observed))
    expected.append(max(0.0, 1.0 - sum(expected)))
    return chi_square_test(observed, expected)


@dataclass(frozen=True)
class GreedyCheck:
    identical: bool
    speculative_ids: list[int]
    plain_ids: list[int]
    first_difference: int | None  # index of the first differing token, if any
    explanation: str


def check_greedy(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> GreedyCheck:
    """At temperature 0 speculative decoding must reproduce the target's greedy tokens one for one."""
    greedy = dataclasses.replace(config, temperature=0.0).validate()
    trace = engine.run_speculative(pipeline, prompt, greedy)
    plain_run = plain.baseline_decode(pipeline, prompt, greedy)
    speculative_ids, plain_ids = trace.token_ids, plain_run.token_ids
    difference = next((i for i, (a, b) in enumerate(zip(speculative_ids, plain_ids)) if a != b), None)
    if difference is None and len(speculative_ids) != len(plain_ids):
        difference = min(len(speculative_ids), len(plain_ids))
    if difference is None:
        explanation = f"{count(len(plain_ids), 'token')}, token for token ({trace.dtype} on {trace.device})."
    elif str(pipeline.dtype) in ("torch.float16", "torch.bfloat16"):
        explanation = (f"Diverges at token {difference + 1}. In {trace.dtype}, a forward over several tokens and one "
                       "over a single token round differently; where the top two logits nearly tie, argmax can flip. "
                       "The algorithm is exact; the arithmetic is not. fp32 removes it.")
    else:
        explanation = (f"Diverges at token {difference + 1} in {trace.dtype}: this should not happen in fp32 and "
                       "points to a bug (a cache rolled back wrongly, or different warpers).")
    return GreedyCheck(difference is None, speculative_ids, plain_ids, difference, explanation)


def lenience_rows(checks: list[DistributionCheck]) -> list[dict]:
    """One row per lenience: measured α, and the drift of the first token from p against the noise band."""
    rows = []
    for check in checks:
        first = first_token_counts(check.speculative)
        rows.append({
            "lenience": check.lenience,
            "lossless": check.lenience == 1,
            "alpha": check.alpha,
            "tvd_to_p": tvd_to_exact(first, check.exact_first),
            "noise_band": noise_band(check.exact_first, check.runs),
            "chi_square_p": chi_square_against_exact(first, check.exact_first)[2],
            "runs": check.runs,
        })
    return rows
