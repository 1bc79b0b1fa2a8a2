"""Where a greedy speculative run parts from plain decoding, and whether the target's logits there are a tie."""

import pytest
import torch

from specviz.analysis.parting import Parting, find_parting
from specviz.views.cli_output import json_summary
from tests.fakes import FakeLanguageModel


def test_runs_that_agree_have_no_parting():
    target = FakeLanguageModel(8, salt=1)
    assert find_parting(target, [1, 2], [3, 4, 5], [3, 4, 5], torch.float32) is None


def test_the_parting_is_the_first_differing_token_and_its_gap_comes_from_the_targets_logits():
    target = FakeLanguageModel(8, salt=1)
    prompt, plain, speculative = [1, 2], [3, 4, 5, 6], [3, 4, 7, 0]
    parting = find_parting(target, prompt, plain, speculative, torch.bfloat16)
    logits = target.logits_after(tuple(prompt + plain[:2]))  # [V], after the common prefix
    assert (parting.index, parting.plain_token, parting.speculative_token) == (2, 5, 7)
    assert parting.logit_gap == abs(float(logits[5]) - float(logits[7]))
    larger = max(abs(float(logits[5])), abs(float(logits[7])))
    assert parting.rounding_step <= larger * 2 ** -7 < 2 * parting.rounding_step  # bf16 keeps 8 significant bits


def test_a_tie_is_a_gap_of_a_few_rounding_steps_and_is_reported_as_such():
    tie, real = Parting(5, 10, 11, 0.0078, 0.0078), Parting(5, 10, 11, 0.5, 0.0078)
    assert tie.is_tie and "a rounding tie" in tie.describe() and "token 5" in tie.describe()
    assert not real.is_tie and "NOT a rounding tie" in real.describe()


class ShapeSensitiveModel(FakeLanguageModel):
    """A fake whose logits move by `wobble` times the number of tokens in the forward, as rounding does in half
    precision when a forward of another shape runs other kernels."""

    def __init__(self, wobble: float):
        super().__init__(8, salt=1)
        self.wobble = wobble

    def feed(self, token_ids, logits_to_keep=1, sync=True):
        return super().feed(token_ids, logits_to_keep, sync) + self.wobble * token_ids.numel()


def test_the_shape_noise_is_how_far_the_logits_move_between_a_whole_forward_and_a_decoding_step():
    prompt, plain, speculative = [1, 2, 3], [4, 5], [4, 6]  # parts at token 1: a 4-token forward against a 1-token one
    parting = find_parting(ShapeSensitiveModel(0.01), prompt, plain, speculative, torch.bfloat16)
    assert parting.shape_noise == pytest.approx(0.03, abs=1e-6)
    assert find_parting(FakeLanguageModel(8, salt=1), prompt, plain, speculative, torch.float32).shape_noise == 0.0  # shape-blind


def test_a_gap_that_the_shape_noise_can_close_is_a_tie_and_one_it_cannot_is_not():
    step = 0.0078  # bfloat16's spacing between 1 and 2
    assert Parting(5, 10, 11, 10 * step, step, shape_noise=6 * step).is_tie  # 10 steps apart, each may move 6
    assert not Parting(5, 10, 11, 10 * step, step, shape_noise=4 * step).is_tie
    assert "moves them by up to" in Parting(5, 10, 11, 0.05, step, shape_noise=0.04).describe()


def test_the_json_summary_carries_the_parting():
    from specviz.analysis.metrics import summarize
    from specviz.config import DecodeConfig
    from specviz.decoding import engine
    from tests.fakes import fake_pipeline

    trace = engine.run_speculative(fake_pipeline(vocab_size=5), "abc", DecodeConfig(max_new_tokens=4).validate())
    summary = json_summary(trace, summarize(trace), Parting(3, 1, 2, 0.01, 0.0078))
    assert summary["parting"] == {"index": 3, "plain_token": 1, "speculative_token": 2, "logit_gap": 0.01,
                                  "rounding_step": 0.0078, "shape_noise": 0.0, "is_tie": True}
    assert "parting" not in json_summary(trace, summarize(trace))
