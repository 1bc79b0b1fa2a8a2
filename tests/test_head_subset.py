"""The frequency-ranked head subset (models/head_subset.py, DecodeConfig.draft_vocab): a draft model scores only
some rows of its LM head. Those scores equal the full head's, q is exactly 0 on every other token, the model's own
modules are left alone (tied embeddings still read every token), and the output still follows the target exactly."""

import pytest
import torch

from specviz.config import DecodeConfig
from specviz.core.sampling import Standardizer
from specviz.decoding import engine, plain
from specviz.decoding.pipeline import Pipeline
from specviz.drafters.model import DraftModelDrafter
from specviz.models import int4, int4_decoder
from specviz.models.cache import WeightsCache
from specviz.models.head_subset import HeadSubset, subset_ids
from specviz.models.language_model import TransformersModel
from tests.builders import tiny_qwen2
from tests.fakes import FakeLanguageModel, FakeTokenizer, SubsetFake, check_rounds_against_the_models, outside_mask
from tests.stats import fit

IDS = [0, 1, 2, 3, 17, 100, 319]  # rows of a 320-token head
NEEDS_INT8 = pytest.mark.skipif(not int4.available(torch.device("cpu")), reason="torch's CPU int8/int4 kernels")


def test_the_subset_is_the_lowest_ids_the_prompts_and_the_eos_ids_inside_the_vocabulary():
    assert subset_ids(4, [9, 2, 9, 400], ends=[7, 500], vocab_size=320) == [0, 1, 2, 3, 7, 9]
    assert subset_ids(1000, [], ends=[], vocab_size=5) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("quantized", [False, pytest.param(True, marks=NEEDS_INT8)])
def test_the_subset_scores_its_rows_as_the_full_head_does_and_minus_infinity_elsewhere(quantized):
    generator = torch.Generator().manual_seed(0)
    linear = torch.nn.Linear(64, 320, bias=not quantized)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(320, 64, generator=generator) * 0.1)
    head = int4.Int8RowLinear(linear) if quantized else linear
    hidden = torch.randn(1, 3, 64, generator=generator)  # [1, k, H]
    limited = HeadSubset(head, IDS)
    with torch.inference_mode():
        full, scored = head(hidden), limited(hidden)  # [1, k, V] each
    assert scored.shape == full.shape == (1, 3, 320) and len(limited) == len(IDS)
    torch.testing.assert_close(scored[..., IDS], full[..., IDS], rtol=1e-5, atol=1e-5)
    assert torch.isneginf(scored[..., outside_mask(IDS, 320)]).all()
    masked = limited.mask(full)  # the fallback for a forward that cannot be split: the same rows, exactly
    assert torch.equal(masked[..., IDS], full[..., IDS]) and torch.isneginf(masked[..., outside_mask(IDS, 320)]).all()


def test_a_head_the_subset_cannot_gather_is_refused():
    with pytest.raises(ValueError, match="gathers the rows of an nn.Linear or Int8RowLinear head, not a Embedding"):
        HeadSubset(torch.nn.Embedding(10, 4), [1, 2])


def _step(kind: str, hf_model):
    """The draft step a kind's builder would wrap: the float model, its 4-bit copy or the lean 4-bit step."""
    return {"float": lambda: hf_model, "copy": lambda: int4.quantized_copy(hf_model),
            "lean": lambda: int4_decoder.Int4Decoder(hf_model)}[kind]()


@pytest.mark.parametrize("kind", ["float", pytest.param("copy", marks=NEEDS_INT8), pytest.param("lean", marks=NEEDS_INT8)])
def test_a_limited_draft_model_gives_the_full_models_logits_on_its_rows_and_zero_q_elsewhere(kind):
    hf_model = tiny_qwen2()  # tied embeddings, as the 0.5B draft has
    embedding = hf_model.get_input_embeddings().weight.detach().clone()
    step = _step(kind, hf_model)
    head = step.get_output_embeddings()
    full, limited = TransformersModel(step, 320, torch.device("cpu")), TransformersModel(step, 320, torch.device("cpu"))
    limited.limit_vocabulary(IDS)
    ids = torch.randint(0, 320, (12,), generator=torch.Generator().manual_seed(1))
    outside = outside_mask(IDS, 320)
    for model in (full, limited):  # a prompt, then a token tree under it (two children of the root, one grandchild)
        model.rows = model.feed(ids, logits_to_keep=3)  # [3, V]
        model.tree = model.feed_tree(torch.tensor([5, 6, 7]), [-1, -1, 0])  # [3, V]
    for name in ("rows", "tree"):
        torch.testing.assert_close(getattr(limited, name)[:, IDS], getattr(full, name)[:, IDS], rtol=1e-4, atol=1e-4)
        assert torch.isneginf(getattr(limited, name)[:, outside]).all()
        assert (Standardizer(1.0)(getattr(limited, name))[:, outside] == 0).all()  # q is exactly 0 there
    assert step.get_output_embeddings() is head  # nothing was swapped in the shared model
    assert torch.equal(hf_model.get_input_embeddings().weight, embedding)
    limited.full_vocabulary()  # and the whole head again
    limited.keep_path([0, 2])
    full.keep_path([0, 2])
    torch.testing.assert_close(limited.feed(torch.tensor([9])), full.feed(torch.tensor([9])))


