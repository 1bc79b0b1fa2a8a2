"""Tier 1 and 2: the accept/reject step on hand-built distributions, exact identities, the exact law of the emitted
tokens by enumeration (fast), and seeded statistics (the slow tier)."""

import itertools
from collections import defaultdict

import pytest
import torch

from specviz.core.acceptance import EXACT, AcceptanceRule, Lenient
from specviz.core.sampling import residual, sample, sample_with_uniform
from specviz.core.verify import BONUS, CORRECTED, verify
from tests.stats import chi_square_p_value

TARGET = torch.tensor([0.4, 0.3, 0.2, 0.1])  # the "The Japan" example: {is, stock, girl, cherry}
DRAFT = torch.tensor([0.5, 0.25, 0.15, 0.1])


def test_textbook_residual_and_overlap():
    assert torch.allclose(residual(TARGET, DRAFT), torch.tensor([0.0, 0.5, 0.5, 0.0]))
    beta = torch.minimum(TARGET, DRAFT).sum()
    assert beta.item() == pytest.approx(0.9)


def test_textbook_single_draft_accept_and_reject():
    target_probs = torch.stack([TARGET, torch.tensor([0.0, 0.0, 1.0, 0.0])])  # [γ+1, V], γ = 1
    # x = "is": min(1, .4/.5) = .8. r = .79 accepts, then the bonus comes from p_2 (one-hot on token 2).
    accepted = verify(torch.tensor([0]), DRAFT.view(1, -1), target_probs, torch.tensor([0.79]), next_uniform=0.5)
    assert (accepted.accepted_count, accepted.next_token, accepted.next_kind) == (1, 2, BONUS)
    assert accepted.accept_probs == pytest.approx([0.8])
    # r = .8 rejects; the residual is [0, .5, .5, 0]: u = .25 lands on "stock", u = .75 on "girl".
    for uniform, expected in ((0.25, 1), (0.75, 2)):
        rejected = verify(torch.tensor([0]), DRAFT.view(1, -1), target_probs, torch.tensor([0.8]), next_uniform=uniform)
        assert (rejected.accepted_count, rejected.next_token, rejected.next_kind) == (0, expected, CORRECTED)


def test_forced_ten_token_case_two_accepted_third_rejected():
    vocab = 10
    draft_tokens = torch.tensor([3, 7, 1, 4])
    draft_probs = torch.full((4, vocab), 0.1)  # uniform q at every position
    target_probs = torch.zeros(5, vocab)
    target_probs[0, 3] = 1.0  # p(x1) = 1 ≥ q: accepted whatever r is
    target_probs[1, :] = 0.1  # p == q: ratio 1, accepted
    target_probs[2, 5] = 1.0  # p(x3 = 1) = 0: rejected whatever r is ...
    target_probs[3, 0] = target_probs[4, 0] = 1.0
    result = verify(draft_tokens, draft_probs, target_probs, torch.tensor([0.99, 0.99, 0.0, 0.0]), next_uniform=0.3)
    assert result.accepted_count == 2
    # ... and the correction is forced: norm(max(0, p - q)) is one-hot on token 5.
    assert (result.next_token, result.next_kind) == (5, CORRECTED)
    assert result.accept_probs == pytest.approx([1.0, 1.0, 0.0, 0.0])


def test_empty_draft_gives_a_bonus_from_p1():
    target_probs = torch.tensor([[0.0, 1.0, 0.0]])
    result = verify(torch.empty(0, dtype=torch.long), torch.empty(0, 3), target_probs, torch.empty(0), next_uniform=0.9)
    assert (result.accepted_count, result.next_token, result.next_kind) == (0, 1, BONUS)


