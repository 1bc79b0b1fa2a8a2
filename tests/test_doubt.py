"""Where drafts fail: the target's doubt at each token (analysis/metrics.target_doubt), shaded in the rows on demand
and summed up in the stats."""

from specviz.analysis.metrics import doubt_by_verdict, summarize, target_doubt
from specviz.config import DecodeConfig
from specviz.trace import ACCEPTED, CORRECTED, REJECTED, Round, Token, TopToken, Trace
from specviz.views.render import rows_html
from specviz.views.stats_text import stats_markdown


def _token(kind: str, top: float, untempered: float | None = None) -> Token:
    token = Token(1, "x", kind, 1, 0.5, 0.5, 0.1, 1.0, target_top=[TopToken(1, "x", top), TopToken(2, "y", 1 - top)])
    if untempered is not None:
        token.target_top_untempered = [TopToken(1, "x", untempered)]
    return token


def test_doubt_is_one_minus_the_targets_top_probability_untempered_in_a_greedy_run():
    assert target_doubt(_token(ACCEPTED, 0.9)) == 0.09999999999999998
    assert target_doubt(_token(ACCEPTED, 1.0, untempered=0.6)) == 0.4  # T = 0: p is one-hot, its logits were not
    assert target_doubt(Token(1, "x", ACCEPTED, 1, 0.5)) is None  # no top list kept


def _trace() -> Trace:
    rounds = [Round(0, 2, 1, [_token(ACCEPTED, 0.95), _token(REJECTED, 0.4), _token(CORRECTED, 0.4)], 1.0, 1.0, 2),
              Round(1, 2, 1, [_token(ACCEPTED, 0.85), _token(REJECTED, 0.6), _token(CORRECTED, 0.6)], 1.0, 1.0, 2)]
    return Trace(DecodeConfig(gamma=2).to_dict(), "p", 1, "t", "d", "cpu", "float32", rounds, token_ids=[1, 2, 3, 4])


def test_the_stats_say_where_drafts_fail_and_the_rows_carry_each_tokens_doubt():
    trace = _trace()
    rejected, accepted, n_rejected, n_accepted = doubt_by_verdict(trace)
    assert (round(rejected, 3), round(accepted, 3), n_rejected, n_accepted) == (0.5, 0.1, 2, 2)  # corrections not counted
    stats = stats_markdown(trace, summarize(trace))
    assert "averaged **0.50** at the 2 rejected drafts against **0.10** at the 2 accepted ones" in stats
    rows = rows_html(trace)
    assert rows.count('style="--sv-doubt:') == 6 and 'style="--sv-doubt:0.600"' in rows
    assert 'class="sv-shade-flip"' in rows  # the legend's option, off until ticked
    trace.rounds[1].tokens[1].kind = ACCEPTED
    trace.rounds[0].tokens[1].kind = ACCEPTED
    assert doubt_by_verdict(trace) is None  # no rejection: nothing to compare
