"""Exact replay: a recorded T=1 run reproduces round by round, and a tampered trace names the round it broke."""

import copy
import json

import pytest
import torch

from specviz import cli
from specviz.config import DecodeConfig
from specviz.decoding import engine
from specviz.decoding.replay import TOLERANCE, first_difference
from specviz.models.loading import cpu_kernels
from specviz.trace import REJECTED, Trace
from specviz.views import cli_output
from tests.fakes import fake_pipeline

VOCAB = 8
PROMPT = "abcabcab"
CONFIG = DecodeConfig(gamma=3, max_new_tokens=24, temperature=1.0, seed=11, chat=False)
TAMPERED = 4  # the round the tests below change (0-based): an accepted draft, a rejected one, a correction


def _pipeline():
    return fake_pipeline(VOCAB, draft_salt=1)  # a draft near the target: full acceptances and rejections


@pytest.fixture(scope="module")
def recorded() -> Trace:
    """A T=1 run on the scripted models, read back from its JSON as `replay` reads it."""
    trace = engine.run_speculative(_pipeline(), PROMPT, CONFIG)
    return Trace.from_json(trace.to_json())


def _replay(trace):
    return first_difference(trace, _pipeline())  # fresh models: nothing carried over from the recording


def test_the_recorded_run_has_rounds_of_every_kind(recorded):
    """What the tampering below relies on: several rounds, rejections and full acceptances among them."""
    assert len(recorded.rounds) > TAMPERED + 2
    assert any(t.kind == REJECTED for r in recorded.rounds for t in r.tokens)
    assert any(r.accepted == r.drafted > 0 for r in recorded.rounds)
    assert all(r.next_uniform is not None for r in recorded.rounds)


def test_an_untouched_trace_reproduces(recorded):
    assert _replay(recorded) is None


def test_another_seed_does_not_reproduce(recorded):
    other = copy.deepcopy(recorded)
    other.config["seed"] += 1
    mismatch = _replay(other)
    assert mismatch is not None and mismatch.round_index == 0


def _tampered(recorded, change):
    trace = copy.deepcopy(recorded)
    change(trace.rounds[TAMPERED])
    return _replay(trace)


def _set(obj, name, value):
    setattr(obj, name, value)


@pytest.mark.parametrize("change,reason", [
    (lambda r: _set(r.tokens[0], "uniform", (r.tokens[0].uniform + 0.5) % 1.0), "uniform r_1"),
    (lambda r: _set(r, "next_uniform", (r.next_uniform + 0.5) % 1.0), "correction/bonus uniform"),
    (lambda r: r.draft_token_ids.__setitem__(0, (r.draft_token_ids[0] + 1) % VOCAB), "drafted"),
    (lambda r: _set(r, "accepted", (r.accepted + 1) % (r.drafted + 1)), "accepted"),
    (lambda r: _set(r.emitted[-1], "token_id", (r.emitted[-1].token_id + 1) % VOCAB), "final token"),
    (lambda r: _set(r.tokens[0], "target_prob", r.tokens[0].target_prob + 1e-3), "p_1(x)"),
    (lambda r: _set(r.tokens[0], "draft_prob", r.tokens[0].draft_prob - 1e-3), "q_1(x)"),
], ids=["uniform", "next-uniform", "draft-id", "accepted-count", "final-token", "p-off-1e-3", "q-off-1e-3"])
def test_a_tampered_round_is_caught_and_named(recorded, change, reason):
    mismatch = _tampered(recorded, change)
    assert mismatch is not None, "the tampered trace replayed as if untouched"
    assert mismatch.round_index == TAMPERED and reason in mismatch.reason
    assert "\n" not in mismatch.reason


def test_probabilities_within_the_tolerance_still_reproduce(recorded):
    def nudge(round_):
        round_.tokens[0].target_prob += TOLERANCE / 10
        round_.tokens[0].draft_prob -= TOLERANCE / 10

    assert _tampered(recorded, nudge) is None


def test_a_trace_names_the_cpu_kernels_it_ran_on(recorded):
    assert recorded.kernels == cpu_kernels(torch.device("cpu")) != ""


@pytest.mark.parametrize("kernels,named", [("other", "ran on other kernels"),
                                           ("", "ran on CPU kernels it does not name")])
