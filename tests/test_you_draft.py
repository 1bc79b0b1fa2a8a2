"""You are the drafter (labs/you_are_the_drafter.py): a certain proposal passes with p(x), and the real rule decides."""

import pytest
import torch

from specviz.labs import you_are_the_drafter
from tests.fakes import fake_pipeline


def game_on(pipeline, temperature=1.0, seed=0):
    return you_are_the_drafter.Game(context_ids=[0, 1, 2], prompt_length=3, temperature=temperature, seed=seed)


def test_a_proposed_token_passes_with_its_target_probability():
    pipeline = fake_pipeline(vocab_size=6)
    game = game_on(pipeline)
    options = you_are_the_drafter.choices(pipeline, game)
    assert len(options) == 6 and options == sorted(options, key=lambda o: -o[2])  # a 6-token vocabulary, by p
    favourite, _, p_max = options[0]
    entry = you_are_the_drafter.propose(pipeline, game, [favourite])
    first = entry["tokens"][0]
    assert first["p"] == pytest.approx(p_max)  # min(1, p/q) with q(x) = 1
    assert first["kind"] == ("accepted" if first["r"] < p_max else "rejected")
    assert entry["tokens"][-1]["kind"] == ("bonus" if first["kind"] == "accepted" else "corrected")
    assert game.tested == 1 and game.accepted == (first["kind"] == "accepted")
    assert len(game.context_ids) == 3 + 1 + (first["kind"] == "accepted")
    assert len(game.drafter_beta) == 1 and 0 < game.drafter_beta[0] <= 1  # the fake pipeline's draft model


def test_a_correction_never_repeats_the_rejected_token_and_alpha_tracks_max_p():
    """norm(max(0, p − onehot(x))) is p without x; over many proposals of the favourite, α → E[max p]."""
    pipeline = fake_pipeline(vocab_size=6)
    rejected = 0
    for seed in range(60):
        game = game_on(pipeline, seed=seed)
        favourite, _, _ = you_are_the_drafter.choices(pipeline, game)[0]
        tokens = you_are_the_drafter.propose(pipeline, game, [favourite])["tokens"]
        if tokens[0]["kind"] == "rejected":
            rejected += 1
            assert tokens[1]["id"] != favourite
    p_max = you_are_the_drafter.choices(pipeline, game_on(pipeline))[0][2]
    assert abs(rejected / 60 - (1 - p_max)) < 0.2


def test_greedy_accepts_exactly_the_argmax_and_bad_proposals_are_refused():
    pipeline = fake_pipeline(vocab_size=6)
    game = game_on(pipeline, temperature=0.0)
    best, second = [token for token, _, _ in you_are_the_drafter.choices(pipeline, game)[:2]]
    assert you_are_the_drafter.propose(pipeline, game, [best])["tokens"][0]["kind"] == "accepted"
    assert you_are_the_drafter.propose(pipeline, game, [second])["tokens"][0]["kind"] == "rejected"
    with pytest.raises(ValueError, match="propose 1 to 8"):
        you_are_the_drafter.propose(pipeline, game, [])
    with pytest.raises(ValueError, match="below 6"):
        you_are_the_drafter.propose(pipeline, game, [99])


def test_several_tokens_stop_at_the_first_rejection():
    pipeline = fake_pipeline(vocab_size=6)
    game = game_on(pipeline, temperature=0.0)
    best = you_are_the_drafter.choices(pipeline, game)[0][0]
    worst = you_are_the_drafter.choices(pipeline, game)[-1][0]
    tokens = you_are_the_drafter.propose(pipeline, game, [worst, best, best])["tokens"]
    assert [t["kind"] for t in tokens] == ["rejected", "corrected"] and torch.is_tensor(torch.tensor(game.context_ids))


def test_rows_use_the_live_chips_and_show_the_untested_rest_in_grey():
    """A proposal rejected at its first token: the rejected chip, the correction, then the rest of the proposal in
    grey (never tested), with the live rows' classes and spaces drawn as ·."""
    from pathlib import Path

    from specviz.app.tabs.you_are_the_drafter import proposal_row_html

    pipeline = fake_pipeline(vocab_size=6)
    for seed in range(40):
        game = game_on(pipeline, seed=seed)
        least = you_are_the_drafter.choices(pipeline, game)[-1][0]  # the target's least likely token: rejected most often
        entry = you_are_the_drafter.propose(pipeline, game, [least, least, least])
        if entry["tokens"][0]["kind"] == "rejected":
            break
    assert [token["id"] for token in entry["untested"]] == [least, least]
    entry["tokens"][1]["text"] = " a<b>"  # the correction, with a space and markup
    row = proposal_row_html(1, entry)
    assert 'class="sv-tok sv-rejected"' in row and 'class="sv-tok sv-corrected"' in row
    assert row.count('class="sv-tok sv-untested"') == 2 and "sv-token" not in row
    assert '<span class="sv-ws">·</span>a&lt;b&gt;' in row and '<span class="sv-label">1</span>' in row
    css = (Path(__file__).parents[1] / "assets" / "specviz.css").read_text()
    assert ".sv-untested {" in css and "#sv-you-rows" in css
