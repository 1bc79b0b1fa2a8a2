"""What each number the page shows is and what it counts, said once: the stats panel, the glossary, the engine
vocabulary (counters.py) and Round anatomy quote DEFINITIONS rather than re-wording it (metrics.py computes them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Definition:
    """One number: the label the page gives it, its formula in words, and what it counts (or leaves out)."""

    label: str
    formula: str
    counts: str

    def sentence(self) -> str:
        """'label = formula: counts' (the glossary's and the hover's text)."""
        return f"{self.label} = {self.formula}: {self.counts}"


DEFINITIONS = {  # each number the live tab and Round anatomy show, defined here and nowhere else
    "alpha": Definition(
        "α", "accepted drafts ÷ tested drafts",
        "the per-token acceptance probability of the theory's E = (1 − α^(γ+1)) ÷ (1 − α); a draft after its round's "
        "first rejection is never tested, so it does not count"),
    "alpha_per_position": Definition(
        "α at position i", "drafts accepted at position i ÷ rounds that tested a draft there",
        "a round tests position i only when every earlier draft was accepted; the theory assumes one α everywhere"),
    "draft_acceptance_rate": Definition(
        "draft acceptance rate", "accepted drafts ÷ drafted tokens (llama.cpp: draft_n_accepted ÷ draft_n)",
        "every drafted token counts, tested or not, so it is below α whenever a rejection leaves drafts untested"),
    "mean_acceptance_length": Definition(
        "mean acceptance length", "1 + accepted drafts ÷ drafting rounds (vLLM)",
        "tokens a round that drafted yields, its correction or bonus included; rounds that drafted nothing are "
        "left out"),
    "tokens_per_round": Definition(
        "tokens per round", "generated tokens ÷ target calls (one per round)",
        "every round counts, plain steps (rounds that drafted nothing, such as round 1 for some drafters) included, "
        "so it is below the mean acceptance length when a round drafted nothing"),
    "draft_nodes_per_round": Definition("draft nodes per round", "drafted nodes ÷ rounds",
                                        "every node of each round's tree, tested or not; for a chain, its mean draft length"),
    "shared_mass": Definition("draft mass on shared tokens", "Σ over drafted tokens of the draft's own probability "
                              "on tokens both vocabularies hold ÷ drafted tokens", "a draft of another tokenizer "
                              "proposes only those; the rest of its belief costs acceptance, never exactness"),
    "alpha_tree": Definition("α (tree)", "accepted tokens ÷ depth levels tested", "a level is tested when the walk tried "
                             "a child there and counts once however many siblings it tried; for a chain, α. The "
                             "predicted speedup reads each tree as a chain of its depth accepting with this α"),
    "acceptance_by_depth": Definition("acceptance at depth d", "rounds that accepted a node at depth d ÷ rounds whose "
                                      "walk tested a node there", "for a chain, α at position d"),
    "acceptance_by_sibling_rank": Definition("acceptance of the r-th sibling", "r-th siblings accepted ÷ r-th siblings "
                                             "tested", "the r-th child tried under one parent in a round, tried after the "
                                             "r − 1 before it were rejected (Sequoia's acceptance vector)"),
    "draft_step": Definition(
        "draft step", "the time of one draft forward over one token",
        "this run's mean over its rounds of drafting time ÷ draft forwards, round 1 left out; where no plain run was "
        "timed with the run, the step timed once per model pair and device (calibration.calibrate)"),
    "target_step": Definition(
        "target step", "the time of one target forward over one token",
        "the plain run's mean one-token forward, timed in turn with this run's rounds; without a plain run, the "
        "step timed once per model pair and device, else this run's median verify forward (over k + 1 tokens, so it "
        "overstates a step on a CPU)"),
    "c": Definition(
        "c", "draft step ÷ target step",
        "what one drafted token costs in target steps (Leviathan et al.'s c); prompt lookup costs about 0"),
    "speedup_measured": Definition(
        "measured speedup", "this run's tokens/s ÷ a plain run's tokens/s",
        "the plain run decodes the same prompt on the same target, backend and settings in this process (tick compare "
        "with plain decoding); both times run from the prompt's first forward to the last token, so every overhead, "
        "the recording of the rounds and a verify forward's real cost are in it; the plain run decodes in turn with "
        "the rounds, on a cache of its own, so a busy moment slows both"),
    "speedup_interval": Definition(
        "interval", "where the measured speedup lies given this run's timing noise (95%)",
        "each round is paired with the plain tokens decoded right after it; the rounds' times in those plain tokens "
        "are resampled among rounds that drafted as many tokens, and the spread of the resampled speedups, scaled to "
        "the measured one, is the interval. When it includes 1×, the run cannot tell speculative decoding from plain"),
    "plain_spread": Definition(
        "plain spread", "how much the plain run's tokens varied: the middle 80% of their times ÷ their median",
        "a quiet machine keeps it to a few percent; a busy one spreads it"),
    "others_busy_cores": Definition(
        "other programs' load", "the CPU cores other programs kept busy, on average, while the runs were timed",
        "read from Linux's counters (/proc/stat) at the run's start and end; at a fifth of a core or more the page says "
        "the machine was busy"),
    "speedup_predicted": Definition(
        "predicted speedup", "Σ E(α, k) ÷ Σ (k·c + v(k + 1)) over the rounds",
        "what this run's α, c and v(k) predict, k being each round's drafts, c and v(k) from this run's own forwards "
        "against the plain steps timed in turn with them; Round anatomy's "
        "waterfall walks from it to the measured speedup in milliseconds per token"),
    "baseline_tokens_per_s": Definition(
        "plain tokens/s", "the plain run's tokens ÷ its wall time",
        "plain decoding of the same prompt, one target forward per token, prompt read included"),
    "tokens_per_s": Definition("tokens/s", "generated tokens ÷ this run's wall time (recording the rounds included)",
                               "model loading, the plain run and drawing the views are not in it"),
    "overhead": Definition(
        "outside model forwards", "wall time − time inside model forwards, per round",
        "sampling, acceptance tests, the residual draw and cache bookkeeping"),
}
