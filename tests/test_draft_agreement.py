"""python -m specviz.distill.agreement: the distilled draft's agreement with the target, by category."""

import json
import runpy
import sys

import pytest

from specviz.distill import agreement

QUESTIONS = [("writing", "Write a haiku about autumn leaves."), ("qa", "What is the boiling point of water at sea level?"),
             ("writing", "Write two sentences about the sea.")]


def test_agreement_is_reported_for_every_category_and_overall(tmp_path, offline_target, capsys):
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(json.dumps({"question_id": i, "category": c, "turns": [p]})
                                   for i, (c, p) in enumerate(QUESTIONS)))
    assert agreement.main(["--questions", str(questions), "--max-new-tokens", "16"]) == 0
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in capsys.readouterr().out.splitlines()[2:]]
    assert [(r[0], r[1]) for r in rows] == [("writing", "2"), ("qa", "1"), ("all", "3")]
    for row in rows:
        assert 0.0 <= float(row[3]) <= 1.0 and 0.0 <= float(row[4]) <= 1.0
    assert int(rows[-1][2]) == int(rows[0][2]) + int(rows[1][2]) > 0
    assert float(rows[-1][3]) > 0.2  # the shipped, trained draft agrees often; an untrained one almost never


def test_a_missing_questions_file_is_one_line_on_stderr(tmp_path, capsys, monkeypatch):
    """What `python -m specviz.distill.agreement --questions MISSING` does, run in this process."""
    monkeypatch.setattr(sys, "argv", ["specviz.distill.agreement", "--questions", str(tmp_path / "none.jsonl")])
    monkeypatch.delitem(sys.modules, "specviz.distill.agreement")  # run a fresh copy as __main__, as python -m does
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("specviz.distill.agreement", run_name="__main__")
    result = capsys.readouterr()
    assert exit_.value.code == 1 and result.out == ""
    assert result.err.startswith("specviz.distill.agreement:") and result.err.count("\n") == 1
