"""Plain autoregressive decoding: the baseline every speedup is measured against.

One target forward per token, sampled with the same warpers and the same seeded generator as a speculative run, so
that at temperature 0 both give the same text token for token. A PlainRun decodes one token per step(), on a model
of its own (comparison.py steps it between speculative rounds, on a second cache over the target's weights), and
times each token: its share of the wall time, from the end of the token before to the end of its sampling.

    run = PlainRun(pipeline, prompt, config)
    while not run.finished:
        run.step()
    baseline = run.baseline()   # text, ids, wall ms, the median one-token forward, each token's ms
"""

from __future__ import annotations

import statistics
import time

import torch

from specviz.config import DecodeConfig
from specviz.core.sampling import Standardizer, sample
from specviz.decoding.engine import checked_prompt_ids
from specviz.decoding.pipeline import Pipeline
from specviz.decoding.recording import TokenTexts
from specviz.models import loading as models
from specviz.trace import Baseline


class PlainRun:
    """Plain decoding of one prompt, a token per step(), on `model` (default: the pipeline's target)."""

    def __init__(self, pipeline: Pipeline, prompt: str, config: DecodeConfig, model: models.LanguageModel | None = None):
        self.pipeline, self.config = pipeline, config
        self.model = model or pipeline.target
        self.prompt_ids = checked_prompt_ids(pipeline, prompt, config)
        self.standardize = Standardizer(config.temperature, config.top_k, config.top_p)
        self.generator = torch.Generator(device=pipeline.device).manual_seed(config.seed)
        self.generated: list[int] = []
        self.token_ms: list[float] = []  # each token's wall ms; the first also reads the prompt
        self.after_round: list[int] = []  # the speculative round each token followed (comparison.py)
        self.step_ms: list[float] = []  # each one-token forward's ms (the prompt's forward is not one)
        self.logits: torch.Tensor | None = None  # [1, V] for the next token
        self.texts = TokenTexts(pipeline.tokenizer)  # each token's text, decoded once
        self.finished = False

    def step(self, after_round: int | None = None) -> int:
        """Decode one more token and return it: one target forward (the prompt's, for the first), then a draw."""
        device = self.pipeline.device
        if self.logits is None:
            self.model.reset()  # here, not at __init__: in turn with a speculative run, the model may be its target
        started = time.perf_counter()
        with torch.inference_mode():
            if self.logits is None:
                self.logits = self.model.feed(torch.tensor(self.prompt_ids, dtype=torch.long, device=device))
            else:
                forward_started = time.perf_counter()
                self.logits = self.model.feed(torch.tensor([self.generated[-1]], device=device))  # [1, V]
                models.synchronize(device)
                self.step_ms.append((time.perf_counter() - forward_started) * 1e3)
            token = int(sample(self.standardize(self.logits)[0], self.generator))
        self.generated.append(token)
        self.token_ms.append((time.perf_counter() - started) * 1e3)
        if after_round is not None:
            self.after_round.append(after_round)
        self.finished = (token in self.pipeline.eos_ids or len(self.generated) >= self.config.max_new_tokens
                         or len(self.prompt_ids) + len(self.generated) >= self.pipeline.context_limit)
        return token

    def baseline(self) -> Baseline:
        """What the run measured so far (all of it once finished)."""
        wall_ms = sum(self.token_ms)
        step_ms = statistics.fmean(self.step_ms) if self.step_ms else wall_ms  # a slow moment is a real cost
        text = self.pipeline.tokenizer.decode(self.generated, skip_special_tokens=True)
        return Baseline(text=text, token_ids=list(self.generated), wall_ms=wall_ms, step_ms=step_ms,
                        token_ms=list(self.token_ms), after_round=list(self.after_round),
                        token_texts=[self.texts(token) for token in self.generated])


def baseline_decode(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> Baseline:
    """Plain decoding of `prompt` to the end on the pipeline's target, with the same sampling and seed source."""
    run = PlainRun(pipeline, prompt, config)
    while not run.finished:
        run.step()
    return run.baseline()
