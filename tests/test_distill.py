"""The distilled draft: the shipped file, exact decoding with it, and the training script end to end."""

import pytest
import torch

from specviz.config import DISTILLED_DRAFTER, LOOKUP_FIRST, DecodeConfig
from specviz.decoding import engine
from specviz.decoding.pipeline import build_pipeline, eos_ids
from specviz.distill import train as distill
from specviz.distill import unrolled
from specviz.distill.prompts import first_stage_prompts, passage_prompts, vocabulary_words
from specviz.drafters import distilled
from specviz.drafters.weights import distilled_draft
from specviz.trace import ACCEPTED, REJECTED
from tests.decoding import greedy_acceptance

LOOKUP_THEN_DISTILLED = LOOKUP_FIRST + DISTILLED_DRAFTER
PROMPTS = ["Write a haiku about autumn leaves.", "What is the boiling point of water at sea level?",
           "Give three tips for learning to play the guitar."]


def test_one_unrolled_block_is_plain_causal_attention():
    mask = unrolled.unrolled_mask(4, 1)[0, 0]
    assert torch.equal(mask, torch.tril(torch.ones(4, 4, dtype=torch.bool)))


def test_second_block_sees_true_pairs_before_drafting_began_and_itself():
    mask = unrolled.unrolled_mask(4, 2)[0, 0]
    # Block 2 at pair 2 is drafting step 2: step 1 read the true pair 1, so it sees true pairs 0..1 and itself.
    assert mask[4 + 2, :4].tolist() == [True, True, False, False]
    assert mask[4 + 2, 4:].tolist() == [False, False, True, False]
    assert not mask[:4, 4:].any()  # the true block never sees predictions


def test_third_block_sees_its_own_chain_of_predictions():
    mask = unrolled.unrolled_mask(5, 3)[0, 0]
    row = mask[10 + 4]  # block 3, pair 4: true pairs 0..2, block 2 at pair 3, itself
    assert row[:5].tolist() == [True, True, True, False, False]
    assert row[5:10].tolist() == [False, False, False, True, False]
    assert row[10:].tolist() == [False, False, False, False, True]


def test_new_pairs_after_a_cache_see_the_cache_and_earlier_new_pairs():
    assert distilled.causal_mask(2, 5)[0, 0].tolist() == [[True] * 4 + [False], [True] * 5]


def test_training_prompts_are_seeded_and_varied():
    assert first_stage_prompts(40, 3) == first_stage_prompts(40, 3)
    assert first_stage_prompts(40, 3) != first_stage_prompts(40, 4)
    assert len(set(first_stage_prompts(200, 0))) >= 180  # few repeats among 200
    assert "PASSAGE" in passage_prompts(["PASSAGE"], 0)[0]


def test_word_prompts_are_built_around_whole_vocabulary_words():
    vocabulary = {"\u0120volcano": 1, "\u0120harbour": 2, "\u0120the": 3, "volcanic": 4, "\u0120Paris": 5, "\u0120x2": 6}
    words = vocabulary_words(vocabulary, min_length=4)
    assert words == ["harbour", "volcano"]  # a leading space (Ġ), lower-case letters only, long enough
    prompts = first_stage_prompts(40, 0, words)
    assert prompts == first_stage_prompts(40, 0, words) != first_stage_prompts(40, 0)
    assert sum(("volcano" in p or "harbour" in p) for p in prompts[1::2]) == 20  # every other prompt


def test_the_target_writes_distinct_finished_requests_of_its_own(offline_target):
    from specviz.distill.data import self_written_requests

    def requests(seed):
        return self_written_requests(offline_target.hf_model, offline_target.tokenizer, eos_ids(offline_target),
                                     3, 4, torch.Generator().manual_seed(seed), log=lambda *_: None)

    first = requests(0)
    assert first == requests(0) != requests(1)  # seeded by the generator alone
    assert len(first) == len(set(first)) == 3
    for request in first:
        assert len(request.split()) >= 4 and "<|im_" not in request and "assistant" not in request.split()[0]


