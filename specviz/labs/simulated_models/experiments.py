"""The simulated-models lab: runs of the real engine on models whose acceptance rate is known exactly, and the four
experiments behind the lab's tables. The models themselves live in models.py.

Cost is simulated in target-step units: a round that drafts k tokens costs k·c + 1 (k draft steps, one target
forward); plain decoding costs 1 per token. Wall time means nothing here.

>>> trace = run(overlap=0.8, gamma=4, c=0.1, max_new_tokens=12, seed=0)
>>> len(trace.token_ids), [round_.drafted for round_ in trace.rounds]
(12, [4, 4, 4, 4, 2, 0])
>>> round(simulated_speedup(trace, c=0.1), 3)  # 12 tokens / (6 rounds + 18 drafted · 0.1)
1.538
"""

from __future__ import annotations

import dataclasses
import functools
import math

import torch

from specviz.analysis.metrics import SIGNIFICANCE, chi_square_test, total_variation
from specviz.core import theory
from specviz.decoding import engine, plain
from specviz.labs.simulated_models.models import DEFAULT_VOCAB, PROMPT, WORDS, simulated_config, simulated_pipeline
from specviz.trace import Baseline, Trace

AGREEMENT_SE = 3.0  # simulation and theory agree when they differ by at most this many standard errors
VIABILITY_CHECK_COLUMNS = ("min_alpha", "best_gamma", "alpha_below", "speedup_below", "speedup_below_se", "alpha_above",
                           "speedup_above", "speedup_above_se", "confirmed")


def simulated_time(trace: Trace, c: float) -> float:
    """Σ over rounds of (drafted·c + 1), in target steps. Plain decoding of n tokens costs n."""
    return sum(round_.drafted * c + 1.0 for round_ in trace.rounds)


def simulated_speedup(trace: Trace, c: float) -> float:
    """Generated tokens per simulated target step: plain decoding's cost over speculative decoding's."""
    return len(trace.token_ids) / simulated_time(trace, c) if trace.rounds else 0.0


def with_simulated_time(trace: Trace, c: float, baseline: Baseline) -> Trace:
    """A copy whose timings are in target steps (1 "ms" = one target step), with the baseline at 1 per token, so
    specviz.analysis.metrics.summarize reports this c as `c` and the simulated speedup as `speedup_measured`."""
    rounds = [dataclasses.replace(r, draft_ms=r.drafted * c, verify_ms=1.0, draft_forwards=r.drafted,
                                  draft_forward_ms=r.drafted * c, verify_forward_ms=1.0, record_ms=0.0)
              for r in trace.rounds]
    total, tokens = simulated_time(trace, c), len(baseline.token_ids)
    baseline = dataclasses.replace(baseline, wall_ms=float(tokens), step_ms=1.0, token_ms=[1.0] * tokens)
    return dataclasses.replace(trace, rounds=rounds, wall_ms=total, forward_ms=total, record_ms=0.0, baseline=baseline)


def run(overlap: float, gamma: int, c: float, max_new_tokens: int = 48, seed: int = 0, temperature: float = 1.0,
        vocab_size: int = DEFAULT_VOCAB) -> Trace:
    """One speculative run through the real engine, plus the plain baseline, timed in simulated target steps.
    The overlap is exactly the acceptance rate at temperature 1 only (a temperature reshapes p and q differently)."""
    config = simulated_config(overlap, gamma, max_new_tokens, seed, temperature)
    pipeline = simulated_pipeline(overlap, vocab_size)
    trace = engine.run_speculative(pipeline, PROMPT, config)
    return with_simulated_time(trace, c, plain.baseline_decode(pipeline, PROMPT, config))


# ---------------------------------------------------------------- a. the output follows the target, the draft does not


