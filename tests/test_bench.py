"""The benchmark's quick mode end to end (report structure, greedy-identity flags), and its pure parts."""

import json

import pytest

from specviz.bench import command, report
from specviz.bench import run as bench
from specviz.core import theory


def _run(tmp_path, *extra):
    out = tmp_path / "out"
    code = command.main(["--quick", "--categories", "chat", "code", "--max-new-tokens", "8", "--out", str(out), *extra])
    assert code == 0
    return out, json.loads((out / "results.json").read_text())


def test_quick_mode_on_two_prompts_writes_a_complete_report(tmp_path, offline_target):
    out, results = _run(tmp_path, "--methods", "plain", "hf_generate", "specviz", "specviz_adaptive", "hf_prompt_lookup",
                        "--also-gammas", "2")
    rows = results["rows"]
    methods = ["plain", "hf_generate", "specviz[ngram]", "specviz[ngram] γ=2", "specviz_adaptive[ngram]", "hf_prompt_lookup"]
    assert sorted({r["category"] for r in rows}) == ["chat", "code"]
    assert [r["method"] for r in rows] == methods * 2
    for row in rows:
        assert row["temperature"] == 0 and row["tokens"] > 0 and row["tokens_per_s"] > 0 and row["rss_mb"] > 0
        assert row["identical"] is True  # greedy, fp32: every method reproduces plain decoding
    speculative = [r for r in rows if r["kind"].startswith("specviz")]
    assert all(0 <= r["alpha"] <= 1 and r["rounds"] >= 1 and len(r["draft_lengths"]) == r["rounds"] for r in speculative)
    assert all(max(r["draft_lengths"]) <= 4 for r in speculative)
    summaries = {(s["category"], s["method"]): s for s in results["summaries"]}
    assert set(summaries) == {(c, m) for c in ("chat", "code", "ALL") for m in methods}
    assert summaries[("ALL", "plain")]["speedup"] == pytest.approx(1.0)
    assert summaries[("ALL", "specviz[ngram]")]["speedup_theory"] > 0
    assert set(results["verify_costs"]) == {"1", "2", "3", "4", "5"} and results["verify_costs"]["1"] == 1.0
    figures = results["figures"]["T=0"]
    assert figures["greedy_identical"] == "10/10"
    assert {"plain_over_hf_generate", "specviz[ngram]_over_hf_prompt_lookup", "specviz_adaptive[ngram]_over_hf_prompt_lookup",
            "specviz_adaptive[ngram]_over_best_fixed"} <= set(figures)
    assert "specviz[ngram] γ=2_over_hf_prompt_lookup" not in figures  # transformers ran at γ = 4 only
    assert figures["specviz_adaptive[ngram]_best_fixed"] in ("specviz[ngram]", "specviz[ngram] γ=2")
    assert results["figures"]["peak_rss_mb"] > 0
    report = (out / "report.md").read_text()
    assert "| category | method |" in report and "specviz_adaptive[ngram]" in report and "Where a token's time goes" in report
    page = (out / "report.html").read_text()
    assert page.startswith("<!doctype html>") and "plotly" in page.lower() and "Speedup over plain decoding" in page
    # the reports rebuild from results.json alone
    assert command.main(["--report-from", str(out / "results.json"), "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "report.md").read_text() == report


def test_a_draft_model_runs_as_specviz_drafter_and_as_the_assistant(tmp_path, offline_target, tiny_draft_folder):
    _, results = _run(tmp_path, "--categories", "qa", "--methods", "plain", "specviz", "hf_assisted",
                      "--draft", tiny_draft_folder)
    name = tiny_draft_folder.rstrip("/").rsplit("/", 1)[-1]
    assert [r["method"] for r in results["rows"]] == ["plain", "specviz[ngram]", f"specviz[{name}]", f"hf_assisted[{name}]"]
    assert all(r["identical"] for r in results["rows"])
    assert f"specviz[{name}]_over_hf_assisted[{name}]" in results["figures"]["T=0"]


def test_lookup_first_drafters_are_labelled_by_folder_name_and_never_run_as_assistants():
    assert bench.Method("specviz", "ngram+/models/tiny-draft/").label == "specviz[ngram+tiny-draft]"
    assert bench.Method("specviz", "ngram+distilled").label == "specviz[ngram+distilled]"
    assert bench.Method("specviz", "distilled").label == "specviz[distilled]"
    plan = bench.plan_methods(["hf_assisted"], ["ngram+some/draft", "distilled", "some/draft", "ngram+int4", "int4"])
    assert [m.label for m in plan] == ["hf_assisted[draft]", "hf_assisted[int4]"]  # the int4 copy is a plain model
    plan = bench.plan_methods(["llama_speculative"], ["suffix", "suffix+some/draft", "some/draft"])
    assert [m.label for m in plan] == ["llama_speculative[draft]"]  # llama.cpp's own, once per draft model


def test_identity_flags_compare_with_plain_and_only_when_greedy():
    method = {kind: bench.Method(kind) for kind in ("plain", "hf_generate", "hf_prompt_lookup")}
    runs = {method["plain"]: [{"token_ids": [1, 2, 3], "wall_ms": 30.0, "step_ms": 10.0}],
            method["hf_generate"]: [{"token_ids": [1, 2, 3], "wall_ms": 20.0}, {"token_ids": [1, 2, 3], "wall_ms": 40.0},
                                    {"token_ids": [1, 2, 3], "wall_ms": 25.0}],
            method["hf_prompt_lookup"]: [{"token_ids": [1, 2, 4], "wall_ms": 15.0}]}
    item = {"id": 1, "category": "qa", "prompt": "?"}
    greedy = {r["method"]: r for r in bench._prompt_rows(item, 0.0, runs)}
    assert greedy["plain"]["identical"] and greedy["hf_generate"]["identical"]
    assert greedy["hf_prompt_lookup"]["identical"] is False
    assert greedy["hf_generate"]["wall_ms"] == 25.0  # the median of the repeats
    assert greedy["hf_generate"]["speedup"] == pytest.approx(30.0 / 25.0)
    sampled = bench._prompt_rows(item, 1.0, runs)
    assert all(r["identical"] is None for r in sampled)


def test_predicted_speedup_is_the_verify_cost_aware_theory():
    costs = {1: 1.0, 2: 1.3, 3: 1.5, 4: 1.6, 5: 1.8}
    assert report.predicted_speedup(0.4, [0, 0, 0], costs) == pytest.approx(1.0)
    fixed = report.predicted_speedup(0.7, [4] * 10, costs, draft_steps=10 * 4 * 0.05)
    assert fixed == pytest.approx(theory.speedup_with_verify_cost(0.7, 4, 0.05, costs))
    beyond = report.predicted_speedup(0.7, [6] * 10, costs, draft_steps=10 * 6 * 0.05)  # v(7) was never measured
    assert beyond == pytest.approx(theory.speedup_with_verify_cost(0.7, 6, 0.05, costs))  # theory's extension


def test_bad_prompt_files_and_arguments_get_one_line_errors(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"category": "qa", "turns": ["fine"]}\n{"category": "qa"}\n')
    assert command.main(["--questions", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"specviz.bench: {bad}:2: not a Spec-Bench question ('turns')"
    assert command.main(["--questions", str(tmp_path / "missing.jsonl")]) == 2
    assert "No such file" in capsys.readouterr().err
    assert command.main(["--categories", "nope", "--out", str(tmp_path / "o")]) == 2
    assert "no prompts" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_default_prompt_set_covers_chat_code_summarization_and_qa():
    prompts = bench.load_prompts(bench.DEFAULT_PROMPTS, None, None)
    assert {p["category"] for p in prompts} == {"chat", "code", "summarization", "qa"}
    assert len(bench.load_prompts(bench.DEFAULT_PROMPTS, ["qa"], 1)) == 1


def test_the_int4_copy_runs_as_drafter_chain_and_tree_and_as_the_assistant(tmp_path, offline_target):
    """The int4 copy as specviz's drafter (a chain, and a tree beside it, with its nodes, depths and acceptance by
    depth) and as transformers' assistant, all reproducing plain decoding: one run of the benchmark."""
    out, results = _run(tmp_path, "--categories", "code", "--methods", "plain", "specviz", "specviz_tree", "hf_assisted",
                        "--draft", "int4", "--tree-budget", "8", "--max-new-tokens", "16")
    rows = {r["method"]: r for r in results["rows"]}
    assert list(rows) == ["plain", "specviz[ngram]", "specviz[int4]", "specviz_tree[int4]",  # prompt lookup: chains only
                          "hf_assisted[int4]"]
    assert all(row["identical"] for row in rows.values())
    tree, chain = rows["specviz_tree[int4]"], rows["specviz[int4]"]
    assert chain["alpha"] > 0.5  # the copy agrees with its target: a random draft is accepted ~never
    assert tree["tree_budget"] == 8 and chain["tree_budget"] is None
    assert len(tree["draft_depths"]) == tree["rounds"] and max(tree["draft_lengths"]) <= 8
    assert any(n > d for n, d in zip(tree["draft_lengths"], tree["draft_depths"]))  # some round drafted siblings
    assert chain["draft_depths"] == chain["draft_lengths"]  # a chain's depth is its length
    assert sum(tree["accepted_per_depth"]) == tree["accepted"]
    summary = next(s for s in results["summaries"] if s["category"] == "ALL" and s["method"] == "specviz_tree[int4]")
    assert summary["mean_draft_length"] > summary["mean_depth"] and len(summary["acceptance_by_depth"]) >= 1
    assert summary["speedup_theory"] > 0 and summary["speedup_theory_iid"] > 0
    page = (out / "report.md").read_text()
    assert "| nodes/round | depth |" in page and "## Acceptance by depth" in page and "specviz_tree[int4]" in page


def test_the_theory_holds_each_round_to_what_it_drafted_with_the_acceptance_by_depth():
    rows = [{"tested_per_depth": [4, 2], "accepted_per_depth": [2, 1]}, {"tested_per_depth": [4], "accepted_per_depth": [4]}]
    assert report.acceptance_by_depth(rows) == [0.75, 0.5]
    assert report.acceptance_by_depth([*rows, {"tested": 3}]) is None  # a row from before the counts: textbook α
    # two rounds: a chain of 2 and a tree of 5 nodes, 2 deep; v(3) = 1.2, v(6) = 1.5; drafting 0.4 target steps
    tokens = (1 + 0.75 + 0.75 * 0.5) * 2
    predicted = theory.speedup_of_drafted_rounds([0.75, 0.5], [2, 2], [2, 5], {1: 1.0, 3: 1.2, 6: 1.5}, 0.4)
    assert predicted == pytest.approx(tokens / (1.2 + 1.5 + 0.4))
    assert theory.expected_path([0.75, 0.5], 1) == pytest.approx(1.75)  # a round 1 deep never reaches depth 2


def test_a_peer_that_fails_on_a_prompt_is_a_row_that_says_so_and_out_of_every_figure(tmp_path, offline_target,
                                                                                       monkeypatch):
    """transformers' cross-tokenizer generation raised on one prompt with Gemma-3-270M (an attention-mask size
    mismatch): the benchmark records it and goes on, instead of losing the prompts still to come."""
    from specviz.bench import hf_baselines

    real, timed_calls = hf_baselines.run_hf, []

    def failing_on_the_first_prompt(loaded, prompt_ids, config, method, assistant=None):
        if config.max_new_tokens == 8:  # a timed run (the warm-up decodes 16 tokens)
            timed_calls.append(prompt_ids)
            if len(timed_calls) == 1:
                raise RuntimeError("The size of tensor a (519) must match the size of tensor b (520)")
        return real(loaded, prompt_ids, config, method, assistant)

    monkeypatch.setattr(hf_baselines, "run_hf", failing_on_the_first_prompt)
    out, results = _run(tmp_path, "--methods", "plain", "hf_generate")
    failed = [row for row in results["rows"] if "error" in row]
    assert len(failed) == 1 and failed[0]["method"] == "hf_generate" and len(timed_calls) == 2  # and it went on
    assert all(row["speedup"] is None and row["identical"] is None and "519" in row["error"] for row in failed)
    assert [f["id"] for f in results["failed"]] == [row["id"] for row in failed]
    for summary in results["summaries"]:
        ran = [r for r in results["rows"] if r["method"] == summary["method"] and "error" not in r
               and summary["category"] in ("ALL", r["category"])]
        assert summary["prompts"] == len(ran)
    assert "**failed** at T = 0 on prompt" in (out / "report.md").read_text()


def test_resume_keeps_whole_prompts_of_a_run_with_the_same_settings(tmp_path, capsys):
    """llama.cpp's speculative decoding may pass max_new_tokens (here 133 of 128): its rows are kept all the same;
    a run made with other settings is not resumed from."""
    import argparse

    plan = [bench.Method("plain"), bench.Method("llama_speculative", drafter="d")]
    settings = dict(target="t", draft=["d"], backend="llama.cpp", gamma=4, draft_confidence=0.0, max_new_tokens=128,
                    draft_window=0, draft_vocab=0)
    rows = [dict(temperature=0.0, id=1, method="plain", tokens=128),
            dict(temperature=0.0, id=1, method=plan[1].label, tokens=133),
            dict(temperature=0.0, id=2, method="plain", tokens=128)]  # prompt 2 was cut off before its second method
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "run.json").write_text(json.dumps({"args": settings}))
    kept = command._earlier_rows(tmp_path / "rows.jsonl", argparse.Namespace(**settings), plan)
    assert [(row["id"], row["tokens"]) for row in kept] == [(1, 128), (1, 133)]
    other = argparse.Namespace(**{**settings, "max_new_tokens": 64})
    assert command._earlier_rows(tmp_path / "rows.jsonl", other, plan) == []
    assert "other max_new_tokens" in capsys.readouterr().err


def test_every_method_is_held_against_llama_cpps_plain_decoding_of_the_same_prompt():
    from specviz.bench import peer_table

    def row(category, id_, method, rate, tokens=128):
        return dict(temperature=0.0, category=category, id=id_, method=method, tokens_per_s=rate, tokens=tokens)

    draft, peer_draft = "specviz[d]", "llama_speculative[d]"
    rows = [row("rag", 1, "llama_plain", 10.0), row("rag", 1, "specviz_adaptive[ngram]", 12.0), row("rag", 1, draft, 6.0),
            row("rag", 1, peer_draft, 5.0), row("qa", 2, "llama_plain", 10.0), row("qa", 2, "specviz_adaptive[ngram]", 9.0, 60),
            row("qa", 2, draft, 6.0), row("qa", 2, peer_draft, 6.0), row("qa", 3, draft, 99.0)]  # #3: no llama_plain
    table = peer_table.ratios_to_peer(rows)[0.0]
    adaptive = table["specviz_adaptive[ngram]"]
    assert adaptive["overall"] == pytest.approx((1.2 * 0.9) ** 0.5) and adaptive["prompts"] == 2
    assert adaptive["categories"] == {"qa": pytest.approx(0.9), "rag": pytest.approx(1.2)}
    assert adaptive["lowest"] == ["qa", pytest.approx(0.9)] and table[draft]["prompts"] == 2
    assert adaptive["same_length"] == [pytest.approx(1.2), 1]  # on #2 it wrote 60 tokens, llama.cpp 128
    lines = "\n".join(peer_table.markdown({0.0: table}))
    assert "| specviz_adaptive[ngram] | 2 | **1.04×** | 1.20× (1) | 0.90× (qa) | 0.90 | 1.20 |" in lines


def test_against_the_shipped_file_the_shipped_files_plain_decoding_is_the_peer():
    """With llama.cpp's plain decoding of the shipped file in the run, it is the peer; llama_plain (the requantized
    file's) becomes a method."""
    from specviz.bench import peer_table

    def row(method, category, prompt, tokens_per_s):
        return {"method": method, "category": category, "id": prompt, "temperature": 0.0, "tokens": 64,
                "tokens_per_s": tokens_per_s}

    rows = []
    for prompt, category in enumerate(["coding", "summarization", "writing"]):
        rows += [row("llama_plain_shipped", category, prompt, 10.0), row("llama_plain", category, prompt, 12.0),
                 row("specviz_adaptive[suffix]", category, prompt, 20.0 if category != "writing" else 12.0),
                 row("llama_speculative[draft]", category, prompt, 8.0)]
    assert peer_table.peer_of(rows) == "llama_plain_shipped"
    table = peer_table.ratios_to_peer(rows)
    assert "llama_plain_shipped" not in table[0.0] and table[0.0]["llama_plain"]["overall"] == pytest.approx(1.2)
    assert table[0.0]["specviz_adaptive[suffix]"]["overall"] == pytest.approx((2 * 2 * 1.2) ** (1 / 3))
    assert "(llama_plain_shipped)" in "\n".join(peer_table.markdown(table, peer_table.peer_of(rows)))
    assert peer_table.markdown({0.0: {}}) == []  # no prompt with llama.cpp's plain decoding: no section
    assert peer_table.peer_of([r for r in rows if r["method"] != "llama_plain_shipped"]) == "llama_plain"


def test_without_llama_cpps_tools_the_default_list_leaves_them_out_and_a_named_one_is_refused(monkeypatch, capsys):
    from specviz.bench import llama_peer

    monkeypatch.setattr(llama_peer, "built", lambda: False)
    kept = command._llama_tools_or_not(list(bench.METHODS), named=False)
    assert kept == [method for method in bench.METHODS if method not in bench.LLAMA_METHODS]
    assert "leaving out llama_plain" in capsys.readouterr().err
    with pytest.raises(ValueError, match="llama_plain: llama.cpp's own tools are not built here"):
        command._llama_tools_or_not(["plain", "llama_plain"], named=True)
    assert command._llama_tools_or_not(["plain", "specviz"], named=True) == ["plain", "specviz"]
    monkeypatch.setattr(llama_peer, "built", lambda: True)
    assert command._llama_tools_or_not(list(bench.METHODS), named=False) == list(bench.METHODS)
