"""The losslessness lab through the real engine, on scripted models (the UI runs it on the offline target)."""

import dataclasses

import pytest

from specviz.config import DecodeConfig
from specviz.labs.losslessness import checks as lossless
from tests.fakes import fake_pipeline

CONFIG = DecodeConfig(target="fake-target", draft="fake-draft", gamma=3, temperature=1.0, seed=0, chat=False)
PROMPT = "abcab"


def _final(pipeline, config, runs):
    *_, check = lossless.check_distribution(pipeline, PROMPT, config, runs=runs, tokens=1)
    return check


@pytest.mark.slow  # 1,200 engine runs; the one-forward check and the greedy check below are the fast tier's
def test_exact_speculative_sampling_matches_p_and_plain_sampling():
    check = _final(fake_pipeline(vocab_size=4), CONFIG, runs=600)
    first = lossless.first_token_counts(check.speculative)
    assert check.runs == 600 and sum(first.values()) == 600
    assert check.tested >= 600  # the first token went through the accept/reject test in every run
    assert lossless.chi_square_against_exact(first, check.exact_first)[2] > 1e-3
    assert lossless.tvd_to_exact(first, check.exact_first) < 2 * lossless.noise_band(check.exact_first, 600)
    plain_first = lossless.first_token_counts(check.plain)
    assert lossless.chi_square_against_exact(plain_first, check.exact_first)[2] > 1e-3


@pytest.mark.slow
def test_lenience_raises_alpha_and_drifts_away_from_p():
    pipeline = fake_pipeline(vocab_size=4)
    checks = [_final(pipeline, dataclasses.replace(CONFIG, lenience=lenience), runs=600) for lenience in (1.0, 0.2)]
    exact, lenient = lossless.lenience_rows(checks)
    assert exact["lossless"] and not lenient["lossless"]
    assert lenient["alpha"] > exact["alpha"] + 0.1
    assert lenient["chi_square_p"] < 1e-6 < exact["chi_square_p"]
    assert lenient["tvd_to_p"] > lenient["noise_band"] > 0


def test_greedy_check_finds_identity_and_names_a_divergence():
    pipeline = fake_pipeline(vocab_size=5)
    result = lossless.check_greedy(pipeline, PROMPT, dataclasses.replace(CONFIG, max_new_tokens=24))
    assert result.identical and result.speculative_ids == result.plain_ids and "token for token" in result.explanation


def test_noise_band_shrinks_with_more_runs_and_bad_sizes_are_refused():
    exact = {0: 0.5, 1: 0.3, 2: 0.2}
    assert lossless.noise_band(exact, 4000) < lossless.noise_band(exact, 100) / 3
    with pytest.raises(ValueError):
        next(lossless.check_distribution(fake_pipeline(), PROMPT, CONFIG, runs=0))


@pytest.mark.parametrize("prefix,message", [("  ", "prefix is empty"), ("a\x00b", "control character"),
                                            ("x" * 60_000, "the limit is 50,000")])
def test_bad_prefixes_are_refused_before_any_model_loads(prefix, message):
    import gradio as gr

    from specviz.app.tabs import losslessness as lossless_tab

    with pytest.raises(gr.Error, match=message):
        list(lossless_tab.greedy_run(prefix))
    with pytest.raises(gr.Error, match=message):
        next(lossless_tab.lossless_run(prefix, 20, 1, 1.0, 1.0))
    with pytest.raises(gr.Error, match=message):
        next(lossless_tab.lenience_sweep(prefix, 20, 1.0))


def test_the_chi_square_verdict_states_its_threshold_and_settings_use_the_live_field_table():
    import gradio as gr

    from specviz.analysis.metrics import chi_square_verdict
    from specviz.app.tabs import losslessness as lossless_tab

    assert chi_square_verdict(0.0173) == "p-value 0.0173 ≥ 0.001: follows p"
    assert chi_square_verdict(2e-5) == "p-value 2e-05 < 0.001: does NOT follow p"
    with pytest.raises(gr.Error) as error:
        next(lossless_tab.lossless_run("Monday,", 20, 1, "hot", 1.0))
    assert error.value.message == "temperature must be a number from 0 to 2 (0 means greedy), got 'hot'."
    with pytest.raises(gr.Error) as error:
        next(lossless_tab.lossless_run("Monday,", 20, 1, 1.0, 0))
    assert error.value.message.startswith("lenience must be a number above 0 and at most 1 (1 is exact), got 0")
    with pytest.raises(gr.Error) as error:
        next(lossless_tab.lossless_run("Monday,", 5, 1, 1.0, 1.0))
    assert error.value.message == "Runs must be a whole number from 20 to 1000, got 5."


def test_the_one_forward_check_gives_each_seed_the_engines_first_token():
    """check_first_token (the lenience sweep's check) computes the first round once and draws only the uniforms: run
    i's first token must be exactly what the engine gives with seed + i, lenient or not."""
    from collections import Counter


    pipeline = fake_pipeline(vocab_size=5, drafter="ngram")
    for lenience in (1.0, 0.3):
        config = dataclasses.replace(CONFIG, lenience=lenience, draft="ngram")
        check = lossless.check_first_token(pipeline, PROMPT, config, runs=40)
        engine_first = Counter()
        for index in range(40):
            run = dataclasses.replace(config, seed=config.seed + index, max_new_tokens=2).validate()
            engine_first[tuple(lossless._first_tokens(pipeline, PROMPT, run, 1).token_ids[:1])] += 1
        assert check.runs == 40 and check.speculative == engine_first and check.tested == 40
    assert len(check.speculative) > 1  # a sample, not one token 40 times


def test_the_one_forward_check_refuses_a_drafter_that_draws():
    with pytest.raises(ValueError, match="prompt lookup"):
        lossless.check_first_token(fake_pipeline(vocab_size=4), PROMPT, CONFIG, runs=20)
