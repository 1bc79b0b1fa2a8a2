"""The launched app through gradio_client, as another program (or a browser) talks to it; and the live tab's
callbacks in process, where a test needs to reach inside (settings refused before any model loads, out of memory)."""

import json
import re
import time
from dataclasses import asdict, replace
from pathlib import Path

import psutil  # a dependency of accelerate
import pytest
import torch
from gradio_client import Client, handle_file

from specviz.app import live
from specviz.app.callbacks import friendly_message, make_config
from specviz.app.request import DRAFT_MODEL, LOOKUP_THEN_DRAFT, OFFLINE_PAIR, PROMPT_LOOKUP, RunRequest
from specviz.app.views import LiveView
from tests.conftest import AT_REST, comes_to_rest, save_tiny_llama

pytestmark = pytest.mark.xdist_group("app-clients")  # one worker: conftest.pytest_xdist_make_scheduler

OFFLINE = OFFLINE_PAIR
REPEAT = "Repeat after me: the cat sat on the mat, the cat sat on the mat."
TEST_RUN = RunRequest(pair=OFFLINE, drafter=PROMPT_LOOKUP, prompt=REPEAT, max_new_tokens=40)  # what _run changes
LONG_STORY = replace(TEST_RUN, prompt="Write a long story about a dragon who learns to paint.", max_new_tokens=512)


def _run(client, **fields):
    """One /run call with TEST_RUN's settings, changed by `fields` (RunRequest's field names)."""
    return client.predict(*replace(TEST_RUN, **fields).api_args(), api_name="/run")


def _kinds(rows_html: str) -> dict:
    return {kind: len(re.findall(f'class="sv-tok sv-{kind}" title=', rows_html))
            for kind in ("accepted", "rejected", "corrected", "bonus")}


@pytest.mark.slow
def test_the_run_and_step_endpoints_take_the_request_fields_in_order():
    """The HTTP API's argument order is RunRequest's field order (gradio_client callers pass them positionally),
    and each field reaches the widget of its name."""
    from specviz.app.ui import build_app

    endpoints = build_app().get_api_info()["named_endpoints"]
    for name in ("/run", "/step"):
        parameters = endpoints[name]["parameters"]
        assert [parameter["parameter_name"] for parameter in parameters] == RunRequest.field_names()
        assert parameters[4]["label"] == "Prompt" and parameters[6]["label"] == "Max new tokens"
        assert parameters[10]["label"] == "Seed" and parameters[12]["component"] == "Checkbox"


@pytest.mark.slow
def test_the_tabs_are_the_groups_in_a_lessons_order_each_with_its_labs():
    """The page's top tabs are the live tab then TAB_GROUPS' groups, in order; each group holds exactly its labs."""
    import gradio as gr

    from specviz.app.tabs.groups import LAB_TABS, LIVE_TAB, TAB_GROUPS
    from specviz.app.ui import build_app

    tabs = [block for block in build_app().blocks.values() if isinstance(block, gr.Tab)]
    top = [tab for tab in tabs if tab.label == LIVE_TAB or tab.label in TAB_GROUPS]
    assert [tab.label for tab in top] == [LIVE_TAB, *TAB_GROUPS]
    for group in top[1:]:
        inside = [tab.label for tab in tabs if tab.parent is not None and tab.parent.parent is group]
        assert inside == TAB_GROUPS[group.label], group.label
    leads = {tab.label: tab.children[0].value for tab in tabs if tab.label in {lab.name for lab in LAB_TABS}}
    assert leads == {lab.name: lab.lead for lab in LAB_TABS}  # each lab opens with its plain sentence


