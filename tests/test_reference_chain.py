"""The engine against a textbook chain round: Leviathan et al.'s algorithm 1 in about 25 lines, with no cache, no
trees and no records. On scripted models whose every distribution depends on the whole prefix, both must emit the
same tokens from the same seed: the engine's caches, tree bookkeeping and trimming change nothing a chain decides."""

import pytest
import torch

from specviz.config import DecodeConfig
from specviz.core.sampling import Standardizer, sample_with_uniform
from specviz.decoding import engine
from tests.fakes import fake_pipeline


def reference_chain(pipeline, prompt_ids: list[int], config: DecodeConfig) -> list[int]:
    """Speculative sampling as the paper writes it, one chain of up to γ drafts a round."""
    standardize = Standardizer(config.temperature, config.top_k, config.top_p)
    generator = torch.Generator().manual_seed(config.seed)
    sequence = list(prompt_ids)
    pipeline.drafter.begin()
    while len(sequence) - len(prompt_ids) < config.max_new_tokens:
        room = min(config.gamma, config.max_new_tokens - (len(sequence) - len(prompt_ids)) - 1)
        # 1. Draft x_1..x_k, each drawn from q_i [V]
        draft = pipeline.drafter.propose(sequence, room, standardize, generator, None) if room > 0 else None
        xs, q = (draft.tokens.tolist(), draft.probs.float()) if draft is not None else ([], None)
        # 2. Score: p_i [V] after the sequence and x_1..x_{i-1}, for i = 1..k+1 (here one forward per row, uncached)
        p = torch.stack([standardize(pipeline.target.logits_after(tuple(sequence + xs[:i])).view(1, -1))[0]
                         for i in range(len(xs) + 1)])
        # 3. Verify: accept x_i while r_i < min(1, p_i(x_i) / q_i(x_i))
        r = torch.rand(len(xs), generator=generator)
        u = float(torch.rand((), generator=generator))
        n = 0
        while n < len(xs) and r[n] < torch.clamp(p[n, xs[n]] / q[n, xs[n]], max=1.0):
            n += 1
        # 4. Commit x_1..x_n and a correction from norm(max(0, p - q)), or the bonus from p_{k+1}
        following = torch.clamp(p[n] - q[n], min=0) if n < len(xs) else p[n]
        sequence += xs[:n] + [int(sample_with_uniform(following / following.sum(), u))]
    return sequence[len(prompt_ids):]


@pytest.mark.parametrize("seed", range(12))
def test_the_engine_emits_the_textbook_chains_tokens(seed):
    settings = torch.Generator().manual_seed(seed)
    vocab, gamma = int(torch.randint(3, 40, (), generator=settings)), int(torch.randint(1, 7, (), generator=settings))
    temperature = [0.0, 0.7, 1.0, 1.5][seed % 4]
    pipeline = fake_pipeline(vocab_size=vocab, draft_sharpness=float(torch.rand((), generator=settings)) * 3)
    config = DecodeConfig(gamma=gamma, temperature=temperature, max_new_tokens=40, seed=seed, chat=False).validate()
    trace = engine.run_speculative(pipeline, "speculative decoding", config)
    prompt_ids = engine.checked_prompt_ids(pipeline, "speculative decoding", config)
    assert trace.token_ids == reference_chain(pipeline, prompt_ids, config)
    assert any(r.accepted < r.drafted for r in trace.rounds) or temperature == 0  # the correction path ran


def test_the_reference_sees_a_wrong_step():
    """The comparison can fail: a reference that always takes the bonus row differs from the engine."""
    pipeline = fake_pipeline(vocab_size=11)
    config = DecodeConfig(gamma=4, temperature=1.0, max_new_tokens=30, seed=3, chat=False).validate()
    trace = engine.run_speculative(pipeline, "x", config)
    prompt_ids = engine.checked_prompt_ids(pipeline, "x", config)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch, "clamp", lambda tensor, min=None, max=None: tensor if max is None else tensor * 0 + 1)
        assert trace.token_ids != reference_chain(pipeline, prompt_ids, config)  # every draft accepted