def test_target_keeps_the_hidden_state_of_every_cached_token(offline_target):
    kept = offline_target.language_model(offline_target.logits_width, keep_features=True)
    plain = offline_target.language_model(offline_target.logits_width)
    ids = torch.tensor(offline_target.tokenizer("The cat sat on the mat")["input_ids"])
    kept.reset(), plain.reset()
    assert torch.allclose(kept.feed(ids, logits_to_keep=2), plain.feed(ids, logits_to_keep=2), atol=1e-4)
    kept.feed(torch.tensor([13, 14]))
    assert kept.features.shape == (len(ids) + 2, offline_target.hf_model.config.hidden_size)
    kept.crop(3)
    assert kept.features.shape[0] == 3 and kept.cached_length == 3
    with torch.inference_mode():
        states = offline_target.hf_model.get_decoder()(input_ids=ids[:3].view(1, -1)).last_hidden_state[0]
    assert torch.allclose(kept.features, states, atol=1e-4)


@pytest.mark.parametrize("current_token", [False, True])
def test_drafting_from_a_cache_computes_what_training_computes(offline_target, current_token):
    """The drafter's incremental path (cached true pairs, then its own predicted states) and the batched,
    unrolled forward that training and evaluation use give the same drafts, for an untrained head."""
    from specviz.drafters.distilled import FeatureDrafter

    hf = offline_target.hf_model
    head_ids = torch.arange(1024)
    weight = hf.get_output_embeddings().weight.detach().float()[head_ids].clone()
    draft = distilled.FeatureDraft(hf.config, head_ids, hf.get_input_embeddings().weight.detach().float(), weight,
                                       current_token)
    distill._initialise(draft, torch.Generator().manual_seed(0))
    draft.eval()
    target = offline_target.language_model(offline_target.logits_width, keep_features=True)
    drafter = FeatureDrafter(draft, target, "test")
    ids = offline_target.tokenizer("The cat sat on the mat, and the dog sat on the")["input_ids"]
    n = len(ids)
    target.reset(), drafter.begin()
    target.feed(torch.tensor(ids[:-1]))  # the states h_0 .. h_{n-2}
    drafted = drafter.propose(ids, 2, lambda logits: torch.softmax(logits.float(), -1), torch.Generator().manual_seed(0))
    proposed = drafted.tokens.tolist()

    with torch.inference_mode():
        features = torch.cat([target.features, torch.zeros(1, target.features.shape[1])]).unsqueeze(0)  # [1, n, H]
        next_ids = torch.tensor([ids[1:] + [proposed[0]]])  # [1, n]: x_{j+1}, the last one drafted
        current_ids = torch.tensor([ids])  # [1, n]: x_j
        positions = torch.arange(n).view(1, -1)
        first = draft(features, next_ids, positions, attention_mask=unrolled.unrolled_mask(n, 1),
                      current_ids=current_ids)  # [1, n, H]
        inputs = torch.cat([features, torch.cat([features[:, :1], first[:, :-1]], 1)], 1)  # block 2 reads ĥ
        second = draft(inputs, next_ids.repeat(1, 2), positions.repeat(1, 2), attention_mask=unrolled.unrolled_mask(n, 2),
                       current_ids=current_ids.repeat(1, 2))[:, n:]
    for step, state in enumerate([first[0, n - 2], second[0, n - 1]]):  # q_1 from ĥ_{n-1}, q_2 from ĥ_n
        q = torch.softmax(draft.head_logits(state), -1)  # [S]
        assert torch.allclose(drafted.probs[step, head_ids], q, atol=1e-6, rtol=1e-4)


def test_shipped_draft_loads_offline_and_its_hash_matches(offline_target):
    assert distilled.ASSET.stat().st_size <= 25 * 1024 * 1024
    assert distilled.sha256(distilled.ASSET) == distilled.ASSET_SHA256
    draft = distilled.load_for_target(offline_target)
    assert draft.head_ids.numel() == distilled.metadata(distilled.ASSET)["head_size"]
    assert bool((draft.head_ids < offline_target.logits_width).all())


def test_the_shipped_draft_was_written_by_the_script_defaults():
    """`python -m specviz.distill` with no options rebuilds the shipped file: its recorded options are the defaults."""
    recorded = distilled.metadata(distilled.ASSET)["args"]
    defaults = {k: v for k, v in vars(distill.parse_args([])).items()
                if k not in ("out", "cache_dir", "data_only") and distill._LATER_OPTIONS.get(k, object()) != v}
    assert recorded == defaults


