"""Verification-rule lab (labs/verification_rules/): the textbook p and q, every rule's numbers by hand."""

import pytest
import torch

from specviz.labs.verification_rules import rules

P, Q = [0.4, 0.3, 0.2, 0.1], [0.5, 0.25, 0.15, 0.1]  # the textbook example of verify.py


def by_rule(p=P, q=Q, **settings):
    return {outcome.rule: outcome for outcome in rules.outcomes(p, q, **settings)}


def test_only_the_exact_rule_emits_p_on_the_textbook_example():
    out = by_rule()
    assert out[rules.EXACT].accept_prob == pytest.approx(0.9)  # β = Σ min(p, q)
    assert torch.allclose(out[rules.EXACT].emitted, torch.tensor(P, dtype=torch.float64)) and out[rules.EXACT].distance < 1e-12
    # argmax match: argmax q = argmax p = token 0, always accepted, and the position always emits token 0
    assert out[rules.ARGMAX].accept_prob == 1.0 and out[rules.ARGMAX].distance == pytest.approx(0.6)
    # lenient l = 0.5: p/(l·q) ≥ 1 everywhere, so every draft passes and the position emits q
    assert out[rules.LENIENT].accept_prob == pytest.approx(1.0) and out[rules.LENIENT].distance == pytest.approx(0.1)
    # typical: threshold min(0.3, 0.09·e^(−H(p))) = 0.025 < every p(x): every draft passes, emits q
    assert out[rules.TYPICAL].accept_prob == pytest.approx(1.0) and out[rules.TYPICAL].distance == pytest.approx(0.1)
    # top-3 match: token 3 is rejected (q = 0.1), then p is drawn: e = q·1[top 3] + 0.1·p
    expected = torch.tensor([0.54, 0.28, 0.17, 0.01], dtype=torch.float64)
    assert out[rules.TOP_K].accept_prob == pytest.approx(0.9) and torch.allclose(out[rules.TOP_K].emitted, expected)
    assert out[rules.TOP_K].distance == pytest.approx(0.14)


def test_argmax_match_rejects_when_the_argmaxes_differ():
    out = by_rule([0.3, 0.7], [0.6, 0.4])[rules.ARGMAX]
    assert out.accept_prob == 0.0 and out.emitted.tolist() == [0.0, 1.0]


def test_the_lenient_residual_is_the_exact_rules():
    out = by_rule([0.2, 0.8], [0.9, 0.1], lenience=0.5)[rules.LENIENT]
    # accept token 0 with min(1, 0.2/0.45) = 4/9 and token 1 always: P(accept) = 0.9·4/9 + 0.1 = 0.5
    assert out.accept_prob == pytest.approx(0.5)
    # rejected mass 0.5 goes to the residual norm(max(0, p − q)) = token 1
    assert out.emitted.tolist() == pytest.approx([0.4, 0.6])


@pytest.mark.parametrize("rule", rules.RULES)
def test_sampling_a_rule_matches_its_closed_form(rule):
    counts = rules.simulate(rule, P, Q, 40_000, torch.Generator().manual_seed(3))
    emitted = by_rule()[rule].emitted
    assert rules.chi_square_test(counts, emitted)[2] > 1e-3  # the samples follow the closed form


def test_chi_square_passes_for_the_exact_rule_and_fails_for_the_others():
    results = rules.chi_square_by_rule(P, Q, samples=20_000, seed=1)
    assert results[rules.EXACT][2] > 0.01
    for rule in (rules.ARGMAX, rules.LENIENT, rules.TYPICAL, rules.TOP_K):
        assert results[rule][2] < 1e-6, rule


def test_along_a_trace_the_exact_rules_alpha_is_the_mean_overlap_and_its_drift_is_zero():
    ps = torch.tensor([P, [0.25, 0.25, 0.25, 0.25]])
    qs = torch.tensor([Q, [0.7, 0.1, 0.1, 0.1]])
    totals = rules.along_trace(ps, qs)
    assert totals[rules.EXACT]["alpha"] == pytest.approx((0.9 + 0.55) / 2) and totals[rules.EXACT]["drift"] < 1e-12
    assert totals[rules.LENIENT]["alpha"] > totals[rules.EXACT]["alpha"] and totals[rules.LENIENT]["drift"] > 0


def test_bad_distributions_are_refused():
    with pytest.raises(ValueError, match="non-negative"):
        rules.outcomes([0.5, -0.5], [0.5, 0.5])
    with pytest.raises(ValueError, match="entries"):
        rules.outcomes([1.0], [0.5, 0.5])


