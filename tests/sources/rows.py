"""The seed table: every figure the app quotes from the seeds, as SeedRows, each computed by specviz's own code.

Seed 000's "The Japan" example goes through the Sampling lab's functions (rejection.py); seed 003's batched
verification through the real engine on simulated models; seed 004's timings through metrics.summarize and the
Theory tab's round-cost model (calculator.py). Seed 001 and seed 002's Lesson 1 are in rows_bandwidth.py, the
other seed 002 figures the app quotes outside the course tab in rows_theory.py. SEED_ROWS joins them, in seed
order; tests/sources/doc.py (docs/sources-checked.md) and tests/test_seed_table.py read it.
"""

from __future__ import annotations

import functools
import re

from specviz.analysis.metrics import summarize
from specviz.decoding import engine
from specviz.labs.sampling_lab import rejection
from specviz.labs.simulated_models.models import PROMPT, simulated_config, simulated_pipeline
from specviz.labs.theory import calculator
from specviz.models import presets
from specviz.trace import Baseline, Trace
from tests.sources.checks import SeedRow
from tests.sources.rows_bandwidth import SEED_001_ROWS, SEED_002_BANDWIDTH_ROWS
from tests.sources.rows_theory import SEED_002_THEORY_ROWS

JAPAN_PRESET = "The Japan ... (textbook)"  # the Sampling lab's preset of seed 000's example, as its menu names it


def japan() -> dict:
    """The Sampling lab's preset of seed 000's example: the rows below check its vocabulary and distributions."""
    return rejection.PRESETS[JAPAN_PRESET]


def _japan_overlap(key: str):
    preset = japan()
    return rejection.overlap(preset["target_probs"], preset["draft_probs"])[key]


def acceptance_rule() -> str:
    """Which side of p(x)/q(x) the verifier accepts r on, read from verify() itself: the Japan example's draft
    "is" (p/q = 0.8) tested with r = 0.5 and with r = 0.9."""
    preset = japan()
    accepted = {r: rejection.speculative_step(preset["target_probs"], preset["draft_probs"],
                                              uniforms=[0.0, r, 0.5])["accepted"] for r in (0.5, 0.9)}
    if accepted == {0.5: True, 0.9: False}:
        return "accept when r is below p(x)/q(x)"
    if accepted == {0.5: False, 0.9: True}:
        return "accept when r is above p(x)/q(x)"
    return f"neither rule: accepted at r = 0.5 and 0.9: {accepted}"


def output_follows() -> str:
    """Which of p (target) and q (draft) the exact output distribution of speculative sampling equals (Japan)."""
    preset = japan()
    output = rejection.exact_output_distribution(preset["target_probs"], preset["draft_probs"])
    for name, probs in (("p(x), the target's", preset["target_probs"]), ("q(x), the draft's", preset["draft_probs"])):
        if max(abs(a - b) for a, b in zip(output, probs)) < 1e-12:
            return name
    return f"neither: {output}"


@functools.lru_cache(maxsize=4)
def simulated_rounds(overlap: float, gamma: int = 4) -> dict:
    """Counts from one real engine run on simulated models whose draft agrees with the target with probability
    `overlap` (1: every draft accepted, 0: every draft rejected): per round, the draft's forwards, the target's
    forwards and the tokens emitted (full rounds only: near the end a round drafts fewer)."""
    pipeline = simulated_pipeline(overlap)  # a fresh pipeline: its forward counters start at 0
    trace = engine.run_speculative(pipeline, PROMPT, simulated_config(overlap, gamma, 4 * (gamma + 1), seed=0))
    full = [round_ for round_ in trace.rounds if round_.drafted == gamma]
    return dict(draft_forwards=max(round_.draft_forwards for round_ in full),
                target_forwards=pipeline.target.forward_calls / len(trace.rounds),
                tokens=max(len(round_.emitted) for round_ in full))


def measured_speedup(plain_seconds: float, speculative_seconds: float, tokens: int = 256) -> float:
    """The stats panel's measured speedup (metrics.summarize) for two runs of `tokens` tokens and these times."""
    trace = Trace(config={"gamma": 4}, prompt="", prompt_token_count=0, target_name="", draft_name="", device="",
                  dtype="", token_ids=[0] * tokens, wall_ms=speculative_seconds * 1e3,
                  baseline=Baseline(text="", token_ids=[0] * tokens, wall_ms=plain_seconds * 1e3, step_ms=0.0))
    return summarize(trace).speedup_measured


def chen_draft_parameters() -> float:
    """The draft size the Theory tab's Chen et al. paragraph states ("drafted by a 4B model" -> 4e9)."""
    return float(re.search(r"drafted by a (\d+)B model", calculator.chen_markdown()).group(1)) * 1e9


