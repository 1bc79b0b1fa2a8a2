"""The llama.cpp backend on the embedded SmolLM2-135M GGUF: greedy speculative decoding gives llama.cpp's own plain
decoding token for token, sampling replays, and what the backend cannot do is refused before any model loads."""

import json

import pytest
import torch

from specviz.config import LLAMA_CPP, OFFLINE_MODEL, DecodeConfig
from specviz.decoding import engine, plain
from specviz.decoding.pipeline import build_pipeline, encode_prompt
from specviz.models import llama_cpp, offline
from tests.llama_cpp_marks import llama_cpp_only

PROMPT = "List the days of the week, then list them again in the same order."


def config(**changes) -> DecodeConfig:
    settings = dict(target=OFFLINE_MODEL, draft="ngram", gamma=4, max_new_tokens=48, backend=LLAMA_CPP)
    return DecodeConfig(**{**settings, **changes}).validate()


@llama_cpp_only
def test_greedy_speculative_decoding_is_llama_cpps_own_plain_decoding():
    import llama_cpp as bindings

    pipeline = build_pipeline(config())
    trace = engine.run_speculative(pipeline, PROMPT, config())
    plain_run = plain.baseline_decode(pipeline, PROMPT, config())
    assert trace.token_ids == plain_run.token_ids and len(trace.token_ids) > 10
    assert sum(round_.accepted for round_ in trace.rounds) > 0  # the days repeat: prompt lookup's drafts were verified

    # llama.cpp's own greedy loop (the bindings' Llama.generate) over the same prompt ids. Its Llama class turns flash
    # attention off by default, where llama.cpp's tools and this backend leave it on auto (on, on a CPU): that moves
    # the logits by up to 0.2 here and picks another token at the 9th step, so it is asked for here as they run.
    prompt_ids = encode_prompt(pipeline.tokenizer, PROMPT, True)
    own = bindings.Llama(model_path=str(pipeline.target.loaded.path), n_ctx=512, n_threads=torch.get_num_threads(),
                         flash_attn=True, verbose=False)
    generated = []
    for token in own.generate(prompt_ids, temp=0.0, top_k=1, reset=True):
        generated.append(token)
        if token in pipeline.eos_ids or len(generated) == len(plain_run.token_ids):
            break
    assert generated == plain_run.token_ids


@pytest.mark.slow
@pytest.mark.skipif(offline.installed_gguf() is None, reason=offline.INSTALL_COMMAND)
def test_the_tokenizer_read_from_a_gguf_is_transformers_own(tmp_path, monkeypatch):
    """gguf_tokenizer reads only the tokenizer's fields; it must give what AutoTokenizer's GGUF path gives: the same
    ids, chat template, special tokens and text back; then it comes from the cache."""
    from transformers import AutoTokenizer

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    path = offline.installed_gguf()
    ours = llama_cpp.gguf_tokenizer(OFFLINE_MODEL, path)
    theirs = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    messages = [{"role": "user", "content": "Naïve café: 漢字, tabs\tand  spaces 🙂\n\ndef f(x):\n    return x ** 2"}]
    assert ours.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == \
        theirs.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    text = theirs.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = theirs(text, add_special_tokens=False)["input_ids"]
    assert ours(text, add_special_tokens=False)["input_ids"] == ids and ours.decode(ids) == theirs.decode(ids)
    assert (ours.eos_token, ours.bos_token, len(ours)) == (theirs.eos_token, theirs.bos_token, len(theirs))
    assert (tmp_path / "tokenizers").is_dir()
    assert llama_cpp.gguf_tokenizer(OFFLINE_MODEL, path)(text, add_special_tokens=False)["input_ids"] == ids


@llama_cpp_only
def test_a_sampled_run_on_llama_cpp_replays_round_for_round():
    from specviz.decoding.replay import first_difference

    sampled = config(temperature=1.0, seed=7, max_new_tokens=32)
    trace = engine.run_speculative(build_pipeline(sampled), PROMPT, sampled)
    assert trace.config["backend"] == LLAMA_CPP
    assert first_difference(trace) is None


