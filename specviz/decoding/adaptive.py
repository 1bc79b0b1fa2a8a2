"""Adaptive γ: each round's draft length chosen from the running acceptance and the measured costs.

Before each round the engine asks for k ∈ [0, γ]. The choice maximises expected tokens per millisecond:

    score(k) = E_k / T(k)
    E_k      = 1 + Σ_{j=1..k} Π_{i=1..j} a_i      (the bonus or correction, plus each accepted draft)
    T(k)     = k · draft_step_ms + verify_ms(k + 1)

- a_i estimates P(draft i is accepted | drafts 1..i-1 were). It is a per-position rate, because acceptance
  comes in streaks (a copied passage is accepted whole). Its counts decay each round, so it follows the text.
  A draft model is scored by the acceptance tests of the drafts it sent; it starts from a prior of 0.5 and
  drifts back to it when it is not used, so a skipped drafter gets tried again. A costless drafter (prompt
  lookup) proposes before the choice, so all of its proposal is scored, sent or not, against the tokens the
  sequence then holds (see score_proposals); it starts from 0 and earns each longer draft from evidence.
- verify_ms(n) is the measured target forward over n tokens, v(k) in milliseconds (see verify_ms for sizes
  not timed yet).
- draft_step_ms is one draft forward. A costless drafter (prompt lookup) has already proposed when the
  choice is made, so its cost is sunk and only verification counts.

k = 0 is one plain decoding step: where drafting does not pay, adaptive γ decodes plainly.

The choice uses only earlier rounds (and, for a costless drafter, how many tokens it proposed), never this
round's target output or uniforms, so the output still follows the target's distribution exactly.

>>> controller = AdaptiveGamma(max_gamma=4)
>>> for _ in range(30):  # every draft accepted; verifying n tokens costs 30 + 2n ms
...     controller.observe_acceptance([1.0] * 4)
...     controller.observe_costs(draft_ms=0.0, draft_forwards=0, verify_ms=38.0, fed=5)
>>> controller.choose(4, costless=True)
4
"""

from __future__ import annotations

from dataclasses import dataclass

from specviz.core.theory import verify_cost_at
from specviz.drafters.acceptance import PositionalAcceptance
from specviz.drafters.base import BY_MODEL

DECAY = 0.95  # per-round forgetting of acceptance counts (memory of about 20 rounds)
COST_DECAY = 0.98  # per-observation forgetting of timings (they drift less than acceptance)
PRIOR_ALPHA = 0.5  # a_i before anything is seen, and where it drifts back to (a draft model: explore)
COSTLESS_PRIOR_ALPHA = 0.0  # every proposal of a costless drafter is scored for free, so it starts from evidence
PRIOR_WEIGHT = 1.0  # pseudo-observations behind the prior
PRIOR_SLOPE = 0.08  # verify cost per extra token, relative to one, before any size has been timed
CATCH_UP_STEADY = 2  # a draft model reads 1 or 2 tokens before drafting in a steady run (see observe_costs)
DRAFT_MARGIN = 0.05  # drafting must promise this much more than a plain step: the best of several noisy
#                      estimates is biased upward, and a drafted round has costs outside the forward


class FixedGamma:
    """The γ policy of a plain run: draft as many as the room allows. The interface every policy shares:

    - `before_draft(room)`: how many tokens to ask the drafter for;
    - `after_draft(start, proposal)`: how many of its proposal to send to the target;
    - `observe(sequence, accept_probs, timing)`: learn from the verified round.
    """

    def before_draft(self, room: int) -> int:
        return room

    def after_draft(self, start: int, proposal: list[int]) -> int:
        return len(proposal)

    def observe(self, sequence: list[int], accept_probs: list[float], timing: RoundTiming | None) -> None:
        pass


class ScriptedGamma(FixedGamma):
    """Draft lengths read from a recorded run, one per round: a replay asks for what the run asked of the
    drafter (`asked`, where recorded; a drafter cut at EOS drafted fewer) and keeps what the run drafted.

    >>> policy = ScriptedGamma([3, 0], asked=[5, None])
    >>> policy.before_draft(4), policy.after_draft(7, [1, 2, 3, 4]), policy.before_draft(4)
    (4, 3, 0)
    """

    def __init__(self, lengths: list[int], asked: list[int | None] | None = None):
        self.lengths = list(lengths)
        self.asked = [a if a is not None else n for a, n in zip(asked, lengths)] if asked else self.lengths
        self.round = 0

    def before_draft(self, room: int) -> int:
        length = self.asked[self.round] if self.round < len(self.asked) else room
        self.round += 1
        return min(length, room)

    def after_draft(self, start: int, proposal: list[int]) -> int:
        index = self.round - 1
        return min(len(proposal), self.lengths[index]) if 0 <= index < len(self.lengths) else len(proposal)


