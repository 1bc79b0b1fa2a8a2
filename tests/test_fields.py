"""One validation function per field (config.check_field), and the same sentence from the command line, the page's
callback and DecodeConfig.validate: the field's name, its allowed values and what was sent, whatever its type."""

import logging
import re

import gradio as gr
import pytest

from specviz.app.callbacks import make_config
from specviz.app.request import NUMBERS, PROMPT_LOOKUP, RunRequest
from specviz.cli import main
from specviz.config import NUMBER_FIELDS, DecodeConfig, check_field, check_flag, parse_field

WRONG_NUMBERS = ["abc", "", None, [4], {"a": 1}, True, float("nan"), float("inf")]  # what a JSON client may send


@pytest.mark.parametrize("value", WRONG_NUMBERS)
@pytest.mark.parametrize("name", list(NUMBER_FIELDS))
def test_every_numeric_field_refuses_a_wrong_type_naming_itself_and_its_range(name, value):
    with pytest.raises(ValueError, match=rf"^{name} must be (a whole number|a number) (from|above) .*, got "):
        check_field(name, value)


@pytest.mark.parametrize("name,value,expected", [
    ("gamma", 4, 4), ("gamma", 4.0, 4), ("max_new_tokens", 8192, 8192), ("temperature", 0, 0.0), ("top_p", 1, 1.0),
    ("top_p", 0.001, 0.001), ("seed", 2**63 - 1, 2**63 - 1), ("top_k", 0, 0),
])
def test_good_values_come_back_as_the_fields_type(name, value, expected):
    checked = check_field(name, value)
    assert checked == expected and type(checked) is type(expected)


@pytest.mark.parametrize("name,value,sentence", [
    ("gamma", 0, "gamma must be a whole number from 1 to 64, got 0"),
    ("gamma", 2.5, "gamma must be a whole number from 1 to 64, got 2.5"),
    ("top_p", 0, "top_p must be a number above 0 and at most 1 (1 turns it off), got 0"),
    ("temperature", -1, "temperature must be a number from 0 to 2 (0 means greedy), got -1"),
    ("seed", -3, "seed must be a whole number from 0 to 9223372036854775807, got -3"),
    ("max_new_tokens", "x" * 100, "max_new_tokens must be a whole number from 1 to 8192, got 'xxxxxxxx"),
])
def test_the_sentence_names_the_field_its_range_and_the_value(name, value, sentence):
    with pytest.raises(ValueError) as error:
        check_field(name, value)
    assert str(error.value).startswith(sentence) and len(str(error.value)) < 120


def test_a_server_may_narrow_a_range_and_the_sentence_says_so():
    assert check_field("gamma", 8, high=8) == 8
    with pytest.raises(ValueError, match="^gamma must be a whole number from 1 to 8, got 9$"):
        check_field("gamma", 9, high=8)
    with pytest.raises(ValueError, match=r"^top_p must be a number from 0.05 to 1 \(1 turns it off\), got 0.01$"):
        check_field("top_p", 0.01, low=0.05)


def test_config_validate_uses_the_same_check_and_holds_whole_numbers_as_ints():
    with pytest.raises(ValueError, match="^gamma must be a whole number from 1 to 64, got 4.0$"):
        DecodeConfig(gamma=4.0).validate()
    with pytest.raises(ValueError, match="^top_k must be a whole number"):
        DecodeConfig(top_k="5").validate()
    with pytest.raises(ValueError, match="^adaptive must be true or false, got 'yes'$"):
        DecodeConfig(adaptive="yes").validate()
    assert check_flag("compare", False) is False


@pytest.mark.parametrize("flag,name,text", [
    ("--top-k", "top_k", "abc"), ("--top-k", "top_k", "-1"), ("--seed", "seed", "x"), ("--seed", "seed", "-3"),
])
def test_the_command_line_and_the_app_give_the_same_sentence(flag, name, text, capsys):
    """top_k and seed have the same range everywhere; the app narrows γ, max new tokens, temperature and top_p
    to its sliders' ends (see the next test), so only the range in those sentences differs."""
    assert main(["generate", "--prompt", "hi", flag, text]) == 2
    cli_line = capsys.readouterr().err.strip()
    value = parse_value(text)
    with pytest.raises(gr.Error) as error:
        make_config(RunRequest(drafter=PROMPT_LOOKUP, prompt="hi", **{name: value}))
    assert cli_line == f"specviz: argument {flag}: {error.value.message.rstrip('.')}"


