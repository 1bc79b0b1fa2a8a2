"""How often a drafter's proposals are accepted at each draft position, learnt from the tokens the sequence holds.

Proposal token j, reached when tokens 1..j-1 matched, counts as accepted when the sequence then holds it at its
index. For a token drawn from q and verified, that has probability min(1, p/q), the acceptance test's own law: it is
accepted, or rejected and replaced by a draw from norm(max(0, p − q)), which is never the rejected token. For a
one-hot q (prompt lookup) the law holds whether or not the token was sent: an unsent token's index is drawn from p,
and p(x) = min(1, p(x)/1). So a costless drafter's every proposal is evidence, sent or not.

Counts fade by `decay` at each scoring, so the rates follow the text (a copied passage, then free prose).

>>> scores = PositionalAcceptance(positions=3, prior=0.0)
>>> scores.watch(start=2, proposal=[7, 8, 9])
>>> scores.score([1, 1, 7, 8, 5])  # 7 and 8 held, 5 where 9 was proposed
>>> [round(rate, 2) for rate in scores.rates()]
[0.5, 0.5, 0.0]
"""

from __future__ import annotations


class PositionalAcceptance:
    """Decayed per-position counts: `reached[i]` tests at draft position i, `accepted[i]` the sum of their outcomes
    (0/1 from the sequence, or min(1, p/q) where the engine's test is known), with `prior_weight` pseudo-tests at
    `prior` behind each rate."""

    def __init__(self, positions: int, prior: float, prior_weight: float = 1.0, decay: float = 0.95):
        self.prior, self.prior_weight, self.decay = prior, prior_weight, decay
        self.reached = [0.0] * positions
        self.accepted = [0.0] * positions
        self.watched: list[list] = []  # proposals still being scored: [start index, ids, next position]

    def rates(self) -> list[float]:
        """a_1..a_n: the running conditional acceptance rate at each draft position."""
        prior = self.prior_weight * self.prior
        return [(acc + prior) / (reach + self.prior_weight) for acc, reach in zip(self.accepted, self.reached)]

    def expected_accepted(self, k: int) -> float:
        """Σ_{j≤k} Π_{i≤j} a_i: how many of k drafts are accepted on average (the bonus or correction not counted)."""
        total, survive = 0.0, 1.0
        for rate in self.rates()[:k]:
            survive *= rate
            total += survive
        return total

    def watch(self, start: int, proposal: list[int]) -> None:
        """These ids were proposed for sequence indices start, start+1, ..: score each once the sequence has it."""
        if proposal:
            self.watched.append([start, proposal, 0])

    def score(self, sequence: list[int]) -> None:
        """Fade the counts, then score the watched proposals against the tokens the sequence now holds."""
        self.fade()
        watching = []
        for entry in self.watched:
            start, proposal, position = entry
            while position < len(proposal) and start + position < len(sequence):
                matched = sequence[start + position] == proposal[position]
                self.count(position, float(matched))
                position = position + 1 if matched else len(proposal)  # past a mismatch nothing is reached
            if position < len(proposal):
                entry[2] = position
                watching.append(entry)
        self.watched = watching

    def fade(self) -> None:
        self.reached = [value * self.decay for value in self.reached]
        self.accepted = [value * self.decay for value in self.accepted]

    def count(self, position: int, accepted: float) -> None:
        if position < len(self.reached):
            self.reached[position] += 1.0
            self.accepted[position] += accepted
