"""Tier 1 and 2 for the token tree: forced cases by hand, a chain against verify(), greedy against the target's
argmax, the exact law of whole 2-token sequences by enumeration (the exact rule gives p, a mislabelled q or a missing
residual update does not), and the same as seeded χ² tests in the slow tier."""

from collections import defaultdict

import pytest
import torch

from specviz.analysis.metrics import chi_square_test
from specviz.core import verify_tree as tree_verify
from specviz.core.sampling import Standardizer, draw_siblings, one_hot, sample
from specviz.core.verify import BONUS, CORRECTED, verify
from specviz.core.verify_tree import children_of, path_to, tree_depths, verify_tree

TARGET = torch.tensor([0.4, 0.3, 0.2, 0.1])  # the textbook example
DRAFT = torch.tensor([0.5, 0.25, 0.15, 0.1])


def test_tree_helpers():
    parents = [-1, -1, 0, 2, 0]
    assert tree_depths(parents) == [1, 1, 2, 3, 2]
    assert (children_of(parents, -1), children_of(parents, 0), children_of(parents, 3)) == ([0, 1], [2, 4], [])
    assert (path_to(parents, 3), path_to(parents, 1), path_to(parents, -1)) == ([0, 2, 3], [1], [])


def test_accept_the_first_child_then_bonus_at_the_leaf():
    # Root children 0 (token 0) and 1; min(1, .4/.5) = .8 and r = .79 accepts node 0, a leaf: bonus from row 1.
    target_probs = torch.stack([TARGET, one_hot(torch.tensor(2), 4), one_hot(torch.tensor(3), 4)])
    result = verify_tree(torch.tensor([0, 1]), [-1, -1], torch.stack([DRAFT, DRAFT]), target_probs,
                         torch.tensor([0.79, 0.0]), next_uniform=0.5)
    assert (result.path, result.next_token, result.next_kind, result.tested) == ([0], 2, BONUS, [0])
    assert result.accept_probs == pytest.approx([0.8, None])


# P = [.1, .4, .3, .2]; node 0 has token 0 from q_0 = [.5, .3, .1, .1]; node 1 token 1 from q_1 = q_0 without token 0.
SIBLING_TARGET = torch.tensor([[0.1, 0.4, 0.3, 0.2], [1.0, 0, 0, 0], [0, 0, 0, 1.0]])  # [n+1, V]: root, after 0, 1
SIBLING_DRAFT = torch.tensor([[0.5, 0.3, 0.1, 0.1], [0.0, 0.6, 0.2, 0.2]])  # [n, V]


def test_reject_the_first_sibling_and_accept_the_second_against_the_residual():
    # min(1, .1/.5) = .2 < r = .5: rejected. P := norm(max(0, P - q_0)) = [0, .1, .2, .1] / .4 = [0, .25, .5, .25].
    # Node 1: min(1, P(1) / q_1(1)) = .25 / .6 = 5/12 ≈ .4167; r = .4 accepts (the un-updated .4/.6 = 2/3 would too,
    # but r = .5 below separates the two). Node 1 is a leaf: bonus from row 2, one-hot on token 3.
    result = verify_tree(torch.tensor([0, 1]), [-1, -1], SIBLING_DRAFT, SIBLING_TARGET, torch.tensor([0.5, 0.4]),
                         next_uniform=0.1)
    assert (result.path, result.tested, result.next_token, result.next_kind) == ([1], [0, 1], 3, BONUS)
    assert result.accept_probs == pytest.approx([0.2, 5 / 12])


def test_all_siblings_rejected_gives_the_correction_from_the_twice_updated_residual():
    # r = .5 > 5/12 rejects node 1: P := norm(max(0, [0, .25, .5, .25] - [0, .6, .2, .2])) = [0, 0, .3, .05] / .35.
    for next_uniform, expected in ((0.5, 2), (0.9, 3)):
        result = verify_tree(torch.tensor([0, 1]), [-1, -1], SIBLING_DRAFT, SIBLING_TARGET, torch.tensor([0.5, 0.5]),
                             next_uniform=next_uniform)
        assert (result.path, result.tested, result.next_token, result.next_kind) == ([], [0, 1], expected, CORRECTED)
        assert torch.allclose(result.next_probs, torch.tensor([0, 0, 6 / 7, 1 / 7]))


