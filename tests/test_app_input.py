"""What the launched app refuses, and how, through the HTTP API as any program can call it: each field's own
sentence for a wrong value or a wrong type, one log line and no traceback per refusal, local folders from the
models directory only (the same sentence for any other path), and a server that listens on 127.0.0.1 unless told."""

import re
from dataclasses import replace

import pytest
from gradio_client import Client

from specviz.app.request import DRAFT_MODEL, OFFLINE_PAIR, PROMPT_LOOKUP, RunRequest
from tests.conftest import save_tiny_llama, worker_threads

pytestmark = pytest.mark.xdist_group("app-clients")  # one worker: conftest.pytest_xdist_make_scheduler

TEST_RUN = RunRequest(pair=OFFLINE_PAIR, drafter=PROMPT_LOOKUP, prompt="Repeat after me: the cat sat on the mat.",
                      max_new_tokens=4)
OUT_OF_RANGE = [
    (dict(prompt="   "), "The prompt is empty"),
    (dict(gamma=0), "gamma must be a whole number from 1 to 64, got 0."),
    (dict(temperature=-1), "temperature must be a number from 0 to 2 (0 means greedy), got -1."),
    (dict(max_new_tokens=100000), "max_new_tokens must be a whole number from 1 to 8192, got 100000."),
    (dict(temperature=2.5), "temperature must be a number from 0 to 2 (0 means greedy), got 2.5."),
    (dict(seed=-3), "seed must be a whole number from 0 to 9223372036854775807, got -3."),
    (dict(pair="Custom", target="", draft=""), "Give both a target and a draft"),
    (dict(pair="Custom", target="distilled", draft="ngram"), "can only be the drafter"),
    (dict(pair="Custom", target="no-such-org/no-such-model", draft="ngram"), "cannot be reached"),
    (dict(prompt="word " * 9000), "context holds"),
    (dict(prompt="x" * 100_000), "the limit is 50,000"),
    (dict(prompt="tab\tand line\nare fine, but not \x07 or \x1b[31m"), "control character (U+0007"),
    (dict(gamma=-1), "gamma must be a whole number from 1 to 64, got -1."),
    (dict(gamma=1000), "gamma must be a whole number from 1 to 64, got 1000."),
    (dict(gamma=2.5), "gamma must be a whole number from 1 to 64, got 2.5."),
    (dict(max_new_tokens=0), "max_new_tokens must be a whole number from 1 to 8192, got 0."),
    (dict(max_new_tokens=10**6), "max_new_tokens must be a whole number from 1 to 8192, got 1000000."),
    (dict(top_p=0), "top_p must be a number above 0 and at most 1 (1 turns it off), got 0."),
    (dict(top_p=1.5), "top_p must be a number above 0 and at most 1 (1 turns it off), got 1.5."),
    (dict(top_k=-1), "top_k must be a whole number from 0 to 1000000 (0 turns it off), got -1."),
]
# Every field of /run with values of the wrong type: text where a number goes, numbers where text goes, null, lists.
WRONG_TYPES = [({name: value}, f"{name} must be a ") for name in ("gamma", "max_new_tokens", "temperature", "top_k",
                                                                   "top_p", "seed")
               for value in ("abc", "", None, [4], True, {"a": 1})]
WRONG_TYPES += [({name: value}, f"{name} must be one of") for name in ("pair", "drafter") for value in (3, None, ["x"])]
WRONG_TYPES += [(dict(prompt=3), "The prompt must be text, got 3."), (dict(prompt=["x"]), "The prompt must be text"),
                (dict(prompt=None), "The prompt is empty"),
                (dict(pair="Custom", target=5, draft="ngram"), "target must be a model id or folder (text), got 5."),
                (dict(pair="Custom", target="some/model", draft=[1]), "draft must be a model id or folder (text)")]
WRONG_TYPES += [({name: value}, f"{name} must be true or false") for name in ("compare", "adaptive")
                for value in ("yes", None, 2)]
WRONG_TYPES += [(dict(system_prompt=value), "The system prompt must be text") for value in (3, ["x"], None)]
WRONG_TYPES += [(dict(system_prompt="bell \x07"), "The system prompt holds a control character (U+0007")]
BAD_INPUT = OUT_OF_RANGE + WRONG_TYPES


def _run(client, **fields):
    return client.predict(*replace(TEST_RUN, **fields).api_args(), api_name="/run")


