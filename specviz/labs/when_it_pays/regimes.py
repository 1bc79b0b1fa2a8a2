"""When speculative decoding pays: it pays where a forward is bound by reading weights, not by arithmetic.

A verify forward over k tokens costs v(k) one-token forwards. Where the weights are read from memory once for all k
tokens (float32 weights on a CPU, any GPU at batch 1) v(k) stays near 1 for small k, and γ drafted tokens cost little
to check. Where each token's arithmetic dominates (4-bit weights in llama.cpp's CPU kernels, which unpack every weight
for every row) v(k) grows nearly as k, and a round that drafts k tokens pays for them whether they are accepted or not.
The predicted speedup at γ is E(α, γ) ÷ (γ·c + v(γ + 1)) (speedup.py); this view draws it for recorded regimes
(assets/regimes.json: each dated, with its machine and the command that measured it) and for the live run.

The two acceptance rules at T > 0, on the live run's own p and q:
- rejection sampling (Leviathan et al., specviz): accept x ~ q with probability min(1, p(x)/q(x)); a draft is accepted
  with probability β = Σ_x min(p(x), q(x));
- matching (llama.cpp's and mlx-lm's speculative decoding at T > 0): draw y ~ p and accept when y = x; a draft is
  accepted with probability Σ_x p(x)·q(x) ≤ β. Both are exact (the output follows p), matching accepts less often.

>>> weight_bound_up_to({1: 1.0, 2: 1.02, 4: 1.1, 8: 1.6, 16: 3.0})
4
>>> [round(value, 3) for value in acceptance_by_rule([0.6, 0.3, 0.1], [0.5, 0.4, 0.1])]
[0.9, 0.43]
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from specviz import paths
from specviz.core import theory
from specviz.trace import ACCEPTED, REJECTED

REGIMES_FILE = paths.ASSETS / "regimes.json"
WEIGHT_BOUND_V = 1.25  # a forward over k tokens "costs about one" while v(k) stays at or below this
MAX_GAMMA = 16


@dataclass(frozen=True)
class Regime:
    """One measured regime: a pair on a backend and a machine, with what the prediction needs."""

    name: str  # what it is, in a few words
    machine: str
    date: str  # when it was measured (YYYY-MM-DD)
    backend: str
    pair: str
    step_ms: float  # the target's one-token forward
    verify_cost: dict[int, float]  # v(k) at the sizes measured (theory.verify_cost_at reads between them)
    alpha: float  # the pair's α at T = 0
    c: float  # draft step ÷ target step
    source: str  # the command or file that measured it
    measured_speedup: float | None = None  # the benchmark's end-to-end speedup, where one was run
    measured_gamma: int | None = None  # ... at this γ
    # The live run's: its measured speedup's interval and its one prediction (analysis/speedup.py); None for a
    # recorded regime, and for a run without a plain run timed beside it
    measured_low: float | None = None
    measured_high: float | None = None
    run_predicted: float | None = None

    @property
    def is_live(self) -> bool:
        return self.source == LIVE_SOURCE

    @property
    def weight_bound_up_to(self) -> int:
        return weight_bound_up_to(self.verify_cost)

    def predicted(self, gamma: int) -> float:
        return theory.speedup_with_verify_cost(self.alpha, gamma, self.c, self.verify_cost)

    def best(self, max_gamma: int = MAX_GAMMA) -> tuple[int, float]:
        """(γ, predicted speedup) at the best γ; γ = 0 (plain decoding, 1.0×) where no γ pays."""
        gamma = max(range(1, max_gamma + 1), key=self.predicted)
        return (gamma, self.predicted(gamma)) if self.predicted(gamma) > 1 else (0, 1.0)


def load_regimes(path: Path = REGIMES_FILE) -> list[Regime]:
    """The recorded regimes, in the file's order (ValueError naming the file where one is malformed)."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))["regimes"]
        return [Regime(**{**row, "verify_cost": {int(k): float(v) for k, v in row["verify_cost"].items()}})
                for row in rows]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a regimes file ({error})") from None


def weight_bound_up_to(verify_cost: dict[int, float]) -> int:
    """The largest measured k whose forward costs at most WEIGHT_BOUND_V one-token forwards, every smaller measured k
    too: up to there a forward is bound by reading the weights; beyond, by arithmetic."""
    largest = 1
    for k in sorted(verify_cost):
        if verify_cost[k] > WEIGHT_BOUND_V:
            break
        largest = k
    return largest


def acceptance_by_rule(target_probs, draft_probs) -> tuple[float, float]:
    """(β, Σ p·q): the chance a draft x ~ q is accepted by rejection sampling, and by matching a y ~ p. Sequences or
    mappings id -> probability (a missing id weighs 0), each summing to 1 or to what of it is known."""
    if isinstance(target_probs, dict) or isinstance(draft_probs, dict):
        ids = set(target_probs) | set(draft_probs)
        pairs = [(target_probs.get(i, 0.0), draft_probs.get(i, 0.0)) for i in ids]
    else:
        pairs = list(zip(target_probs, draft_probs))
    return sum(min(p, q) for p, q in pairs), sum(p * q for p, q in pairs)