def test_an_accepted_node_with_children_is_walked_into():
    # Node 0 accepted (P(0) = 1); its children 1 and 2 are tested against row 1; node 3 under the root never is.
    target_probs = torch.tensor([[1.0, 0, 0, 0], [0, 0.5, 0.5, 0], [0, 0, 0, 1.0], [0, 0, 1.0, 0], [1.0, 0, 0, 0]])
    draft_probs = torch.tensor([[0.5, 0.5, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0.25] * 4])
    result = verify_tree(torch.tensor([0, 1, 2, 1]), [-1, 0, 0, -1], draft_probs, target_probs,
                         torch.tensor([0.9, 0.6, 0.3, 0.0]), next_uniform=0.0)
    # Node 1: min(1, .5/1) = .5 < .6, rejected; P := [0, 0, 1, 0]; node 2: accepted, a leaf: bonus from row 3.
    assert (result.path, result.tested, result.next_token, result.next_kind) == ([0, 2], [0, 1, 2], 2, BONUS)
    assert result.accept_probs == pytest.approx([1.0, 0.5, 1.0, None])


def test_empty_tree_gives_a_bonus_from_row_0():
    result = verify_tree(torch.empty(0, dtype=torch.long), [], torch.empty(0, 3), torch.tensor([[0.0, 1.0, 0.0]]),
                         torch.empty(0), next_uniform=0.9)
    assert (result.path, result.tested, result.next_token, result.next_kind) == ([], [], 1, BONUS)


@pytest.mark.parametrize("seed", range(12))
def test_a_chain_gives_exactly_verify_result(seed):
    generator = torch.Generator().manual_seed(seed)
    gamma, vocab = 1 + seed % 6, 30
    target_logits = 2 * torch.randn(gamma + 1, vocab, generator=generator)
    target_probs = torch.softmax(target_logits, dim=-1)  # [γ+1, V]
    draft_probs = torch.softmax(target_logits[:-1] + torch.randn(gamma, vocab, generator=generator), dim=-1)  # [γ, V]
    draft_tokens = sample(draft_probs, generator)  # [γ]
    uniforms, next_uniform = torch.rand(gamma, generator=generator), torch.rand((), generator=generator)
    chain = verify(draft_tokens, draft_probs, target_probs, uniforms, next_uniform=next_uniform)
    tree = verify_tree(draft_tokens, list(range(-1, gamma - 1)), draft_probs, target_probs, uniforms, next_uniform)
    assert tree.path == list(range(chain.accepted_count))
    assert tree.tested == list(range(min(chain.accepted_count + 1, gamma)))
    assert (tree.next_token, tree.next_kind) == (chain.next_token, chain.next_kind)
    assert [tree.accept_probs[i] for i in tree.tested] == [chain.accept_probs[i] for i in tree.tested]
    assert torch.equal(tree.next_probs, chain.next_probs)


