"""The cross-vocabulary case of the verification rules (labs/verification_rules/cross_vocab.py): renormalizing q over the shared
tokens is exact, giving the rule the draft's own q is not, and the process, enumerated exactly (fast) and sampled
(slow), agrees with the closed forms."""

import pytest
import torch

from specviz.analysis.metrics import chi_square_test
from specviz.labs.verification_rules.cross_vocab import EXACT, NAIVE, cross_vocab_outcomes


def _sample(p, q_own, told_naive: bool, samples: int, seed: int = 0) -> torch.Tensor:
    """Counts of the emitted token when x ~ q_own / s is tested against the exact or the naïve q."""
    generator = torch.Generator().manual_seed(seed)
    proposal = q_own / q_own.sum()
    told = q_own if told_naive else proposal
    counts = torch.zeros_like(p)
    residual = (p - told).clamp(min=0)
    residual = residual / residual.sum()
    for _ in range(samples):
        x = int(torch.multinomial(proposal, 1, generator=generator))
        if float(torch.rand((), generator=generator)) < min(1.0, float(p[x] / told[x])):
            counts[x] += 1
        else:
            counts[int(torch.multinomial(residual, 1, generator=generator))] += 1
    return counts


def _exact_law(p, q_own, told_naive: bool) -> torch.Tensor:
    """_sample's law, enumerated: Σ_x P(x proposed) (a(x) δ_x + (1 − a(x)) · the residual of the q told)."""
    proposal = q_own / q_own.sum()
    told = q_own if told_naive else proposal
    residual = (p - told).clamp(min=0)
    residual = residual / residual.sum()
    law = torch.zeros_like(p)
    for x in range(len(p)):
        if proposal[x] > 0:
            accept = min(1.0, float(p[x] / told[x]))
            law[x] += proposal[x] * accept
            law += proposal[x] * (1 - accept) * residual
    return law


P = torch.tensor([0.4, 0.25, 0.2, 0.1, 0.05], dtype=torch.float64)
Q_OWN = torch.tensor([0.3, 0.05, 0.15, 0.0, 0.1], dtype=torch.float64)  # 0.4 of the draft's mass is on its own tokens


def test_renormalized_q_emits_p_and_the_draft_s_own_q_does_not():
    exact, naive = cross_vocab_outcomes(P, Q_OWN)
    assert (exact.rule, naive.rule) == (EXACT, NAIVE) and exact.shared_mass == pytest.approx(0.6)
    assert torch.allclose(exact.emitted, P) and exact.distance == pytest.approx(0.0, abs=1e-12)
    assert naive.distance > 0.05 and naive.accept_prob > exact.accept_prob  # it accepts too often
    assert exact.accept_prob == pytest.approx(float(torch.minimum(P, Q_OWN / 0.6).sum()))  # β over the shared tokens
    for outcome in (exact, naive):
        assert outcome.emitted.sum() == pytest.approx(1.0)


def test_with_every_token_shared_the_two_coincide():
    q = torch.tensor([0.1, 0.5, 0.2, 0.1, 0.1], dtype=torch.float64)
    exact, naive = cross_vocab_outcomes(P, q)
    assert torch.allclose(exact.emitted, naive.emitted) and naive.distance == pytest.approx(0.0, abs=1e-12)


def test_the_enumerated_process_agrees_with_the_closed_forms():
    exact, naive = cross_vocab_outcomes(P, Q_OWN)
    assert torch.allclose(_exact_law(P, Q_OWN, False), exact.emitted, atol=1e-12)
    assert torch.allclose(_exact_law(P, Q_OWN, True), naive.emitted, atol=1e-12)
    assert 0.5 * float((_exact_law(P, Q_OWN, True) - P).abs().sum()) > 0.05  # the naïve rule's law is not p


@pytest.mark.slow  # 12,000 draws one by one; enumerated exactly above
def test_sampling_agrees_with_the_closed_forms():
    exact, naive = cross_vocab_outcomes(P, Q_OWN)
    for told_naive, outcome in ((False, exact), (True, naive)):
        counts = _sample(P, Q_OWN, told_naive, 4000)
        _, _, p_value = chi_square_test(counts, outcome.emitted)
        assert p_value > 0.001
    _, _, against_p = chi_square_test(_sample(P, Q_OWN, True, 4000, seed=1), P)
    assert against_p < 1e-6  # the naïve rule's output is caught against p


def test_bad_input_is_one_sentence():
    with pytest.raises(ValueError, match="must be in"):
        cross_vocab_outcomes(P, torch.zeros(5))
    with pytest.raises(ValueError, match="5 entries"):
        cross_vocab_outcomes(P, torch.ones(3) / 3)