@functools.lru_cache(maxsize=8)
def _openings(overlap: float, gamma: int, n_runs: int, seed: int) -> tuple:
    """The first two tokens of n_runs engine runs and of n_runs draws from the draft alone, with the exact
    target law: (speculative [n, 2], draft [n, 2], target_pairs [V, V], draft_first [V])."""
    pipeline = simulated_pipeline(overlap)
    world, draft = pipeline.target.world, pipeline.draft_model
    prompt_hash = world.hash_of(pipeline.tokenizer(PROMPT)["input_ids"])
    generator = torch.Generator().manual_seed(seed)
    speculative = []
    for run_seed in torch.randint(0, 2**62, (n_runs,), generator=generator).tolist():
        for _, trace in engine.speculative_decode(pipeline, PROMPT, simulated_config(overlap, gamma, gamma + 1, run_seed)):
            if len(trace.token_ids) >= 2:
                break
        speculative.append(trace.token_ids[:2])
    first_draft_probs = world.draft_probs(prompt_hash, draft.overlap)  # [V]
    firsts = torch.multinomial(first_draft_probs, n_runs, replacement=True, generator=generator)
    seconds = [int(torch.multinomial(world.draft_probs(world.extend(prompt_hash, x), draft.overlap), 1, generator=generator))
               for x in firsts.tolist()]
    first_target_probs = world.distributions(prompt_hash)[0]  # [V]
    target_pairs = torch.stack([first_target_probs[x] * world.distributions(world.extend(prompt_hash, x))[0]
                                for x in range(world.vocab_size)])  # [V, V]: p(x1) p(x2 | x1)
    draft_pairs = torch.stack([firsts, torch.tensor(seconds)], dim=1)
    return torch.tensor(speculative), draft_pairs, target_pairs, first_draft_probs


def distribution_check(overlap: float = 0.6, gamma: int = 4, n_runs: int = 1000, seed: int = 0) -> list[dict]:
    """Chi-square and total variation distance of the first token and the first two tokens against the target's
    exact law, for the engine's output (must match) and for the draft sampled alone (must not, unless β = 1).

    At the defaults the engine's first token gives χ² = 3.4 on 7 dof, p = 0.85, TVD 0.02; the draft alone draws words
    the target never says (χ² = inf, p = 0) and sits at TVD 0.41 ≈ 1 − β, the exact distance between p and q.
    """
    speculative, draft_pairs, target_pairs, _ = _openings(overlap, gamma, n_runs, seed)
    vocab = target_pairs.shape[0]
    rows = []
    for event, width in (("first token", 1), ("first two tokens", 2)):
        probs = target_pairs.sum(dim=1) if width == 1 else target_pairs.flatten()
        for sampler, pairs in (("speculative (engine)", speculative), ("draft alone", draft_pairs)):
            outcomes = pairs[:, 0] if width == 1 else pairs[:, 0] * vocab + pairs[:, 1]
            counts = torch.bincount(outcomes, minlength=probs.numel()).double()
            statistic, dof, p_value = chi_square_test(counts, probs)
            tvd = total_variation(counts, probs)
            rows.append(dict(event=event, sampler=sampler, samples=n_runs, chi_square=round(statistic, 2), dof=dof,
                             p_value=p_value, tvd=round(tvd, 4), follows_target=p_value >= SIGNIFICANCE))
    return rows


def first_token_frequencies(overlap: float = 0.6, gamma: int = 4, n_runs: int = 1000, seed: int = 0) -> list[dict]:
    """Per word: the target's exact first-token probability, and its frequency in the engine's and the draft's draws
    (the same draws as distribution_check)."""
    speculative, draft_pairs, target_pairs, _ = _openings(overlap, gamma, n_runs, seed)
    vocab = target_pairs.shape[0]
    target = target_pairs.sum(dim=1).tolist()
    engine_counts = torch.bincount(speculative[:, 0], minlength=vocab).tolist()
    draft_counts = torch.bincount(draft_pairs[:, 0], minlength=vocab).tolist()
    return [dict(token=WORDS[i], target=target[i], speculative=engine_counts[i] / n_runs, draft=draft_counts[i] / n_runs)
            for i in range(vocab)]


# ---------------------------------------------------------------- b-d. expected tokens, speedup and the viability line


def theory_table(alphas=(0.5, 0.6, 0.7, 0.8, 0.9), gammas=(1, 2, 3, 5, 7), c: float = 0.1) -> list[dict]:
    """E(α, γ) and the speedup E/(γc + 1) for each pair; `best` marks the best listed γ for each α.
    >>> theory_table(alphas=(0.8,), gammas=(3,), c=0.1)  # E = 1 + .8 + .64 + .512; S = 2.952 / 1.3
    [{'alpha': 0.8, 'gamma': 3, 'c': 0.1, 'expected_tokens': 2.952, 'speedup': 2.2708, 'best': True}]
    """
    rows = []
    for alpha in alphas:
        best = max(gammas, key=lambda gamma: theory.speedup(alpha, gamma, c))
        rows.extend(dict(alpha=alpha, gamma=gamma, c=c, expected_tokens=round(theory.expected_tokens(alpha, gamma), 4),
                         speedup=round(theory.speedup(alpha, gamma, c), 4), best=gamma == best) for gamma in gammas)
    return rows


