"""Re-tokenizing a draft's own text the target's way (drafters/retokenize.py) and the cross-tokenizer drafter's
greedy path that uses it: the committed tokens never change, pieces that could still merge are held back, and the
target tokens proposed spell the start of the text the draft wrote."""

import torch

from specviz.config import DecodeConfig
from specviz.core.sampling import Standardizer
from specviz.decoding import engine, plain
from specviz.drafters.retokenize import continuation, own_text, stable_continuation
from tests.cross_vocab_toys import PROMPT, TARGET_PIECES, ToyTokenizer, cross_vocab_pipeline

TARGET = ToyTokenizer(TARGET_PIECES)  # a, b, c, ab, ca (longest match first)


def ids(text: str) -> list[int]:
    return TARGET(text)["input_ids"]


def test_the_committed_tokens_stay_and_a_text_that_merges_into_them_is_tokenized_alone():
    assert continuation(TARGET, ids("cab"), "c") == ids("c")  # "cab" + "c": the window "ca b" comes back as it was
    assert continuation(TARGET, ids("ab"), "c") == ids("c")
    # committed "c" then "ab": "cab" re-tokenizes as "ca" "b", which would rewrite the committed "c": "ab" alone
    assert continuation(TARGET, ids("c"), "ab") == ids("ab") == [3]
    assert continuation(TARGET, ids("c"), "") == []


def test_a_piece_that_could_still_merge_with_the_next_text_is_held_back():
    assert stable_continuation(TARGET, ids("b"), "a", "b") == []  # "a" then "b" would be "ab": held back
    assert stable_continuation(TARGET, ids("b"), "a", "c") == ids("a")  # "a" then "c" stays "a", "c"
    assert stable_continuation(TARGET, ids("b"), "bab", "") == ids("bab")  # the draft ended: everything
    assert stable_continuation(TARGET, ids("b"), "cab", "c") == ids("cab")  # "b" + "c" is no piece: all of it stays


class Bytes:
    """Decodes ids as UTF-8 bytes, as byte-level BPE does: a character split over two ids shows as U+FFFD."""

    def decode(self, ids, skip_special_tokens=False):
        return bytes(ids).decode("utf-8", errors="replace")


def test_the_draft_s_text_leaves_out_a_character_whose_bytes_are_still_coming():
    e_acute = list("é".encode())  # two bytes
    assert own_text(Bytes(), list(b"caf"), e_acute[:1]) == ""
    assert own_text(Bytes(), list(b"caf"), e_acute) == "é"
    assert own_text(Bytes(), list(b"x" * 20), list(b" ok")) == " ok"  # only a tail of the context is decoded


def test_greedy_rounds_propose_the_target_tokens_of_the_draft_s_own_text():
    config = DecodeConfig(gamma=3, max_new_tokens=12, chat=False)
    pipeline = cross_vocab_pipeline()
    trace = engine.run_speculative(pipeline, PROMPT, config)
    assert trace.token_ids == plain.baseline_decode(cross_vocab_pipeline(), PROMPT, config).token_ids
    drafting = [round_ for round_ in trace.rounds if round_.drafted]
    assert drafting and sum(round_.accepted for round_ in trace.rounds) > 0
    for round_ in drafting:
        own, proposed = "".join(round_.draft_own_texts), "".join(round_.draft_texts)
        assert own.startswith(proposed) and len(own) > len(proposed)  # the last own piece is the lookahead
        assert len(round_.shared_mass) == len(round_.draft_own_texts)  # one per draft step


def test_the_greedy_draft_is_one_hot_and_its_cache_holds_what_it_read():
    pipeline = cross_vocab_pipeline()
    drafter = pipeline.drafter
    drafter.begin()
    draft = drafter.propose(ids("abca"), 3, Standardizer(0.0), torch.Generator().manual_seed(0))
    assert torch.equal(draft.probs.sum(-1), torch.ones(len(draft.tokens)))
    assert torch.equal(draft.probs.argmax(-1), draft.tokens)
    assert drafter.model.cached_length == len(drafter.cached_ids)
    assert draft.forwards == len(draft.own_texts) <= 3 * 2


def test_a_draft_stop_proposes_what_the_draft_wrote_holding_nothing_back():
    """The draft stops after an unsure token: no later text is coming, so its last piece is proposed too (held back,
    a draft that stops at its first token would propose nothing at all)."""
    config = DecodeConfig(gamma=3, max_new_tokens=12, chat=False)
    trace = engine.run_speculative(cross_vocab_pipeline(confidence=0.99), PROMPT, config)
    assert trace.token_ids == plain.baseline_decode(cross_vocab_pipeline(), PROMPT, config).token_ids
    later = trace.rounds[1:]  # round 1 reads the prompt
    assert later and all(len(round_.draft_own_texts) == 1 and round_.drafted >= 1 for round_ in later)
    for round_ in later:
        assert "".join(round_.draft_texts) == "".join(round_.draft_own_texts)