def test_a_mismatch_on_other_kernels_says_they_round_differently(recorded, kernels, named):
    """Kernels for another instruction set round otherwise (the 4-bit draft's by up to a few percent): the reason says
    so after what differs. A trace that reproduces anyway passes, whatever kernels it names."""
    here = cpu_kernels(torch.device("cpu"))
    elsewhere = copy.deepcopy(recorded)
    elsewhere.kernels = kernels.replace("other", "AVX2" if here != "AVX2" else "AVX512")
    assert _replay(elsewhere) is None
    mismatch = _tampered(elsewhere, lambda r: _set(r.tokens[0], "draft_prob", r.tokens[0].draft_prob - 1e-3))
    assert mismatch.reason.startswith("q_1(x)") and "\n" not in mismatch.reason
    named = named.replace("other", elsewhere.kernels)
    assert mismatch.reason.endswith(f"; the trace {named} and this machine's are {here}, which round differently")
    assert "round differently" not in _tampered(recorded, lambda r: _set(r, "accepted", 0) if r.accepted else
                                                _set(r, "accepted", 1)).reason  # the same kernels: no such note


def test_missing_or_extra_rounds_are_named(recorded):
    shorter = copy.deepcopy(recorded)
    del shorter.rounds[-1]
    assert _replay(shorter).round_index == len(recorded.rounds) - 1
    longer = copy.deepcopy(recorded)
    longer.rounds.append(copy.deepcopy(longer.rounds[-1]))
    mismatch = _replay(longer)
    assert mismatch.round_index == len(recorded.rounds) and "stopped after" in mismatch.reason


def test_an_adaptive_trace_replays_with_its_recorded_draft_lengths():
    """Adaptive γ chooses lengths from measured timings; the replay drafts what the trace records instead."""
    config = DecodeConfig(**{**CONFIG.to_dict(), "gamma": 4, "adaptive": True})

    def lookup_then_model():
        return fake_pipeline(VOCAB, drafter="ngram+model", draft_salt=1)

    trace = Trace.from_json(engine.run_speculative(lookup_then_model(), PROMPT, config).to_json())
    assert len({r.drafted for r in trace.rounds}) > 1  # the lengths vary from round to round
    assert first_difference(trace, lookup_then_model()) is None
    changed = next(r for r in trace.rounds if r.drafted >= 2)
    changed.drafted -= 1  # the replay asks for one draft fewer there
    mismatch = first_difference(trace, lookup_then_model())
    assert mismatch.round_index == changed.index and mismatch.reason.startswith("drafted")


def test_an_adaptive_draft_cut_at_eos_replays_with_the_length_it_asked_for():
    """A drafter samples every token it was asked for; when one is EOS the round keeps fewer. The replay must ask
    for the recorded length, or the drafter draws fewer random numbers and every later uniform shifts. (Adaptive γ
    chooses from wall-clock timings, so the seeds are tried until a run cuts a draft before its last round.)"""

    def eos_at_4():
        return fake_pipeline(VOCAB, eos_ids=(4,), draft_salt=1)

    def run_with_a_cut(seed):
        config = DecodeConfig(**{**CONFIG.to_dict(), "gamma": 4, "adaptive": True, "seed": seed})
        trace = Trace.from_json(engine.run_speculative(eos_at_4(), PROMPT, config).to_json())
        cuts = [r for r in trace.rounds[:-1] if r.asked > r.drafted]  # the run went on after the cut round
        return (trace, cuts[0]) if cuts else None

    trace, cut = next(found for seed in range(5, 45) if (found := run_with_a_cut(seed)) is not None)
    assert first_difference(trace, eos_at_4()) is None
    for round_ in trace.rounds:
        round_.asked = None  # a trace without the asked lengths: the replay can only ask for what was kept
    assert first_difference(trace, eos_at_4()).round_index == cut.index


# ---------------------------------------------------------------- the `replay` subcommand, on the scripted models


@pytest.fixture
def trace_file(recorded, tmp_path, monkeypatch):
    monkeypatch.setattr("specviz.decoding.replay.build_pipeline", lambda config: _pipeline())
    path = tmp_path / "trace.json"
    path.write_text(recorded.to_json(), encoding="utf-8")
    return path


def test_check_says_every_round_reproduces(recorded, trace_file, capsys):
    assert cli.main(["replay", str(trace_file), "--check"]) == 0
    assert capsys.readouterr().out == f"all {len(recorded.rounds)} rounds reproduce\n"