def round_statistics(overlap: float, gamma: int, n_tokens: int, seed: int) -> tuple[float, float, int]:
    """(mean, standard error, count) of tokens per round over the rounds that drafted all γ tokens, in one engine
    run. Rounds cut short near max_new_tokens are left out: the theory is about full rounds."""
    trace = engine.run_speculative(simulated_pipeline(overlap), PROMPT, simulated_config(overlap, gamma, n_tokens, seed))
    tokens = torch.tensor([r.accepted + 1 for r in trace.rounds if r.drafted == gamma], dtype=torch.float64)
    if tokens.numel() == 0:
        raise ValueError(f"{n_tokens} tokens leave no round that drafts all γ = {gamma}; ask for more tokens")
    spread = float(tokens.std()) if tokens.numel() > 1 else 0.0
    return float(tokens.mean()), spread / math.sqrt(max(tokens.numel(), 1)), tokens.numel()


def simulated_vs_theory(alpha: float = 0.8, c: float = 0.1, gammas=(3, 5, 7), n_tokens: int = 1000,
                        seed: int = 0) -> list[dict]:
    """Simulated E[tokens per round] and speedup (± one standard error) against E(α, γ) and E/(γc + 1)."""
    rows = []
    for gamma in gammas:
        mean, se, rounds = round_statistics(alpha, gamma, n_tokens, seed + gamma)
        expected, cost = theory.expected_tokens(alpha, gamma), gamma * c + 1.0
        z = (mean - expected) / se if se > 0 else (0.0 if mean == expected else math.inf)
        rows.append(dict(gamma=gamma, rounds=rounds, tokens_per_round=round(mean, 4), tokens_per_round_se=round(se, 4),
                         tokens_per_round_theory=round(expected, 4), speedup=round(mean / cost, 4),
                         speedup_se=round(se / cost, 4), speedup_theory=round(expected / cost, 4), z=round(z, 2),
                         agrees=abs(z) <= AGREEMENT_SE))
    return rows


def break_even_alpha(gamma: int, c: float) -> float | None:
    """The α at which E(α, γ) = γc + 1 (speedup exactly 1), by bisection; None when no α ≤ 1 gets there.
    >>> round(break_even_alpha(1, 0.2), 6), round(break_even_alpha(2, 0.1), 4)  # 1 + α = 1.2; α + α² = 0.2
    (0.2, 0.1708)
    """
    if theory.expected_tokens(1.0, gamma) <= gamma * c + 1.0:
        return None
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if theory.expected_tokens(middle, gamma) < gamma * c + 1.0 else (low, middle)
    return (low + high) / 2


def viability_table(cs=(0.1, 0.3, 0.5), gammas=(1, 2, 4, 8), margin: float = 0.15, n_tokens: int = 400,
                    seed: int = 0) -> list[dict]:
    """Per c: the break-even α for each γ, the smallest of them (corollary 3.9 says α > c, reached at γ = 1), and
    simulated speedups at that γ with α = threshold ∓ margin: the first should be below 1, the second above."""
    rows = []
    for c in cs:
        thresholds = {gamma: break_even_alpha(gamma, c) for gamma in gammas}
        reachable = {gamma: alpha for gamma, alpha in thresholds.items() if alpha is not None}
        row = dict(c=c, corollary_alpha=c)
        for gamma, alpha in thresholds.items():
            row[f"alpha_at_gamma_{gamma}"] = None if alpha is None else round(alpha, 4)
        row.update(dict.fromkeys(VIABILITY_CHECK_COLUMNS))  # every row has every column, None when c ≥ 1
        if reachable:
            gamma = min(reachable, key=reachable.get)
            row.update(min_alpha=round(reachable[gamma], 4), best_gamma=gamma)
            for side, alpha in (("below", reachable[gamma] - margin), ("above", reachable[gamma] + margin)):
                alpha = min(max(alpha, 0.0), 1.0)
                mean, se, _ = round_statistics(alpha, gamma, n_tokens, seed + int(1000 * alpha))
                row.update({f"alpha_{side}": round(alpha, 4), f"speedup_{side}": round(mean / (gamma * c + 1), 4),
                            f"speedup_{side}_se": round(se / (gamma * c + 1), 4)})
            row["confirmed"] = row["speedup_below"] < 1 < row["speedup_above"]
        rows.append(row)
    return rows
