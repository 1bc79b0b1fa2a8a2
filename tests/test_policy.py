"""Hosted mode and allowed folders (specviz/app/policy.py), and the app refusing what they forbid."""

import sys
import types

import gradio as gr
import pytest

from specviz.app.callbacks import make_config
from specviz.app.policy import current_policy, gpu_decorator, listen_host
from specviz.app.request import OFFLINE_PAIR, PROMPT_LOOKUP, RunRequest
from specviz.config import OFFLINE_MODEL, DecodeConfig

OFFLINE = OFFLINE_PAIR


def _config(**fields):
    return DecodeConfig(**fields).validate()


OUTSIDE = "neither a hub id nor a folder inside the models directory"


def test_local_use_allows_any_hub_id_and_folders_in_the_cache(tmp_path, monkeypatch):
    for name in ("SPECVIZ_HOSTED", "SPECVIZ_MODELS_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    policy = current_policy()
    assert not policy.hosted and policy.models_dir == (tmp_path / "cache").resolve()  # by default, the cache
    policy.check(_config(target="someone/any-model", draft=str(tmp_path / "cache" / "draft"), gamma=64,
                         max_new_tokens=8192), "hi")
    with pytest.raises(ValueError, match=OUTSIDE):
        policy.check(_config(target=str(tmp_path)), "hi")


def test_folders_outside_the_models_directory_are_refused(tmp_path, monkeypatch):
    allowed, elsewhere = tmp_path / "models", tmp_path / "elsewhere"
    (allowed / "tiny").mkdir(parents=True)
    elsewhere.mkdir()
    (allowed / "link").symlink_to(elsewhere)  # a link out of the models directory is judged by where it points
    (allowed / "loop").symlink_to(allowed / "loop")
    monkeypatch.setenv("SPECVIZ_MODELS_DIR", str(allowed))
    policy = current_policy()
    policy.check(_config(target=str(allowed / "tiny")), "hi")
    policy.check(_config(target=str(allowed / "not-there-yet")), "hi")  # inside: the loader says it is missing
    for outside in (elsewhere, allowed / "link", allowed / "tiny" / ".." / ".." / "elsewhere", "/etc", "../x",
                    "~no-such-user-here/x", allowed / "loop", "./models", "a/b/c"):
        with pytest.raises(ValueError, match=OUTSIDE):
            policy.check(_config(target=str(outside)), "hi")


def test_a_path_outside_gets_the_same_sentence_whether_or_not_it_exists(tmp_path, monkeypatch):
    """No probing the server's disk: an existing folder (here a real checkpoint's) and a missing one outside the
    models directory get the very same sentence, in the policy and through the app's callback."""
    monkeypatch.setenv("SPECVIZ_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.delenv("SPECVIZ_HOSTED", raising=False)
    existing, missing = tmp_path / "secret", tmp_path / "secret-not-there"
    existing.mkdir()
    (existing / "config.json").write_text("{}")

    def message(folder):
        request = RunRequest(pair="Custom", target=str(folder), draft="ngram", drafter=PROMPT_LOOKUP, prompt="hi")
        with pytest.raises(gr.Error) as error:
            make_config(request)
        return error.value.message.replace(str(folder), "FOLDER")

    assert message(existing) == message(missing)
    assert OUTSIDE in message(existing)
    for folder in (existing / "config.json", "/etc/passwd", "/no/such/file"):  # files and missing files alike
        assert message(folder) == message(missing)


@pytest.fixture
def hosted(monkeypatch):
    monkeypatch.setenv("SPECVIZ_HOSTED", "1")
    for name in ("SPECVIZ_MODELS_DIR", "SPECVIZ_ALLOWED_MODELS", "SPECVIZ_MAX_NEW_TOKENS", "SPECVIZ_MAX_GAMMA",
                 "SPECVIZ_MAX_PROMPT_CHARS"):
        monkeypatch.delenv(name, raising=False)
    return current_policy()


def test_hosted_mode_allows_the_listed_models_only(hosted, monkeypatch):
    hosted.check(_config(target=OFFLINE_MODEL), "hi")
    hosted.check(_config(target="openai-community/gpt2-xl", draft="openai-community/gpt2"), "hi")
    hosted.check(_config(target="openai-community/gpt2-xl", draft="ngram+openai-community/gpt2"), "hi")
    hosted.check(_config(target=OFFLINE_MODEL, draft="ngram+distilled"), "hi")
    with pytest.raises(ValueError, match="not offered here"):
        hosted.check(_config(target="someone/huge-model"), "hi")
    with pytest.raises(ValueError, match="draft model 'someone/huge-model' is not offered"):
        hosted.check(_config(target=OFFLINE_MODEL, draft="ngram+someone/huge-model"), "hi")
    monkeypatch.setenv("SPECVIZ_ALLOWED_MODELS", "someone/huge-model, other/one")
    current_policy().check(_config(target="someone/huge-model"), "hi")


@pytest.mark.parametrize("path", ["/tmp", "./models/x", "~/models", "a/b/c"])
def test_hosted_mode_loads_no_local_paths(hosted, path):
    with pytest.raises(ValueError, match="local path"):
        hosted.check(_config(target=path), "hi")


def test_hosted_mode_loads_folders_from_the_models_directory_only_when_one_is_set(hosted, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_MODELS_DIR", str(tmp_path))
    policy = current_policy()
    policy.check(_config(target=str(tmp_path / "model")), "hi")
    with pytest.raises(ValueError, match="neither a hub id nor a folder inside the models directory$"):  # no path
        policy.check(_config(target="/tmp"), "hi")


@pytest.mark.parametrize("host,environ,expected", [
    (None, {}, "127.0.0.1"),  # private by default
    ("0.0.0.0", {}, "0.0.0.0"),
    (None, {"GRADIO_SERVER_NAME": "0.0.0.0"}, "0.0.0.0"),
    (None, {"SPACE_ID": "someone/specviz"}, "0.0.0.0"),  # a Hugging Face Space
    ("127.0.0.1", {"SPACE_ID": "someone/specviz"}, "127.0.0.1"),
    (None, {"GRADIO_SERVER_NAME": " "}, "127.0.0.1"),
])
def test_the_app_listens_on_this_machine_only_unless_told(host, environ, expected):
    assert listen_host(host, environ) == expected


@pytest.mark.parametrize("fields,prompt,message", [
    (dict(max_new_tokens=257), "hi", "max new tokens is capped at 256"),
    (dict(gamma=9), "hi", "γ is capped at 8"),
    ({}, "x" * 4001, "the limit is 4,000"),
])
def test_hosted_mode_caps_prompt_tokens_and_gamma(hosted, fields, prompt, message):
    with pytest.raises(ValueError, match=message):
        hosted.check(_config(**fields), prompt)


def test_caps_come_from_the_environment_and_bad_values_are_named(hosted, monkeypatch):
    monkeypatch.setenv("SPECVIZ_MAX_GAMMA", "2")
    assert current_policy().max_gamma == 2
    monkeypatch.setenv("SPECVIZ_MAX_GAMMA", "lots")
    with pytest.raises(ValueError, match="SPECVIZ_MAX_GAMMA must be a whole number"):
        current_policy()


def test_the_app_refuses_what_hosted_mode_forbids_before_loading_anything(hosted):
    settings = dict(pair="Custom", target="/etc", draft="ngram", drafter=PROMPT_LOOKUP, prompt="hi", gamma=4,
                    max_new_tokens=8, temperature=0.0, top_k=0, top_p=1.0, seed=0)
    with pytest.raises(gr.Error, match="loads no local paths"):
        make_config(RunRequest(**settings))
    with pytest.raises(gr.Error, match="gamma must be a whole number from 1 to 8, got 12"):  # the cap narrows it
        make_config(RunRequest(**{**settings, "target": "", "pair": OFFLINE, "gamma": 12}))


@pytest.mark.slow
def test_hosted_app_says_its_caps_and_refuses_a_value_above_one_in_words(hosted):
    """The live tab's numbers are boxes, not sliders (a slider quietly clamps a typed 300 to its end and runs that):
    the cap is said under the box, and a value above it gets the field's sentence."""
    from specviz.app.ui import build_app

    demo = build_app()
    first = lambda label: next(block for block in demo.blocks.values() if getattr(block, "label", None) == label)  # noqa: E731
    assert all(isinstance(first(label), gr.Number) for label in ("γ: tokens drafted per round", "Max new tokens"))
    assert first("γ: tokens drafted per round").info == "A whole number from 1 to 8 on this shared server"
    assert first("Max new tokens").info == "A whole number from 1 to 256 on this shared server"
    assert first("γ: tokens drafted per round").maximum is None  # nothing for a browser to clamp to
    with pytest.raises(gr.Error, match="max_new_tokens must be a whole number from 1 to 256, got 300"):
        make_config(RunRequest(pair=OFFLINE, drafter=PROMPT_LOOKUP, max_new_tokens=300))


def test_the_hosted_allowed_models_are_models_this_server_can_load(hosted, monkeypatch):
    from specviz.models import split_gguf

    monkeypatch.setattr(split_gguf, "available", lambda model: False)  # the Qwen pair's parts not installed
    with pytest.raises(ValueError, match="not offered here") as refusal:
        current_policy().check(_config(target="someone/huge-model"), "hi")
    allowed = str(refusal.value).split("this server allows: ")[1].split(", ")
    assert "openai-community/gpt2" in allowed and OFFLINE_MODEL in allowed
    assert not any(name.startswith("ngram") or name in ("int4", "distilled") for name in allowed)  # no drafters
    assert not any("Qwen2.5-Coder" in name for name in allowed)  # nor models whose files are missing


def test_zero_gpu_decorator_is_used_only_when_the_spaces_package_is_there(monkeypatch):
    function = lambda: 1  # noqa: E731
    monkeypatch.setitem(sys.modules, "spaces", None)  # import spaces now fails, as off a Space
    assert gpu_decorator()(function) is function
    monkeypatch.setitem(sys.modules, "spaces", types.SimpleNamespace(GPU=lambda f: ("on a GPU", f)))
    assert gpu_decorator()(function) == ("on a GPU", function)
