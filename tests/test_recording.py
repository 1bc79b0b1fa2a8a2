"""recording.py: the text decoded a few tokens at a time equals the whole text decoded at once."""

import pytest

from specviz.decoding.recording import IncrementalText

TEXTS = [
    "Plain words, with  double spaces and a tab\there.",
    "Accents: café, naïve, Ångström; symbols: € → ≤ ∑.",
    "Emoji split over byte tokens: 🐉🎨 and CJK: 龍が絵を描く。",
    "def f(x):\n    return x ** 2  # code keeps its indentation\n",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("step", [1, 2, 5])
def test_incremental_text_is_always_a_prefix_and_ends_equal(offline_target, text, step):
    tokenizer = offline_target.tokenizer
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    whole = tokenizer.decode(ids, skip_special_tokens=True)
    incremental = IncrementalText(tokenizer)
    for end in range(step, len(ids) + step, step):
        shown = incremental.update(ids[:end])
        assert whole.startswith(shown)  # never a wrong or half-decoded character on the page
        assert "\ufffd" not in shown
    assert incremental.text == whole  # nothing is lost before the final full decode
    assert incremental.update(ids, final=True) == whole


def test_a_tokenizer_whose_pieces_do_not_concatenate_is_still_right():
    """Negative control for the window: pieces decoded alone would lose the space the tokenizer strips from a
    leading piece (as SentencePiece's decoder does)."""

    class StrippingTokenizer:
        words = ["▁the", "▁cat", "▁sat"]

        def decode(self, ids, skip_special_tokens=True):
            return "".join(self.words[i] for i in ids).replace("▁", " ").lstrip()

    tokenizer = StrippingTokenizer()
    incremental = IncrementalText(tokenizer)
    for end in range(1, 4):
        incremental.update([0, 1, 2][:end])
    assert incremental.text == "the cat sat"
    naive = "".join(tokenizer.decode([i]) for i in [0, 1, 2])
    assert naive != "the cat sat"  # what decoding each token alone would have shown
