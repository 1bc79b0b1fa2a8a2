"""A real browser on a run whose draft has a tokenizer of its own: each round draws the draft's own
pieces over the target tokens they became, and the verdicts on the target's tokens."""

import re

import pytest

from tests.browser import choose_pair, error_badges, open_live, row_count, screenshot_tab, wait_for_done
from tests.conftest import save_tiny_llama

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser")]

CORPUS = ["def is_prime(n):\n    return all(n % d for d in range(2, n))\n", "The cat sat on the mat. " * 3,
          "A prime number has exactly two divisors: one and itself. "]


def byte_level_tokenizer():
    """A byte-level BPE of 400 tokens trained here: it spells text with other merges than SmolLM2's 49,152."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator(CORPUS * 20, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>")


@pytest.fixture(scope="module")
def cross_pair(models_dir, offline_target, tiny_draft_folder):
    """(target, draft) folders in the models directory: a tiny model with SmolLM2's tokenizer, drafted for by a tiny
    model with the tokenizer above."""
    draft = save_tiny_llama(models_dir / "tiny-other-tokenizer", byte_level_tokenizer(), 400, seed=5)
    return tiny_draft_folder, draft


def test_a_draft_of_another_tokenizer_shows_its_own_pieces_over_the_target_tokens(page, cross_pair, tmp_path):
    target, draft = cross_pair
    open_live(page)
    page.get_by_role("button", name="Reset", exact=True).click()
    page.locator("textarea").first.fill("Write a Python function that checks whether a number is prime.")
    choose_pair(page, "Custom")  # after the prompt: the Custom boxes are text areas too
    page.get_by_label("Target id or folder").fill(target)
    page.get_by_label("Draft id or folder").fill(draft)
    for label, value in (("Max new tokens", "32"), ("Temperature (0 = greedy)", "0")):
        box = page.get_by_label(label).first
        box.fill(value)
        box.press("Enter")
    page.get_by_role("button", name="Run", exact=True).click()
    wait_for_done(page, timeout_ms=180_000)  # the run and its comparison with plain decoding
    page.locator(".sv-cross-hint").wait_for(timeout=10_000)
    aligned = page.locator("#sv-rows .sv-aligned")
    assert aligned.count() > 0 and aligned.count() <= row_count(page)
    for row in aligned.all():
        accepted, drafted = map(int, re.search(r"(\d+)/(\d+)", row.locator(".sv-label").inner_text()).groups())
        target_chips = row.locator(".sv-align-target .sv-tok")
        assert target_chips.count() == drafted and row.locator(".sv-align-target .sv-accepted").count() == accepted
        assert row.locator(".sv-align-own .sv-own").count() >= 1
    assert "across tokenizers" in page.locator("#sv-stats").inner_text()
    assert error_badges(page) == 0
    screenshot_tab(page, tmp_path, "live-cross-tokenizer.png")
