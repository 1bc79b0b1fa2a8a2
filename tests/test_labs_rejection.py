"""Sampling lab: textbook numbers by hand, the vectorized sampler against verify(), and seeded statistics in which
the correct sampler passes and every common mistake fails."""

import math

import pytest
import torch

from specviz.analysis.metrics import chi_square_test, total_variation
from specviz.labs.sampling_lab.figures import histogram_figure, overlap_figure, step_figure
from specviz.labs.sampling_lab.rejection import (
    MISTAKES,
    PRESETS,
    classical_rejection,
    exact_output_distribution,
    overlap,
    parse_distribution,
    sample_many,
    speculative_outputs,
    speculative_step,
    tvd_noise,
)

JAPAN = PRESETS["The Japan ... (textbook)"]
TARGET, DRAFT = JAPAN["target_probs"], JAPAN["draft_probs"]  # p = [.4, .3, .2, .1], q = [.5, .25, .15, .1]


def test_japan_textbook_numbers():
    beta_by_hand = 0.4 + 0.25 + 0.15 + 0.1  # Σ min(p, q)
    positive_part = [0.0, 0.3 - 0.25, 0.2 - 0.15, 0.0]  # max(0, p − q)
    facts = overlap(TARGET, DRAFT)
    assert facts["beta"] == pytest.approx(0.9) == pytest.approx(beta_by_hand)
    assert facts["min_probs"] == pytest.approx([0.4, 0.25, 0.15, 0.1])
    assert facts["residual_mass"] == pytest.approx(1 - beta_by_hand)
    assert facts["residual_probs"] == pytest.approx([x / sum(positive_part) for x in positive_part])  # [0, .5, .5, 0]
    classical = classical_rejection(TARGET, DRAFT)
    assert classical["bound"] == pytest.approx(4 / 3)  # p/q = [.8, 1.2, 4/3, 1]: "girl" sets M
    assert classical["acceptance"] == pytest.approx(0.75)
    assert classical["envelope"] == pytest.approx([4 / 3 * x for x in DRAFT])
    assert all(m >= t - 1e-12 for m, t in zip(classical["envelope"], TARGET))  # M·q covers p


@pytest.mark.parametrize("name", list(PRESETS))
def test_speculative_acceptance_beats_classical_and_output_is_exactly_p(name):
    preset = PRESETS[name]
    classical = classical_rejection(preset["target_probs"], preset["draft_probs"], preset["vocab"])
    assert classical["beta"] >= classical["acceptance"] - 1e-12  # β ≥ 1/M
    produced = exact_output_distribution(preset["target_probs"], preset["draft_probs"])
    assert produced == pytest.approx(preset["target_probs"], abs=1e-12)


def test_draft_with_a_zero_has_no_finite_bound_but_the_residual_restores_the_token():
    preset = PRESETS["Draft misses a token (q = 0)"]
    classical = classical_rejection(preset["target_probs"], preset["draft_probs"], preset["vocab"])
    assert math.isinf(classical["bound"]) and classical["acceptance"] == 0.0 and classical["envelope"] is None
    assert "'d'" in classical["explanation"]
    assert overlap(preset["target_probs"], preset["draft_probs"])["residual_probs"] == pytest.approx([0, 0, 0, 1])


def test_step_replays_the_textbook_accept_and_reject():
    # x = "is" (u = .1 < q(is) = .5), min(1, .4/.5) = .8; r = .9 rejects and .75 lands on "girl" in p′ = [0, .5, .5, 0].
    rejected = speculative_step(TARGET, DRAFT, uniforms=[0.1, 0.9, 0.75])
    assert [rejected[key] for key in ("draft_token", "accepted", "corrected_token", "output_token")] == [0, False, 2, 2]
    assert rejected["accept_prob"] == pytest.approx(0.8)
    assert rejected["residual_probs"] == pytest.approx([0, 0.5, 0.5, 0]) and rejected["residual_mass"] == pytest.approx(0.1)
    accepted = speculative_step(TARGET, DRAFT, uniforms=[0.1, 0.79, 0.75])
    assert (accepted["accepted"], accepted["output_token"], accepted["residual_probs"]) == (True, 0, None)
    boundary = speculative_step(TARGET, DRAFT, uniforms=[0.1, 0.8, 0.25])  # r = min(1, p/q) exactly: rejected
    assert (boundary["accepted"], boundary["output_token"]) == (False, 1)
    drawn = speculative_step(TARGET, DRAFT, torch.Generator().manual_seed(3))
    replay = [drawn["draft_uniform"], drawn["uniform"], drawn["correction_uniform"]]
    assert drawn == speculative_step(TARGET, DRAFT, uniforms=replay)


