"""The aligned view of a draft of another tokenizer (render_align.py, render.aligned_round_html): groups cut where
both tokenizations have a boundary, every piece drawn once, the verdicts on the target's tokens."""

import re

from specviz.config import DecodeConfig
from specviz.decoding import engine
from specviz.trace import Trace
from specviz.views.render import rows_html
from specviz.views.render_align import align_groups
from tests.cross_vocab_toys import PROMPT, cross_vocab_pipeline


def test_groups_cover_both_tokenizations_in_order_and_end_on_common_boundaries():
    own, target = ["ab", "c", "a", "bca", "b"], ["a", "bc", "a", "bca"]
    groups = align_groups(own, target)
    assert [i for g in groups for i in g.own] == list(range(len(own)))
    assert [j for g in groups for j in g.target] == list(range(len(target)))
    for group in groups:
        if group.target:
            assert "".join(own[i] for i in group.own) == "".join(target[j] for j in group.target)
    assert [(g.own, g.target) for g in groups] == [([0, 1], [0, 1]), ([2], [2]), ([3], [3]), ([4], [])]


def test_a_tokenizer_that_rewrites_characters_gets_one_group():
    assert [(g.own, g.target) for g in align_groups(["x", "y"], ["z"])] == [([0, 1], [0])]
    assert align_groups([], []) == []


def test_a_cross_tokenizer_run_draws_each_round_s_own_pieces_over_its_target_tokens():
    trace = engine.run_speculative(cross_vocab_pipeline(), PROMPT, DecodeConfig(gamma=3, max_new_tokens=12, chat=False))
    trace = Trace.from_json(trace.to_json())  # the own pieces survive JSON
    page = rows_html(trace)
    assert "sv-cross-hint" in page
    rows = [row for row in page.split('<div class="sv-row') if row.startswith(' sv-aligned')]
    drafting = [round_ for round_ in trace.rounds if round_.draft_own_texts]
    assert drafting and len(rows) == len(drafting)
    for row, round_ in zip(rows, drafting):
        assert row.count('class="sv-tok sv-own"') == len(round_.draft_own_texts)
        verdicts = re.findall(r'class="sv-tok sv-(accepted|rejected|untested)"', row)
        assert len(verdicts) == round_.drafted and verdicts.count("accepted") == round_.accepted
    assert "held back" in page  # the last piece waits for what follows
