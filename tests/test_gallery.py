"""The gallery of recorded real runs (specviz/views/gallery.py, app/tabs/runs_and_files.py): an entry is a trace plus its
provenance, opens with no model, loads where a trace loads, and `replay --check` refuses one recorded on other
weights. The shipped entries are checked as data here; their replay on the real pair is the slow test below."""

import json
import shutil
from pathlib import Path

import pytest
import torch

from specviz import cli
from specviz.config import DecodeConfig
from specviz.decoding import engine
from specviz.models import split_gguf
from specviz.models.loading import cpu_kernels
from specviz.trace import BONUS, CORRECTED, REJECTED, Trace
from specviz.views import gallery
from specviz.views.export import trace_from_text
from tests.fakes import fake_pipeline

pytestmark = pytest.mark.xdist_group("qwen-pair")  # one worker: conftest.pytest_xdist_make_scheduler

CONFIG = DecodeConfig(target="offline:Qwen2.5-Coder-1.5B-Instruct", draft="offline:Qwen2.5-Coder-0.5B-Instruct",
                      gamma=3, max_new_tokens=16, temperature=1.0, seed=5, chat=False)
MAX_ENTRY_BYTES = 400_000  # an entry keeps the views' top-10, not whole distributions


@pytest.fixture(scope="module")
def sampled_run():
    """A real engine run on the scripted models, once for the module."""
    return engine.run_speculative(fake_pipeline(8, draft_salt=1), "abcabcab", CONFIG)


@pytest.fixture
def entry_file(tmp_path, sampled_run) -> Path:
    """An entry written from that run, named as if the pair had made it (a file of each test's own)."""
    path = tmp_path / "2-sampled.json"
    gallery.write_entry(path, "Sampled", "look at the corrections", sampled_run, ["python", "-m", "specviz", "generate",
                                                                                  "--prompt", "abc abc"])
    return path


def test_an_entry_carries_its_trace_and_where_it_came_from(entry_file):
    [entry] = gallery.entries(entry_file.parent)
    assert (entry.name, entry.title, entry.about) == ("2-sampled", "Sampled", "look at the corrections")
    source = entry.provenance
    assert source["models"]["target"] == {"id": CONFIG.target, "sha256": split_gguf.QWEN_CODER_TARGET.sha256}
    assert source["models"]["draft"]["sha256"] == split_gguf.QWEN_CODER_DRAFT.sha256
    assert source["settings"]["temperature"] == 1.0 and source["settings"]["seed"] == 5
    assert {"python", "torch", "transformers"} <= set(source["versions"]) and source["date"][:2] == "20"
    assert source["command"] == "python -m specviz generate --prompt 'abc abc'"
    trace = entry.trace()
    assert trace.rounds and trace.text
    assert "Qwen2.5-Coder-1.5B-Instruct ← Qwen2.5-Coder-0.5B-Instruct" in entry.caption()


def test_an_entry_loads_where_a_trace_loads(entry_file):
    """The live tab's Load button and `replay` read traces through export.trace_from_text."""
    entry_trace = trace_from_text(entry_file.read_text(encoding="utf-8"))
    assert entry_trace.to_json() == gallery.entries(entry_file.parent)[0].trace().to_json()
    with pytest.raises(ValueError):
        trace_from_text(json.dumps({"gallery": 1, "trace": {"schema": 99}}))


def test_entries_are_listed_in_file_order_and_a_stray_file_is_named(entry_file):
    shutil.copy(entry_file, entry_file.parent / "1-first.json")
    assert [entry.name for entry in gallery.entries(entry_file.parent)] == ["1-first", "2-sampled"]
    (entry_file.parent / "3-bare.json").write_text(json.dumps({"schema": 2}), encoding="utf-8")
    with pytest.raises(ValueError, match="3-bare.json is not a gallery entry"):
        gallery.entries(entry_file.parent)
    assert gallery.entries(entry_file.parent / "missing") == []