@pytest.mark.parametrize("seed", range(10))
def test_greedy_top_w_tree_follows_the_target_argmax(seed):
    """T = 0: one-hot p, children the draft's top-w, each q one-hot on itself. The emitted tokens are greedy decoding."""
    generator, vocab, width = torch.Generator().manual_seed(seed), 8, 3
    target_logits = torch.randn(vocab + 1, vocab, generator=generator)  # row 0: the root, row 1 + a: after token a
    draft_logits = target_logits + 0.8 * torch.randn(vocab + 1, vocab, generator=generator)
    greedy = Standardizer(0.0)
    tokens, parents, rows = [], [], [0]  # a full tree of width 3 and depth 2; rows: the target row of each entry
    frontier = [(-1, 0)]  # (node, its target row) whose children come next
    for _ in range(2):
        next_frontier = []
        for parent, row in frontier:
            for token in draft_logits[row].topk(width).indices.tolist():
                tokens.append(token)
                parents.append(parent)
                rows.append(1 + token)
                next_frontier.append((len(tokens) - 1, 1 + token))
        frontier = next_frontier
    draft_tokens = torch.tensor(tokens)
    target_probs = greedy(target_logits[rows])  # [n+1, V] one-hot rows
    result = verify_tree(draft_tokens, parents, one_hot(draft_tokens, vocab), target_probs, torch.rand(len(tokens)),
                         next_uniform=0.5)
    emitted = [tokens[node] for node in result.path] + [result.next_token]
    expected, row = [], 0  # greedy decoding of the target, as many tokens as were emitted
    for _ in emitted:
        expected.append(int(target_logits[row].argmax()))
        row = 1 + expected[-1]
    assert emitted == expected
    node, walked = -1, []  # the longest greedy prefix in the tree is the accepted path
    while match := [child for child in children_of(parents, node) if tokens[child] == expected[len(walked)]]:
        node = match[0]
        walked.append(node)
    assert result.path == walked
    assert result.next_kind == (BONUS if not children_of(parents, node) else CORRECTED)


# χ² over whole 2-token sequences. A first-order toy model on VOCAB tokens: row 0 is the distribution of x1, row
# 1 + a that of the token after a. The exact rule must give p(x1) p(x2 | x1); the critical values are at α = 0.001.
# SAMPLES keeps each test near 2 s on a loaded CPU (a round is ~0.5 ms of small torch ops). That size already puts
# realistic bugs far past the critical value: siblings tested against the un-updated p give χ² ≈ 400 at 2 000
# samples (critical 45, the control below); children drawn without replacement but labelled q gave χ² ≈ 110 at
# 5 000 samples (critical 48).
VOCAB, SAMPLES, ALPHA = 5, 4_000, 1e-3


def _toy_tables(standardizer: Standardizer, vocab: int = VOCAB):
    generator = torch.Generator().manual_seed(7)
    target_logits = 1.5 * torch.randn(vocab + 1, vocab, generator=generator)
    draft_logits = target_logits + 1.5 * torch.randn(vocab + 1, vocab, generator=generator)
    return standardizer(target_logits), standardizer(draft_logits)  # [V+1, V] each


def _iid(draft_row, width, generator):  # SpecInfer: every child drawn from q, with replacement
    return sample(draft_row.expand(width, -1), generator), draft_row.expand(width, -1)


def _top_k_labelled_q(draft_row, width, generator):  # the bug: deterministic top-k children, each said to be ~ q
    count = min(width, int((draft_row > 0).sum()))
    return draft_row.topk(count).indices, draft_row.expand(count, -1)


def _round(target, draft, state, children, generator) -> list[int]:
    """One tree round after a prefix whose target row is `state`: 3 root children, 2 under each of the first two.
    Returns the emitted tokens (the accepted path, then the correction or bonus)."""
    root_tokens, root_probs = children(draft[state], 3, generator)
    tokens, parents, probs = root_tokens.tolist(), [-1] * len(root_tokens), [root_probs]
    for node in range(min(2, len(tokens))):
        kid_tokens, kid_probs = children(draft[1 + tokens[node]], 2, generator)
        tokens += kid_tokens.tolist()
        parents += [node] * len(kid_tokens)
        probs.append(kid_probs)
    draft_tokens = torch.tensor(tokens)
    target_probs = torch.cat([target[state:state + 1], target[1 + draft_tokens]])  # [n+1, V]
    result = verify_tree(draft_tokens, parents, torch.cat(probs), target_probs, torch.rand(len(tokens), generator=generator),
                         generator=generator)
    return [tokens[node] for node in result.path] + [result.next_token]


def _sequence_counts(target, draft, children, samples=SAMPLES) -> torch.Tensor:
    """Counts [V·V] of (x1, x2) over `samples` runs, each of as many rounds as it takes to emit 2 tokens."""
    generator = torch.Generator().manual_seed(2024)
    counts = torch.zeros(VOCAB * VOCAB)
    for _ in range(samples):
        emitted = _round(target, draft, 0, children, generator)
        if len(emitted) < 2:
            emitted += _round(target, draft, 1 + emitted[0], children, generator)
        counts[emitted[0] * VOCAB + emitted[1]] += 1
    return counts