def test_a_model_whose_forward_cannot_be_split_masks_its_full_logits_to_the_subset():
    from specviz.models.static_cache import StaticCacheModel

    hf_model = tiny_qwen2()
    full = TransformersModel(hf_model, 320, torch.device("cpu"))
    static = StaticCacheModel(hf_model, 320, torch.device("cpu"), max_length=64)  # eager: its own forward
    static.reset()
    static.limit_vocabulary(IDS)
    ids = torch.randint(0, 320, (9,), generator=torch.Generator().manual_seed(2))
    expected, got = full.feed(ids, logits_to_keep=2), static.feed(ids, logits_to_keep=2)  # [2, V] each
    torch.testing.assert_close(got[:, IDS], expected[:, IDS], rtol=1e-4, atol=1e-4)
    assert torch.isneginf(got[:, outside_mask(IDS, 320)]).all()


def test_a_limited_drafter_draws_only_subset_tokens_with_q_zero_elsewhere_and_takes_the_subsets_argmax():
    vocab, sequence = 12, [5, 6, 5]
    subset = [0, 1, 5, 6, 11]  # the 2 lowest ids, the prompt's and the EOS id
    model = SubsetFake(vocab, salt=7)
    drafter = DraftModelDrafter(model, frequent=2, ends=[11])
    drafter.begin()
    sampled = drafter.propose(sequence, 6, Standardizer(1.0), torch.Generator().manual_seed(0))
    assert model.subset == subset and set(sampled.tokens.tolist()) <= set(subset)
    assert (sampled.probs[:, outside_mask(subset, vocab)] == 0).all()
    torch.testing.assert_close(sampled.probs.sum(-1), torch.ones(6))
    drafter.begin()  # a new sequence: the whole head until its first proposal fixes the subset again
    assert model.subset is None
    greedy = drafter.propose(sequence, 4, Standardizer(0.0), torch.Generator()).tokens.tolist()
    whole = FakeLanguageModel(vocab, salt=7)
    for index, token in enumerate(greedy):
        logits = whole.logits_after(tuple(sequence + greedy[:index]))  # [V], every token scored
        assert token == subset[int(logits[subset].argmax())]


def _subset_pipeline(vocab: int, frequent: int, drafter_class=DraftModelDrafter) -> Pipeline:
    """The fakes, with a draft (salt 11) that puts most of its mass on token 3 after the prompt "ab", as does the target."""
    target = FakeLanguageModel(vocab, salt=1, name="target")
    draft = SubsetFake(vocab, salt=11, sharpness=2.0, name="draft")
    drafter = drafter_class(draft, frequent=frequent)
    return Pipeline(target, drafter, FakeTokenizer(vocab), [], torch.device("cpu"), torch.float32, draft,
                    cache=WeightsCache())


class ClaimsTheWholeHead(DraftModelDrafter):
    """The negative control: it draws from the subset but reports q as the whole head's softmax."""

    def propose(self, sequence, gamma, standardize, generator, tree=None):
        draft = super().propose(sequence, gamma, standardize, generator, tree)
        whole = FakeLanguageModel(self.model.vocab_size, salt=11, sharpness=2.0)
        rows = [standardize(whole.logits_after(tuple(sequence + draft.tokens[:index].tolist())).view(1, -1))[0]
                for index in range(draft.tokens.numel())]  # [V] each
        draft.probs = torch.stack(rows) if rows else draft.probs
        return draft


