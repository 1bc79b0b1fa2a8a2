"""The draft prompt window (DecodeConfig.draft_window): a draft model reads the prompt's first SINK tokens and its
latest ones, and everything generated after it in full. Its q is still what it drew from, so greedy output equals
the target's and a run with the window and the head subset replays; settings that cannot apply are refused."""

import json

import pytest
import torch

from specviz import cli
from specviz.config import OFFLINE_MODEL, DecodeConfig
from specviz.core.sampling import Standardizer
from specviz.decoding import engine, plain
from specviz.decoding.pipeline import Pipeline, build_pipeline
from specviz.decoding.replay import first_difference
from specviz.drafters.model import SINK, DraftModelDrafter, window_view
from specviz.models.cache import WeightsCache
from specviz.models.language_model import TransformersModel
from specviz.trace import Trace
from tests.builders import tiny_llama
from tests.fakes import FakeLanguageModel, FakeTokenizer, SubsetFake

PROMPT = list(range(10, 30))  # 20 prompt tokens


def test_the_window_keeps_the_sink_and_the_latest_prompt_tokens_and_a_short_prompt_whole():
    assert SINK == 4
    assert window_view(20, 8) == (4, 16)  # prompt[:4] + prompt[16:]: 8 tokens
    assert window_view(20, 20) == window_view(7, 8) == window_view(20, 0) == (0, 0)  # read whole
    assert window_view(20, 2) == (2, 20)  # a window inside the sink: its first tokens only


def _propose(drafter, sequence, gamma=3):
    return drafter.propose(sequence, gamma, Standardizer(0.0), torch.Generator())


def test_the_draft_reads_the_window_and_then_every_generated_token_in_full():
    model = FakeLanguageModel(40, salt=7)
    drafter = DraftModelDrafter(model, window=8)
    drafter.begin()
    draft = _propose(drafter, PROMPT)
    window = PROMPT[:4] + PROMPT[-4:]
    assert model.tokens[:8] == window and draft.caught_up == 8
    assert model.tokens == window + draft.tokens[:-1].tolist()  # the drafted tokens it fed after the window
    generated = [draft.tokens[0].item(), 33, 34]  # one draft accepted, then a correction and a bonus
    _propose(drafter, PROMPT + generated)  # the cut stays where the first proposal fixed it
    assert model.tokens[:11] == window + generated
    assert drafter.cached_ids[:11] == window + generated


def test_the_window_is_fixed_at_the_first_proposal_after_begin():
    model = FakeLanguageModel(40, salt=7)
    drafter = DraftModelDrafter(model, window=8)
    drafter.begin()
    _propose(drafter, PROMPT + [35, 36])  # lookup-then-draft may first ask after some decoded tokens
    assert model.tokens[:8] == PROMPT[:4] + [28, 29, 35, 36]
    drafter.begin()  # a new sequence: a new cut
    _propose(drafter, PROMPT[:6])
    assert model.tokens[:6] == PROMPT[:6]  # shorter than the window: read whole


def test_a_twin_ignores_the_window_and_each_setting_names_a_drafter_of_its_own():
    draft, twin = FakeLanguageModel(40, salt=7, name="draft"), FakeLanguageModel(40, salt=1)
    assert DraftModelDrafter(draft, twin=twin, window=8).window == 0
    names = [DraftModelDrafter(draft, window=window, frequent=frequent).name for window, frequent in ((0, 0), (8, 0), (8, 16))]
    assert names == ["draft", "draft (draft_window 8)", "draft (draft_window 8, draft_vocab 16)"]  # c is timed per name


def test_a_real_draft_model_with_a_window_drafts_from_the_shorter_context():
    hf_model = tiny_llama()
    lengths = {}
    for window in (0, 8):
        model = TransformersModel(hf_model, 320, torch.device("cpu"))
        drafter = DraftModelDrafter(model, window=window)
        drafter.begin()
        draft = _propose(drafter, PROMPT, gamma=3)
        lengths[window] = model.cached_length
        assert draft.tokens.numel() == 3 and torch.isfinite(draft.logits[0]).all()
    assert lengths == {0: 20 + 2, 8: 8 + 2}  # the window, then two of the three drafted tokens fed back


def _pipeline(window: int, frequent: int) -> Pipeline:
    target, draft = FakeLanguageModel(6, salt=1, name="target"), SubsetFake(6, salt=7, name="draft")
    drafter = DraftModelDrafter(draft, window=window, frequent=frequent)
    return Pipeline(target, drafter, FakeTokenizer(6), [], torch.device("cpu"), torch.float32, draft, cache=WeightsCache())


@pytest.mark.parametrize("tree", [False, True])
def test_with_a_window_and_a_subset_greedy_output_equals_the_targets_on_the_fakes(tree):
    prompt = "abcabcabcabcab"  # 14 tokens: the draft reads 6 of them
    config = DecodeConfig(draft="draft", gamma=4, max_new_tokens=40, chat=False, draft_window=6, draft_vocab=1,
                          **(dict(tree=True, tree_budget=8) if tree else {}))
    pipeline = _pipeline(6, 1)
    trace = engine.run_speculative(pipeline, prompt, config)
    assert trace.token_ids == plain.baseline_decode(pipeline, prompt, config).token_ids
    assert pipeline.drafter.view == (4, 12)
    assert not tree or any(round_.is_tree for round_ in trace.rounds)