def _critical_value(dof: int, alpha: float = ALPHA) -> float:
    """The χ² value whose upper tail Q(dof/2, x/2) is alpha, by bisection."""
    low, high = 0.0, 1000.0
    for _ in range(60):
        middle = (low + high) / 2
        tail = float(torch.special.gammaincc(torch.tensor(dof / 2, dtype=torch.float64), torch.tensor(middle / 2)))
        low, high = (middle, high) if tail > alpha else (low, middle)
    return high


def _chi_square(target, counts):
    exact = (target[0].unsqueeze(1) * target[1:]).flatten()  # p(x1) p(x2 | x1), [V·V]
    statistic, dof, _ = chi_square_test(counts, exact)
    return statistic, _critical_value(dof)


STANDARDIZERS = {"T=1": Standardizer(1.0), "top-k 3": Standardizer(1.0, top_k=3),
                 "top-p .9": Standardizer(1.0, top_p=0.9)}


@pytest.mark.slow  # seconds; the fast tier enumerates these rounds exactly under each standardizer (test_the_exact_law_...)
def test_tree_rounds_without_replacement_follow_the_target():
    """One sampled χ² test of the tree, at T = 1 as its negative controls below."""
    target, draft = _toy_tables(STANDARDIZERS["T=1"])
    statistic, critical = _chi_square(target, _sequence_counts(target, draft, draw_siblings))
    print(f"without replacement: chi2 {statistic:.1f}, critical {critical:.1f}")
    assert statistic < critical


@pytest.mark.slow
def test_tree_rounds_with_iid_children_follow_the_target():
    target, draft = _toy_tables(STANDARDIZERS["T=1"])
    statistic, critical = _chi_square(target, _sequence_counts(target, draft, _iid))
    print(f"i.i.d.: chi2 {statistic:.1f}, critical {critical:.1f}")
    assert statistic < critical


@pytest.mark.slow
def test_negative_control_top_k_children_labelled_q_fails_the_same_test():
    target, draft = _toy_tables(STANDARDIZERS["T=1"])
    statistic, critical = _chi_square(target, _sequence_counts(target, draft, _top_k_labelled_q))
    print(f"negative control: chi2 {statistic:.1f}, critical {critical:.1f}")
    assert statistic > 10 * critical