@pytest.mark.parametrize("name", ["The Japan ... (textbook)", "Draft misses a token (q = 0)", "Far apart"])
def test_vectorized_sampler_is_verify_token_for_token(name):
    preset = PRESETS[name]
    uniforms = torch.rand(3, 300, generator=torch.Generator().manual_seed(7), dtype=torch.float64)  # [3, n]
    # The first 20 put r exactly on the boundary r = min(1, p(x)/q(x)), where both must reject.
    ratios = classical_rejection(preset["target_probs"], preset["draft_probs"])["ratios"]
    accept_probs = torch.tensor(ratios, dtype=torch.float64).clamp(max=1)  # [V] min(1, p/q)
    tokens = torch.arange(20) % 4
    draft_cdf = torch.tensor(preset["draft_probs"], dtype=torch.float64).cumsum(0)
    uniforms[0, :20] = draft_cdf[tokens] - 0.05  # x = token, where q(token) > 0
    uniforms[1, :20] = accept_probs[tokens]
    vectorized = speculative_outputs(preset["target_probs"], preset["draft_probs"], uniforms).tolist()
    one_by_one = [speculative_step(preset["target_probs"], preset["draft_probs"], uniforms=column)["output_token"]
                  for column in uniforms.T]
    assert vectorized == one_by_one


def test_mistakes_exact_distributions_by_hand():
    assert exact_output_distribution(TARGET, DRAFT, "accept_if_r_greater") == pytest.approx([0.1, 0.45, 0.45, 0.0])
    assert exact_output_distribution(TARGET, DRAFT, "resample_from_target") == pytest.approx([0.44, 0.28, 0.17, 0.11])
    assert exact_output_distribution(TARGET, DRAFT, "wrong_draft") == pytest.approx([0.5675, 0.2725, 0.12, 0.04])
    # q′ = q is no mistake at all; q′ = p accepts every draft, so the output follows q.
    assert exact_output_distribution(TARGET, DRAFT, "wrong_draft", wrong_draft_probs=DRAFT) == pytest.approx(TARGET)
    assert exact_output_distribution(TARGET, DRAFT, "wrong_draft", wrong_draft_probs=TARGET) == pytest.approx(DRAFT)
    same = PRESETS["Identical p and q"]["target_probs"]  # nothing is rejected, so these two mistakes are invisible
    for mistake in ("accept_if_r_greater", "resample_from_target"):
        assert exact_output_distribution(same, same, mistake) == pytest.approx(same)


def test_correct_sampler_passes_at_a_million_samples():
    counts = sample_many(TARGET, DRAFT, 1_000_000, torch.Generator().manual_seed(2023))
    statistic, dof, p_value = chi_square_test(counts, TARGET)
    assert dof == 3 and p_value > 1e-3
    assert total_variation([c / 1e6 for c in counts], TARGET) < 3 * tvd_noise(TARGET, 1_000_000)


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_every_mistake_fails_and_matches_its_own_exact_distribution(mistake):
    counts = sample_many(TARGET, DRAFT, 1_000_000, torch.Generator().manual_seed(2023), mistake=mistake)
    assert chi_square_test(counts, TARGET)[2] < 1e-6
    produced = exact_output_distribution(TARGET, DRAFT, mistake)
    assert total_variation(produced, TARGET) > 0.04
    assert chi_square_test(counts, produced)[2] > 1e-3  # the closed form is what the buggy sampler really does


def test_total_variation_and_its_noise_scale():
    assert total_variation([1, 0], [0, 1]) == 1.0 and total_variation(TARGET, TARGET) == 0.0
    assert total_variation(TARGET, DRAFT) == pytest.approx(0.1)  # 1 − β
    sample_count, repeats = 10_000, 200
    draws = torch.multinomial(torch.tensor(TARGET), sample_count * repeats, replacement=True,
                              generator=torch.Generator().manual_seed(5)).view(repeats, sample_count)
    frequencies = torch.nn.functional.one_hot(draws, 4).double().mean(1)  # [repeats, V]
    simulated = 0.5 * (frequencies - torch.tensor(TARGET, dtype=torch.float64)).abs().sum(-1).mean()
    assert float(simulated) == pytest.approx(tvd_noise(TARGET, sample_count), rel=0.1)


def test_parse_distribution():
    assert parse_distribution("0.4, 0.3, .2 .1") == (pytest.approx([0.4, 0.3, 0.2, 0.1]), None)
    probs, note = parse_distribution("40 30 20 10", size=4)
    assert probs == pytest.approx([0.4, 0.3, 0.2, 0.1]) and "summed to 100" in note