@llama_cpp_only
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_token_trees_run_on_llama_cpp_exactly(temperature):
    """A tree of the model's own GGUF as its draft, on llama.cpp (one sequence per path, models/llama_sequences.py):
    greedy, it gives plain decoding's tokens; sampled, every round replays; and trees with siblings were verified."""
    from specviz.decoding.replay import first_difference

    settings = config(draft=OFFLINE_MODEL, gamma=3, tree=True, tree_budget=8, temperature=temperature, seed=3,
                      max_new_tokens=32)
    pipeline = build_pipeline(settings)
    trace = engine.run_speculative(pipeline, PROMPT, settings)
    assert any(round_.is_tree for round_ in trace.rounds)  # rounds with siblings were verified
    if temperature == 0:
        assert trace.token_ids == plain.baseline_decode(pipeline, PROMPT, settings).token_ids
    assert first_difference(trace) is None


@pytest.mark.parametrize("changes, refusal", [
    (dict(draft_vocab=100, draft="int4:x"), "llama.cpp backend scores whole heads"),
])
def test_what_llama_cpp_cannot_run_is_refused_by_the_config(changes, refusal):
    with pytest.raises(ValueError, match=refusal):
        config(**changes)


def test_a_drafter_of_the_transformers_backend_alone_is_refused_before_any_model_loads(monkeypatch):
    from specviz.models import loading

    monkeypatch.setattr(loading, "load_model", lambda *a, **k: pytest.fail("a model loaded"))
    with pytest.raises(ValueError, match="runs on the transformers backend, not llama.cpp"):
        build_pipeline(config(draft="ngram+int4"))


def test_a_model_that_is_no_gguf_is_refused_in_one_sentence():
    from specviz.models.offline import ModelUnavailable

    with pytest.raises(ModelUnavailable, match="runs GGUF files"):
        llama_cpp.gguf_file("Qwen/Qwen2.5-0.5B-Instruct")


@llama_cpp_only
def test_the_cli_names_the_backend_and_plain_decodings_rate(capsys):
    from specviz.cli import main

    code = main(["generate", "--prompt", PROMPT, "--backend", "llama.cpp", "--max-new-tokens", "24", "--baseline",
                 "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["backend"] == "llama.cpp" and summary["identical"] is True
    assert summary["speedup_measured"] == pytest.approx(summary["tokens_per_s"] / summary["baseline_tokens_per_s"])


@pytest.mark.parametrize("backend, drafter, refusal", [
    ("llama", "prompt lookup (n-gram)", "backend must be one of 'transformers', 'llama.cpp'"),
    (LLAMA_CPP, "lookup, else draft model", "runs on the transformers backend, not llama.cpp"),
])
def test_the_live_tab_refuses_what_llama_cpp_cannot_run_in_one_sentence(backend, drafter, refusal, monkeypatch):
    from specviz.app.policy import Policy
    from specviz.app.request import OFFLINE_PAIR, RunRequest

    monkeypatch.setattr(llama_cpp, "available", lambda: True)  # as where the bindings are installed
    with pytest.raises(ValueError, match=refusal):
        RunRequest(pair=OFFLINE_PAIR, drafter=drafter, backend=backend).to_config(Policy())
    config = RunRequest(pair=OFFLINE_PAIR, drafter="prompt lookup (n-gram)", backend=LLAMA_CPP).to_config(Policy())
    assert (config.backend, config.draft) == (LLAMA_CPP, "ngram")


def test_without_the_bindings_the_live_tab_names_their_install_line(monkeypatch):
    from specviz.app.policy import Policy
    from specviz.app.request import OFFLINE_PAIR, RunRequest

    monkeypatch.setattr(llama_cpp, "available", lambda: False)
    with pytest.raises(ValueError, match="requirements-llama.txt"):
        RunRequest(pair=OFFLINE_PAIR, drafter="prompt lookup (n-gram)", backend=LLAMA_CPP).to_config(Policy())
