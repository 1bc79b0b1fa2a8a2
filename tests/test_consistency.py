"""A loaded trace is checked before it is drawn (analysis/consistency.py): every run the engine records holds
together, and each way of editing one (a lowered r, a changed count, a swapped token, an edited text) is named by
round and field."""


import pytest

from specviz.analysis.consistency import inconsistency
from specviz.config import DecodeConfig
from specviz.decoding import engine
from specviz.paths import ASSETS
from specviz.trace import ACCEPTED, CORRECTED, REJECTED, Trace
from specviz.views.export import trace_from_text
from tests.fakes import fake_pipeline

RUNS = [
    dict(gamma=3, temperature=0.0),
    dict(gamma=3, temperature=1.0, seed=4),
    dict(gamma=4, temperature=0.7, top_k=2, seed=2),
    dict(gamma=3, temperature=1.0, seed=5, lenience=0.5),
    dict(gamma=3, temperature=1.0, seed=6, adaptive=True),
    dict(gamma=3, temperature=1.0, seed=7, tree=True, tree_budget=9),
    dict(gamma=3, temperature=0.0, tree=True, tree_budget=9),
]


def run(vocab=5, drafter="model", **settings) -> Trace:
    config = DecodeConfig(max_new_tokens=40, chat=False, **settings)
    trace = engine.run_speculative(fake_pipeline(vocab, drafter=drafter), "abcab", config)
    return Trace.from_json(trace.to_json())


@pytest.mark.parametrize("settings", RUNS, ids=lambda settings: " ".join(f"{k}={v}" for k, v in settings.items()))
def test_every_recorded_run_holds_together(settings):
    trace = run(**settings)
    assert any(round_.accepted for round_ in trace.rounds) and any(
        token.kind == CORRECTED for round_ in trace.rounds for token in round_.tokens)  # both verdicts occur
    assert inconsistency(trace) is None


def test_prompt_lookups_runs_and_every_gallery_trace_hold_together():
    assert inconsistency(run(drafter="ngram", gamma=3, temperature=1.0, seed=1)) is None
    for path in sorted((ASSETS / "gallery").glob("*.json")):
        assert inconsistency(trace_from_text(path.read_text(encoding="utf-8"))) is None, path.name


def first(trace, kind):
    """(round number from 1, token index, token) of the first token of this kind."""
    return next((order + 1, index, token) for order, round_ in enumerate(trace.rounds)
                for index, token in enumerate(round_.tokens) if token.kind == kind)


def test_a_lowered_r_on_a_rejected_token_is_named():
    trace = run(**RUNS[1])
    number, index, token = first(trace, REJECTED)
    token.uniform = token.accept_prob / 2  # the tampered file: "r = 0.0233 ≥ min(1, p/q) = 0.0467"
    assert inconsistency(trace).startswith(f"round {number}, tokens[{index}].uniform: r = ")


def test_a_changed_count_a_swapped_token_and_an_edited_text_are_named():
    trace = run(**RUNS[1])
    number = next(order + 1 for order, round_ in enumerate(trace.rounds) if round_.accepted)
    trace.rounds[number - 1].accepted -= 1
    assert inconsistency(trace).startswith(f"round {number}, accepted: ")

    trace = run(**RUNS[1])
    number, index, token = first(trace, ACCEPTED)
    token.token_id = (token.token_id + 1) % 5
    assert inconsistency(trace).startswith(f"round {number}, tokens[{index}].token_id: ")

    trace = run(**RUNS[1])
    trace.text = trace.text.replace(trace.text[3], "Z" if trace.text[3] != "Z" else "Y", 1)
    assert inconsistency(trace).startswith("text: ")

    trace = run(**RUNS[1])
    number, index, token = first(trace, ACCEPTED)
    token.text = token.text + "x"
    assert inconsistency(trace).startswith(f"round {number}, tokens[{index}].text: ")


@pytest.mark.parametrize("edit, field", [
    (lambda trace, token: setattr(token, "accept_prob", min(1.0, token.accept_prob + 0.2)), "accept_prob"),
    (lambda trace, token: setattr(token, "target_prob", 1.5), "target_prob"),
    (lambda trace, token: setattr(trace.rounds[0], "index", 3), "index"),
    (lambda trace, token: trace.token_ids.append(1), "token_ids"),
    (lambda trace, token: setattr(trace.rounds[0], "next_uniform", None), "next_uniform"),
])
def test_other_edits_are_named_by_field(edit, field):
    trace = run(**RUNS[1])
    *_, token = first(trace, REJECTED)
    edit(trace, token)
    assert field in inconsistency(trace).split(":")[0]


def test_a_correction_where_the_residual_has_no_mass_is_named():
    trace = run(**RUNS[1])
    number, index, token = next((order + 1, index, token) for order, round_ in enumerate(trace.rounds)
                                for index, token in enumerate(round_.tokens)
                                if token.kind == CORRECTED and not round_.is_tree)
    token.draft_prob = token.target_prob + 0.1
    assert inconsistency(trace).startswith(f"round {number}, tokens[{index}].token_id: ")


def test_the_command_line_refuses_a_contradictory_trace_in_one_line(tmp_path, capsys):
    from specviz.cli import main

    trace = run(**RUNS[1])
    number, index, token = first(trace, REJECTED)
    token.uniform = token.accept_prob / 2
    path = tmp_path / "tampered.json"
    path.write_text(trace.to_json())
    assert main(["replay", str(path)]) != 0
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and f"contradicts itself at round {number}, tokens[{index}].uniform" in error


def test_a_uniform_that_could_not_have_drawn_the_final_token_is_named():
    """With five tokens the recorded top-10 is the whole distribution, so the interval of the drawn token is exact."""
    trace = run(**RUNS[1])

    def interval(round_):
        final = round_.tokens[-1]
        listed = final.residual_top if final.kind == CORRECTED else final.target_top
        below = sum(top.prob for top in listed if top.token_id < final.token_id)
        return below, 1 - sum(top.prob for top in listed if top.token_id > final.token_id)

    order, round_ = next((order, round_) for order, round_ in enumerate(trace.rounds)
                         if round_.tokens[-1].kind in (CORRECTED, "bonus") and interval(round_) != (0, 1))
    low, high = interval(round_)
    round_.next_uniform = high + 0.005 if high < 0.99 else low - 0.005  # just outside the token's interval
    assert 0 <= round_.next_uniform < 1
    assert inconsistency(trace).startswith(f"round {order + 1}, next_uniform: ")