def test_replay_check_refuses_an_entry_recorded_on_other_weights(entry_file, capsys):
    data = json.loads(entry_file.read_text(encoding="utf-8"))
    assert gallery.changed_models(entry_file) == []
    data["provenance"]["models"]["target"]["sha256"] = "0" * 64
    entry_file.write_text(json.dumps(data), encoding="utf-8")
    assert gallery.changed_models(entry_file) == [
        f"{CONFIG.target} was recorded with weights of sha256 000000000000…, this code pins "
        f"{split_gguf.QWEN_CODER_TARGET.sha256[:12]}…"]
    assert cli.main(["replay", str(entry_file), "--check"]) == 1
    assert "was recorded with weights of sha256 000000000000" in capsys.readouterr().err


def test_opening_an_entry_fills_the_live_views_and_says_where_it_came_from(entry_file):
    from specviz.app.tabs.runs_and_files import open_entry
    from specviz.app.views import LiveView

    [entry] = gallery.entries(entry_file.parent)
    values = open_entry(entry)
    view = dict(zip(LiveView.names(), values))
    assert view["trace"].to_json() == entry.trace().to_json()
    assert "**Sampled**: look at the corrections." in view["status"] and "Recorded on" in view["status"]
    names = LiveView.names()
    assert values[len(names)] is None  # no Step session carried over


def test_opening_an_entry_sets_the_controls_so_that_run_repeats_it(entry_file, monkeypatch):
    """Pair, drafter, prompt, γ, T, seed and the rest as recorded: RunRequest.from_config, and the same config back
    from the request where the pair is installed; where it is not, the status line gives the install line."""
    from specviz.app.pair_menu import CODER_PAIR
    from specviz.app.policy import Policy
    from specviz.app.request import DRAFT_MODEL, RunRequest
    from specviz.app.tabs.runs_and_files import open_entry
    from specviz.app.views import LiveView

    [entry] = gallery.entries(entry_file.parent)
    recorded = entry.trace()
    values = open_entry(entry)
    controls = dict(zip(RunRequest.field_names(), values[len(LiveView.names()) + 1:-1]))
    assert controls["pair"]["value"] == CODER_PAIR and controls["drafter"] == DRAFT_MODEL
    assert (controls["prompt"], controls["gamma"], controls["temperature"], controls["seed"]) == (
        recorded.prompt, recorded.config["gamma"], recorded.config["temperature"], recorded.config["seed"])
    assert values[-1]["visible"] is False  # not the Custom pair: its boxes stay hidden
    request = RunRequest(**{**controls, "pair": CODER_PAIR})
    monkeypatch.setattr(split_gguf, "available", lambda model: True)
    config = request.to_config(Policy())
    assert config.draft.endswith(recorded.config["draft"])  # the same draft, or its 4-bit copy on a CPU
    for name in ("target", "gamma", "max_new_tokens", "temperature", "seed", "top_k", "top_p", "adaptive",
                 "draft_confidence", "tree"):
        assert getattr(config, name) == recorded.config[name], name
    assert "**Run** repeats it live" in open_entry(entry)[LiveView.names().index("status")]
    monkeypatch.setattr(split_gguf, "available", lambda model: False)
    assert split_gguf.INSTALL_COMMAND in open_entry(entry)[LiveView.names().index("status")]


def test_the_pair_menu_points_to_the_gallery_where_the_pair_is_missing(entry_file, monkeypatch):
    from specviz.app.pair_menu import CODER_PAIR, pair_help

    monkeypatch.setattr(split_gguf, "available", lambda model: False)
    monkeypatch.setattr(gallery, "GALLERY_DIR", entry_file.parent)
    assert "open in the Gallery below with no model" in pair_help(CODER_PAIR)
    monkeypatch.setattr(split_gguf, "available", lambda model: True)
    assert "Gallery" not in pair_help(CODER_PAIR)


SHIPPED = gallery.entries()


@pytest.fixture(scope="module")
def shipped_trace():
    """Each shipped entry's trace, read once for the module (a long entry takes most of a second to load)."""
    traces = {}
    return lambda entry: traces[entry.name] if entry.name in traces else traces.setdefault(entry.name, entry.trace())