def _exact_probs(prompt_ids: list[int], length: int, vocab: int) -> dict:
    """P(sequence) of every continuation under the target alone, at T = 1."""
    import itertools

    target, standardize = FakeLanguageModel(vocab, salt=1), Standardizer(1.0)
    probs = {}
    for sequence in itertools.product(range(vocab), repeat=length):
        probs[sequence] = 1.0
        for step in range(length):
            logits = target.logits_after(tuple(prompt_ids + list(sequence[:step])))  # [V]
            probs[sequence] *= float(standardize(logits.view(1, -1))[0, sequence[step]])
    return probs


def _fit_of_sampled_runs(config: DecodeConfig, runs: int, drafter_class=DraftModelDrafter) -> tuple[float, float]:
    """(χ² p-value, total variation) of `runs` seeded runs after "ab" against the target's law, at T = 1."""
    vocab, length = 4, config.max_new_tokens
    exact = _exact_probs([1, 2], length, vocab)  # "ab" is ids 1 and 2
    assert sum(p for sequence, p in exact.items() if 3 in sequence) > 0.3  # the target often wants token 3
    pipeline, counts = _subset_pipeline(vocab, config.draft_vocab, drafter_class), dict.fromkeys(exact, 0)
    for seed in range(runs):
        trace = engine.run_speculative(pipeline, "ab", DecodeConfig(**{**config.to_dict(), "seed": seed}))
        counts[tuple(trace.token_ids)] += 1
        assert all(3 not in round_.draft_token_ids for round_ in trace.rounds)  # never drafted, only corrected to
    return fit(exact, counts, runs)


@pytest.mark.parametrize("tree", [False, True])
def test_with_a_subset_that_leaves_out_a_token_the_target_likes_sampled_rounds_verify_the_models_own_rows(tree):
    pipeline, corrected_to_3 = _subset_pipeline(4, frequent=1), 0
    for seed in range(4):
        config = DecodeConfig(draft="draft", gamma=2, max_new_tokens=12, chat=False, temperature=1.0, draft_vocab=1,
                              seed=seed, **(dict(tree=True, tree_budget=6) if tree else {}))
        trace = check_rounds_against_the_models(pipeline, "ab", config)
        assert all(3 not in round_.draft_token_ids for round_ in trace.rounds)  # never drafted ...
        corrected_to_3 += trace.token_ids.count(3)
    assert corrected_to_3 > 0  # ... only corrected to


def test_negative_control_a_drafter_that_reports_the_whole_head_s_q_fails_the_row_check():
    pipeline = _subset_pipeline(4, 1, ClaimsTheWholeHead)
    config = DecodeConfig(draft="draft", gamma=2, max_new_tokens=12, chat=False, temperature=1.0, draft_vocab=1)
    with pytest.raises(AssertionError, match="q of node"):
        check_rounds_against_the_models(pipeline, "ab", config)


@pytest.mark.slow  # 800 runs; the fast tier checks the rounds' rows (above) and verify's exact law
@pytest.mark.parametrize("tree", [False, True])
def test_with_a_subset_that_leaves_out_a_token_the_target_likes_sampled_output_still_follows_the_target(tree):
    # The lowest id with the prompt's: the draft scores 0, 1 and 2, never 3, which the target (and the draft's whole
    # head) favour after "ab".
    config = DecodeConfig(draft="draft", gamma=2, max_new_tokens=2, chat=False, temperature=1.0, draft_vocab=1,
                          **(dict(tree=True, tree_budget=6) if tree else {}))
    p_value, distance = _fit_of_sampled_runs(config, 800)
    assert p_value > 0.001 and distance < 0.08


@pytest.mark.slow
def test_the_exactness_test_catches_a_q_that_is_not_what_the_draft_drew_from():
    config = DecodeConfig(draft="draft", gamma=2, max_new_tokens=2, chat=False, temperature=1.0, draft_vocab=1)
    p_value, distance = _fit_of_sampled_runs(config, 300, ClaimsTheWholeHead)
    assert p_value < 1e-6 and distance > 0.3


@pytest.mark.parametrize("tree", [False, True])
def test_with_a_subset_greedy_output_equals_the_targets_greedy_output(tree):
    config = DecodeConfig(draft="draft", gamma=4, max_new_tokens=40, chat=False, draft_vocab=1,
                          **(dict(tree=True, tree_budget=8) if tree else {}))
    pipeline = _subset_pipeline(6, frequent=1)
    trace = engine.run_speculative(pipeline, "abcab", config)
    assert trace.token_ids == plain.baseline_decode(pipeline, "abcab", config).token_ids
    assert any(round_.accepted < round_.drafted for round_ in trace.rounds)  # the subset cost acceptances