def _rows(client) -> int:
    """The rows of a one-token run: proof that the server still serves."""
    return _run(client, max_new_tokens=1)[0].count('<div class="sv-row">')


@pytest.fixture(scope="module")
def client(app_url):
    return Client(app_url, verbose=False)


@pytest.mark.slow
def test_bad_input_is_a_clear_error_in_one_log_line_and_the_server_keeps_serving(client, app_log):
    """Every refusal above through /run: the error names its field as BAD_INPUT says; the server's log holds one
    `refused: ...` line for each, not a traceback (Gradio prints one for every error it is not told to keep quiet
    about); and the server still serves a run afterwards. One test, one run before and after: a run after each
    refusal took 80 of the 95 seconds and proved nothing the run after all of them does not."""
    assert _rows(client) >= 1  # warm: loading the model may log on its own
    start = app_log.stat().st_size
    wrong = []
    for overrides, message in BAD_INPUT:
        try:
            _run(client, **overrides)
            wrong.append(f"{overrides!r:.60}: accepted")
        except Exception as error:  # gradio_client raises its AppError for a refusal
            if message not in str(error):
                wrong.append(f"{overrides!r:.60}: {str(error)[:200]!r}, expected {message!r}")
    assert not wrong, "\n".join(wrong)
    assert _rows(client) >= 1  # the next run works
    logged = app_log.read_bytes()[start:].decode("utf-8", "replace").splitlines()
    assert "Traceback" not in "\n".join(logged)
    assert len(logged) == len(BAD_INPUT) and all(line.startswith("refused: ") for line in logged), logged[:5]


@pytest.mark.slow
@pytest.mark.parametrize("overrides,message", [
    (dict(gamma="abc"), "gamma must be a whole number from 1 to 64, got 'abc'."),
    (dict(seed=None), "seed must be a whole number from 0 to 9223372036854775807, got nothing (an empty box, or "
                      "text that is no number)."),
    (dict(prompt=7), "The prompt must be text, got 7."),
])
def test_step_names_the_field_too(app_url, overrides, message):
    client = Client(app_url, verbose=False)  # a session of its own: Step reads the settings when a run starts
    with pytest.raises(Exception, match=re.escape(message)):
        client.predict(*replace(TEST_RUN, **overrides).api_args(), api_name="/step")
    assert client.predict(*TEST_RUN.api_args(), api_name="/step")[0].count('<div class="sv-row">') == 1


@pytest.mark.slow
def test_a_folder_in_the_models_directory_runs_and_any_other_path_gets_one_sentence(client, models_dir, tmp_path,
                                                                                    offline_target):
    inside = save_tiny_llama(models_dir / "tiny-target", offline_target.tokenizer, 49152)
    result = _run(client, pair="Custom", target=inside, draft="ngram", drafter=PROMPT_LOOKUP)
    assert result[0].count('<div class="sv-row">') >= 1
    outside = save_tiny_llama(tmp_path / "tiny-target", offline_target.tokenizer, 49152)  # a real checkpoint
    messages = []
    for folder in (outside, str(tmp_path / "no-such-folder"), "/etc", str(models_dir / ".." / "x")):
        with pytest.raises(Exception) as error:
            _run(client, pair="Custom", target=folder, draft="ngram", drafter=DRAFT_MODEL)
        messages.append(str(error.value).replace(str(folder), "FOLDER"))
    assert len(set(messages)) == 1 and "neither a hub id nor a folder inside the models directory" in messages[0]


@pytest.mark.slow
def test_python_app_py_with_no_settings_listens_on_127_0_0_1_only(tmp_path):
    import socket

    import psutil

    from specviz.bench.loadtest import start_server

    url, process = start_server(tmp_path / "app.log", env={"GRADIO_SERVER_NAME": None, "SPACE_ID": None, **worker_threads()})
    try:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        listening = {(conn.laddr.ip, conn.laddr.port) for conn in psutil.Process(process.pid).net_connections("inet")
                     if conn.status == psutil.CONN_LISTEN}
        assert listening == {("127.0.0.1", port)}, listening
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:  # this machine's address on its network
            probe.connect(("192.0.2.1", 9))  # (no packet is sent for a UDP connect)
            address = probe.getsockname()[0]
        if address != "127.0.0.1":
            with pytest.raises(OSError):
                socket.create_connection((address, port), timeout=2).close()
    finally:
        process.terminate()
        process.wait(timeout=30)
