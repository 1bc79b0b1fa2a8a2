"""Drafting across tokenizers (drafters/vocab_bridge.py, drafters/cross_vocab.py): the bridge joins tokens that spell
the same bytes; every sampled round verifies the target's own p and the q the draft drew from (renormalized over the
shared tokens), greedy runs equal greedy decoding, and the naïve q (the draft's probabilities, not renormalized) fails.
In the slow tier, whole sequences drafted by a model of another vocabulary follow the target exactly (χ²), and the
naïve q's do not."""

import itertools

import pytest
import torch

from specviz.config import DecodeConfig
from specviz.core.sampling import Standardizer
from specviz.decoding import engine, plain
from specviz.drafters.cross_vocab import CrossVocabDrafter, start_tokens
from specviz.drafters.vocab_bridge import SPECIAL, VocabBridge, byte_level_bytes, sentencepiece_bytes, token_keys
from tests.cross_vocab_toys import DRAFT_PIECES, PROMPT, TARGET_PIECES, ToyTokenizer, cross_vocab_pipeline
from tests.fakes import FakeLanguageModel, check_rounds_against_the_models, fake_pipeline
from tests.stats import fit


class NaiveDrafter(CrossVocabDrafter):
    """The negative control: draws from the shared tokens, renormalized, but tells the rule the draft's own
    probability of each token (over its whole vocabulary), as a mapping that forgets to renormalize would."""

    def propose(self, sequence, gamma, standardize, generator, tree=None):
        draft = super().propose(sequence, gamma, standardize, generator, tree)
        own = [torch.softmax(logits, dim=-1) for logits in self._own_logits(sequence, draft)]
        probs = torch.zeros_like(draft.probs)
        for row, distribution in enumerate(own):
            probs[row, self.bridge.target_ids] = distribution[0, self.bridge.draft_ids]
        draft.probs = probs
        return draft

    def _own_logits(self, sequence, draft):
        model = FakeLanguageModel(len(DRAFT_PIECES), salt=7, sharpness=1.0)
        context = tuple(self.draft_context(sequence))
        fed = [self.draft_of[t] for t in draft.tokens.tolist()]
        return [model.logits_after(context + tuple(fed[:row])).view(1, -1) for row in range(len(fed))]


def _exact(config: DecodeConfig) -> dict:
    """P(sequence of target tokens) under the target alone, enumerated."""
    target, standardize = FakeLanguageModel(len(TARGET_PIECES), salt=1), Standardizer(config.temperature)
    prompt = ToyTokenizer(TARGET_PIECES)(PROMPT)["input_ids"]
    probs = {}
    for sequence in itertools.product(range(len(TARGET_PIECES)), repeat=config.max_new_tokens):
        p = 1.0
        for step in range(config.max_new_tokens):
            p *= float(standardize(target.logits_after(tuple(prompt + list(sequence[:step]))).view(1, -1))[0][sequence[step]])
        probs[sequence] = p
    return probs


def _counts(config: DecodeConfig, runs: int, drafter_class=CrossVocabDrafter) -> dict:
    pipeline, counts = cross_vocab_pipeline(drafter_class), dict.fromkeys(_exact(config), 0)
    for seed in range(runs):
        trace = engine.run_speculative(pipeline, PROMPT, DecodeConfig(**{**config.to_dict(), "seed": seed}))
        counts[tuple(trace.token_ids)] += 1
    return counts


def test_tokens_are_joined_by_the_bytes_they_spell():
    assert byte_level_bytes("Ġthe") == b" the" and byte_level_bytes("ĊĠ") == b"\n " and byte_level_bytes("日") is None
    assert sentencepiece_bytes("▁the") == b" the" and sentencepiece_bytes("<0xE6>") == b"\xe6"
    bridge = VocabBridge.between(ToyTokenizer(DRAFT_PIECES), ToyTokenizer(TARGET_PIECES), 6, 5)
    assert dict(zip(bridge.draft_ids.tolist(), bridge.target_ids.tolist())) == {0: 1, 1: 2, 2: 0}  # b, c, a
    assert token_keys(ToyTokenizer(TARGET_PIECES), 7)[5:] == [None, None]  # padding rows hold no token
    logits = torch.tensor([[1.0, 2.0, 3.0, 9.0, 9.0, 9.0]])  # the draft likes its own bc, abc, ba best
    mapped = bridge.target_logits(logits)
    assert mapped[0, :3].tolist() == [3.0, 1.0, 2.0] and mapped[0, 3:].isinf().all()
    q = torch.softmax(mapped, dim=-1)
    assert q.sum() == pytest.approx(1.0) and float(bridge.shared_mass(torch.softmax(logits, -1))[0]) < 0.01