def _random_pairs(count: int, vocab: int, generator: torch.Generator):
    """Random pairs, plus the hard cases: p == q, disjoint supports and one-hot distributions."""
    target = torch.softmax(3 * torch.randn(count, vocab, generator=generator), dim=-1)
    draft = torch.softmax(3 * torch.randn(count, vocab, generator=generator), dim=-1)
    draft[: count // 8] = target[: count // 8]  # p == q
    half = vocab // 2
    disjoint = slice(count // 8, count // 4)
    target[disjoint, half:] = 0
    draft[disjoint, :half] = 0
    onehot = slice(count // 4, 3 * count // 8)
    target[onehot] = torch.nn.functional.one_hot(torch.randint(vocab, (count // 8,), generator=generator), vocab).float()
    draft[onehot] = torch.nn.functional.one_hot(torch.randint(vocab, (count // 8,), generator=generator), vocab).float()
    return target / target.sum(-1, keepdim=True), draft / draft.sum(-1, keepdim=True)


def test_exact_identity_q_min_plus_rejection_times_residual_equals_p():
    """Σ_x q(x) min(1, p/q) leaves mass min(p, q) at each token; the residual adds back (1 - β) norm(max(0, p - q))."""
    generator = torch.Generator().manual_seed(0)
    target, draft = _random_pairs(4000, 12, generator)
    accept = torch.where(draft > 0, (target / draft.clamp(min=1e-30)).clamp(max=1), torch.zeros_like(draft))
    beta = torch.minimum(target, draft).sum(-1, keepdim=True)
    correction = residual(target, draft)
    assert torch.isfinite(correction).all()
    assert torch.allclose(correction.sum(-1), torch.ones(4000), atol=1e-5)
    assert torch.allclose(draft * accept + (1 - beta) * correction, target, atol=1e-5)


def test_no_nan_when_residual_has_no_mass():
    same = torch.tensor([0.25, 0.25, 0.5])
    assert torch.equal(residual(same, same), same)
    onehot = torch.tensor([0.0, 1.0, 0.0])
    result = verify(torch.tensor([1]), onehot.view(1, -1), torch.stack([onehot, onehot]), torch.tensor([0.999]),
                    next_uniform=0.999)
    assert (result.accepted_count, result.next_token) == (1, 1)


def test_sample_with_uniform_never_picks_zero_mass():
    probs = torch.tensor([0.0, 0.5, 0.0, 0.5, 0.0])
    picks = {int(sample_with_uniform(probs, u)) for u in torch.linspace(0, 0.999999, 1001)}
    assert picks == {1, 3}


def _speculative_draws(target, draft, samples, generator, always_accept=False, sampled_from=None):
    """`samples` independent one-draft rounds through verify() itself: x ~ q, r ~ U[0, 1), then accept or correct.

    Negative controls: always_accept passes p = 1 wherever q > 0, so every draft is accepted and tokens follow q;
    sampled_from draws x from that q′ while verify() is told q, the bug of a sampler that reports another q.
    """
    drafted = torch.multinomial(draft if sampled_from is None else sampled_from, samples, replacement=True,
                                generator=generator)  # [samples]
    uniforms = torch.rand(samples, generator=generator)
    next_uniforms = torch.rand(samples, generator=generator)
    target_probs = torch.stack([torch.where(draft > 0, 1.0, 0.0) if always_accept else target, target])  # [2, V]
    draws = []
    for x, r, u in zip(drafted.view(-1, 1), uniforms.view(-1, 1), next_uniforms):
        result = verify(x, draft.view(1, -1), target_probs, r, next_uniform=u)
        draws.append(int(x) if result.accepted_count == 1 else result.next_token)
    return torch.tensor(draws)


@pytest.mark.slow  # the exact law of every pair is enumerated in the fast tier (test_the_first_two_emitted_tokens_...)
def test_sampled_tokens_follow_the_target():
    """One sampled χ² test of the chain, on the pair its negative controls below fail."""
    generator = torch.Generator().manual_seed(1234)
    draws = _speculative_draws(TARGET, DRAFT, 20_000, generator)
    counts = torch.bincount(draws, minlength=4).float()
    assert chi_square_p_value(counts, TARGET) > 0.001
    assert (counts / counts.sum() - TARGET).abs().max() < 0.015


@pytest.mark.slow
def test_negative_control_always_accept_fails_the_same_test():
    generator = torch.Generator().manual_seed(1234)
    draws = _speculative_draws(TARGET, DRAFT, 20_000, generator, always_accept=True)
    counts = torch.bincount(draws, minlength=4).float()
    assert chi_square_p_value(counts, TARGET) < 1e-6  # it follows q, not p


OTHER_QS = [
    torch.tensor([0.25, 0.25, 0.25, 0.25]),  # some other q′
    torch.tensor([1.0, 0.0, 0.0, 0.0]),  # a greedy draft (argmax of q) that reports its softmax q
]


@pytest.mark.slow  # enumerated in the fast tier: test_negative_control_a_draft_that_reports_another_q_leaves_...
@pytest.mark.parametrize("really_sampled_from", OTHER_QS)
def test_negative_control_a_draft_that_reports_another_q_fails_the_test(really_sampled_from):
    generator = torch.Generator().manual_seed(1234)
    draws = _speculative_draws(TARGET, DRAFT, 2_000, generator, sampled_from=really_sampled_from)
    counts = torch.bincount(draws, minlength=4).float()
    assert chi_square_p_value(counts, TARGET) < 1e-6  # the output no longer follows p
    honest = _speculative_draws(TARGET, really_sampled_from, 2_000, torch.Generator().manual_seed(1234))
    assert chi_square_p_value(torch.bincount(honest, minlength=4).float(), TARGET) > 1e-3  # reporting q′ repairs it


# The exact law by enumeration. A toy world on V = 4 tokens: after the tokens c emitted or drafted so far, the target's
# row is the pair's p rolled by shift(c) and the draft's its q rolled by 2·shift(c), so p and q at the second position
# depend on the first token. Rows are float64: verify() keeps float64, and the sums are exact to ~1e-15.
PAIRS = {
    "textbook": (TARGET, DRAFT),
    "overlapping": (torch.tensor([0.5, 0.3, 0.1, 0.1]), torch.tensor([0.3, 0.4, 0.2, 0.1])),
    "far apart": (torch.tensor([0.05, 0.05, 0.6, 0.3]), torch.tensor([0.7, 0.1, 0.1, 0.1])),
    "disjoint supports": (torch.tensor([0.5, 0.5, 0.0, 0.0]), torch.tensor([0.0, 0.0, 0.5, 0.5])),
    "p == q": (TARGET, TARGET),
    "one-hot p": (torch.tensor([0.0, 1.0, 0.0, 0.0]), DRAFT),
    "one-hot q": (TARGET, torch.tensor([0.0, 0.0, 1.0, 0.0])),
}


def _world(target: torch.Tensor, draft: torch.Tensor):
    """(p, q): functions of the context c (a tuple of tokens) giving the target's and the draft's row [V]."""
    def shift(context):
        return sum((index + 1) * (token + 1) for index, token in enumerate(context))

    target, draft = target.double() / target.double().sum(), draft.double() / draft.double().sum()
    return lambda context: torch.roll(target, shift(context)), lambda context: torch.roll(draft, 2 * shift(context))


def _round_law(context, gamma, target_row, draft_row, rule=EXACT, drawn_from=None, stale_bonus=False,
               first_only=False) -> dict:
    """{emitted tokens: probability} of one verify() round after `context`, enumerated exactly: every draft
    sequence x (probability Π q_i(x_i) under `drawn_from`, by default the q verify is told), every number k of
    accepted drafts (Π_{i<k} a_i · (1 − a_k), the a_i read from verify's accept_probs), and the distribution
    verify itself draws the last token from (next_probs), driven there by r_i = 0 for i < k and r_k = a_k.

    stale_bonus: verify is handed p_γ again in place of p_{γ+1} (a row off by one, on the bonus only).
    first_only: {(x1,): probability}, the first token's law: the drafts after x1 are then fixed (at token 0), and
    every round that accepts x1 is counted as x1."""
    drawn_from = drawn_from or draft_row
    law = defaultdict(float)
    if first_only:
        sequences = [(first,) + (0,) * (gamma - 1) for first in range(4)]
    else:
        sequences = itertools.product(range(4), repeat=gamma)
    for drafts in sequences:
        weight = 1.0
        for index in range(1 if first_only else gamma):
            weight *= float(drawn_from(context + drafts[:index])[drafts[index]])
        if weight == 0:
            continue
        tokens = torch.tensor(drafts, dtype=torch.long)
        draft_probs = torch.stack([draft_row(context + drafts[:index]) for index in range(gamma)])  # [γ, V]
        target_probs = torch.stack([target_row(context + drafts[:index]) for index in range(gamma + 1)])  # [γ+1, V]
        if stale_bonus:
            target_probs[gamma] = target_probs[gamma - 1]
        accept = verify(tokens, draft_probs, target_probs, torch.zeros(gamma), next_uniform=0.0, rule=rule).accept_probs
        if first_only:
            law[drafts[:1]] += weight * accept[0]
        for accepted in range(1 if first_only else gamma + 1):
            stops = weight * (1 - accept[accepted]) if accepted < gamma else weight
            if stops > 0:
                uniforms = torch.zeros(gamma, dtype=torch.float64)
                if accepted < gamma:
                    uniforms[accepted] = accept[accepted]  # r = a rejects: the test is r < a
                result = verify(tokens, draft_probs, target_probs, uniforms, next_uniform=0.0, rule=rule)
                assert result.accepted_count == accepted
                for token, prob in enumerate(result.next_probs.tolist()):
                    law[drafts[:accepted] + (token,)] += stops * prob
            if accepted < gamma:
                weight *= accept[accepted]
    return law


def _two_token_law(gamma, target_row, draft_row, **variant) -> torch.Tensor:
    """[V, V]: P(x1, x2) of the first two tokens decoding emits, round after round (a round that emits one token is
    followed by a round after it), enumerated with _round_law."""
    law = torch.zeros(4, 4, dtype=torch.float64)
    for emitted, weight in _round_law((), gamma, target_row, draft_row, **variant).items():
        if len(emitted) >= 2:
            law[emitted[0], emitted[1]] += weight
        else:
            for after, more in _round_law(emitted, gamma, target_row, draft_row, first_only=True, **variant).items():
                law[emitted[0], after[0]] += weight * more
    return law


def _target_law(target_row) -> torch.Tensor:
    """[V, V]: p(x1) p(x2 | x1), the law decoding from the target alone gives."""
    return target_row(()).unsqueeze(1) * torch.stack([target_row((token,)) for token in range(4)])


def _total_variation(law: torch.Tensor, exact: torch.Tensor) -> float:
    return 0.5 * float((law - exact).abs().sum())


@pytest.mark.parametrize("gamma", [1, 2])
@pytest.mark.parametrize("pair", PAIRS)
def test_the_first_two_emitted_tokens_follow_the_target_exactly(pair, gamma):
    target_row, draft_row = _world(*PAIRS[pair])
    law = _two_token_law(gamma, target_row, draft_row)
    assert float(law.sum()) == pytest.approx(1.0, abs=1e-9)
    assert torch.allclose(law, _target_law(target_row), atol=1e-6, rtol=0)


def test_three_drafts_give_the_target_law_too():
    target_row, draft_row = _world(TARGET, DRAFT)
    assert torch.allclose(_two_token_law(3, target_row, draft_row), _target_law(target_row), atol=1e-6, rtol=0)


class _CorrectsFromTheTarget(AcceptanceRule):
    """The bug of a rejection that draws from p instead of norm(max(0, p − q))."""

    def replacement(self, p, q):
        return p


class _AcceptsEverything(AcceptanceRule):
    """Every draft accepted: the tokens follow q."""

    def at(self, p_at, q_at):
        return torch.ones_like(q_at)


@pytest.mark.parametrize("rule", [Lenient(lenience=0.5), _CorrectsFromTheTarget(), _AcceptsEverything()],
                         ids=["lenient 0.5", "residual replaced by p", "always accept"])
@pytest.mark.parametrize("gamma", [1, 2])
def test_negative_control_a_rule_that_is_not_exact_leaves_the_target_law(rule, gamma):
    target_row, draft_row = _world(TARGET, DRAFT)
    law, exact = _two_token_law(gamma, target_row, draft_row, rule=rule), _target_law(target_row)
    assert float(law.sum()) == pytest.approx(1.0, abs=1e-9)  # still a distribution, just not p's
    assert _total_variation(law, exact) > 0.01
    assert _total_variation(law.sum(1), exact.sum(1)) > 0.01  # the first token alone shows it


@pytest.mark.parametrize("really_sampled_from", OTHER_QS, ids=["uniform q'", "greedy one-hot q'"])
def test_negative_control_a_draft_that_reports_another_q_leaves_the_target_law_and_reporting_it_repairs_it(
        really_sampled_from):
    target_row, draft_row = _world(TARGET, DRAFT)
    drawn_from = _world(TARGET, really_sampled_from)[1]
    exact = _target_law(target_row)
    assert _total_variation(_two_token_law(2, target_row, draft_row, drawn_from=drawn_from), exact) > 0.01
    assert torch.allclose(_two_token_law(2, target_row, drawn_from), exact, atol=1e-6, rtol=0)  # honest about q′


def test_negative_control_a_bonus_from_the_wrong_row_is_seen_by_the_second_token_only():
    """With γ = 1 the bonus is always a second token: p_1 in place of p_2 leaves x1's law and breaks x2's."""
    target_row, draft_row = _world(TARGET, DRAFT)
    law, exact = _two_token_law(1, target_row, draft_row, stale_bonus=True), _target_law(target_row)
    assert torch.allclose(law.sum(1), exact.sum(1), atol=1e-6, rtol=0)
    assert _total_variation(law, exact) > 0.01


def test_lenience_accepts_what_the_exact_test_rejects_and_is_checked():
    target_probs = torch.tensor([[0.4, 0.3, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]])
    draft_probs = torch.tensor([[0.5, 0.25, 0.15, 0.1]])
    exact = verify(torch.tensor([0]), draft_probs, target_probs, torch.tensor([0.9]), next_uniform=0.0)
    lenient = verify(torch.tensor([0]), draft_probs, target_probs, torch.tensor([0.9]), next_uniform=0.0,
                     rule=Lenient(lenience=0.5))
    assert exact.accepted_count == 0 and exact.accept_probs == pytest.approx([0.8])
    assert lenient.accepted_count == 1 and lenient.accept_probs == pytest.approx([1.0])  # min(1, .4 / (.5 · .5))
    with pytest.raises(ValueError, match="lenience"):
        Lenient(lenience=0.0)


def _low_precision_case(dtype: torch.dtype, vocab: int = 1000, gamma: int = 4):
    """Random p [γ+1, V] and q [γ, V] rounded to `dtype`, drafts x ~ q, and uniforms placed just under the float32
    acceptance probabilities of the rounded values, where a comparison in half precision would go the other way."""
    generator = torch.Generator().manual_seed(3)
    target = torch.softmax(2 * torch.randn(gamma + 1, vocab, generator=generator), dim=-1).to(dtype)
    draft = torch.softmax(2 * torch.randn(gamma, vocab, generator=generator), dim=-1).to(dtype)
    drafts = sample(draft.float(), generator)  # [γ]
    positions = torch.arange(gamma)
    ratio = (target.float()[positions, drafts] / draft.float()[positions, drafts]).clamp(max=1.0)
    return drafts, draft, target, (ratio - 1e-4).clamp(min=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_inputs_give_the_float32_result(dtype):
    drafts, draft, target, uniforms = _low_precision_case(dtype)
    low = verify(drafts, draft, target, uniforms, next_uniform=0.37)
    full = verify(drafts, draft.float(), target.float(), uniforms, next_uniform=0.37)
    assert (low.accepted_count, low.next_token, low.next_kind) == (full.accepted_count, full.next_token, full.next_kind)
    assert low.accept_probs == full.accept_probs  # exactly: the same float32 arithmetic
    assert low.next_probs.dtype == torch.float32 and torch.equal(low.next_probs, full.next_probs)
    assert torch.equal(residual(target[:-1], draft), residual(target[:-1].float(), draft.float()))
    for uniform in torch.linspace(0, 0.999, 97):
        assert int(sample_with_uniform(target[0], uniform)) == int(sample_with_uniform(target[0].float(), uniform))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_the_half_precision_case_is_sensitive(dtype):
    """The comparison above has power: computed in the low dtype itself, the acceptance probabilities differ."""
    drafts, draft, target, _ = _low_precision_case(dtype)
    positions = torch.arange(drafts.numel())
    in_low = (target[positions, drafts] / draft[positions, drafts]).clamp(max=1.0).float()
    in_float32 = torch.tensor(verify(drafts, draft, target, torch.zeros(drafts.numel()), next_uniform=0.0).accept_probs)
    assert not torch.equal(in_low, in_float32)


@pytest.mark.parametrize("bad_id", [-1, 4, 1000])
def test_draft_ids_outside_the_vocabulary_are_refused(bad_id):
    target_probs = torch.stack([TARGET, TARGET])  # V = 4
    with pytest.raises(ValueError, match=r"draft ids must be in \[0, 4\)"):
        verify(torch.tensor([bad_id]), DRAFT.view(1, -1), target_probs, torch.tensor([0.5]), next_uniform=0.5)


@pytest.mark.parametrize("edge_id", [0, 3])
def test_draft_ids_at_both_ends_of_the_vocabulary_are_verified(edge_id):
    target_probs = torch.stack([TARGET, TARGET])
    result = verify(torch.tensor([edge_id]), DRAFT.view(1, -1), target_probs, torch.tensor([0.0]), next_uniform=0.5)
    assert result.accepted_count == 1
    assert result.accept_probs == pytest.approx([min(1.0, float(TARGET[edge_id] / DRAFT[edge_id]))])


def test_a_draft_vocabulary_of_another_size_is_refused():
    with pytest.raises(ValueError, match="shape mismatch"):
        verify(torch.tensor([0]), DRAFT[:3].view(1, -1) / DRAFT[:3].sum(), torch.stack([TARGET, TARGET]), torch.tensor([0.5]))