@pytest.mark.slow
def test_negative_control_siblings_tested_against_the_un_updated_target_fails(monkeypatch):
    """The tree-specific step: without P := norm(max(0, P - q_c)) after a rejection, later siblings are over-accepted."""
    monkeypatch.setattr(tree_verify, "residual", lambda target_probs, draft_probs: target_probs)
    target, draft = _toy_tables(STANDARDIZERS["T=1"])
    statistic, critical = _chi_square(target, _sequence_counts(target, draft, draw_siblings, samples=SAMPLES // 2))
    print(f"no residual update: chi2 {statistic:.1f}, critical {critical:.1f}")
    assert statistic > 3 * critical


# The same rounds enumerated exactly. Every sibling draw of a tested node (with the exact q row the scheme reports),
# every accept or reject of a tested node (probability a or 1 − a, a read from verify_tree's accept_probs), and the
# distribution verify_tree draws the last token from (next_probs). Nodes are drawn lazily, when the walk first tests
# them: a node never tested does not change the walk, and its draws sum to 1. Float64 tables, so sums are exact to
# ~1e-15; V = 4 keeps each law to a few hundred calls.
EXACT_VOCAB = 4
WIDTHS = {(): 3, (0,): 2, (1,): 2}  # children by the parent's ranks from the root, as _round: 3, then 2 under each of two


def _options(scheme: str, parent_q: torch.Tensor, earlier: list[int]) -> list[tuple[int, float, torch.Tensor]]:
    """[(token, probability it is drawn, the q row verify_tree is told)] for the sibling after `earlier`."""
    if scheme == "without replacement":  # sampling.draw_siblings
        left = parent_q.clone()
        left[earlier] = 0
        row = left / left.sum() if earlier else parent_q
        return [(token, float(row[token]), row) for token in range(len(row)) if row[token] > 0]
    if scheme == "i.i.d.":
        return [(token, float(parent_q[token]), parent_q) for token in range(len(parent_q)) if parent_q[token] > 0]
    order = parent_q.topk(int((parent_q > 0).sum())).indices.tolist()  # "top-k labelled q": the bug, drawn with certainty
    return [(order[len(earlier)], 1.0, parent_q)]


def _sibling_count(scheme: str, parent_q: torch.Tensor, width: int) -> int:
    return width if scheme == "i.i.d." else min(width, int((parent_q > 0).sum()))  # no mass left: fewer siblings


def _exact_round_law(target, draft, state: int, scheme: str, first_only: bool = False) -> dict[tuple, float]:
    """{emitted tokens: probability} of one _round after a prefix whose target row is `state` (first_only: {(x1,): P})."""
    law = defaultdict(float)

    def build(drawn):  # the tree as drawn so far: undrawn nodes are placeholders (token 0, their parent's q)
        tokens, parents, rows, keys = [], [], [], []

        def add_children(parent_key, parent_index, parent_q):
            for rank in range(_sibling_count(scheme, parent_q, WIDTHS.get(parent_key, 0))):
                key = parent_key + (rank,)
                token, row, _ = drawn.get(key, (0, parent_q, None))
                tokens.append(token)
                parents.append(parent_index)
                rows.append(row)
                keys.append(key)

        add_children((), -1, draft[state])
        for index, key in enumerate(list(keys)):
            if key in drawn:
                add_children(key, index, draft[1 + tokens[index]])
        return tokens, parents, rows, keys

    def explore(drawn, decided):
        tokens, parents, rows, keys = build(drawn)
        uniforms = torch.tensor([0.0 if decided.get(key) else 1.0 for key in keys], dtype=torch.float64)
        draft_tokens = torch.tensor(tokens, dtype=torch.long)
        target_probs = torch.cat([target[state:state + 1], target[1 + draft_tokens]])  # [n+1, V]
        result = verify_tree(draft_tokens, parents, torch.stack(rows), target_probs, uniforms, next_uniform=0.0)
        weight = 1.0
        for node in result.tested:
            key = keys[node]
            if key not in drawn:  # the walk reached a node not drawn yet: branch on its draws
                parent_q = draft[state] if len(key) == 1 else draft[1 + drawn[key[:-1]][0]]
                earlier = [drawn[key[:-1] + (rank,)][0] for rank in range(key[-1])]
                for option in _options(scheme, parent_q, earlier):
                    explore({**drawn, key: (option[0], option[2], option[1])}, decided)
                return
            if key not in decided:  # r = 0 accepts (when a > 0); this run's r = 1 rejected it: carry on with that
                explore(drawn, {**decided, key: True})
                decided = {**decided, key: False}
            accept = result.accept_probs[node]
            weight *= drawn[key][2] * (accept if decided[key] else 1 - accept)
            if weight == 0:
                return
            if first_only and decided[key] and len(key) == 1:
                law[(tokens[node],)] += weight
                return
        emitted = tuple(tokens[node] for node in result.path)
        for token, prob in enumerate(result.next_probs.tolist()):
            law[emitted + (token,)] += weight * prob

    explore({}, {})
    return law


def _exact_sequence_law(target, draft, scheme: str) -> torch.Tensor:
    """[V, V]: P(x1, x2) of the first two tokens emitted, as _sequence_counts runs them (a round that emits one token
    is followed by a round after it)."""
    vocab = target.shape[1]
    law = torch.zeros(vocab, vocab, dtype=torch.float64)
    for emitted, weight in _exact_round_law(target, draft, 0, scheme).items():
        if len(emitted) >= 2:
            law[emitted[0], emitted[1]] += weight
        else:
            for after, more in _exact_round_law(target, draft, 1 + emitted[0], scheme, first_only=True).items():
                law[emitted[0], after[0]] += weight * more
    return law


def _exact_tables(name: str):
    target, draft = (table.double() / table.double().sum(-1, keepdim=True)
                     for table in _toy_tables(STANDARDIZERS[name], EXACT_VOCAB))
    return target, draft, target[0].unsqueeze(1) * target[1:]  # the last: p(x1) p(x2 | x1) [V, V]


@pytest.mark.parametrize("name,scheme", [(name, "without replacement") for name in STANDARDIZERS] + [("T=1", "i.i.d.")])
def test_the_exact_law_of_two_token_sequences_from_tree_rounds_is_the_target_s(name, scheme):
    target, draft, exact = _exact_tables(name)
    law = _exact_sequence_law(target, draft, scheme)
    assert float(law.sum()) == pytest.approx(1.0, abs=1e-9)
    assert torch.allclose(law, exact, atol=1e-6, rtol=0)


def test_negative_control_top_k_children_labelled_q_leave_the_exact_law():
    target, draft, exact = _exact_tables("T=1")
    law = _exact_sequence_law(target, draft, "top-k labelled q")
    assert float(law.sum()) == pytest.approx(1.0, abs=1e-9)  # a distribution, not p's
    assert 0.5 * float((law - exact).abs().sum()) > 0.01


def test_negative_control_siblings_tested_against_the_un_updated_target_leave_the_exact_law(monkeypatch):
    monkeypatch.setattr(tree_verify, "residual", lambda target_probs, draft_probs: target_probs)
    target, draft, exact = _exact_tables("T=1")
    law = _exact_sequence_law(target, draft, "without replacement")
    assert 0.5 * float((law - exact).abs().sum()) > 0.01


def test_draw_siblings_rows_are_the_distributions_drawn_from():
    draft_probs = torch.tensor([0.1, 0.2, 0.3, 0.4])
    tokens, probs = draw_siblings(draft_probs, 3, torch.Generator().manual_seed(0))
    assert len(set(tokens.tolist())) == 3 and torch.equal(probs[0], draft_probs)  # distinct; the first row is q itself
    for index in range(1, 3):
        expected = draft_probs.clone()
        expected[tokens[:index]] = 0
        assert torch.allclose(probs[index], expected / expected.sum())
    replayed = draw_siblings(draft_probs, 3, torch.Generator().manual_seed(0))
    assert torch.equal(replayed[0], tokens) and torch.equal(replayed[1], probs)


def test_draw_siblings_stops_when_no_mass_is_left():
    tokens, probs = draw_siblings(torch.tensor([0.5, 0.0, 0.5, 0.0]), 3, torch.Generator().manual_seed(1))
    assert sorted(tokens.tolist()) == [0, 2] and probs.shape == (2, 4)
    assert torch.equal(probs[1], one_hot(tokens[1], 4))  # the last token left, drawn with certainty
    empty_tokens, empty_probs = draw_siblings(torch.tensor([0.5, 0.5]), 0, torch.Generator())
    assert empty_tokens.shape == (0,) and empty_probs.shape == (0, 2)


def _random_round(generator, vocab=50):
    """A seeded depth-2 tree round: 3 root children without replacement, 2 under each. Returns verify_tree's inputs."""
    target_rows = torch.softmax(2 * torch.randn(vocab + 1, vocab, generator=generator), dim=-1)  # [V+1, V]
    draft_rows = torch.softmax(torch.log(target_rows) + torch.randn(vocab + 1, vocab, generator=generator), dim=-1)
    root_tokens, root_probs = draw_siblings(draft_rows[0], 3, generator)
    tokens, parents, probs = root_tokens.tolist(), [-1, -1, -1], [root_probs]
    for node in range(3):
        kid_tokens, kid_probs = draw_siblings(draft_rows[1 + tokens[node]], 2, generator)
        tokens, parents, probs = tokens + kid_tokens.tolist(), parents + [node, node], probs + [kid_probs]
    draft_tokens = torch.tensor(tokens)
    target_probs = torch.cat([target_rows[:1], target_rows[1 + draft_tokens]])
    return draft_tokens, parents, torch.cat(probs), target_probs, torch.rand(len(tokens), generator=generator)


@pytest.mark.parametrize("seed", range(4))
def test_replay_same_inputs_and_recorded_uniforms_give_the_same_result(seed):
    inputs = _random_round(torch.Generator().manual_seed(seed))
    generator = torch.Generator().manual_seed(99)
    first = verify_tree(*inputs, generator=generator)
    again = verify_tree(*_random_round(torch.Generator().manual_seed(seed)), generator=torch.Generator().manual_seed(99))
    recorded = verify_tree(*inputs, next_uniform=torch.rand((), generator=torch.Generator().manual_seed(99)))
    for other in (again, recorded):  # the next token used exactly one draw of the generator
        assert (other.path, other.tested, other.next_token, other.next_kind) == (
            first.path, first.tested, first.next_token, first.next_kind)
        assert other.accept_probs == first.accept_probs and torch.equal(other.next_probs, first.next_probs)
    assert not first.path or first.path == path_to(inputs[1], first.path[-1])  # a root-to-node path of the tree


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_inputs_give_the_float32_result(dtype):
    draft_tokens, parents, draft_probs, target_probs, uniforms = _random_round(torch.Generator().manual_seed(5))
    low = verify_tree(draft_tokens, parents, draft_probs.to(dtype), target_probs.to(dtype), uniforms, 0.3)
    full = verify_tree(draft_tokens, parents, draft_probs.to(dtype).float(), target_probs.to(dtype).float(), uniforms, 0.3)
    assert (low.path, low.tested, low.next_token, low.accept_probs) == (full.path, full.tested, full.next_token,
                                                                       full.accept_probs)
    assert low.next_probs.dtype == torch.float32 and torch.equal(low.next_probs, full.next_probs)


def test_a_64_node_tree_over_a_152k_vocabulary():
    """8 root children with 7 children each, i.i.d. from a uniform q (expanded, not copied). Only the walk's 5 tested
    nodes touch [V] rows: root children 0 and 1 are rejected, 2 accepted; under it node 22 rejected, 23 accepted."""
    vocab = 152_000
    parents = [-1] * 8 + [root for root in range(8) for _ in range(7)]  # [64]
    draft_tokens = torch.tensor(list(range(8)) + list(range(10, 17)) * 8)  # under every root child: tokens 10..16
    target_probs = torch.zeros(65, vocab)  # [n+1, V]
    target_probs[0, 2] = target_probs[3, 11] = target_probs[24, 99] = 1.0  # the root, after node 2, after node 23
    draft_probs = torch.full((vocab,), 1.0 / vocab).expand(64, vocab)  # [n, V]
    result = verify_tree(draft_tokens, parents, draft_probs, target_probs, torch.full((64,), 0.5), next_uniform=0.5)
    assert (result.path, result.tested, result.next_token, result.next_kind) == ([2, 23], [0, 1, 2, 22, 23], 99, BONUS)
    assert [result.accept_probs[node] for node in result.tested] == [0.0, 0.0, 1.0, 0.0, 1.0]


@pytest.mark.parametrize("change,message", [
    (dict(draft_tokens=torch.tensor([0, 4])), r"draft ids must be in \[0, 4\)"),
    (dict(draft_tokens=torch.tensor([-1, 0])), r"draft ids must be in \[0, 4\)"),
    (dict(parents=[-1, 1]), r"parents\[1\] = 1"),
    (dict(parents=[-2, 0]), r"parents\[0\] = -2"),
    (dict(parents=[-1]), "shape mismatch"),
    (dict(target_probs=torch.full((2, 4), 0.25)), "shape mismatch"),
    (dict(draft_probs=torch.full((2, 3), 1 / 3)), "shape mismatch"),
    (dict(uniforms=torch.zeros(3)), "shape mismatch"),
])
def test_bad_trees_are_refused(change, message):
    inputs = dict(draft_tokens=torch.tensor([0, 1]), parents=[-1, 0], draft_probs=torch.full((2, 4), 0.25),
                  target_probs=torch.full((3, 4), 0.25), uniforms=torch.zeros(2))
    with pytest.raises(ValueError, match=message):
        verify_tree(**(inputs | change), next_uniform=0.5)