@pytest.mark.slow
def test_importing_the_app_builds_nothing_and_starts_no_thread():
    """Only app.py builds the Blocks (Spaces need its module-level `demo`); the model thread starts on first use."""
    import subprocess
    import sys

    script = (
        "import threading\n"
        "import gradio as gr\n"
        "built = []\n"
        "original = gr.Blocks.__init__\n"
        "gr.Blocks.__init__ = lambda self, *args, **kwargs: (built.append(1), original(self, *args, **kwargs))[1]\n"
        "before = {thread.name for thread in threading.enumerate()}\n"
        "import specviz.app.ui, specviz.app.live, specviz.app.tabs.groups\n"
        "from specviz.app import worker\n"
        "started = {thread.name for thread in threading.enumerate()} - before\n"
        "print(len(built), worker.MODEL_THREAD.started(), sorted(started))\n"
        "specviz.app.ui.build_app()\n"
        "print(len(built) > 0)\n"  # negative control: the patch does see a Blocks being built
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[:2] == ["0 False []", "True"]


@pytest.fixture(scope="module")
def client(app_url):
    return Client(app_url, verbose=False)


@pytest.mark.slow
def test_a_run_returns_rows_of_all_three_colours_and_replays_identically(client):
    result = _run(client, compare=True, drafter=DRAFT_MODEL, prompt="Explain what a rainbow is, then list three colours.")
    rows, stats, trace_file = result[0], result[2], result[-1]
    kinds = _kinds(rows)
    assert kinds["accepted"] > 0 and kinds["rejected"] > 0 and kinds["corrected"] + kinds["bonus"] > 0
    assert "identical output: yes" in stats and "measured" in stats
    replayed = client.predict(handle_file(trace_file), api_name="/import_trace")
    assert replayed[0] == rows and replayed[1] == result[1]


@pytest.mark.slow
def test_streamed_updates_only_append_rows_and_text(client):
    """Gradio sends a string that extends the previous one as just the appended part, so every streamed update of
    the rows and of the final text must extend the last; and a long run must arrive in several updates."""
    story = replace(TEST_RUN, prompt="Write a story about a dragon who learns to paint.", max_new_tokens=48)
    job = client.submit(*story.api_args(), api_name="/run")
    job.result()
    updates = [update for update in job.outputs() if '<div class="sv-row">' in update[0]]  # after the loading's
    assert len(updates) >= 2  # status lines (which first clear the previous run's rows)
    for before, after in zip(updates, updates[1:]):
        assert after[0].startswith(before[0]) and after[1].startswith(before[1])
    assert updates[-1][0].count('<div class="sv-row">') > updates[0][0].count('<div class="sv-row">')


@pytest.mark.slow
@pytest.mark.parametrize("when", ["first rows", 1.0])
def test_cancelling_a_run_frees_the_server(client, app_server, when):
    """The API's cancel once rows stream, or 1 s after Run. The engine runs ahead of the stream on the model
    thread; it must stop too, and the next run start at once. (Stop 0.05 s and 0.1 s after Run, before the run has
    even started, is the browser's test: gradio_client cannot cancel a job the server has not picked up yet.)"""
    server = psutil.Process(app_server[1].pid)
    job = client.submit(*LONG_STORY.api_args(), api_name="/run")
    if when == "first rows":
        while not job.outputs():
            time.sleep(0.05)
    else:
        time.sleep(when)
    job.cancel()
    seconds = comes_to_rest(server)  # the round (or the forward) in flight ends: the server is idle, not decoding on
    assert seconds[-1] < AT_REST, seconds
    assert _run(client, max_new_tokens=4)[0].count('<div class="sv-row">') >= 1  # and the next run works


@pytest.mark.slow
def test_tokenizers_that_share_no_token_are_refused(client, models_dir, offline_target):
    from tests.builders import word_level_tokenizer

    target_dir = save_tiny_llama(models_dir / "mismatched-t", offline_target.tokenizer, 49152)
    draft_dir = save_tiny_llama(models_dir / "mismatched-d", word_level_tokenizer(["<unk>", "qqqqzzzzxxxx"]), 2)
    with pytest.raises(Exception, match="do not share a vocabulary.*share no token"):
        _run(client, pair="Custom", target=target_dir, draft=draft_dir, drafter=DRAFT_MODEL)


@pytest.mark.slow
def test_malformed_trace_upload_is_refused(client, tmp_path):
    good = json.loads(Path(_run(client, max_new_tokens=8, temperature=1.0, seed=3)[-1]).read_text(encoding="utf-8"))
    swapped = json.loads(json.dumps(good))
    swapped["token_ids"][0] += 1  # a token the rounds never emitted
    files = {  # a sentence each, the server serving after all of them
        "{not json": "not valid JSON",
        '{"schema": 1, "rounds": "x"}': "not a specviz trace",
        json.dumps(good)[:-40]: "not valid JSON",
        json.dumps(good).replace('"wall_ms": ', '"wall_ms": NaN, "x": ', 1): "not a specviz trace",
        '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}": "not valid JSON",
        json.dumps(swapped): "contradicts itself at token_ids",
    }
    for index, (text, sentence) in enumerate(files.items()):
        bad = tmp_path / f"bad{index}.json"
        bad.write_text(text)
        note = client.predict(handle_file(str(bad)), api_name="/import_trace")[-1]
        assert note.startswith("**Not loaded.**") and sentence in note, note
    assert _run(client, max_new_tokens=1)[0].count('<div class="sv-row">') >= 1


@pytest.mark.slow
def test_adaptive_gamma_from_the_ui_matches_plain_decoding(client):
    result = _run(client, prompt="Name three colours.", compare=True, adaptive=True, max_new_tokens=24)
    stats = result[2]
    assert "adaptive γ ≤ 4" in stats and "identical output: yes" in stats


@pytest.mark.slow
def test_the_speedup_plot_puts_an_adaptive_run_at_its_mean_draft_length():
    from specviz.analysis.metrics import measured_gamma
    from specviz.config import DecodeConfig
    from specviz.decoding import engine
    from tests.fakes import fake_pipeline

    config = DecodeConfig(gamma=4, max_new_tokens=24, temperature=1.0, seed=5, chat=False, adaptive=True)
    trace = engine.run_speculative(fake_pipeline(8, draft_salt=1), "abcabcab", config)
    lengths = [r.drafted for r in trace.rounds]
    assert len(set(lengths)) > 1 and measured_gamma(trace) == sum(lengths) / len(lengths)
    trace.config["adaptive"] = False
    assert measured_gamma(trace) == 4


@pytest.mark.parametrize("temperature,said", [(0.0, "identical output: yes"), (1.0, "not expected at T > 0")])
def test_the_stats_explain_what_identical_output_means_at_each_temperature(temperature, said):
    from specviz.analysis.metrics import summarize
    from specviz.config import DecodeConfig
    from specviz.decoding import engine, plain
    from specviz.decoding.calibration import calibrate
    from specviz.views.stats_text import stats_markdown
    from tests.fakes import fake_pipeline

    pipeline, config = fake_pipeline(8, draft_salt=1), DecodeConfig(gamma=3, max_new_tokens=24, temperature=temperature,
                                                                    chat=False)
    calibrate(pipeline, "fake", 4)
    trace = engine.run_speculative(pipeline, "abcabcab", config)
    trace.baseline = plain.baseline_decode(pipeline, "abcabcab", config)
    stats = stats_markdown(trace, summarize(trace))
    assert said in stats and ("Losslessness" in stats) == (temperature > 0)
    assert "c = " in stats and "target step timed once per model and device" not in stats  # the baseline's step


def test_step_advances_one_round_per_call(client):
    first = client.predict(*TEST_RUN.api_args(), api_name="/step")
    second = client.predict(*TEST_RUN.api_args(), api_name="/step")
    assert first[0].count('<div class="sv-row">') == 1
    assert second[0].count('<div class="sv-row">') == 2


def test_out_of_memory_gets_advice():
    assert "ran out of memory" in friendly_message(torch.OutOfMemoryError("CUDA out of memory"))


@pytest.mark.parametrize("field,value", [
    ("gamma", 2.5), ("gamma", 0), ("gamma", -1), ("gamma", 1000), ("top_k", -1), ("top_p", 0.0), ("top_p", 1.5),
    ("temperature", float("nan")), ("temperature", -0.5), ("max_new_tokens", 0), ("max_new_tokens", 10**6),
])
def test_settings_out_of_range_are_refused_before_any_model_loads(field, value):
    import gradio as gr

    settings = dict(pair=OFFLINE, target="", draft="", drafter=PROMPT_LOOKUP, prompt="hi", gamma=4,
                    max_new_tokens=8, temperature=0.0, top_k=0, top_p=1.0, seed=0)
    settings[field] = value
    with pytest.raises(gr.Error) as error:
        make_config(RunRequest(**settings))
    assert error.value.message.startswith(f"{field} must be ") and error.value.message.endswith(f", got {value}.")


@pytest.mark.parametrize("prompt,message", [
    ("", "The prompt is empty"), (" \n\t ", "The prompt is empty"), ("a" * 100_000, "the limit is 50,000"),
    ("null \x00 byte", "control character"), ("lone \ud800 surrogate", "not valid Unicode"),
    ("C1 \x85 control", "control character"),
])
def test_bad_prompts_are_refused_before_any_model_loads(prompt, message):
    import gradio as gr

    with pytest.raises(gr.Error, match=message):
        make_config(RunRequest(OFFLINE, "", "", PROMPT_LOOKUP, prompt, 4, 8, 0.0, 0, 1.0, 0))


@pytest.mark.slow
def test_a_corrupt_model_file_is_a_clear_error_and_the_app_goes_on(client, models_dir, offline_target):
    folder = save_tiny_llama(models_dir / "corrupt", offline_target.tokenizer, 49152)
    (models_dir / "corrupt" / "model.safetensors").write_bytes(b"not weights" * 50)
    with pytest.raises(Exception, match="holds no usable checkpoint"):
        _run(client, pair="Custom", target=folder, draft="ngram")
    assert _run(client, max_new_tokens=4)[0].count('<div class="sv-row">') >= 1


@pytest.mark.slow
def test_the_offline_pair_drafts_with_the_distilled_draft(client):
    kinds = _kinds(_run(client, prompt="Explain what a rainbow is.", drafter=DRAFT_MODEL, max_new_tokens=24)[0])
    assert kinds["accepted"] > 0 and kinds["corrected"] + kinds["bonus"] > 0


@pytest.mark.parametrize("pair,draft,drafter,expected", [
    (OFFLINE, "", LOOKUP_THEN_DRAFT, "ngram+distilled"),
    (OFFLINE, "", DRAFT_MODEL, "distilled"),
    (OFFLINE, "", PROMPT_LOOKUP, "ngram"),
    ("Custom", "some/draft", LOOKUP_THEN_DRAFT, "ngram+some/draft"),
    ("Custom", "ngram+some/draft", LOOKUP_THEN_DRAFT, "ngram+some/draft"),
    ("Custom", "ngram", LOOKUP_THEN_DRAFT, "ngram"),
])
def test_the_drafter_choice_names_the_draft(pair, draft, drafter, expected):
    target = "some/target" if pair == "Custom" else ""
    assert make_config(RunRequest(pair, target, draft, drafter, "hi", 4, 8, 0.0, 0, 1.0, 0)).draft == expected


@pytest.mark.slow
def test_the_offline_pair_copies_then_drafts_by_default(client):
    kinds = _kinds(_run(client, prompt=REPEAT, drafter=LOOKUP_THEN_DRAFT, max_new_tokens=32)[0])
    assert kinds["accepted"] > 0


@pytest.mark.slow
def test_the_distilled_draft_with_another_target_is_a_clear_error(client, tiny_draft_folder):
    with pytest.raises(Exception, match="works with that target only"):
        _run(client, pair="Custom", target=tiny_draft_folder, draft="distilled", drafter=DRAFT_MODEL)
    assert _run(client, max_new_tokens=4)[0].count('<div class="sv-row">') >= 1


@pytest.mark.slow
def test_a_huge_upload_is_refused_by_the_server(client, app_url, tmp_path):
    import httpx  # a dependency of gradio

    huge = tmp_path / "huge.json"
    with open(huge, "wb") as handle:
        handle.truncate(21 * 2**20)
    with pytest.raises(Exception, match="exceeds the maximum file size"):  # the client reads the server's limit
        client.predict(handle_file(str(huge)), api_name="/import_trace")
    with open(huge, "rb") as handle:  # and a client that ignores it is refused by the server
        response = httpx.post(f"{app_url}gradio_api/upload", files={"files": ("huge.json", handle)}, timeout=60)
    assert response.status_code == 413
    assert _run(client, max_new_tokens=4)[0].count('<div class="sv-row">') >= 1


@pytest.mark.slow
def test_out_of_memory_mid_run_is_a_clear_error_and_the_next_run_works(monkeypatch):
    """CI has no GPU to exhaust, so the real offline target's forward raises torch.OutOfMemoryError (as CUDA's
    allocator does) in a chosen call; the rest is real: the engine on the model thread, Step's and Run's callbacks."""
    import gradio as gr

    from specviz.models.loading import TransformersModel

    # every forward, a sequence's (feed) or a tree's (feed_tree, which the engine's target uses), goes through _feed
    real_feed, feeds_left = TransformersModel._feed, {"count": None}  # forwards that still succeed; None: all of them

    def feed_until_memory_runs_out(self, *args, **kwargs):
        if feeds_left["count"] is not None:
            feeds_left["count"] -= 1
            if feeds_left["count"] < 0:
                feeds_left["count"] = None  # it happens once
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_feed(self, *args, **kwargs)

    monkeypatch.setattr(TransformersModel, "_feed", feed_until_memory_runs_out)
    controls = asdict(replace(TEST_RUN, max_new_tokens=16))  # prompt lookup: only the target runs forwards
    session = list(live.step(None, **controls))[-1][-1]  # the prompt's forward and round 1 (Step streams progress)
    feeds_left["count"] = 0  # round 2 runs out
    with pytest.raises(gr.Error, match="ran out of memory"):
        list(live.step(session, **controls))
    assert session.finished  # so the next click starts afresh
    again = list(live.step(session, **controls))[-1]
    assert again[-1] is not session and again[0].count('<div class="sv-row">') == 1
    feeds_left["count"] = 2  # a streamed run: the prompt's forward and round 1 succeed, round 2 runs out
    with pytest.raises(gr.Error, match="ran out of memory"):
        for _ in live.run(**controls):
            pass
    last = dict(zip(LiveView.names(), list(live.run(**controls))[-1]))  # the next run goes to its end
    trace, trace_file = last["trace"], last["download"]
    assert trace.stop_reason and trace_file and len(trace.token_ids) > 0


@pytest.mark.slow
def test_a_client_that_vanishes_mid_run_frees_the_model(app_server):
    """A browser tab closed mid-run: the generation must stop too, or it would hold the model thread."""
    import subprocess
    import sys

    server = psutil.Process(app_server[1].pid)
    script = (
        "import os, time\n"
        "from gradio_client import Client\n"
        f"job = Client({app_server[0]!r}, verbose=False).submit(*{LONG_STORY.api_args()!r}, api_name='/run')\n"
        "while not job.outputs():\n    time.sleep(0.05)\n"
        "os._exit(0)\n"  # no cancel, no goodbye: the connection just drops
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    seconds = comes_to_rest(server)  # the round in flight ends
    assert seconds[-1] < AT_REST, seconds
    assert _run(Client(app_server[0], verbose=False), max_new_tokens=4)[0].count('<div class="sv-row">') >= 1


@pytest.mark.parametrize("dtype,said", [("float32", "this is a bug"), ("bfloat16", "In bfloat16 a forward over several")])
def test_a_greedy_run_that_parts_from_plain_decoding_is_a_bug_in_float32_and_a_rounding_tie_in_half(dtype, said):
    from specviz.analysis.metrics import summarize
    from specviz.config import DecodeConfig
    from specviz.decoding import engine, plain
    from specviz.views.stats_text import stats_markdown
    from tests.fakes import fake_pipeline

    pipeline, config = fake_pipeline(8, draft_salt=1), DecodeConfig(gamma=3, max_new_tokens=12, chat=False)
    trace = engine.run_speculative(pipeline, "abcabcab", config)
    trace.baseline = plain.baseline_decode(pipeline, "abcabcab", config)
    trace.baseline.token_ids = [(trace.token_ids[0] + 1) % 8, *trace.token_ids[1:]]  # the runs part at token 0
    trace.dtype = dtype
    assert said in stats_markdown(trace, summarize(trace))