def live_rules(trace) -> dict | None:
    """The two rules' acceptance on the live run's tested drafts: β from the run's own record (overlap), Σ p·q over the
    top-10 lists of p and q it kept (the tail beyond them weighs little); None before any draft was tested. Each
    tested draft counts once: a correction carries its rejected draft's β too, and is left out."""
    overlaps, matches = [], []
    for round_ in trace.rounds:
        for token in round_.tokens:
            if (token.kind not in (ACCEPTED, REJECTED) or token.overlap is None or not token.target_top
                    or not token.draft_top):
                continue
            target = {top.token_id: top.prob for top in token.target_top}
            draft = {top.token_id: top.prob for top in token.draft_top}
            overlaps.append(token.overlap)
            matches.append(acceptance_by_rule(target, draft)[1])
    if not overlaps:
        return None
    return {"positions": len(overlaps), "rejection_sampling": sum(overlaps) / len(overlaps),
            "matching": sum(matches) / len(matches), "temperature": float(trace.config.get("temperature", 0))}


LIVE_SOURCE = "the live tab"


def live_regime(trace) -> Regime | None:
    """The live run as a regime: its target step, its v(k) at the widths it verified (only these: nothing is
    extrapolated), α and c, its measured speedup with its interval, and its one prediction (speedup.py's); None
    before a round."""
    from specviz.analysis.metrics import estimate_verify_cost, summarize
    from specviz.analysis.speedup import run_verify_cost

    if trace is None or not trace.rounds:
        return None
    metrics = summarize(trace)
    verify_cost = run_verify_cost(trace) or estimate_verify_cost(trace)
    if not verify_cost or metrics.target_step_ms <= 0:
        return None
    backend = trace.config.get("backend", "transformers")
    return Regime("this run", trace.device, "now", backend, f"{trace.target_name} ← {trace.draft_name}",
                  metrics.target_step_ms, verify_cost, min(max(metrics.alpha, 0.0), 0.999), max(metrics.c, 0.0),
                  LIVE_SOURCE, metrics.speedup_measured, int(trace.config["gamma"]), metrics.speedup_low,
                  metrics.speedup_high, metrics.speedup_predicted)


def verdict(regime: Regime) -> str:
    """Whether and why speculative decoding pays in this regime, in two sentences (Markdown). The live run is judged by
    its measured speedup and interval (live_verdict); a recorded regime by its recorded costs."""
    if regime.is_live:
        return live_verdict(regime)
    gamma, best = regime.best()
    bound = regime.weight_bound_up_to
    upto = "every size measured, up to" if bound == max(regime.verify_cost) else "up to"  # where the table ends
    reading = (f"A forward reads the weights once for {upto} **{bound} tokens** (v({bound}) = "
               f"{theory.verify_cost_at(regime.verify_cost, bound):.2f})" if bound > 1 else
               f"Already two tokens cost **{theory.verify_cost_at(regime.verify_cost, 2):.2f}** forwards: the forward is "
               "bound by arithmetic, not by reading the weights")
    if gamma == 0:
        pays = (f"No γ pays at its recorded α = {regime.alpha:.2f} and c = {regime.c:.2f}: decode plainly (adaptive γ "
                "chooses 0), or draft only where a copy is almost sure (prompt lookup, c ≈ 0, where text repeats).")
    else:
        pays = (f"It pays: **{best:.2f}×** predicted at γ = {gamma} from its recorded α = {regime.alpha:.2f} and "
                f"c = {regime.c:.2f}.")
    measured = ("" if regime.measured_speedup is None else
                f" Recorded end to end: **{regime.measured_speedup:.2f}×** at γ = {regime.measured_gamma}.")
    return f"{reading}. {pays}{measured}"


def live_verdict(regime: Regime) -> str:
    """The live run, judged by what it measured: it paid where its interval lies above 1×, it lost where below, and
    the run cannot tell where the interval holds 1×. Its costs are the widths it verified, in its own forwards."""
    widths = sorted(k for k in regime.verify_cost if k > 1)
    costs = ", ".join(f"v({k}) = {regime.verify_cost[k]:.2f}" for k in widths)
    reading = (f"Checking its drafts cost {costs} one-token forwards in this run" if costs else
               "It verified no drafts")
    predicted = ("" if regime.run_predicted is None else
                 f" Its one prediction, from its α = {regime.alpha:.2f}, c = {regime.c:.2f} and v(k): "
                 f"**{regime.run_predicted:.2f}×**.")
    if regime.measured_speedup is None:
        return (f"{reading}.{predicted} Tick *compare with plain decoding* to measure whether it paid: this tab judges "
                "a run by its measured speedup.")
    measured = f"**{regime.measured_speedup:.2f}×**"
    if regime.measured_low is not None:
        measured += f" ({regime.measured_low:.2f}–{regime.measured_high:.2f})"
        if regime.measured_low > 1:
            said = f"It paid: measured {measured} at γ = {regime.measured_gamma}, above 1× across its interval."
        elif regime.measured_high < 1:
            said = (f"It did not pay: measured {measured} at γ = {regime.measured_gamma}, below 1× across its "
                    "interval: decode plainly here, or let adaptive γ draft only where it pays.")
        else:
            said = (f"It cannot be told from plain decoding: measured {measured} at γ = {regime.measured_gamma}, and "
                    "its interval includes 1×.")
    else:
        said = f"Measured {measured} at γ = {regime.measured_gamma} (no interval: the plain run was not timed in turn)."
    return f"{said} {reading}.{predicted}"