GammaPolicy = FixedGamma  # the interface: FixedGamma, ScriptedGamma and AdaptiveGamma all provide it


@dataclass(frozen=True)
class RoundTiming:
    draft_ms: float  # time spent drafting
    draft_forwards: int  # draft forwards in that time
    verify_ms: float  # the target's one forward and the accept/reject step
    fed: int  # tokens that forward read
    caught_up: int = 0  # tokens the draft model read before drafting (Draft.caught_up)
    source: str | None = None  # which part of the drafter filled the draft (Draft.source); None: nothing was drafted


def gamma_policy(max_gamma: int, adaptive: bool, costless: bool, target_forward_ms=(), draft_step_ms: float = 0.0):
    """FixedGamma, or AdaptiveGamma with the cost model of this drafter (costless: prompt lookup), its costs seeded
    with the pipeline's calibrated forwards where there are any (calibration.calibrate: the target's forward over
    k = 1, 2, .. tokens and one draft step), so that its first rounds already price drafts as this machine does."""
    if not adaptive:
        return FixedGamma()
    policy = AdaptiveGamma(max_gamma, COSTLESS_PRIOR_ALPHA if costless else PRIOR_ALPHA, costless)
    policy.seed_costs(list(target_forward_ms), draft_step_ms)
    return policy


