"""bench/exactness.py: the per-token test that a sampler's tokens are the target's (PIT deciles and surprise z)."""

import dataclasses
import math

import pytest
import torch

from specviz.bench import exactness
from specviz.config import DecodeConfig
from specviz.decoding import engine
from tests.fakes import fake_pipeline


def test_the_pit_and_the_surprise_of_one_token_by_hand():
    probs = torch.tensor([[0.2, 0.5, 0.3]])
    terms = exactness.position_terms(probs, torch.tensor([2]), torch.tensor([0.5]))
    assert float(terms.pit[0]) == pytest.approx(0.5 + 0.5 * 0.3)  # 0.5 ranks before 0.3; 0.2 after
    entropy = -sum(p * math.log(p) for p in (0.2, 0.5, 0.3))
    assert float(terms.surprise[0]) == pytest.approx(-math.log(0.3) - entropy)
    assert float(terms.variance[0]) == pytest.approx(sum(p * math.log(p) ** 2 for p in (0.2, 0.5, 0.3)) - entropy ** 2)
    tie = exactness.position_terms(torch.tensor([[0.5, 0.5, 0.0]]), torch.tensor([1]), torch.tensor([0.0]))
    assert float(tie.pit[0]) == pytest.approx(0.5) and float(tie.variance[0]) == pytest.approx(0.0, abs=1e-12)


def _draws(sharpen: float, positions: int = 4000, vocab: int = 20, seed: int = 0) -> exactness.Terms:
    """Tokens drawn from p^sharpen (renormalized) at `positions` random p's, scored against p itself."""
    generator = torch.Generator().manual_seed(seed)
    probs = torch.softmax(2.0 * torch.randn(positions, vocab, generator=generator), dim=-1)  # [n, V]
    drawn_from = probs ** sharpen / (probs ** sharpen).sum(dim=1, keepdim=True)
    tokens = torch.multinomial(drawn_from, 1, generator=generator).squeeze(1)
    return exactness.position_terms(probs, tokens, torch.rand(positions, generator=generator, dtype=torch.float64))


def test_draws_from_p_pass_and_draws_from_a_flatter_or_sharper_p_fail():
    exact = exactness.verdict(_draws(1.0))
    assert exact["follows_target"] and exact["pit_p"] > 0.001 and abs(exact["z"]) < 3.3
    assert abs(exact["excess_nll"]) < 0.03 and sum(exact["deciles"]) == exact["tokens"] == 4000
    flatter = exactness.verdict(_draws(0.8))  # less likely texts: the nll rises, z > 0
    assert not flatter["follows_target"] and flatter["z"] > 4 and flatter["excess_nll"] > 0.05
    sharper = exactness.verdict(_draws(1.3))  # too likely texts (as greedy-leaning samplers): z < 0
    assert not sharper["follows_target"] and sharper["z"] < -4


CONFIG = DecodeConfig(target="fake-target", draft="fake-draft", gamma=3, temperature=1.0, seed=0, chat=False,
                      max_new_tokens=12)


def test_a_run_s_terms_score_each_of_its_tokens_against_the_target_s_own_p():
    """What run_terms pools: every token the engine emitted, each at its own position's p_t (one teacher-forced
    forward, as the scripted target gives it after that prefix)."""
    from specviz.core.sampling import Standardizer

    pipeline, prompt_ids = fake_pipeline(vocab_size=6, draft_salt=7), [ord(ch) % 6 for ch in "abcab"]
    tokens = exactness.generate(pipeline, "abcab", CONFIG, "specviz")
    assert tokens == engine.run_speculative(pipeline, "abcab", CONFIG).token_ids and len(tokens) == 12
    expected = torch.stack([Standardizer(1.0)(pipeline.target.logits_after(tuple(prompt_ids + tokens[:index])).view(1, -1))[0]
                            for index in range(len(tokens))])
    assert torch.allclose(exactness.target_probs(pipeline, "abcab", CONFIG, tokens), expected, atol=1e-6)
    terms = exactness.run_terms(pipeline, ["abcab"], CONFIG, 1, "specviz")
    chosen = expected[torch.arange(len(tokens)), torch.tensor(tokens)].double()
    assert terms.pit.numel() == len(tokens)
    entropy = -(expected.double() * expected.double().log()).sum(dim=1)
    assert torch.allclose(terms.surprise, -chosen.log() - entropy, atol=1e-5)


@pytest.mark.slow  # 240 engine runs; the terms of one run are checked above, the verdict on draws of known law too
def test_real_runs_of_the_engine_pass_and_a_lenient_rule_fails():
    pipeline = fake_pipeline(vocab_size=6, draft_salt=7)
    plain = exactness.verdict(exactness.run_terms(pipeline, ["abcab", "cab"], CONFIG, 40, "plain"))
    exact = exactness.verdict(exactness.run_terms(pipeline, ["abcab", "cab"], CONFIG, 40, "specviz"))
    assert plain["tokens"] == exact["tokens"] == 2 * 40 * 12
    assert plain["follows_target"] and exact["follows_target"]
    lenient_config = dataclasses.replace(CONFIG, lenience=0.2)
    lenient = exactness.verdict(exactness.run_terms(pipeline, ["abcab", "cab"], lenient_config, 40, "specviz"))
    assert not lenient["follows_target"] and lenient["z"] > 0  # it keeps the draft's tokens the target finds unlikely


def test_the_command_refuses_bad_settings_in_one_line(capsys):
    with pytest.raises(SystemExit) as stopped:
        exactness.main(["--target", "x", "--draft", "y", "--seeds", "0"])
    assert stopped.value.code == 2 and "--seeds" in capsys.readouterr().err
