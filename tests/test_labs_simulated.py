"""The simulated-models lab: exact overlap, the real engine on simulated models, theory within sampling error."""

import functools
import math

import pytest
import torch

from specviz.analysis import metrics
from specviz.core import theory
from specviz.core.sampling import Standardizer
from specviz.decoding import engine
from specviz.labs.simulated_models import experiments, figures
from specviz.labs.simulated_models.models import PROMPT, SimulatedModel, WordTokenizer, simulated_config, simulated_pipeline
from specviz.views.render import rows_html

PROMPT_IDS = WordTokenizer()(PROMPT)["input_ids"]  # [0, 1]


def _random_prefixes(count: int, vocab: int, seed: int) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 30, (count,), generator=generator).tolist()
    return [torch.randint(0, vocab, (length,), generator=generator).tolist() for length in lengths]


@pytest.mark.parametrize("overlap", [0.0, 0.3, 0.75, 1.0])
def test_overlap_is_the_acceptance_probability_at_every_prefix(overlap):
    """Σ min(p, q) = β on the probabilities the engine actually uses (logits -> Standardizer at temperature 1)."""
    pipeline = simulated_pipeline(overlap, seed=5)
    standardize = Standardizer(temperature=1.0)
    for prefix in _random_prefixes(40, pipeline.target.vocab_size, seed=1):
        tokens = torch.tensor(PROMPT_IDS + prefix)
        pipeline.target.reset()
        pipeline.draft_model.reset()
        target_probs = standardize(pipeline.target.feed(tokens))[0]  # [V]
        draft_probs = standardize(pipeline.draft_model.feed(tokens))[0]  # [V]
        assert float(torch.minimum(target_probs, draft_probs).sum()) == pytest.approx(overlap, abs=1e-6)
        assert int((target_probs > 0).sum()) == pipeline.target.vocab_size // 2  # p lives on half the words



def test_cropping_gives_the_logits_of_a_fresh_feed():
    model = simulated_pipeline(0.5).draft_model
    model.feed(torch.tensor([0, 1, 2, 3, 4]))
    model.crop(2)
    after_crop = model.feed(torch.tensor([7, 8]), logits_to_keep=2)
    model.reset()
    fresh = model.feed(torch.tensor([0, 1, 7, 8]), logits_to_keep=2)
    assert model.cached_length == 4 and torch.equal(after_crop, fresh)
    model.crop(3)
    assert not torch.equal(model.feed(torch.tensor([9])), fresh[-1:])  # a different prefix, a different law


def test_tokenizer_reads_like_text():
    tokenizer = WordTokenizer(16)
    assert tokenizer.decode(tokenizer("The cat sat on a mat")["input_ids"]) == " the cat sat on a mat"
    assert tokenizer("zebra quokka")["input_ids"] == [532 % 16, 652 % 16]  # unknown words: their letters' codes


def test_a_run_renders_every_kind_and_reports_simulated_cost():
    trace = experiments.run(overlap=0.6, gamma=4, c=0.1, max_new_tokens=60, seed=3)
    html = rows_html(trace)
    for kind in ("accepted", "rejected", "corrected", "bonus"):
        assert f'class="sv-tok sv-{kind}"' in html
    assert "sat" in html or "ball" in html  # rows show words
    overlaps = [t.overlap for r in trace.rounds for t in r.tokens if t.kind in ("accepted", "rejected")]
    assert overlaps and all(abs(value - 0.6) < 1e-6 for value in overlaps)
    cost = sum(r.drafted * 0.1 + 1 for r in trace.rounds)
    assert experiments.simulated_speedup(trace, 0.1) == pytest.approx(60 / cost)
    summary = metrics.summarize(trace)  # the shared metrics read the simulated timings
    assert summary.c == pytest.approx(0.1) and summary.speedup_measured == pytest.approx(60 / cost)


@pytest.mark.parametrize("overlap", [0.0, 0.5, 1.0])
def test_greedy_output_is_the_targets_own_greedy_decoding(overlap):
    trace = experiments.run(overlap=overlap, gamma=3, c=0.1, max_new_tokens=30, seed=0, temperature=0.0)
    world = simulated_pipeline(overlap).target.world
    sequence = list(PROMPT_IDS)
    for _ in range(30):  # argmax of p after the whole prefix, computed without the engine
        sequence.append(int(world.distributions(world.hash_of(sequence))[0].argmax()))
    assert trace.token_ids == sequence[len(PROMPT_IDS):] == trace.baseline.token_ids


