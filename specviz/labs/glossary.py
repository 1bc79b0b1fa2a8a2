"""Short definitions of every metric the app shows. Peers use these words inconsistently; this is what they
mean here, and the code (metrics.py, theory.py) computes exactly these."""

from __future__ import annotations

GLOSSARY: list[tuple[str, str]] = [
    ("p, q", "p is the target model's next-token distribution and q the draft's, both after the same "
             "temperature / top-k / top-p. At temperature 0 both are one-hot on their argmax."),
    ("γ (gamma)", "How many tokens the drafter proposes per round (iteration). The target scores all of them, plus "
                  "one more position, in a single forward pass."),
    ("round (iteration)", "One draft → verify → accept/reject cycle. It always emits between 1 and γ + 1 tokens."),
    ("β (beta)", "The overlap of p and q at one position: β = Σₓ min(p(x), q(x)). It is the probability that a "
                 "draft token sampled from q is accepted there."),
    ("D_LK", "Leviathan et al.'s divergence between p and q: D_LK(p, q) = Σₓ |p(x) − M(x)| with M = (p + q)/2, which "
             "equals 1 − Σₓ min(p(x), q(x)); so β = 1 − D_LK. A worked exercise: p = [0.8, 0.1, 0.05, 0.05], "
             "q = [0.7, 0.15, 0.1, 0.05]: D_LK = 0.1 and β = 0.9. Standardized by argmax (T = 0) both put all their "
             "mass on the first token, so β = 1 (the Sampling lab has it as a preset)."),
    ("α (alpha)", "The acceptance rate: the expected β over positions, α = E[β]. Measured as accepted drafts / "
                  "drafts that were tested. Drafts after the first rejection of a round are never tested and do not "
                  "count."),
    ("α at position i", "Accepted drafts at position i / rounds that reached position i (every earlier draft was "
                        "accepted). Under the i.i.d. assumption of the theory it is the same α at every i; in real "
                        "text it usually is not."),
    ("accepted length", "Drafts accepted in a round, 0..γ. Its mean is the mean accepted length *without* the "
                        "bonus token."),
    ("tokens per round", "Tokens a round emits: the accepted drafts plus the correction or bonus token, 1..γ+1. Its "
                         "mean is the mean accepted length *with* the bonus; theory: E = (1 − α^(γ+1)) / (1 − α). "
                         "Some papers call this 'acceptance length' τ."),
    ("correction", "After the first rejection the round ends with a token drawn from norm(max(0, p − q)), the "
                   "residual. This is what makes the output follow p exactly."),
    ("bonus token", "When all γ drafts pass, the target's forward already gave p at position γ + 1, so one more "
                    "token is drawn from it for free."),
    ("c", "The cost of one draft step relative to one target step (time per drafted token / target time per "
          "token). Prompt lookup has c ≈ 0. specviz measures it from the run's own timings."),
    ("v(k)", "The cost of one target forward over k tokens relative to a forward over 1 token. On a GPU v(k) ≈ 1 "
             "for small k (decoding is memory-bound); on a small CPU it grows with k, which eats the speedup."),
    ("theoretical speedup", "S = E / (γc + 1): tokens per round over the cost of a round in target steps, assuming "
                            "v(k) = 1. The verify-cost-aware variant is E / (γc + v(γ+1))."),
    ("measured speedup", "Wall time of plain decoding / wall time of speculative decoding, for the same prompt, "
                         "settings and number of tokens, on the same machine."),
    ("viability", "Some γ gives a speedup > 1 exactly when α > c (Leviathan et al., corollary 3.9); γ = 1 then "
                  "already guarantees (1 + α) / (1 + c)."),
    ("operations factor", "Total arithmetic relative to plain decoding, (γĉ + γ + 1) / E with ĉ the draft/target "
                          "operations per token. Speculative decoding does *more* arithmetic, faster."),
    ("lossless", "The output follows the target's distribution exactly (and greedy output is identical). Lenience "
                 "below 1 gives this up for a higher α; specviz only uses it in the losslessness lab."),
    ("TVD", "Total variation distance ½ Σ |a − b| between two distributions; 0 means identical. With N samples, "
            "sampling noise alone gives a TVD of about the noise band shown beside it."),
]


def glossary_markdown() -> str:
    """The glossary as one Markdown table."""
    rows = "\n".join(f"| **{term}** | {definition} |" for term, definition in GLOSSARY)
    return "| term | meaning |\n|---|---|\n" + rows
