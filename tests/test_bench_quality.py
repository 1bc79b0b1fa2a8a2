"""The benchmark's check that a sampled text follows the target (bench/quality.py): the target's own likeliest
continuation scores far better than noise, the score matches a hand computation, and bad input is refused."""

import pytest
import torch

from specviz.bench.quality import target_nll
from specviz.models.loading import LoadedModel
from tests.builders import VOCAB, tiny_model


class Sized:
    def __len__(self) -> int:
        return VOCAB


def _loaded() -> LoadedModel:
    model = tiny_model("llama", 3, "cpu", torch.float32)
    return LoadedModel(model.hf_model, Sized(), "tiny", torch.device("cpu"), torch.float32)


def test_the_target_s_own_choices_score_better_than_noise_and_match_a_hand_computation():
    loaded, prompt = _loaded(), [5, 6, 7]
    greedy, ids = [], list(prompt)
    with torch.inference_mode():
        for _ in range(6):
            token = int(loaded.hf_model(torch.tensor([ids])).logits[0, -1].argmax())
            greedy.append(token)
            ids.append(token)
        noise = torch.randint(0, VOCAB, (6,), generator=torch.Generator().manual_seed(0)).tolist()
        assert target_nll(loaded, prompt, greedy, 1.0) < target_nll(loaded, prompt, noise, 1.0) - 1.0
        logits = loaded.hf_model(torch.tensor([prompt + noise])).logits[0].float() / 0.7  # [9, V]
        by_hand = -sum(torch.log_softmax(logits[len(prompt) - 1 + i], -1)[t] for i, t in enumerate(noise)) / len(noise)
    assert target_nll(loaded, prompt, noise, 0.7) == pytest.approx(float(by_hand), rel=1e-5)


def test_no_text_or_no_temperature_is_refused():
    with pytest.raises(ValueError, match="temperature above 0"):
        target_nll(_loaded(), [1], [2], 0.0)
    with pytest.raises(ValueError, match="generated tokens"):
        target_nll(_loaded(), [1], [], 1.0)


def test_a_backend_without_transformers_model_scores_through_its_language_model():
    """llama.cpp's LoadedGGUF has no hf_model: the text is scored by one forward of its LanguageModel, as the
    engine runs it; on the same weights that gives transformers' own score."""
    loaded = _loaded()

    class Backend:  # what quality.target_nll may read of a LoadedGGUF
        tokenizer, device = loaded.tokenizer, loaded.device

        def language_model(self, vocab_size):
            return loaded.language_model(vocab_size)

    prompt, text = [5, 6, 7], [9, 3, 11, 2]
    assert target_nll(Backend(), prompt, text, 1.0) == pytest.approx(target_nll(loaded, prompt, text, 1.0), abs=1e-4)
