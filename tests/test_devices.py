"""The exact algorithm on every device this machine has: the CPU always, and CUDA where there is a GPU.

CI has no GPU, so there these run on the CPU alone; on a GPU machine the same tests run on CUDA too, in float32
and bfloat16 (docs/gpu.md). Real transformer layers (tiny random Llama and Qwen2 models, built from configs)
stand in for the models, since what is checked here does not depend on the weights' values.
"""

import pytest
import torch

from specviz.analysis.parting import find_parting
from specviz.config import DecodeConfig
from specviz.core.verify import BONUS, CORRECTED, verify
from specviz.decoding import engine, plain
from specviz.decoding.pipeline import Pipeline
from specviz.drafters.model import DraftModelDrafter
from specviz.models.cache import WeightsCache
from tests.builders import VOCAB, tiny_model
from tests.fakes import FakeTokenizer

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = [torch.float32, torch.bfloat16]
TARGET = torch.tensor([0.4, 0.3, 0.2, 0.1])  # the textbook example: {is, stock, girl, cherry}
DRAFT = torch.tensor([0.5, 0.25, 0.15, 0.1])


@pytest.mark.parametrize("device", DEVICES)
def test_the_textbook_round_gives_the_same_result_on_the_device(device):
    target_probs = torch.stack([TARGET, torch.tensor([0.0, 0.0, 1.0, 0.0])]).to(device)  # [γ+1, V], γ = 1
    draft_probs = DRAFT.view(1, -1).to(device)
    accepted = verify(torch.tensor([0], device=device), draft_probs, target_probs, torch.tensor([0.79]), 0.5)
    assert (accepted.accepted_count, accepted.next_token, accepted.next_kind) == (1, 2, BONUS)
    assert accepted.accept_probs == pytest.approx([0.8])
    for uniform, expected in ((0.25, 1), (0.75, 2)):  # the residual [0, .5, .5, 0], drawn by inverse CDF
        rejected = verify(torch.tensor([0], device=device), draft_probs, target_probs, torch.tensor([0.8]), uniform)
        assert (rejected.accepted_count, rejected.next_token, rejected.next_kind) == (0, expected, CORRECTED)


@pytest.mark.parametrize("device", DEVICES)
def test_the_law_of_a_round_on_the_device_is_the_target_s(device):
    """Enumerated: every draft x (weight q(x)), accepted (weight a) or rejected (1 − a, r = a) and then the
    distribution verify draws from on the device; the textbook pair and a lenient rule as the negative control."""
    from specviz.core.acceptance import EXACT, Lenient

    def law(rule):
        total = torch.zeros(4, dtype=torch.float64)
        target_probs, draft_probs = torch.stack([TARGET, TARGET]).to(device), DRAFT.view(1, -1).to(device)
        for x in range(4):
            token = torch.tensor([x], device=device)
            accept = verify(token, draft_probs, target_probs, torch.tensor([0.0]), 0.0, rule=rule).accept_probs[0]
            rejected = verify(token, draft_probs, target_probs, torch.tensor([accept]), 0.0, rule=rule)
            assert rejected.accepted_count == 0 or accept == 1
            total[x] += float(DRAFT[x]) * accept
            total += float(DRAFT[x]) * (1 - accept) * rejected.next_probs.double().cpu()
        return total

    assert torch.allclose(law(EXACT), TARGET.double(), atol=1e-6)
    assert 0.5 * float((law(Lenient(lenience=0.5)) - TARGET.double()).abs().sum()) > 0.01


@pytest.mark.slow  # 3,000 rounds; enumerated exactly above
@pytest.mark.parametrize("device", DEVICES)
def test_sampled_tokens_follow_the_target_on_the_device(device):
    from specviz.analysis.metrics import chi_square_test

    generator = torch.Generator().manual_seed(99)
    samples = 3_000
    drafted = torch.multinomial(DRAFT, samples, replacement=True, generator=generator)  # x ~ q, [samples]
    uniforms, next_uniforms = torch.rand(samples, generator=generator), torch.rand(samples, generator=generator)
    target_probs, draft_probs = torch.stack([TARGET, TARGET]).to(device), DRAFT.view(1, -1).to(device)
    draws = []
    for x, r, u in zip(drafted, uniforms, next_uniforms):
        result = verify(x.view(1).to(device), draft_probs, target_probs, r.view(1), next_uniform=u)
        draws.append(int(x) if result.accepted_count == 1 else result.next_token)
    counts = torch.bincount(torch.tensor(draws), minlength=4).float()
    assert chi_square_test(counts, TARGET)[2] > 0.001


@pytest.mark.parametrize("architecture", ["llama", "qwen2"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_rolling_the_cache_back_leaves_no_trace_of_the_rejected_tokens(device, dtype, architecture):
    """Feed 6, then 4 drafts that are rejected, crop back to 6 and feed the 4 right tokens: the logits are bit for
    bit those of a cache that never saw the rejected ones (the same shapes, so the same kernels)."""
    model = tiny_model(architecture, 0, device, dtype)
    prefix, wrong, right = torch.arange(6), torch.tensor([9, 8, 7, 6]), torch.tensor([40, 41, 42, 43])
    model.reset()
    model.feed(prefix)
    model.feed(wrong, logits_to_keep=4)
    model.crop(6)
    rolled_back = model.feed(right, logits_to_keep=4)  # [4, V]
    model.reset()
    model.feed(prefix)
    clean = model.feed(right, logits_to_keep=4)
    assert model.cached_length == 10
    assert torch.equal(rolled_back, clean)


def _pipeline(device: str, dtype: torch.dtype) -> Pipeline:
    target, draft = tiny_model("qwen2", 1, device, dtype, layers=3), tiny_model("qwen2", 2, device, dtype)
    return Pipeline(target, DraftModelDrafter(draft), FakeTokenizer(VOCAB), [], torch.device(device), dtype, draft,
                    cache=WeightsCache())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("device", DEVICES)
def test_greedy_output_is_the_targets_own_except_at_a_tie(device, dtype):
    """Speculative greedy decoding gives the target's greedy tokens. In bfloat16 a (γ+1)-token forward may round a
    logit differently from a one-token forward, so two near-equal logits can swap: where the sequences part,
    the two tokens' logits must be no further apart than other forward shapes move them (specviz.analysis.parting). In
    float32 they must not part at all."""
    pipeline = _pipeline(device, dtype)
    prompt = "The quick brown fox jumps over the lazy dog"
    greedy = DecodeConfig(target="tiny", max_new_tokens=32, temperature=0).validate()
    plain_run = plain.baseline_decode(pipeline, prompt, greedy).token_ids  # the same for every γ
    for gamma in (1, 5):
        config = DecodeConfig(target="tiny", gamma=gamma, max_new_tokens=32, temperature=0).validate()
        speculative = engine.run_speculative(pipeline, prompt, config).token_ids
        if speculative == plain_run:
            continue
        assert dtype == torch.bfloat16, f"γ={gamma}: float32 greedy output differs from the target's"
        parting = find_parting(pipeline.target, FakeTokenizer(VOCAB)(prompt)["input_ids"], plain_run, speculative, dtype)
        assert parting.is_tie, f"γ={gamma}: {parting.describe()}"