SEED_000_ROWS = [
    SeedRow(seed="000", where='{"is", "stock", "girl", "cherry"}', what="the example's vocabulary",
            seed_value="is, stock, girl, cherry", specviz_value=lambda: tuple(japan()["vocab"]),
            expected=("is", "stock", "girl", "cherry"), agrees=True, settles=""),
    SeedRow(seed="000", where="Target Model Distribution ($p$):", what="target distribution p",
            seed_value="[0.4, 0.3, 0.2, 0.1]", specviz_value=lambda: tuple(japan()["target_probs"]),
            expected=(0.4, 0.3, 0.2, 0.1), agrees=True, settles=""),
    SeedRow(seed="000", where="Approx Model Distribution ($q$):", what="draft distribution q",
            seed_value="[0.5, 0.25, 0.15, 0.1]", specviz_value=lambda: tuple(japan()["draft_probs"]),
            expected=(0.5, 0.25, 0.15, 0.1), agrees=True, settles=""),
    SeedRow(seed="000", where="There is a 20% chance this guess is rejected", what="P(reject) of the draft \"is\"",
            seed_value="0.2",
            specviz_value=lambda: 1 - rejection.acceptance_table(japan()["target_probs"], japan()["draft_probs"])[0],
            expected=0.2, agrees=True, settles=""),
    SeedRow(seed="000", where="accept the guess if $r>\\frac{p(x)}{q(x)}$", what="the acceptance test",
            seed_value="accept if r > p(x)/q(x)", specviz_value=acceptance_rule,
            expected="accept when r is below p(x)/q(x)", agrees=False,
            settles="A draft must survive with probability p(x)/q(x) = 0.4/0.5 = 0.8, and P(r < 0.8) = 0.8 for "
                    "r ~ U(0, 1). The article's r > 0.8 keeps \"is\" with probability 0.2, its rejection probability, and "
                    "the output then follows [0.1, 0.45, 0.45, 0], not p = [0.4, 0.3, 0.2, 0.1]."),
    SeedRow(seed="000", where="We find $\\max(0, p(x) - q(x))$ for every token", what="max(0, p − q) per token",
            seed_value="[0, 0.05, 0.05, 0]",
            specviz_value=lambda: tuple(max(0.0, p - q) for p, q in zip(japan()["target_probs"],
                                                                       japan()["draft_probs"])),
            expected=(0.0, 0.05, 0.05, 0.0), agrees=True, settles=""),
    SeedRow(seed="000", where="These differences sum to $0.1$", what="Σ max(0, p − q), the residual's mass",
            seed_value="0.1", specviz_value=lambda: _japan_overlap("residual_mass"), expected=0.1, agrees=True,
            settles=""),
    SeedRow(seed="000", where="This value is $1 - \\beta$", what="1 − β, with β = Σ min(p, q)",
            seed_value="1 − β = 0.1", specviz_value=lambda: 1 - _japan_overlap("beta"), expected=0.1, agrees=True,
            settles=""),
    SeedRow(seed="000", where="Final Adjusted Probabilities:", what="the correction distribution p′",
            seed_value="[0, 0.5, 0.5, 0]", specviz_value=lambda: tuple(_japan_overlap("residual_probs")),
            expected=(0.0, 0.5, 0.5, 0.0), agrees=True, settles=""),
    SeedRow(seed="000", where="is distributed according to $p(x)$", what="the distribution the output follows",
            seed_value="p(x), the target's", specviz_value=output_follows, expected="p(x), the target's",
            agrees=True, settles=""),
]

SEED_001_PROOF_ROWS = [
    SeedRow(seed="001", where="let `$q$` be the draft model, and `$p$` be the target model",
            what="the distribution the proof's last line gives P(X = x), having named q the draft",
            seed_value="q(x), the draft's", specviz_value=output_follows, expected="p(x), the target's",
            agrees=False,
            settles="The proof names q the draft and p the target, then writes P(x̃ = x) = p(x) and ends on q(x): "
                    "it swaps them (its algorithm above uses Chen et al.'s letters, q the target). Term by term, "
                    "min(p, q) + max(0, p − q) = p: for the Japan example 0.4 + 0 = 0.4 for \"is\" and 0.25 + 0.05 = "
                    "0.3 for \"stock\", the target's p, not the draft's 0.5 and 0.25."),
]

SEED_003_ROWS = [
    SeedRow(seed="003", where="in $\\gamma$ forward passes through $M_q$", what="draft forwards per round, γ = 4",
            seed_value="γ = 4", specviz_value=lambda: simulated_rounds(1.0)["draft_forwards"], expected=4.0,
            agrees=True, settles=""),
    SeedRow(seed="003", where="pass them through $M_p$ in a single forward pass", what="target forwards per round",
            seed_value="1", specviz_value=lambda: simulated_rounds(1.0)["target_forwards"], expected=1.0,
            agrees=True, settles=""),
    SeedRow(seed="003", where="If all guesses are accepted ($n = \\gamma$)",
            what="tokens a round emits when all γ = 4 drafts pass (x₁..x_γ and x_{γ+1} from p_{γ+1})",
            seed_value="γ + 1 = 5", specviz_value=lambda: simulated_rounds(1.0)["tokens"], expected=5.0,
            agrees=True, settles=""),
    SeedRow(seed="003", where="we know the first guess that is rejected is $x_{n+1}$",
            what="tokens a round emits when the first draft is rejected (n = 0)", seed_value="n + 1 = 1",
            specviz_value=lambda: simulated_rounds(0.0)["tokens"], expected=1.0, agrees=True, settles=""),
    SeedRow(seed="003", where="If $r > \\frac{p(x)}{q(x)}$, we reject, otherwise we accept",
            what="the acceptance test", seed_value="reject if r > p(x)/q(x), otherwise accept",
            specviz_value=acceptance_rule, expected="accept when r is below p(x)/q(x)", agrees=True, settles=""),
]