def test_special_tokens_match_only_each_other():
    class Special(ToyTokenizer):
        all_special_tokens = ["<s>"]

    target, draft = Special(["<s>", "a", "b"]), ToyTokenizer(["a", "<s>"])  # the draft's "<s>" is plain text
    assert token_keys(target, 3)[0] == SPECIAL + b"<s>" and token_keys(draft, 2)[1] == b"<s>"
    bridge = VocabBridge.between(draft, target, 2, 3)
    assert bridge.target_ids.tolist() == [1]  # only "a"


def _shared_q(pipeline):
    """draft_row for check_rounds_against_the_models: the draft model's distribution after the text so far read in its
    own tokens, then its earlier drafts, on the shared tokens only and renormalized there."""
    drafter, draft = pipeline.drafter, pipeline.draft_model

    def row(standardize, sequence, drafts):
        context = drafter.draft_context(sequence) + [drafter.draft_of[token] for token in drafts]
        return standardize(drafter.bridge.target_logits(draft.logits_after(tuple(context)).view(1, -1)))[0]

    return row


@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_sampled_cross_vocabulary_rounds_verify_the_target_s_rows_and_the_q_drafted_from(temperature):
    pipeline = cross_vocab_pipeline()
    for seed in range(3):
        config = DecodeConfig(gamma=2, max_new_tokens=12, chat=False, temperature=temperature, seed=seed)
        trace = check_rounds_against_the_models(pipeline, PROMPT, config, _shared_q(pipeline))
        assert any(round_.drafted for round_ in trace.rounds)


def test_negative_control_the_unrenormalized_q_fails_the_row_check():
    pipeline = cross_vocab_pipeline(NaiveDrafter)
    config = DecodeConfig(gamma=2, max_new_tokens=12, chat=False, temperature=1.0)
    with pytest.raises(AssertionError, match="q of node"):
        check_rounds_against_the_models(pipeline, PROMPT, config, _shared_q(pipeline))


@pytest.mark.slow  # 600 runs; the fast tier checks every round's rows (above) and verify's exact law
def test_cross_vocabulary_drafts_follow_the_target_exactly():
    runs = 600  # 125 sequences of 3 tokens: 600 runs gave p = 0.25, TV 0.09 (the noise of so few runs per cell)
    config = DecodeConfig(gamma=2, max_new_tokens=3, chat=False, temperature=1.0)
    p_value, distance = fit(_exact(config), _counts(config, runs), runs)
    assert p_value > 0.001 and distance < 0.15


@pytest.mark.slow
def test_the_unrenormalized_q_leaves_the_target_s_distribution():
    runs = 600  # p = 6e-16 and TV 0.23 in 600 runs
    config = DecodeConfig(gamma=2, max_new_tokens=3, chat=False, temperature=1.0)
    p_value, _ = fit(_exact(config), _counts(config, runs, NaiveDrafter), runs)
    assert p_value < 1e-6


def test_greedy_cross_vocabulary_runs_equal_greedy_decoding():
    accepted = 0
    for length in (3, 6, 9, 12):
        config = DecodeConfig(gamma=3, max_new_tokens=length, chat=False)
        pipeline = cross_vocab_pipeline()
        trace = engine.run_speculative(pipeline, PROMPT, config)
        plain_run = plain.baseline_decode(cross_vocab_pipeline(), PROMPT, config)
        assert trace.token_ids == plain_run.token_ids
        accepted += sum(round_.accepted for round_ in trace.rounds)
    assert accepted > 0  # the runs tested real drafts, and some passed


def test_the_draft_reads_the_text_in_its_own_tokens_and_rolls_back_through_it():
    pipeline = cross_vocab_pipeline()
    drafter = pipeline.drafter
    target_ids = ToyTokenizer(TARGET_PIECES)("abcab")["input_ids"]  # ab, ca, b
    assert drafter.draft_context(target_ids) == ToyTokenizer(DRAFT_PIECES)("abcab")["input_ids"]  # abc, a, b
    drafter.begin()
    draft = drafter.propose(target_ids, 3, Standardizer(1.0), torch.Generator().manual_seed(0))
    assert set(draft.tokens.tolist()) <= {0, 1, 2} and torch.allclose(draft.probs.sum(-1), torch.ones(len(draft.tokens)))
    assert draft.probs[:, 3:].abs().sum() == 0  # q is 0 on the target's own tokens
    assert drafter.model.cached_length == len(drafter.cached_ids) == 3 + len(draft.tokens) - 1
    shorter = drafter.propose(target_ids[:2], 1, Standardizer(1.0), torch.Generator().manual_seed(0))  # "abca"
    assert len(shorter.tokens) == 1 and drafter.cached_ids[:1] == [4]  # abc kept, the rest re-read