@pytest.mark.parametrize("text,size,message", [
    ("", None, "Enter some"), (" , ", None, "Enter some"), ("0.4, abc", None, "'abc' is not a number"),
    ("0.5 -0.1 0.6", None, "cannot be negative"), ("0 0 0", None, "must be positive"), ("nan 1", None, "finite"),
    ("0.5 0.5", 4, "Expected 4 numbers"),
])
def test_parse_distribution_errors(text, size, message):
    with pytest.raises(ValueError, match=message):
        parse_distribution(text, size)


def test_bad_sampler_arguments():
    generator = torch.Generator().manual_seed(0)
    for count in (0, 1_000_001):
        with pytest.raises(ValueError, match="sample count"):
            sample_many(TARGET, DRAFT, count, generator)
    with pytest.raises(ValueError, match="unknown mistake"):
        sample_many(TARGET, DRAFT, 10, generator, mistake="typo")
    with pytest.raises(ValueError, match="entries"):
        overlap(TARGET, DRAFT[:3])


def test_figures_show_their_inputs():
    vocab = JAPAN["vocab"]
    figure = overlap_figure(vocab, TARGET, DRAFT)
    bars = {trace.name: list(trace.y) for trace in figure.data}
    assert bars["p (target)"] == TARGET and bars["q (draft)"] == DRAFT
    assert bars["min(p, q): area β"] == pytest.approx([0.4, 0.25, 0.15, 0.1])
    assert bars["M·q (classical envelope)"] == pytest.approx([4 / 3 * x for x in DRAFT])
    assert "0.900" in figure.layout.title.text and "0.750" in figure.layout.title.text
    missing = PRESETS["Draft misses a token (q = 0)"]
    figure = overlap_figure(missing["vocab"], missing["target_probs"], missing["draft_probs"])
    assert "no finite M" in figure.layout.title.text and len(figure.data) == 3

    step = speculative_step(TARGET, DRAFT, uniforms=[0.1, 0.9, 0.75])
    figure = step_figure(step, vocab)
    traces = {trace.name: trace for trace in figure.data}
    assert list(traces["residual p′ = norm(max(0, p − q))"].y) == pytest.approx([0, 0.5, 0.5, 0])
    assert list(traces["r = 0.900"].y) == [0.9]
    assert "rejected" in figure.layout.title.text and "'girl'" in figure.layout.title.text
    accepted = step_figure(speculative_step(TARGET, DRAFT, uniforms=[0.1, 0.5, 0.75]), vocab)
    assert "accepted" in accepted.layout.title.text and not any("residual" in trace.name for trace in accepted.data)

    counts = [400, 300, 200, 100]
    figure = histogram_figure(vocab, counts, TARGET)
    assert list(figure.data[0].y) == pytest.approx([0.4, 0.3, 0.2, 0.1]) and list(figure.data[1].y) == TARGET
    assert "p-value = 1" in figure.layout.title.text and "MISTAKE" not in figure.layout.title.text
    wrong = histogram_figure(vocab, [100, 450, 450, 0], TARGET, "accept_if_r_greater", [0.1, 0.45, 0.45, 0.0])
    assert "COMMON MISTAKE" in wrong.layout.title.text and list(wrong.data[2].y) == [0.1, 0.45, 0.45, 0.0]


def test_the_mistakes_are_offered_as_sentences_and_sent_as_identifiers():
    from specviz.labs.sampling_lab.rejection import mistake_choices

    choices = mistake_choices()
    assert [value for _, value in choices] == list(MISTAKES)
    for label, value in choices:
        assert "_" not in label and label[0].isupper() and " " in label, label  # a sentence, not an identifier
    assert choices[0][0].startswith("Accepts when r > min(1, p/q)")


def test_the_sampling_verdict_states_its_threshold():
    import gradio as gr

    from specviz.app.tabs.sampling_lab import NO_MISTAKE, load_preset, sample_view

    fields = load_preset("The Japan ... (textbook)")[:3]
    text, _ = sample_view(*fields, 20_000, NO_MISTAKE, 0)
    assert "≥ 0.001: follows p**" in text and "below 0.001 says the output does not follow p" in text
    text, _ = sample_view(*fields, 20_000, "accept_if_r_greater", 0)
    assert "< 0.001: does NOT follow p**" in text and "accepts when r > min(1, p/q)" in text
    with pytest.raises(gr.Error) as error:
        sample_view(*fields, "many", NO_MISTAKE, 0)
    assert error.value.message == "N samples must be a whole number from 1 to 1000000, got 'many'."
    with pytest.raises(gr.Error) as error:
        sample_view(*fields, 1000, NO_MISTAKE, -1)
    assert error.value.message.startswith("seed must be a whole number from 0 to")
