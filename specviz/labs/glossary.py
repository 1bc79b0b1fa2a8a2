"""Short definitions of every metric the app shows. Peers use these words inconsistently; this is what they
mean here, and the code (metrics.py, theory.py) computes exactly these. A run's numbers are quoted from
metrics.DEFINITIONS, where each is defined once."""

from __future__ import annotations

from specviz.analysis.metrics import DEFINITIONS


def _defined(key: str, more: str = "") -> str:
    """DEFINITIONS[key] as a glossary entry: formula, then what it counts, then `more`."""
    definition = DEFINITIONS[key]
    return f"{definition.formula[:1].upper()}{definition.formula[1:]}: {definition.counts}." + (f" {more}" if more else "")

# The course's Lesson 6 exercise (seed 002): β and D_LK of this p and q, raw and after argmax standardization.
DLK_EXERCISE_TARGET, DLK_EXERCISE_DRAFT = [0.8, 0.1, 0.05, 0.05], [0.7, 0.15, 0.1, 0.05]


def _argmax_one_hot(probs: list[float]) -> list[float]:
    """Argmax standardization: all the mass on the most likely token (the first of a tie)."""
    top = probs.index(max(probs))
    return [1.0 if index == top else 0.0 for index in range(len(probs))]


def dlk_exercise() -> dict:
    """The exercise's answers: β = Σ min(p, q) = 0.7 + 0.1 + 0.05 + 0.05 = 0.9, D_LK = 1 − β = 0.1, and after argmax
    both are one-hot on the first token, so β = 1.

    >>> {key: round(value, 6) for key, value in dlk_exercise().items()}
    {'beta': 0.9, 'dlk': 0.1, 'beta_argmax': 1.0}
    """
    beta = sum(min(p, q) for p, q in zip(DLK_EXERCISE_TARGET, DLK_EXERCISE_DRAFT))
    beta_argmax = sum(min(p, q) for p, q in zip(_argmax_one_hot(DLK_EXERCISE_TARGET),
                                                 _argmax_one_hot(DLK_EXERCISE_DRAFT)))
    return dict(beta=beta, dlk=1.0 - beta, beta_argmax=beta_argmax)


def dlk_exercise_text() -> str:
    """The exercise as the glossary states it, with the answers computed by dlk_exercise."""
    answers = dlk_exercise()
    return (f"A worked exercise (the course's Lesson 6): p = {DLK_EXERCISE_TARGET}, q = {DLK_EXERCISE_DRAFT}: "
            f"D_LK = {answers['dlk']:.2g} and β = {answers['beta']:.2g}. Standardized by argmax (T = 0) both put all "
            f"their mass on the first token, so β = {answers['beta_argmax']:g} (the Sampling lab has it as a preset).")


GLOSSARY: list[tuple[str, str]] = [
    ("p, q", "p is the target model's next-token distribution and q the draft's, both after the same "
             "temperature / top-k / top-p. At temperature 0 both are one-hot on their argmax."),
    ("γ (gamma)", "How many tokens the drafter proposes per round (iteration). The target scores all of them, plus "
                  "one more position, in a single forward pass."),
    ("round (iteration)", "One draft → verify → accept/reject cycle. It always emits between 1 and γ + 1 tokens."),
    ("β (beta)", "The overlap of p and q at one position: β = Σₓ min(p(x), q(x)). It is the probability that a "
                 "draft token sampled from q is accepted there."),
    ("D_LK", "Leviathan et al.'s divergence between p and q: D_LK(p, q) = Σₓ |p(x) − M(x)| with M = (p + q)/2, which "
             "equals 1 − Σₓ min(p(x), q(x)); so β = 1 − D_LK. " + dlk_exercise_text()),
    ("β̄ (mean overlap)", "The mean of β over a run's positions: the acceptance the exact rule expects there. The "
                           "Verification rules lab and You are the drafter show it; it is not α, which counts what "
                           "the run's draws did."),
    ("acceptance under a rule", "The mean P(accept) of one acceptance rule (lenient, typical, top-k) over the same "
                                "positions: the Verification rules lab's bars. Only the exact rule keeps the output "
                                "the target's, and only its count over the run's tested drafts is called α."),
    ("α (alpha)", _defined("alpha", "In theory it is the expected β over positions, α = E[β]. specviz writes α for "
                           "one number only: this run's exact-rule acceptance over its tested drafts, the same on "
                           "every tab.")),
    ("α at position i", _defined("alpha_per_position", "In real text it usually differs between positions.")),
    ("draft acceptance rate", _defined("draft_acceptance_rate")),
    ("mean acceptance length", _defined("mean_acceptance_length", "Without the 1 it is the mean accepted length.")),
    ("tokens per round", _defined("tokens_per_round", "A round emits 1..γ+1 tokens: the accepted drafts plus the "
                                  "correction or bonus; theory: E = (1 − α^(γ+1)) / (1 − α). Some papers call this "
                                  "'acceptance length' τ.")),
    ("correction", "After the first rejection the round ends with a token drawn from norm(max(0, p − q)), the "
                   "residual. This is what makes the output follow p exactly."),
    ("bonus token", "When all γ drafts pass, the target's forward already gave p at position γ + 1, so one more "
                    "token is drawn from it for free."),
    ("c", _defined("c", "The draft step: " + DEFINITIONS["draft_step"].counts + ". The target step: "
                   + DEFINITIONS["target_step"].counts + ".")),
    ("v(k)", "The cost of one target forward over k tokens relative to a forward over 1 token. On a GPU v(k) ≈ 1 "
             "for small k (decoding is memory-bound); on a small CPU it grows with k, which eats the speedup."),
    ("predicted speedup", _defined("speedup_predicted", "With every round drafting γ: S = E / (γc + v(γ+1)); the "
                                   "paper's E / (γc + 1) takes a verify forward to cost one step, as on a GPU.")),
    ("measured speedup", _defined("speedup_measured", "Round anatomy's waterfall walks from the predicted speedup to "
                                  "this one in milliseconds per token.")),
    ("viability", "Some γ gives a speedup > 1 exactly when α > c (Leviathan et al., corollary 3.9); γ = 1 then "
                  "already guarantees (1 + α) / (1 + c)."),
    ("operations factor", "Total arithmetic relative to plain decoding, (γĉ + γ + 1) / E with ĉ the draft/target "
                          "operations per token. Speculative decoding does *more* arithmetic, faster."),
    ("lossless", "The output follows the target's distribution exactly (and greedy output is identical). Lenience "
                 "below 1 gives this up for a higher α; specviz only uses it in the losslessness lab."),
    ("TVD", "Total variation distance ½ Σ |a − b| between two distributions; 0 means identical. With N samples, "
            "sampling noise alone gives a TVD of about the noise band shown beside it."),
]


def table_cell(text: str) -> str:
    """Text made safe for one Markdown table cell: a bare "|" would end the cell (Σ |p − q| cut at the bar).
    >>> table_cell("½ Σ |a − b|")
    '½ Σ \\\\|a − b\\\\|'
    """
    return text.replace("|", "\\|")


def glossary_markdown() -> str:
    """The glossary as one Markdown table."""
    rows = "\n".join(f"| **{table_cell(term)}** | {table_cell(definition)} |" for term, definition in GLOSSARY)
    return "| term | meaning |\n|---|---|\n" + rows