def parse_value(text):
    """What a JSON client sends for `text`: the number if it is one, else the text."""
    try:
        return int(text)
    except ValueError:
        return text


@pytest.mark.parametrize("name,value,sentence", [
    ("gamma", "abc", "gamma must be a whole number from 1 to 64, got 'abc'."),
    ("gamma", 65, "gamma must be a whole number from 1 to 64, got 65."),
    ("max_new_tokens", None, "max_new_tokens must be a whole number from 1 to 8192, got nothing (an empty box, or "
                             "text that is no number)."),
    ("temperature", "hot", "temperature must be a number from 0 to 2 (0 means greedy), got 'hot'."),
    ("top_p", [0.5], "top_p must be a number above 0 and at most 1 (1 turns it off), got [0.5]."),
    ("top_k", 2.5, "top_k must be a whole number from 0 to 1000000 (0 turns it off), got 2.5."),
    ("seed", True, "seed must be a whole number from 0 to 9223372036854775807, got True."),
    ("pair", 3, "pair must be one of 'Offline: SmolLM2-135M-Instruct (embedded)'"),
    ("drafter", None, "drafter must be one of 'lookup, else draft model'"),
    ("prompt", 42, "The prompt must be text, got 42."),
    ("prompt", ["hi"], "The prompt must be text, got ['hi']."),
    ("target", 5, "target must be a model id or folder (text), got 5."),
    ("draft", ["x"], "draft must be a model id or folder (text), got ['x']."),
    ("compare", "yes", "compare must be true or false, got 'yes'."),
    ("adaptive", 1, "adaptive must be true or false, got 1."),
])
def test_the_apps_callback_names_the_field_of_any_wrong_value(name, value, sentence):
    """RunRequest.to_config gets the values as an API client sent them (ui.py turns Gradio's preprocessing off)."""
    with pytest.raises(gr.Error) as error:
        make_config(RunRequest(**{"drafter": PROMPT_LOOKUP, "prompt": "hi", name: value}))
    assert error.value.message.startswith(sentence) and not error.value.print_exception


@pytest.mark.parametrize("name,value,sentence", [
    ("max_new_tokens", 100000, "max_new_tokens must be a whole number from 1 to 8192, got 100000."),
    ("gamma", 0, "gamma must be a whole number from 1 to 64, got 0."),
    ("temperature", -3, "temperature must be a number from 0 to 2 (0 means greedy), got -3."),
])
def test_run_and_step_refuse_an_out_of_range_number_on_the_status_line_and_run_nothing(name, value, sentence,
                                                                                      monkeypatch):
    """Never clamped (the page's fields are plain numbers, not sliders that clamp what is typed): Run and Step put
    the field's sentence on the status line, where it stays once the toast has faded, and load nothing."""
    from specviz.app import callbacks, live
    from specviz.app.views import LiveView

    monkeypatch.setattr(callbacks, "build_pipeline", lambda config: pytest.fail("a model was loaded"))
    status = LiveView.names().index("status")
    controls = {**RunRequest(drafter=PROMPT_LOOKUP, prompt="hi").__dict__, name: value}
    for stream in (live.run(**controls), live.step(None, **controls)):
        answers = []
        with pytest.raises(gr.Error) as refusal:
            for answer in stream:
                answers.append(answer)
        assert refusal.value.message == sentence and not refusal.value.print_exception
        assert len(answers) == 1 and answers[0][status].startswith("**Not run**: ")
        assert answers[0][status].removeprefix("**Not run**: ").replace("\\", "") == sentence  # Markdown's escapes aside
        assert all(shown == gr.skip() for i, shown in enumerate(answers[0][:len(LiveView.names())]) if i != status)


def test_the_request_checks_every_numeric_field_of_the_config():
    assert set(NUMBERS) <= set(NUMBER_FIELDS) and set(NUMBERS) <= set(RunRequest.field_names())


def test_parse_field_reads_command_line_text():
    assert parse_field("gamma", "4") == 4 and parse_field("gamma", "4.0") == 4 and parse_field("top_p", "1") == 1.0
    with pytest.raises(ValueError, match="got 'four'$"):
        parse_field("gamma", "four")


class _Kept(logging.Handler):
    """Keeps the records it is handed (pytest's own log capture is off: pyproject.toml's addopts)."""

    def __init__(self, level):
        super().__init__(level)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def app_warnings():
    """The WARNING records specviz.app's loggers log during the test."""
    logger, kept = logging.getLogger("specviz.app"), _Kept(logging.WARNING)
    level = logger.level
    logger.addHandler(kept)
    logger.setLevel(logging.WARNING)
    yield kept.records
    logger.removeHandler(kept)
    logger.setLevel(level)