SEED_004_ROWS = [
    SeedRow(seed="004", where="with GPT2-XLARGE as the Target Model and GPT2-SMALL as the Draft Model",
            what="the pair (target, draft): the gpt2-xl preset", seed_value="GPT2-XLARGE, GPT2-SMALL",
            specviz_value=lambda: presets.PRESETS["gpt2-xl"].models,
            expected=("openai-community/gpt2-xl", "openai-community/gpt2"), agrees=True, settles=""),
    SeedRow(seed="004", where="in just 7.9031 seconds - a 2.12x speedup",
            what="measured speedup, 16.8244 s plain against 7.9031 s speculative", seed_value="2.12x",
            specviz_value=lambda: measured_speedup(16.8244, 7.9031), expected=16.8244 / 7.9031, agrees=False,
            settles="16.8244 ÷ 7.9031 = 2.1288, which rounds to 2.13; 2.12 cuts the digits off."),
    SeedRow(seed="004", where="our theoretical speedup is:", what="round-cost speedup, r′ = 0.8125, K = 4, "
            "73.3 ms target, 11.9 ms draft", seed_value="2.46",
            specviz_value=lambda: calculator.r_prime_speedup(0.8125, 4, 73.3, 11.9),
            expected=0.8125 * 5 * 73.3 / (4 * 11.9 + 73.3), agrees=True, settles=""),
    SeedRow(seed="004", where="The paper tested on HumanEval and XSum with \\(K=4\\)",
            what="Chen et al.'s lookahead K", seed_value="K=4", specviz_value=lambda: calculator.CHEN_K, expected=4,
            agrees=True, settles=""),
    SeedRow(seed="004", where="For HumanEval, the theoretical speedup is 2.65",
            what="Chen et al.'s HumanEval point, r′ = 0.8, predicted", seed_value="2.65",
            specviz_value=lambda: calculator.r_prime_speedup(0.8), expected=0.8 * 5 * 14.1 / 21.3, agrees=True,
            settles=""),
    SeedRow(seed="004", where="while the measured speedup was 2.46", what="Chen et al.'s HumanEval speedup, measured",
            seed_value="2.46", specviz_value=lambda: calculator.CHEN_POINTS["HumanEval"][1], expected=2.46,
            agrees=True, settles=""),
    SeedRow(seed="004", where="For XSum, the theoretical speedup is 2.05",
            what="Chen et al.'s XSum point, r′ = 0.62, predicted", seed_value="2.05",
            specviz_value=lambda: calculator.r_prime_speedup(0.62), expected=0.62 * 5 * 14.1 / 21.3, agrees=True,
            settles=""),
    SeedRow(seed="004", where="while the measured speedup was 1.92", what="Chen et al.'s XSum speedup, measured",
            seed_value="1.92", specviz_value=lambda: calculator.CHEN_POINTS["XSum"][1], expected=1.92, agrees=True,
            settles=""),
    SeedRow(seed="004", where="which takes 14.1ms per token", what="Chinchilla 70B's time per token (target)",
            seed_value="14.1ms", specviz_value=lambda: calculator.CHEN_TARGET_MS * 1e-3, expected=0.0141,
            agrees=True, settles=""),
    SeedRow(seed="004", where="which takes 1.8ms per token", what="the draft's time per token",
            seed_value="1.8ms", specviz_value=lambda: calculator.CHEN_DRAFT_MS * 1e-3, expected=0.0018, agrees=True,
            settles=""),
    SeedRow(seed="004", where="the draft model is DeepMind's 7B Chinchilla", what="size of Chen et al.'s draft",
            seed_value="7B", specviz_value=chen_draft_parameters, expected=4e9, agrees=False,
            settles="Chen et al. 2023 draft with a 4B-parameter model trained like Chinchilla, and the 1.8 ms per "
                    "token the article quotes is that 4B model's time."),
]

# Every row of seeds 000-004 that the app quotes outside the course tab, in seed order.
SEED_ROWS: list[SeedRow] = (SEED_000_ROWS + SEED_001_ROWS + SEED_001_PROOF_ROWS + SEED_002_BANDWIDTH_ROWS + SEED_002_THEORY_ROWS
                            + SEED_003_ROWS + SEED_004_ROWS)