def test_a_sampled_run_with_a_window_and_a_subset_replays_and_its_config_round_trips():
    config = DecodeConfig(draft="draft", gamma=3, max_new_tokens=24, chat=False, temperature=1.0, seed=5, draft_window=6,
                          draft_vocab=1)  # "draft": a model's name, as the fakes' draft model is
    trace = Trace.from_json(engine.run_speculative(_pipeline(6, 1), "abcabcabcabcab", config).to_json())
    assert (trace.config["draft_window"], trace.config["draft_vocab"]) == (6, 1)
    assert DecodeConfig.from_dict(trace.config) == config
    assert first_difference(trace, _pipeline(6, 1)) is None
    assert first_difference(trace, _pipeline(0, 1)) is not None  # negative control: the whole prompt drafts otherwise


@pytest.mark.parametrize("settings,sentence", [
    (dict(draft_window=-1), "draft_window must be a whole number from 0 to 65536 (0 reads the whole prompt), got -1"),
    (dict(draft_vocab=2.5), "draft_vocab must be a whole number from 0 to 1000000 (0 scores every token), got 2.5"),
    (dict(draft="ngram", draft_vocab=512), "draft_vocab limits the tokens a draft model scores, and prompt lookup runs "
                                           "none: set it to 0 or choose a draft model"),
    (dict(draft="ngram+distilled", draft_window=64), "draft_window limits the prompt a draft model reads, and the "
                                                     "distilled head runs none: set it to 0 or choose a draft model"),
])
def test_settings_that_cannot_apply_are_refused_in_one_sentence(settings, sentence):
    from specviz.drafters import kinds

    with pytest.raises(ValueError) as error:
        kinds.check(DecodeConfig(**settings).validate())
    assert str(error.value) == sentence


def test_the_kinds_table_says_which_kinds_run_a_draft_model():
    from specviz.drafters.kinds import KINDS

    assert [name for name, kind in KINDS.items() if kind.runs_model] == ["int4", "int4-model", "model"]
    assert DecodeConfig(draft="ngram+int4", draft_window=64, draft_vocab=512).validate().draft_vocab == 512


def test_the_command_line_takes_both_and_refuses_a_bad_one(capsys):
    args = cli.build_parser().parse_args(["generate", "--prompt", "hi", "--draft", "gpt2", "--draft-window", "64",
                                          "--draft-vocab", "8192"])
    config = cli.config_from_args(args)
    assert (config.draft_window, config.draft_vocab) == (64, 8192)
    assert cli.main(["generate", "--prompt", "hi", "--draft", "ngram", "--draft-vocab", "10"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "specviz: draft_vocab limits the tokens a draft model scores, and prompt lookup runs none: set it to 0 or "
        "choose a draft model"]


# ---------------------------------------------------------------- the real offline target (slow tier)


@pytest.mark.parametrize("draft,settings", [
    (OFFLINE_MODEL, dict(draft_window=12, draft_vocab=2000)),  # itself as a draft model, with a short memory
    ("int4", dict(draft_vocab=2000, tree=True, tree_budget=6)),  # the lean 4-bit step's int8 head, growing trees
])
def test_greedy_output_with_a_window_and_a_subset_equals_the_targets_greedy_output(offline_target, draft, settings):
    prompt = "Repeat exactly: the cat sat on the mat, the cat sat on the mat, the cat sat on the mat."
    config = DecodeConfig(draft=draft, gamma=4, max_new_tokens=24, **settings).validate()
    pipeline = build_pipeline(config)
    trace = engine.run_speculative(pipeline, prompt, config)
    assert trace.token_ids == plain.baseline_decode(pipeline, prompt, config).token_ids
    assert len(pipeline.draft_model.head_subset) < 2100  # the head really was limited
    assert any(round_.accepted < round_.drafted for round_ in trace.rounds)  # and it drafted differently
    assert not config.tree or any(round_.is_tree for round_ in trace.rounds)


def test_replay_check_reproduces_a_run_with_a_window_and_a_subset(offline_target, tmp_path, capsys):
    path = tmp_path / "trace.json"
    assert cli.main(["generate", "--prompt", "Name three colours.", "--draft", OFFLINE_MODEL, "--draft-window", "12",
                     "--draft-vocab", "2000", "--temperature", "1", "--seed", "3", "--max-new-tokens", "16", "--json",
                     "--trace-out", str(path)]) == 0
    rounds = json.loads(capsys.readouterr().out)["rounds"]
    assert json.loads(path.read_text(encoding="utf-8"))["config"]["draft_window"] == 12
    assert cli.main(["replay", str(path), "--check"]) == 0
    assert capsys.readouterr().out == f"all {rounds} rounds reproduce\n"