def test_on_a_real_t1_run_only_the_exact_rule_passes_chi_square(offline_target):
    """The issue's check: a real run at T = 1 (the offline target, its 4-bit copy drafting), at its least
    certain tested position: the exact rule's emitted tokens follow p, argmax match's do not."""
    from specviz.config import QUANTIZED_DRAFTER, DecodeConfig
    from specviz.decoding import engine
    from specviz.decoding.pipeline import build_pipeline
    from specviz.labs.verification_rules import on_run

    config = DecodeConfig(draft=QUANTIZED_DRAFTER, temperature=1.0, seed=2, max_new_tokens=24).validate()
    pipeline = build_pipeline(config)
    trace = engine.run_speculative(pipeline, "Write one sentence about the sea.", config)
    distributions = on_run.run_distributions(pipeline, trace)
    assert not distributions.untempered and distributions.target_rows.shape == distributions.draft_rows.shape
    assert distributions.target_rows.shape[0] == len(trace.token_ids)
    tested = [on_run.generated_index(trace, number, token.position) for number, round_ in enumerate(trace.rounds, 1)
              for token in round_.tokens if token.kind in ("accepted", "rejected")]
    # the rows are the distributions the run sampled from: each tested draft's recorded p(x) is the row's
    first_round = trace.rounds[0] if trace.rounds[0].drafted else trace.rounds[1]
    token = first_round.tokens[0]
    index = on_run.generated_index(trace, trace.rounds.index(first_round) + 1, token.position)
    assert distributions.target_rows[index, first_round.draft_token_ids[0]].item() == pytest.approx(token.target_prob, abs=1e-4)
    widest = min(tested, key=lambda i: distributions.target_rows[i].max().item())  # the least certain position
    results = rules.chi_square_by_rule(distributions.target_rows[widest], distributions.draft_rows[widest], 20_000)
    assert results[rules.EXACT][2] > 0.01
    assert results[rules.ARGMAX][2] < 1e-6


def test_a_greedy_run_gives_the_untempered_distributions(offline_target):
    from specviz.config import QUANTIZED_DRAFTER, DecodeConfig
    from specviz.decoding import engine
    from specviz.decoding.pipeline import build_pipeline
    from specviz.labs.verification_rules import on_run

    config = DecodeConfig(draft=QUANTIZED_DRAFTER, max_new_tokens=8).validate()
    pipeline = build_pipeline(config)
    distributions = on_run.run_distributions(pipeline, engine.run_speculative(pipeline, "Say hi.", config))
    assert distributions.untempered and distributions.target_rows.max() < 1.0  # not one-hot
    with pytest.raises(ValueError, match="draft model"):
        on_run.run_distributions(build_pipeline(DecodeConfig(max_new_tokens=8).validate()), engine.run_speculative(
            build_pipeline(DecodeConfig(max_new_tokens=8).validate()), "Say hi.", DecodeConfig(max_new_tokens=8)))


def test_the_table_reads_chi_square_against_the_closed_form():
    from specviz.labs.verification_rules import figures as views

    outcomes = rules.outcomes(P, Q)
    table = views.position_table(outcomes, rules.chi_square_by_rule(P, Q, samples=20_000, seed=1), 20_000)
    lines = {line.split("|")[1].strip(): line for line in table.splitlines()[2:] if line.startswith("|")}
    assert "follows p**: lossless" in lines["exact"] and "does NOT follow p**" in lines["argmax match"]
    assert views.rule_verdict(0.004, 0.3, 2_000) == ("**p-value 0.3 ≥ 0.001: follows p**, yet drifts: 2,000 samples are too "
                                                 "few to see a TVD of 0.0040")
    assert views.rule_verdict(0.0, 0.0001, 2_000) == ("**p-value 0.0001 < 0.001: does NOT follow p** by chance (1 run in "
                                                  "1,000): the closed form emits p")
    assert views.rule_verdict(0.0, 0.0173, 2_000) == "**p-value 0.0173 ≥ 0.001: follows p**: lossless"  # the threshold is stated
    assert "against 0.001" in table.splitlines()[0] and "at least 0.001 is read as following p" in table


def test_the_tab_answers_presets_without_a_model_and_refuses_without_a_run():
    import gradio as gr

    from specviz.app.tabs.verification_rules import LIVE, position_view, run_view

    estimate, (figure, table) = list(position_view(None, "The Japan ... (textbook)", 1, 1, 0.5, 3, 5_000))
    assert estimate[1].startswith("*Working: about")  # a slow action says so first (app/estimates.py)
    assert [item.name for item in figure.data][:2] == ["p (target)", "q (draft)"] and "| exact | 0.900 |" in table
    with pytest.raises(gr.Error, match="No run yet"):
        list(position_view(None, LIVE, 1, 1, 0.5, 3, 5_000))
    with pytest.raises(gr.Error, match="Lenience l must be"):
        list(position_view(None, LIVE, 1, 1, "lots", 3, 5_000))
    shown = []
    with pytest.raises(gr.Error, match="No run yet"):
        for update in run_view(None, 0.5, 3):
            shown.append(update)
    assert shown[-1][1].startswith("**Not run**: No run yet")  # the refusal replaces "Working…" on the page


