"""transformers' own methods on the offline target: greedy outputs must agree with specviz's, token for token."""

import pytest
import torch

from specviz.bench import hf_baselines
from specviz.config import OFFLINE_MODEL, DecodeConfig
from specviz.decoding import engine, plain
from specviz.decoding.pipeline import build_pipeline, encode_prompt
from specviz.models import loading as models

PROMPT = "Repeat after me: the cat sat on the mat, the cat sat on the mat."


@pytest.fixture(scope="module")
def greedy_config():
    return DecodeConfig(target=OFFLINE_MODEL, gamma=4, max_new_tokens=24, temperature=0).validate()


def test_plain_generate_and_prompt_lookup_match_specviz_greedy(offline_target, greedy_config):
    pipeline = build_pipeline(greedy_config)
    prompt_ids = encode_prompt(pipeline.tokenizer, PROMPT, greedy_config.chat)
    ours_plain = plain.baseline_decode(pipeline, PROMPT, greedy_config).token_ids
    ours_speculative = engine.run_speculative(pipeline, PROMPT, greedy_config).token_ids
    theirs_plain = hf_baselines.run_hf(offline_target, prompt_ids, greedy_config, "generate")
    theirs_lookup = hf_baselines.run_hf(offline_target, prompt_ids, greedy_config, "prompt_lookup")
    assert ours_plain == ours_speculative == theirs_plain.token_ids == theirs_lookup.token_ids
    assert theirs_plain.wall_ms > 0 and theirs_plain.tokens_per_s > 0


def test_assisted_generation_with_a_draft_model_is_greedy_identical(offline_target, tiny_draft_folder, greedy_config):
    draft = models.load_model(tiny_draft_folder, torch.device("cpu"), torch.float32)
    prompt_ids = encode_prompt(offline_target.tokenizer, PROMPT, True)
    plain = hf_baselines.run_hf(offline_target, prompt_ids, greedy_config, "generate")
    assisted = hf_baselines.run_hf(offline_target, prompt_ids, greedy_config, "assisted", assistant=draft)
    assert assisted.token_ids == plain.token_ids
    settings = draft.hf_model.generation_config  # where transformers reads them, not generate()'s arguments
    assert (settings.num_assistant_tokens, settings.assistant_confidence_threshold) == (4, 0.0)
    defaults = hf_baselines.run_hf(offline_target, prompt_ids, greedy_config, "assisted_defaults", assistant=draft)
    assert defaults.token_ids == plain.token_ids
    assert (settings.num_assistant_tokens, settings.assistant_confidence_threshold) == (20, 0.4)


def test_assisted_generation_drafts_the_gamma_it_is_given(offline_target, tiny_draft_folder):
    """transformers ignores num_assistant_tokens passed to generate(); the assistant's config must carry it."""
    draft = models.load_model(tiny_draft_folder, torch.device("cpu"), torch.float32)
    prompt_ids = encode_prompt(offline_target.tokenizer, PROMPT, True)
    drafted = []
    original = draft.hf_model.generate

    def counting_generate(*args, **kwargs):
        output = original(*args, **kwargs)
        drafted.append(output.sequences.shape[1] - kwargs["input_ids"].shape[1])
        return output

    draft.hf_model.generate = counting_generate
    try:
        for gamma in (2, 5):
            drafted.clear()
            config = DecodeConfig(target=OFFLINE_MODEL, gamma=gamma, max_new_tokens=12, temperature=0).validate()
            hf_baselines.run_hf(offline_target, prompt_ids, config, "assisted", assistant=draft)
            assert drafted and max(drafted) == gamma  # draft_confidence 0: no draft stops early
    finally:
        del draft.hf_model.generate


def test_kwargs_follow_the_config_and_bad_methods_are_refused(offline_target, greedy_config):
    sampled = DecodeConfig(gamma=6, temperature=0.7, top_k=20, top_p=0.9).validate()
    kwargs = hf_baselines.generation_kwargs(sampled, "prompt_lookup", offline_target.tokenizer)
    assert kwargs["do_sample"] and kwargs["temperature"] == 0.7 and kwargs["top_k"] == 20 and kwargs["top_p"] == 0.9
    assert kwargs["prompt_lookup_num_tokens"] == 6 and kwargs["max_matching_ngram_size"] == 3
    with pytest.raises(ValueError, match="unknown method"):
        hf_baselines.generation_kwargs(greedy_config, "beam", offline_target.tokenizer)
    with pytest.raises(ValueError, match="draft model"):
        hf_baselines.generation_kwargs(greedy_config, "assisted", offline_target.tokenizer)


def test_a_draft_of_another_tokenizer_runs_through_transformers_cross_tokenizer_generation(tmp_path, offline_target):
    """The benchmark's peer for drafts of another tokenizer: generate(assistant_tokenizer=...). Greedy, it must
    equal plain generate(); sampling prunes the assistant's embeddings in place, so it gets a copy and the draft
    itself stays whole."""
    from tests.builders import word_level_tokenizer
    from tests.conftest import save_tiny_llama

    draft_dir = save_tiny_llama(tmp_path / "draft", word_level_tokenizer(["<unk>", "the", "cat", "sat", "mat"]), 5)
    draft = models.load_model(draft_dir)
    prompt_ids = encode_prompt(offline_target.tokenizer, PROMPT, False)
    greedy = DecodeConfig(target=OFFLINE_MODEL, gamma=4, max_new_tokens=12, temperature=0).validate()
    kwargs = hf_baselines.generation_kwargs(greedy, "assisted", offline_target.tokenizer, draft)
    assert kwargs["assistant_tokenizer"] is draft.tokenizer and kwargs["assistant_model"] is draft.hf_model
    plain = hf_baselines.run_hf(offline_target, prompt_ids, greedy, "generate")
    assert hf_baselines.run_hf(offline_target, prompt_ids, greedy, "assisted", draft).token_ids == plain.token_ids
    head = draft.hf_model.get_output_embeddings().weight.shape
    sampled = DecodeConfig(target=OFFLINE_MODEL, gamma=4, max_new_tokens=12, temperature=1.0).validate()
    assert hf_baselines.generation_kwargs(sampled, "assisted", offline_target.tokenizer, draft)["assistant_model"] \
        is not draft.hf_model
    assert len(hf_baselines.run_hf(offline_target, prompt_ids, sampled, "assisted", draft).token_ids) > 0
    assert draft.hf_model.get_output_embeddings().weight.shape == head
    same = hf_baselines.generation_kwargs(greedy, "assisted", offline_target.tokenizer, offline_target)
    assert "assistant_tokenizer" not in same  # one tokenizer: transformers refuses the argument