class AdaptiveGamma:
    """Chooses each round's k by the score above. A costless drafter proposes first (its cost is sunk) and the
    choice trims its proposal; a draft model is told k before it drafts. Either way the same three calls."""

    def __init__(self, max_gamma: int, prior_alpha: float = PRIOR_ALPHA, costless: bool = False):
        self.max_gamma = max_gamma
        self.costless = costless
        self.scores = PositionalAcceptance(max_gamma, prior_alpha, PRIOR_WEIGHT, DECAY)  # a_i, and proposals watched
        self.verify_points: dict[int, list[float]] = {}  # fed tokens n -> [weight, mean ms]
        self.draft_step = [0.0, 0.0]  # [weight, mean ms per draft forward]

    def seed_costs(self, target_forward_ms: list[float], draft_step_ms: float) -> None:
        """Start from calibrated costs, as one observation each (the rounds' own timings soon outweigh them): the
        target's forward over k = 1, 2, .. tokens, and one draft forward. Where a forward is bound by arithmetic
        (v(2) ≈ 1.8 for 4-bit weights on llama.cpp) a draft model is then priced right from the first round, and
        adaptive γ decodes plainly instead of exploring drafts that cannot pay."""
        for fed, ms in enumerate(target_forward_ms, start=1):
            if ms > 0:
                self.verify_points[fed] = [1.0, ms]
        if draft_step_ms > 0:
            self.draft_step = [1.0, draft_step_ms]

    # ------------------------------------------------------------ estimates

    def acceptance(self) -> list[float]:
        """a_1..a_γ: the running conditional acceptance rate of each draft position."""
        return self.scores.rates()

    def expected_tokens(self, k: int) -> float:
        """E_k = 1 + Σ_j Π_{i≤j} a_i: tokens a round with k drafts yields on average."""
        return 1.0 + self.scores.expected_accepted(k)

    def verify_ms(self, fed: int) -> float:
        """Milliseconds of one target forward over `fed` tokens: the running mean where that size was timed,
        a straight line between timed sizes, and beyond the longest timed size that size's time. The last is
        optimistic on purpose: a longer draft that looks worth trying is tried once, timed, and then known (a
        line through short sizes alone would overprice long ones where v(k) bends, as on this CPU, and they
        would never be tried). Before any timing: relative units with a small slope."""
        if not self.verify_points:
            return 1.0 + PRIOR_SLOPE * (fed - 1)
        timed = {n: mean for n, (weight, mean) in self.verify_points.items()}
        return verify_cost_at(timed, fed, extrapolate=False)  # theory's v(k) model, held beyond the longest

    def round_ms(self, k: int, costless: bool) -> float:
        draft = 0.0 if costless else k * self.draft_step[1]
        return draft + self.verify_ms(k + 1)

    def choose(self, available: int, costless: bool) -> int:
        """The k in [0, available] with the most expected tokens per millisecond (ties go to the shorter), where
        a draft (k > 0) must beat a plain step (k = 0) by DRAFT_MARGIN."""
        available = max(0, min(available, self.max_gamma))
        scores = [self.expected_tokens(k) / self.round_ms(k, costless) for k in range(available + 1)]
        best = max(range(available + 1), key=lambda k: (scores[k], -k))
        return best if scores[best] >= scores[0] * (1.0 + DRAFT_MARGIN) else 0

    # ------------------------------------------------------------ the policy interface

    def before_draft(self, room: int) -> int:
        return room if self.costless else self.choose(room, costless=False)

    def after_draft(self, start: int, proposal: list[int]) -> int:
        if not self.costless:
            return len(proposal)
        self.watch_proposal(start, proposal)
        return self.choose(len(proposal), costless=True)

    def observe(self, sequence: list[int], accept_probs: list[float], timing: RoundTiming | None) -> None:
        """Learn from a verified round: acceptance (min(1, p/q) at the tested positions, or for a costless
        drafter its proposals scored against the sequence) and, when given, the round's timings.

        A round of lookup-then-draft may send prompt lookup's copy (timing.source BY_LOOKUP) instead of the model's
        draft: the k chosen here is the model's, so it learns from the model's drafts only (lookup keeps its own
        record in LookupThenModelDrafter). Learnt together, lookup's misses would drive k to 0 for good."""
        if self.costless:
            self.score_proposals(sequence)
        elif timing is None or timing.source == BY_MODEL:
            self.observe_acceptance(accept_probs)
        if timing is not None:
            self.observe_costs(timing.draft_ms, timing.draft_forwards, timing.verify_ms, timing.fed, timing.caught_up)

    # ------------------------------------------------------------ observations

    def observe_acceptance(self, accept_probs: list[float]) -> None:
        """Learn from one verified round of a draft model: min(1, p_i/q_i) at the tested positions 1..t (a draft
        after a rejection is never tested). Older rounds fade by DECAY."""
        self.scores.fade()
        for position, accept_prob in enumerate(accept_probs):
            self.scores.count(position, accept_prob)

    def watch_proposal(self, start: int, proposal: list[int]) -> None:
        """A costless drafter proposed these ids for sequence indices start, start+1, ..; however many of them
        are sent, each is scored once the sequence reaches its index (see score_proposals)."""
        self.scores.watch(start, proposal)

    def score_proposals(self, sequence: list[int]) -> None:
        """Score watched proposals against the tokens the sequence now holds at their indices; called once per
        round. Proposal token j, reached when tokens 1..j-1 matched, counts as accepted when the sequence
        holds it: for a one-hot q that has probability p(x_j) = min(1, p/q), the same law as the acceptance
        test, whether the token was verified (accepted, or replaced by a residual draw, which never repeats it)
        or not (then the sequence's token was drawn from p); see specviz/drafters/acceptance.py."""
        self.scores.score(sequence)

    def observe_costs(self, draft_ms: float, draft_forwards: int, verify_ms: float, fed: int, caught_up: int = 0) -> None:
        """Learn one round's timings: drafting with `draft_forwards` forwards, a target forward over `fed` tokens.

        A draft that first read more than CATCH_UP_STEADY tokens (a draft model's first call reads the whole prompt;
        after plain steps it reads every token decoded meanwhile) says nothing about one draft step: its time is
        not learnt. Learnt, it can price a draft step above the target's step, and adaptive γ would then never
        draft again (it learns draft costs only from drafts)."""
        self._add_verify_point(fed, verify_ms)
        if draft_forwards and caught_up <= CATCH_UP_STEADY:
            weight, mean = self.draft_step
            weight = weight * COST_DECAY + 1.0
            self.draft_step = [weight, mean + (draft_ms / draft_forwards - mean) / weight]

    def _add_verify_point(self, fed: int, verify_ms: float) -> None:
        for point in self.verify_points.values():
            point[0] *= COST_DECAY
        weight, mean = self.verify_points.get(fed, [0.0, 0.0])
        weight += 1.0
        self.verify_points[fed] = [weight, mean + (verify_ms - mean) / weight]