def _fake_run(temperature=1.0):
    """Round 1 a plain step (as the 4-bit copy and the distilled head run it); round 2 passes 2 of 3 drafts, round 3
    all 3 and a bonus."""
    from specviz.trace import Round, Token, Trace

    def token(kind, position):
        return Token(position, f"t{position}", kind, position, 0.5, None if kind == "bonus" else 0.6,
                     *((0.3, 0.8) if kind == "accepted" else (0.9, 0.5) if kind == "rejected" else (None, None)))

    rounds = [Round(0, 0, 0, [token("bonus", 1)], 0.0, 1.0, 0),
              Round(1, 3, 2, [token("accepted", 1), token("accepted", 2), token("rejected", 3), token("corrected", 3)],
                    1.0, 1.0, 3),
              Round(2, 3, 3, [*(token("accepted", i) for i in (1, 2, 3)), token("bonus", 4)], 1.0, 1.0, 3)]
    ids = [t.token_id for r in rounds for t in r.emitted]
    return Trace(config={"gamma": 3, "temperature": temperature, "top_k": 0, "top_p": 1.0}, prompt="abc",
                 prompt_token_count=3, target_name="t", draft_name="d", device="cpu", dtype="float32", rounds=rounds,
                 token_ids=ids, text="".join(t.text for r in rounds for t in r.emitted))


def test_the_first_tested_position_is_never_round_one_and_an_untested_one_is_refused_naming_the_tested():
    from specviz.labs.verification_rules import on_run

    trace = _fake_run()
    assert trace.rounds[0].drafted == 0  # round 1 reads the prompt
    tested = on_run.tested_positions(trace)
    assert tested and tested[0][0] >= 2 and on_run.first_tested(trace) == (tested[0][0], tested[0][1][0])
    on_run.generated_index(trace, *on_run.first_tested(trace))  # the default is accepted
    with pytest.raises(ValueError) as error:
        on_run.generated_index(trace, 1, 1)
    message = str(error.value)
    assert message == ("round 1 tested no draft positions (round 1 reads the prompt and drafts nothing); tested: "
                       "round 2 positions 1–3, round 3 positions 1–3")
    with pytest.raises(ValueError, match="^round 2 tested draft positions 1, 2, 3, not 4; tested: round 2"):
        on_run.generated_index(trace, 2, 4)
    assert on_run.generated_index(trace, 3, 2) == 1 + 3 + 1
    assert on_run.first_tested(None) is None


def test_the_tab_refuses_an_untested_position_with_a_quiet_sentence_and_follows_the_run():
    import gradio as gr

    from specviz.app.callbacks import Refusal
    from specviz.app.tabs.verification_rules import LIVE, follow_run, position_view
    from specviz.labs.verification_rules import on_run

    trace = _fake_run()
    with pytest.raises(gr.Error) as error:
        list(position_view(trace, LIVE, 1, 1, 0.5, 3, 5_000))
    assert error.value.message.startswith("Round 1 tested no draft positions (round 1 reads the prompt and drafts "
                                          "nothing); tested: round 2 positions 1–3")
    assert isinstance(error.value, Refusal) and error.value.print_exception is False  # no traceback in the log
    first = on_run.most_disputed(trace)
    assert [update["value"] for update in follow_run(trace, 1, 1)] == list(first)
    assert follow_run(trace, *first) == ({"__type__": "update"}, {"__type__": "update"})  # a tested choice is kept
    assert [update["value"] for update in follow_run(None, 3, 2)] == [None, None]


def test_the_run_view_names_the_live_alpha_beside_the_labs_mean_overlap_never_as_alpha():
    from specviz.analysis.metrics import summarize
    from specviz.app.tabs.verification_rules import alpha_comparison
    from specviz.labs.verification_rules import rules as rules_module

    trace = _fake_run(temperature=0.0)
    totals = {rule: {"alpha": 0.98, "drift": 0.0} for rule in rules_module.RULES}
    text = alpha_comparison(trace, totals, untempered=True)
    metrics = summarize(trace)
    assert f"The live run's α = {metrics.alpha:.3f}** ({metrics.accepted_tokens}/{metrics.tested_positions}" in text
    assert "This lab's mean overlap β̄ = 0.980" in text and "untempered (T = 1) p and q" in text and "one-hot" in text
    assert text.count("α =") == 1  # the run's α, and no other number under its name


def test_empty_boxes_mean_the_first_tested_draft(monkeypatch):
    """Gradio sends 0 for an empty Number: the tab reads it (and None) as the run's first tested draft, where a
    round of 1 is refused (round 1 drafted nothing)."""
    import gradio as gr

    from specviz.app.tabs import verification_rules as rules_tab

    def no_model(trace):
        raise RuntimeError("the position was accepted; the models would load now")

    monkeypatch.setattr(rules_tab, "_live_distributions", no_model)
    trace = _fake_run()
    for empty in (None, 0):
        with pytest.raises(RuntimeError, match="accepted"):
            rules_tab._live_position(trace, empty, empty)
    with pytest.raises(gr.Error):
        rules_tab._live_position(trace, 1, 0)