def test_check_names_the_first_round_that_does_not_reproduce(recorded, trace_file, capsys):
    data = json.loads(trace_file.read_text(encoding="utf-8"))
    data["rounds"][TAMPERED]["tokens"][0]["target_prob"] += 1e-3
    trace_file.write_text(json.dumps(data), encoding="utf-8")
    assert cli.main(["replay", str(trace_file), "--check"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"round {TAMPERED + 1} does not reproduce: p_1(x)") and captured.err.count("\n") == 1


def test_rounds_checks_the_first_rounds_and_says_how_many_of_the_trace_it_re_ran(recorded, trace_file, capsys):
    total = len(recorded.rounds)
    assert cli.main(["replay", str(trace_file), "--check", "--rounds", str(TAMPERED)]) == 0
    assert capsys.readouterr().out == f"the first {TAMPERED} of {total} rounds reproduce (the other {total - TAMPERED} " \
                                      "were not re-run)\n"
    assert cli.main(["replay", str(trace_file), "--check", "--rounds", str(total + 5)]) == 0  # more than it has: all
    assert capsys.readouterr().out == f"all {total} rounds reproduce\n"
    data = json.loads(trace_file.read_text(encoding="utf-8"))
    data["rounds"][TAMPERED]["tokens"][0]["target_prob"] += 1e-3  # round TAMPERED + 1, numbered from 1
    trace_file.write_text(json.dumps(data), encoding="utf-8")
    assert cli.main(["replay", str(trace_file), "--check", "--rounds", str(TAMPERED)]) == 0  # before the change
    assert cli.main(["replay", str(trace_file), "--check", "--rounds", str(TAMPERED + 1)]) == 1  # reaches it
    assert capsys.readouterr().err.startswith(f"round {TAMPERED + 1} does not reproduce")


@pytest.mark.parametrize("args,fragment", [
    (["--check", "--rounds", "0"], "rounds must be a whole number of 1 or more, got '0'"),
    (["--check", "--rounds", "2.5"], "got '2.5'"),
    (["--rounds", "3"], "--rounds goes with --check"),
])
def test_a_bad_rounds_is_one_line_and_exit_2(trace_file, capsys, args, fragment):
    assert cli.main(["replay", str(trace_file), *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and fragment in captured.err


def test_without_check_the_rounds_are_listed(recorded, trace_file, capsys):
    assert cli.main(["replay", str(trace_file)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("legend:")
    assert [line.split(":")[0] for line in lines[1: 1 + len(recorded.rounds)]] == \
           [cli_output.format_round(r, colour=False).split(":")[0] for r in recorded.rounds]


@pytest.mark.parametrize("content,fragment", [
    (None, "No such file"), ("{not json", "Expecting"), ('{"schema": 99}', "unsupported trace schema"),
])
def test_a_bad_trace_file_is_one_line_and_exit_2(tmp_path, capsys, content, fragment):
    path = tmp_path / "trace.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert cli.main(["replay", str(path), "--check"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and fragment in captured.err


# ---------------------------------------------------------------- the real offline target, each offline drafter


@pytest.mark.slow
@pytest.mark.parametrize("draft,options", [("ngram", []), ("distilled", []), ("int4", []), ("ngram+int4", []),
                                           ("ngram+int4", ["--adaptive"])])
def test_a_t1_run_of_each_offline_drafter_replays_exactly(tmp_path, capsys, offline_target, draft, options):
    path = tmp_path / "trace.json"
    assert cli.main(["generate", "--prompt", "Repeat twice: the quick brown fox jumps over the lazy dog.",
                     "--draft", draft, "--temperature", "1", "--seed", "3", "--max-new-tokens", "24",
                     "--json", "--trace-out", str(path), *options]) == 0
    rounds = json.loads(capsys.readouterr().out)["rounds"]
    assert cli.main(["replay", str(path), "--check"]) == 0
    assert capsys.readouterr().out == f"all {rounds} rounds reproduce\n"
    data = json.loads(path.read_text(encoding="utf-8"))  # negative control: the first round's last uniform
    uniform = data["rounds"][0]["next_uniform"]
    data["rounds"][0]["next_uniform"] = (uniform + 0.5) % 1.0  # far off: it could not have drawn that token
    path.write_text(json.dumps(data), encoding="utf-8")
    if cli.main(["replay", str(path), "--check"]) == 2:  # the load's check saw it, with no model
        assert "contradicts itself at round 1, next_uniform" in capsys.readouterr().err
    else:  # still inside the drawn token's interval (as far as the top-10 tells): the replay must catch it
        assert capsys.readouterr().err.startswith("round 1 does not reproduce: the correction/bonus uniform")
    data["rounds"][0]["next_uniform"] = uniform + 5e-7 if uniform < 0.5 else uniform - 5e-7  # a nudge the check allows
    path.write_text(json.dumps(data), encoding="utf-8")
    assert cli.main(["replay", str(path), "--check"]) == 1
    assert capsys.readouterr().err.startswith("round 1 does not reproduce: the correction/bonus uniform")