@pytest.mark.slow  # runs of hundreds of tokens; the fast tier has β = α at every prefix (above) and verify's exact law
@pytest.mark.parametrize("alpha,gamma", [(0.5, 3), (0.8, 5), (0.9, 2)])
def test_tokens_per_round_follow_the_capped_geometric_law(alpha, gamma):
    """Mean within 4 standard errors, the SE taken from the law's own variance and the number of rounds."""
    mean, _, rounds = experiments.round_statistics(alpha, gamma, n_tokens=600, seed=17)
    law = theory.tokens_per_round_distribution(alpha, gamma)
    expected = theory.expected_tokens(alpha, gamma)
    variance = sum(n * n * p for n, p in enumerate(law, start=1)) - expected**2
    tolerance = 4 * math.sqrt(variance / rounds)
    assert abs(mean - expected) <= tolerance
    wrong = theory.expected_tokens(alpha - 0.15, gamma)  # the test has the power to see a 0.15 error in α
    assert abs(mean - wrong) > tolerance


@pytest.mark.slow  # 1,500 tokens of runs
def test_simulated_vs_theory_rows_agree():
    rows = experiments.simulated_vs_theory(alpha=0.8, c=0.1, gammas=(3, 5, 7), n_tokens=500, seed=2)
    assert [row["gamma"] for row in rows] == [3, 5, 7]
    for row in rows:
        assert row["agrees"] and abs(row["speedup"] - row["speedup_theory"]) <= 4 * row["speedup_se"]
        assert row["speedup_theory"] == pytest.approx(theory.speedup(0.8, row["gamma"], 0.1), abs=1e-4)


@pytest.mark.slow  # 800 engine runs; the fast tier has the greedy and replay checks and verify's exact law
def test_speculative_output_follows_the_target_and_the_draft_does_not():
    rows = experiments.distribution_check(overlap=0.6, gamma=4, n_runs=800, seed=4)
    verdicts = {(row["event"], row["sampler"]): row for row in rows}
    for event in ("first token", "first two tokens"):
        assert verdicts[(event, "speculative (engine)")]["follows_target"]
        assert not verdicts[(event, "draft alone")]["follows_target"]
    assert verdicts[("first token", "draft alone")]["tvd"] == pytest.approx(1 - 0.6, abs=0.08)  # TVD(p, q) = 1 − β
    bars = experiments.first_token_frequencies(overlap=0.6, gamma=4, n_runs=800, seed=4)
    assert sum(row["target"] for row in bars) == pytest.approx(1.0, abs=1e-5)
    figure = figures.distribution_figure(bars, overlap=0.6)
    assert list(figure.data[1].y) == [row["speculative"] for row in bars]


@pytest.fixture
def fresh_openings():
    """The experiments' cached runs emptied before and after: a negative control's broken runs are cached by their
    settings, and no other test may read them."""
    experiments._openings.cache_clear()
    yield
    experiments._openings.cache_clear()


def _keep_off_by_one(model, path):
    """The kept entries read one place late: a rejected draft stays in the target's cache."""
    late = [node + 1 for node in path] if len(model.tree_hashes) > len(path) else path
    model.hashes.extend(model.tree_hashes[node] for node in late)
    model.tree_parents, model.tree_hashes = [], []


def test_negative_control_a_target_that_rolls_back_wrongly_leaves_its_greedy_decoding(monkeypatch):
    monkeypatch.setattr(SimulatedModel, "keep_path", _keep_off_by_one)
    trace = experiments.run(overlap=0.5, gamma=3, c=0.1, max_new_tokens=30, seed=0, temperature=0.0)
    assert any(round_.accepted < round_.drafted for round_ in trace.rounds)  # a rejection, so a rollback
    assert trace.token_ids != trace.baseline.token_ids


@pytest.mark.slow  # 800 engine runs; the fast tier catches the same bug greedily (above)
def test_negative_control_a_target_that_rolls_back_wrongly_is_caught(monkeypatch, fresh_openings):
    monkeypatch.setattr(SimulatedModel, "keep_path", _keep_off_by_one)
    rows = experiments.distribution_check(overlap=0.6, gamma=4, n_runs=800, seed=5)
    two_tokens = next(r for r in rows if r["event"] == "first two tokens" and r["sampler"] == "speculative (engine)")
    assert not two_tokens["follows_target"]


def _the_law(overlap, gamma, n_tokens, seed):
    """round_statistics' (mean, standard error, rounds) with the capped geometric law's own mean and no noise."""
    return theory.expected_tokens(overlap, gamma), 0.0, n_tokens