@pytest.mark.parametrize("entry", SHIPPED, ids=[entry.name for entry in SHIPPED])
def test_each_shipped_entry_is_a_small_real_run_with_its_provenance(entry, shipped_trace):
    assert entry.path.stat().st_size < MAX_ENTRY_BYTES
    for model in entry.provenance["models"].values():
        assert model["sha256"] == gallery.model_hashes(model["id"]), model  # pinned offline weights only
    assert entry.provenance["machine"] and entry.provenance["date"] and entry.provenance["command"]
    trace = shipped_trace(entry)
    # the settings as recorded, with any setting added since at its default (a run before `backend` was transformers')
    assert trace.config == DecodeConfig.from_dict(entry.provenance["settings"]).to_dict()
    kinds = {token.kind for round_ in trace.rounds for token in round_.tokens}
    assert REJECTED in kinds and (CORRECTED in kinds or BONUS in kinds), "a gallery run shows real rejections"


def test_the_gallery_ships_the_pair_at_both_temperatures_on_code_and_prose(shipped_trace):
    settings = [(entry.provenance["models"]["target"]["id"], shipped_trace(entry).config["temperature"])
                for entry in SHIPPED]
    for temperature in (0.0, 1.0):
        assert sum(1 for target, t in settings if target == CONFIG.target and t == temperature) >= 2, settings


# CI re-runs each shipped entry's first rounds on the pair, at about 1.5 s a round on one core: as many as it takes to
# show every kind of token the entry has (ci_rounds), so its paths (chain and tree, T = 0 and 1, the 4-bit and the
# other-tokenizer draft, rejection, correction and bonus) all run. No entry may need more than CI_MAX_ROUNDS (the
# test below checks it). Every round of every entry: `python -m specviz replay assets/gallery/NAME.json --check`
# (docs/results.md, "CI's time").
CI_MAX_ROUNDS = 6


def ci_rounds(trace: Trace) -> int:
    """The fewest first rounds of `trace` that hold every kind of token its rounds hold."""
    kinds, seen = {token.kind for round_ in trace.rounds for token in round_.tokens}, set()
    for count, round_ in enumerate(trace.rounds, start=1):
        seen |= {token.kind for token in round_.tokens}
        if seen == kinds:
            return count
    return len(trace.rounds)


@pytest.mark.parametrize("entry", SHIPPED, ids=[entry.name for entry in SHIPPED])
def test_ci_replays_at_most_ci_max_rounds_of_each_entry(entry, shipped_trace):
    rounds = ci_rounds(shipped_trace(entry))
    assert rounds <= CI_MAX_ROUNDS, f"{entry.name}: only its first {rounds} rounds show every kind of token"


@pytest.mark.slow
@pytest.mark.parametrize("entry", SHIPPED, ids=[entry.name for entry in SHIPPED])
def test_each_shipped_entry_reproduces_on_the_pair(entry, capsys):
    """`replay --check --rounds N` (ci_rounds) on this machine's pair: the shipped run's rounds come out the same, where this
    CPU's kernels are the ones it ran on (an entry that does not name them ran on float32 forwards that agree anyway)."""
    models = [model["id"] for model in entry.provenance["models"].values()]
    if split_gguf.first_missing(models) is not None:
        pytest.skip(f"needs {split_gguf.first_missing(models).name} installed (README: the Qwen2.5-Coder pair)")
    trace = Trace.from_dict(gallery.trace_data(json.loads(entry.path.read_text(encoding="utf-8"))))
    if trace.device != "cpu":
        pytest.skip(f"recorded on {trace.device}")
    if trace.kernels and trace.kernels != cpu_kernels(torch.device("cpu")):
        pytest.skip(f"recorded on {trace.kernels} kernels; this CPU's are {cpu_kernels(torch.device('cpu'))}")
    rounds, total = ci_rounds(trace), len(trace.rounds)
    assert cli.main(["replay", str(entry.path), "--check", "--rounds", str(rounds)]) == 0
    said = f"the first {rounds} of {total} rounds reproduce" if total > rounds else f"all {total} rounds reproduce"
    assert said in capsys.readouterr().out