def test_a_draft_file_that_does_not_match_the_pinned_hash_is_refused(tmp_path, offline_target):
    damaged = tmp_path / "draft.safetensors"
    damaged.write_bytes(distilled.ASSET.read_bytes()[:-1] + b" ")
    with pytest.raises(ValueError, match="sha256"):
        distilled.load(damaged, offline_target.hf_model, distilled.ASSET_SHA256)


def test_the_distilled_draft_refuses_another_target(tmp_path, offline_target, tiny_draft_folder):
    from specviz.models import loading as models

    other = models.load_model(tiny_draft_folder, torch.device("cpu"), torch.float32)
    with pytest.raises(ValueError, match="works with that target only"):
        distilled.load_for_target(other)


@pytest.mark.parametrize("draft,adaptive",
                         [(DISTILLED_DRAFTER, False), (DISTILLED_DRAFTER, True), (LOOKUP_THEN_DISTILLED, False)])
def test_greedy_decoding_with_the_distilled_draft_is_identical_to_the_target(offline_target, draft, adaptive):
    config = DecodeConfig(draft=draft, gamma=4, max_new_tokens=24, adaptive=adaptive).validate()
    assert greedy_acceptance(config, PROMPTS) > 0.1  # a trained draft (a random one is accepted ~never)


def test_draft_distributions_are_real_and_restricted_to_the_head(offline_target):
    config = DecodeConfig(draft=DISTILLED_DRAFTER, gamma=3, max_new_tokens=12, temperature=1.0, seed=5).validate()
    trace = engine.run_speculative(build_pipeline(config), PROMPTS[0], config)
    tops = [t.draft_top for r in trace.rounds for t in r.tokens if t.draft_top]
    assert tops and all(len(top) > 1 for top in tops)  # q is a real distribution, not one-hot as in prompt lookup
    head = set(distilled_draft(offline_target).head_ids.tolist())
    drafted = [t for r in trace.rounds for t in r.tokens if t.kind in (ACCEPTED, REJECTED)]
    assert drafted and all(t.token_id in head for t in drafted)
    assert all(e.token_id in head for top in tops for e in top)  # q is 0 outside the head's support


def test_lookup_then_draft_copies_where_the_context_matches_and_drafts_elsewhere(offline_target):
    config = DecodeConfig(draft=LOOKUP_THEN_DISTILLED, gamma=4, max_new_tokens=40, temperature=1.0, seed=3).validate()
    # lookup drafts a round only once its record beats the draft's: here when the list comes back
    prompt = "Copy this list exactly: apples, pears, plums, cherries, apples, pears, plums, cherries."
    trace = engine.run_speculative(build_pipeline(config), prompt, config)
    rounds = [r for r in trace.rounds if r.drafted]
    copied = [r for r in rounds if r.draft_forwards == 0]
    drafted = [r for r in rounds if r.draft_forwards > 0]
    assert copied and drafted
    assert all(len(t.draft_top) == 1 for r in copied for t in r.tokens if t.kind in (ACCEPTED, REJECTED))  # one-hot q
    assert any(len(t.draft_top) > 1 for r in drafted for t in r.tokens)  # the draft's real q


def test_a_few_training_steps_run_end_to_end(tmp_path, offline_target):
    out = tmp_path / "draft.safetensors"
    args = ["--prompts", "4", "--requests", "2", "--passages", "2", "--max-new-tokens", "16", "--gen-batch", "4", "--steps", "2",
            "--batch", "2", "--head-size", "256", "--cache-dir", str(tmp_path / "data"), "--out", str(out)]
    assert distill.main(args) == 0
    draft = distilled.load(out, offline_target.hf_model)
    assert draft.head_ids.numel() == 256
    meta = distilled.metadata(out)
    assert meta["steps"] == 2 and meta["sequences"] == 4 + 2  # the prompts' answers and the passages'
    assert meta["generated_tokens"] > 6 * 8  # written by the target, up to 16 a sequence
    assert list((tmp_path / "data").glob("corpus-*.pt"))  # the data is cached for the next run
    assert distill.main(args + ["--train-every", "2"]) == 0  # and reused, here for a data-scaling run on half of it
    assert distilled.metadata(out)["args"]["train_every"] == 2