def test_the_viability_table_picks_gamma_1_at_alpha_c_and_confirms_with_the_law_s_speedups(monkeypatch):
    """The table's logic, with each simulated mean replaced by the law's own E(α, γ) (the slow test simulates it)."""
    monkeypatch.setattr(experiments, "round_statistics", _the_law)
    rows = experiments.viability_table(cs=(0.1, 0.3), gammas=(1, 2, 4), margin=0.15, n_tokens=400, seed=1)
    for row in rows:
        c = row["c"]
        assert row["min_alpha"] == pytest.approx(c, abs=1e-4) and row["best_gamma"] == 1  # corollary 3.9
        assert row["alpha_at_gamma_2"] == pytest.approx((math.sqrt(1 + 8 * c) - 1) / 2, abs=1e-4)  # α + α² = 2c
        assert row["alpha_at_gamma_1"] < row["alpha_at_gamma_2"] < row["alpha_at_gamma_4"]
        assert row["speedup_below"] == pytest.approx((1 + row["alpha_below"]) / (c + 1), abs=1e-4)
        assert row["confirmed"]
    assert experiments.break_even_alpha(3, 1.0) is None  # a draft as slow as the target never pays


@pytest.mark.slow  # 8 runs of 400 tokens
def test_viability_threshold_is_c():
    rows = experiments.viability_table(cs=(0.1, 0.3), gammas=(1, 2, 4), margin=0.15, n_tokens=400, seed=1)
    for row in rows:
        c = row["c"]
        assert row["min_alpha"] == pytest.approx(c, abs=1e-4) and row["best_gamma"] == 1  # corollary 3.9
        assert row["alpha_at_gamma_2"] == pytest.approx((math.sqrt(1 + 8 * c) - 1) / 2, abs=1e-4)  # α + α² = 2c
        assert row["alpha_at_gamma_1"] < row["alpha_at_gamma_2"] < row["alpha_at_gamma_4"]
        assert theory.speedup(row["alpha_at_gamma_4"], 4, c) == pytest.approx(1.0, abs=1e-4)
        assert row["confirmed"]
    assert experiments.break_even_alpha(3, 1.0) is None  # a draft as slow as the target never pays


def test_theory_table_and_speedup_figure():
    rows = experiments.theory_table(alphas=(0.6, 0.8), gammas=(1, 3, 5), c=0.05)
    assert len(rows) == 6 and sum(row["best"] for row in rows) == 2
    assert rows[4]["speedup"] == pytest.approx(theory.speedup(0.8, 3, 0.05), abs=1e-4)
    simulated_rows = experiments.simulated_vs_theory(alpha=0.7, c=0.1, gammas=(2, 4), n_tokens=150, seed=0)
    figure = figures.speedup_vs_gamma_figure(simulated_rows, alpha=0.7, c=0.1)
    assert list(figure.data[1].x) == [2, 4]
    assert list(figure.data[1].error_y.array) == [3 * row["speedup_se"] for row in simulated_rows]


def test_runs_replay_exactly():
    first = engine.run_speculative(simulated_pipeline(0.7), PROMPT, simulated_config(0.7, 4, 40, seed=9))
    again = engine.run_speculative(simulated_pipeline(0.7), PROMPT, simulated_config(0.7, 4, 40, seed=9))
    assert first.token_ids == again.token_ids and first.text.startswith(" ")


@pytest.mark.slow
def test_negative_control_corrections_drawn_from_the_target_are_caught(monkeypatch, fresh_openings):
    """The tilted draft makes norm(max(0, p − q)) differ from p, so skipping the residual changes the output."""
    monkeypatch.setattr("specviz.core.acceptance.residual", lambda target_probs, draft_probs: target_probs)  # rule's
    rows = experiments.distribution_check(overlap=0.6, gamma=4, n_runs=800, seed=6)
    first = next(r for r in rows if r["event"] == "first token" and r["sampler"] == "speculative (engine)")
    assert not first["follows_target"]


def test_the_experiment_tables_head_their_columns_in_words(monkeypatch):
    """No code names on the page (tokens_per_round_se, agrees): every experiment's headers are words, each once. The
    experiments run shorter here (the headers are their rows' keys, whatever their size)."""
    from specviz.app.tabs import simulated_models

    for name in ("distribution_check", "first_token_frequencies"):
        monkeypatch.setattr(experiments, name, functools.partial(getattr(experiments, name), n_runs=10))
    monkeypatch.setattr(experiments, "round_statistics", _the_law)

    for view, args in ((simulated_models.distribution_view, (0.8, 4, 0)), (simulated_models.theory_view, (0.05,)),
                       (simulated_models.viability_view, (0,))):
        shown = view(*args)
        headers = (shown[0] if isinstance(shown, tuple) else shown)["headers"]
        assert all("_" not in header for header in headers) and len(set(headers)) == len(headers), headers
    assert simulated_models.column_name("tokens_per_round_se") == "± (standard error)"
    assert simulated_models.column_name("alpha_at_gamma_4") == "α that pays at γ = 4"