def test_a_draft_whose_tokenizer_starts_texts_with_a_bos_reads_its_context_after_it():
    """Gemma's tokenizer puts <bos> before every text, and Gemma-3-270M drafts far worse without it (α 0.36 against
    0.54 on a Spec-Bench prompt, greedy): the draft's context starts with the tokens its tokenizer adds there."""
    class WithBos(ToyTokenizer):
        def __call__(self, text, add_special_tokens=True):
            ids = super().__call__(text)["input_ids"]
            return {"input_ids": ([len(self.pieces) - 1] if add_special_tokens else []) + ids}

    pieces = [*DRAFT_PIECES, "<bos>"]
    assert start_tokens(WithBos(pieces)) == [len(pieces) - 1] and start_tokens(ToyTokenizer(DRAFT_PIECES)) == []
    pipeline = cross_vocab_pipeline()
    drafter = CrossVocabDrafter(pipeline.draft_model, pipeline.drafter.bridge, ToyTokenizer(TARGET_PIECES),
                                WithBos(pieces))
    target_ids = ToyTokenizer(TARGET_PIECES)("abcab")["input_ids"]
    assert drafter.draft_context(target_ids) == [len(pieces) - 1, *ToyTokenizer(DRAFT_PIECES)("abcab")["input_ids"]]


def test_each_round_records_what_share_of_the_draft_s_belief_it_could_propose():
    from specviz.analysis.metrics import summarize
    from specviz.analysis.vocab_metrics import shared_mass
    from specviz.trace import Trace
    from specviz.views.cli_output import json_summary
    from specviz.views.stats_text import stats_markdown

    config = DecodeConfig(gamma=3, max_new_tokens=8, chat=False, temperature=1.0, seed=3)
    trace = Trace.from_json(engine.run_speculative(cross_vocab_pipeline(), PROMPT, config).to_json())  # it survives JSON
    drafting = [round_ for round_ in trace.rounds if round_.drafted]
    assert drafting and all(len(round_.shared_mass) == round_.drafted for round_ in trace.rounds)
    assert all(0 < mass < 1 for round_ in drafting for mass in round_.shared_mass)  # bc, abc and ba hold the rest
    across = shared_mass(trace)
    values = [mass for round_ in drafting for mass in round_.shared_mass]
    assert across.overall == pytest.approx(sum(values) / len(values)) and across.drafted == len(values)
    assert across.lowest_round <= across.overall <= across.highest_round
    assert f"{across.overall:.1%} over {len(values)} draft steps" in stats_markdown(trace, summarize(trace))
    assert json_summary(trace, summarize(trace))["shared_mass"] == pytest.approx(across.overall)
    same_tokenizer = engine.run_speculative(fake_pipeline(3), "ab", config)
    assert shared_mass(same_tokenizer) is None and "across tokenizers" not in stats_markdown(same_tokenizer,
                                                                                          summarize(same_tokenizer))


def test_an_ordinary_token_is_paired_before_a_byte_token_of_the_same_bytes():
    """Gemma holds both "a" and the byte-fallback "<0x61>"; a model predicts the first, so the bridge pairs it."""
    class SentencePiece(ToyTokenizer):
        def convert_ids_to_tokens(self, ids):
            return [self.pieces[i] for i in ids]

    draft, target = SentencePiece(["<0x61>", "▁b", "a", "<0x62>"]), ToyTokenizer(["a", "Ġb", "b"])
    bridge = VocabBridge.between(draft, target, 4, 3)
    assert bridge.draft_of == {0: 2, 1: 1, 2: 3}  # "a" <- "a" (not "<0x61>"); " b" <- "▁b"; "b" <- "<0x62>", its only one


def test_an_added_token_that_is_not_special_is_plain_text():
    """Gemma's "\\n" is an added token but not a special one: it spells a newline, like Qwen's "Ċ"."""
    class Added:
        def __init__(self, content, special):
            self.content, self.special = content, special

    class Gemmalike(ToyTokenizer):
        all_special_tokens = ["<eos>"]
        added_tokens_encoder = {"\n": 1, "<eos>": 2}
        added_tokens_decoder = {1: Added("\n", False), 2: Added("<eos>", True)}

    draft, target = Gemmalike(["▁a", "\n", "<eos>"]), ToyTokenizer(["Ċ", "Ġa"])
    assert token_keys(draft, 3) == [b" a", b"\n", SPECIAL + b"<eos>"]
    assert VocabBridge.between(draft, target, 3, 2).draft_of == {0: 1, 1: 0}
