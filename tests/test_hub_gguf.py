"""A pair's GGUF from the Hugging Face hub (models/split_gguf.py, `SplitModel.hub`), tested for real against a local
server that speaks the hub's file API on 127.0.0.1 (HF_ENDPOINT): the same huggingface_hub download as from the hub,
then the size and sha256 checked before the file is used; a file that differs is refused, and an unreachable hub
with no offline copy is refused before any model loads."""

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from specviz.models import hub, offline, split_gguf
from specviz.models.offline import ModelUnavailable
from specviz.models.split_gguf import HubFile, SplitModel

REPO, FILE, COMMIT = "specviz-tests/tiny-GGUF", "tiny-q4_1.gguf", "0123456789abcdef0123456789abcdef01234567"
MODEL_ID = "offline:hub-test-model"


class LocalHub(BaseHTTPRequestHandler):
    """HEAD and GET of /{repo}/resolve/{revision}/{file}, with the headers huggingface_hub reads (X-Repo-Commit, an
    ETag, Content-Length); every other path 404s as the hub's does. `files` maps such a path to a file on disk."""

    files: dict[str, Path] = {}

    def do_HEAD(self):
        self._answer(body=False)

    def do_GET(self):
        self._answer(body=True)

    def _answer(self, body: bool):
        path = self.files.get(self.path.split("?")[0])
        if path is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.end_headers()
            return
        data = path.read_bytes()
        self.send_response(200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture
def local_hub(tmp_path, monkeypatch):
    """A hub on 127.0.0.1 that serves whatever file a test puts at REPO/FILE; its own download cache and ours."""
    import huggingface_hub.constants

    LocalHub.files = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), LocalHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "specviz-cache"))
    hub.reachable.cache_clear()
    yield lambda path: LocalHub.files.__setitem__(f"/{REPO}/resolve/main/{FILE}", path)
    server.shutdown()
    hub.reachable.cache_clear()


def hub_model(path: Path, monkeypatch) -> SplitModel:
    """A model whose GGUF is `path` (its size and sha256 pinned), on the local hub only: no part package exists."""
    data = path.read_bytes()
    model = SplitModel(MODEL_ID, "specviz-tests/tiny", "specviz-no-such-part-package", "1.0.0", 1, len(data),
                       hashlib.sha256(data).hexdigest(), "hub-test-model.gguf", hub=HubFile(REPO, FILE))
    monkeypatch.setitem(split_gguf.SPLIT_MODELS, MODEL_ID, model)
    return model


def test_an_unreachable_hub_without_an_offline_copy_is_refused_before_any_model_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing answers
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    hub.reachable.cache_clear()
    gguf = tmp_path / "x.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    model = hub_model(gguf, monkeypatch)
    try:
        sentence = split_gguf.unobtainable([MODEL_ID])
    finally:
        hub.reachable.cache_clear()
    assert sentence == (f"hub-test-model is not here (from {REPO} on the Hugging Face hub: it cannot be reached); "
                        f"install its offline copy with: {model.install_command}")
    assert split_gguf.unobtainable(["offline:SmolLM2-135M-Instruct"]) is None  # not a split model: not its concern


def test_a_file_from_the_hub_whose_hash_differs_is_refused_and_not_kept(local_hub, tmp_path, monkeypatch):
    pinned, served = tmp_path / "pinned.gguf", tmp_path / "served.gguf"
    pinned.write_bytes(b"GGUF" + bytes(1000))
    served.write_bytes(b"GGUF" + bytes(999) + b"!")  # the same size, one byte apart
    model = hub_model(pinned, monkeypatch)
    local_hub(served)
    assert split_gguf.unobtainable([MODEL_ID]) is None  # the hub answers: nothing refused before loading
    with pytest.raises(ModelUnavailable, match=f"The file {REPO}/{FILE} from the hub is not the hub-test-model GGUF "
                                               "specviz pins .*so it was not used; install its offline copy"):
        split_gguf.assembled_gguf(model)
    assert not split_gguf.assembled_path(model).exists()


@pytest.mark.slow
@pytest.mark.skipif(offline.installed_gguf() is None, reason=offline.INSTALL_COMMAND)
def test_a_gguf_fetched_through_the_hub_code_path_is_checked_and_runs_a_round(local_hub, tmp_path, monkeypatch):
    """The embedded SmolLM2 GGUF (98 MB) served as a hub file: fetched by huggingface_hub, checked, linked into the
    cache, converted, and decoded with; a second use reads the cache without asking the hub again."""
    from specviz.config import DecodeConfig
    from specviz.decoding import engine
    from specviz.decoding.pipeline import build_pipeline

    served = tmp_path / FILE
    served.write_bytes(offline.installed_gguf().read_bytes())  # the test writes the file the hub serves
    model = hub_model(served, monkeypatch)
    local_hub(served)
    config = DecodeConfig(target=MODEL_ID, draft="ngram", gamma=3, max_new_tokens=8, chat=False).validate()
    trace = engine.run_speculative(build_pipeline(config), "One, two, three, four,", config)
    assert trace.rounds and trace.token_ids
    placed = split_gguf.assembled_path(model)
    assert placed.stat().st_size == model.size and split_gguf.available(model)
    LocalHub.files = {}  # the hub forgets the file: the cache answers
    assert split_gguf.assembled_gguf(model) == placed