def test_quiet_refusals_log_one_line_for_a_refusal_and_keep_a_failures_traceback(app_warnings):
    from specviz.app.callbacks import Refusal, quiet_refusals, refused

    def stream(error):
        yield 1
        raise error

    def wrapped_refusal():
        try:
            raise refused("gamma must be a whole number")
        except ValueError as error:  # gr.Error is a ValueError: a callback's handler may wrap it again
            raise gr.Error(str(error), print_exception=False) from error

    refusal, failure = gr.Error("the prompt has 9031 tokens"), gr.Error("Decoding failed")
    refusal.__cause__, failure.__cause__ = ValueError("too long"), MemoryError("out of memory")  # as `raise ... from`
    with pytest.raises(Refusal, match="9031 tokens") as quiet:
        list(quiet_refusals(stream)(refusal))
    assert not quiet.value.print_exception
    with pytest.raises(gr.Error) as loud:
        list(quiet_refusals(stream)(failure))
    assert loud.value is failure and loud.value.print_exception
    with pytest.raises(Refusal) as unwrapped:
        quiet_refusals(wrapped_refusal)()
    assert unwrapped.value.message == "gamma must be a whole number"  # not its repr, and logged once
    assert [record.getMessage() for record in app_warnings] == ["refused: the prompt has 9031 tokens",
                                                                "refused: gamma must be a whole number"]


@pytest.mark.parametrize("value,fragment", [(3, "the system prompt must be text, got 3"),
                                            ("a\x1b[31m", "the system prompt holds a control character (U+001B"),
                                            ("x" * 60_000, "the system prompt has 60,000 characters")])
def test_a_bad_system_prompt_is_named(value, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        DecodeConfig(system_prompt=value).validate()


def test_the_system_prompt_may_be_empty_or_the_templates_default():
    assert DecodeConfig(system_prompt="").validate().system_prompt == ""
    assert DecodeConfig().validate().system_prompt is None


def test_an_empty_system_prompt_leaves_nothing_hidden_in_what_the_model_reads():
    from transformers import AutoTokenizer

    from specviz.decoding.pipeline import encode_prompt
    from specviz.models.offline import ModelUnavailable, offline_checkpoint

    try:
        tokenizer = AutoTokenizer.from_pretrained(offline_checkpoint())
    except ModelUnavailable as error:
        pytest.skip(str(error))
    read = {system: tokenizer.decode(encode_prompt(tokenizer, "Hi", True, system)) for system in (None, "", "Be brief.")}
    assert "You are a helpful AI assistant" in read[None]  # SmolLM2's template adds it when none is given
    assert read[""].startswith("<|im_start|>system\n<|im_end|>") and "helpful" not in read[""]
    assert "<|im_start|>system\nBe brief.<|im_end|>" in read["Be brief."]


def test_the_page_sends_an_empty_system_prompt_by_default():
    assert make_config(RunRequest(drafter=PROMPT_LOOKUP)).system_prompt == ""


@pytest.mark.parametrize("callback,arguments,sentence", [
    ("tabs.simulated_models.run_view", (1.5, 4, 0.1, 64, 1, 0), "Overlap β must be a number from 0 to 1, got 1.5."),
    ("tabs.simulated_models.run_view", (0.7, "four", 0.1, 64, 1, 0), "gamma must be a whole number from 1 to 64, got 'four'."),
    ("tabs.simulated_models.viability_view", (-1,), "seed must be a whole number"),
    ("tabs.memory_bandwidth.bandwidth_view", (11, 2, "fast", 312, 1, 1000),
     "Memory bandwidth (GB/s) must be a number from 0.1 to 1000000, got 'fast'."),
    ("tabs.memory_bandwidth.bandwidth_view", (11, 2, 1935, 312, 1.5, 1000),
     "Batch B must be a whole number from 1 to 100000, got 1.5."),
])
def test_the_simulated_and_bandwidth_labs_refuse_a_wrong_value_in_the_live_tabs_words(callback, arguments, sentence):
    """Their fields go through the live tab's field table (run settings) or are worded the same way (lab-only)."""
    import importlib

    import gradio as gr

    module, name = callback.rsplit(".", 1)
    with pytest.raises(gr.Error) as refusal:
        getattr(importlib.import_module(f"specviz.app.{module}"), name)(*arguments)
    assert refusal.value.message.startswith(sentence), refusal.value.message
