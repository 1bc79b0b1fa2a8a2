"""Speculative decoding as a generator of rounds (plain decoding, its baseline: plain.py; the two timed together:
comparison.py).

One round (Leviathan et al. 2023, algorithm 1):
1. Draft: the drafter proposes x_1..x_k (k ≤ γ) with the distributions q_1..q_k it sampled them from.
2. Score: the target reads the pending tokens and x_1..x_k in ONE forward pass; the last k+1 logits give
   p_1..p_{k+1}.
3. Verify: x_i is accepted while r_i < min(1, p_i(x_i)/q_i(x_i)), r_i ~ U[0, 1).
4. Commit: the first rejection is replaced by a draw from norm(max(0, p_i - q_i)); if all k pass, a bonus
   token is drawn from p_{k+1}. The target's cache is cropped to the accepted prefix (the drafter rolls back
   its own at its next proposal).

Every random number a round uses comes from the run's seeded generator, in a fixed order (the drafter's
draws, then r_1..r_k, then the uniform of the correction or bonus), and is recorded, so any run replays.
Recording for the views (recording.py) happens after each round's timed sections.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import torch

from specviz import job
from specviz.config import DecodeConfig
from specviz.core.acceptance import rule_for_lenience
from specviz.core.sampling import Standardizer
from specviz.core.tree_shape import TreeShape, shape_for
from specviz.core.verify_tree import verify_draft
from specviz.decoding.adaptive import GammaPolicy, gamma_policy
from specviz.decoding.clock import RoundClock
from specviz.decoding.pipeline import Pipeline, encode_prompt
from specviz.decoding.recording import IncrementalText, RoundOutcome, TokenTexts, record_round
from specviz.decoding.tree_budget import choose_budget, remember_acceptance
from specviz.drafters import kinds
from specviz.models import loading as models
from specviz.trace import Round, Trace


@dataclass
class Proposal:
    """What a round verifies: the drafted ids x [k] and their q [k, V] on the target's device, each node's parent
    (-1: the committed text; a chain is [-1, 0, 1, ..]) and, for greedy runs' records, the draft's logits per node."""

    tokens: torch.Tensor  # [k]
    probs: torch.Tensor  # [k, V]
    parents: list[int]  # k
    logits: list | None = None

    @cached_property
    def ids(self) -> list[int]:
        """The drafted ids on the host, read once (on a GPU each read is a sync)."""
        return self.tokens.tolist()

    def first(self, count: int) -> Proposal:
        """The first `count` nodes (a γ policy's cut: a prefix of a tree is a tree)."""
        return Proposal(self.tokens[:count], self.probs[:count], self.parents[:count],
                        self.logits[:count] if self.logits else self.logits)


@dataclass
class RunState:
    """What a run carries from round to round: the sequence so far (prompt and emitted tokens), the trace, the text
    decoded so far and the clock, with the room left and the stop reason they give."""

    pipeline: Pipeline
    config: DecodeConfig
    prompt_ids: list[int]
    sequence: list[int]
    trace: Trace
    text: IncrementalText  # the decoded text, extended a round at a time
    clock: RoundClock

    @property
    def generated(self) -> int:
        return len(self.sequence) - len(self.prompt_ids)

    def room(self) -> int:
        """How many more tokens this run may emit: the smaller of max_new_tokens and the context left."""
        return min(self.config.max_new_tokens - self.generated, self.pipeline.context_limit - len(self.sequence))

    def stop_reason(self) -> str:
        if self.sequence[-1] in self.pipeline.eos_ids:
            return "eos"
        if self.generated >= self.config.max_new_tokens:
            return "max_new_tokens"
        if len(self.sequence) >= self.pipeline.context_limit:
            return "context"
        return ""

    def add_round(self, round_: Round) -> None:
        """The trace after one more round: its tokens, text, stop reason and times (recording is the views' cost)."""
        trace, clock = self.trace, self.clock
        trace.rounds.append(round_)
        trace.token_ids = self.sequence[len(self.prompt_ids) :]
        trace.stop_reason = self.stop_reason()
        trace.text = self.text.update(trace.token_ids, final=bool(trace.stop_reason))
        trace.forward_ms = clock.run_forward_ms()
        trace.wall_ms += clock.round_ms()  # the decoding itself
        round_.record_ms = clock.since_verified_ms()
        trace.record_ms += round_.record_ms


def speculative_decode(pipeline: Pipeline, prompt: str, config: DecodeConfig,
                       policy: GammaPolicy | None = None) -> Iterator[tuple[Round, Trace]]:
    """Yield (round, trace so far) after every draft/verify cycle. The trace is complete after the last one.

    `policy` chooses each round's draft length; by default the config's (fixed γ, or adaptive). A replay
    passes ScriptedGamma with a recorded run's lengths, since adaptive choices depend on timings."""
    config = resolved_config(pipeline, config)
    trace, prompt_ids = new_trace(pipeline, prompt, config)
    target, drafter, device = pipeline.target, pipeline.drafter, pipeline.device
    standardize = Standardizer(config.temperature, config.top_k, config.top_p)
    generator = torch.Generator(device=device).manual_seed(config.seed)
    policy = policy or gamma_policy(config.gamma, config.adaptive, drafter.costless, pipeline.target_forward_ms,
                                    pipeline.draft_step_ms)
    shape, rule = tree_shape(pipeline, config), rule_for_lenience(config.lenience)  # shape None: chains
    texts = TokenTexts(pipeline.tokenizer)
    run = RunState(pipeline, config, prompt_ids, list(prompt_ids), trace, IncrementalText(pipeline.tokenizer),
                   RoundClock(pipeline))
    sequence, clock = run.sequence, run.clock
    target.reset()
    drafter.begin()
    while not trace.stop_reason:
        job.check()  # a stopped run ends between rounds (and before any model forward: LanguageModel.feed)
        clock.start()
        with torch.inference_mode():  # per round, never across the yield (the consumer runs in between)
            room = min(config.gamma, run.room() - 1)  # a round emits ≤ k + 1

            # 1. Draft x_1..x_k with q_1..q_k [k, V] (the policy may ask for fewer, or trim the proposal), or a token
            #    tree of k nodes, each with its parent and the q it was drawn from.
            asked = policy.before_draft(room) if room > 0 else 0
            draft = drafter.propose(sequence, asked, standardize, generator, shape) if asked > 0 else None
            proposal = _trim_at_eos(draft, pipeline)
            proposal = proposal.first(policy.after_draft(len(sequence), proposal.ids))
            clock.drafted()

            # 2. Score: one target forward over the pending tokens and the k drafts -> p_1..p_{k+1} [k+1, V]; a tree's
            #    nodes each see only their own path (row 0: after the sequence, row j+1: after node j).
            k, pending = proposal.tokens.numel(), sequence[target.cached_length :]
            fed = torch.cat([torch.tensor(pending, dtype=torch.long, device=device), proposal.tokens])
            target_logits = target.feed_tree(fed, _after(pending, proposal.parents), logits_to_keep=k + 1)  # [k+1, V]
            target_probs = standardize(target_logits)

            # 3. Verify: accept while r_i < min(1, p_i(x_i)/q_i(x_i)), r_1..r_k [k]; one more uniform draws the
            #    correction from norm(max(0, p - q)) or the bonus from p_{k+1}.
            uniforms = torch.rand(k, generator=generator, device=device)  # [k]
            next_uniform = float(torch.rand((), generator=generator, device=device))
            result = verify_draft(proposal.tokens, proposal.parents, proposal.probs, target_probs, uniforms,
                                  next_uniform, rule)

            # 4. Commit the accepted path and the next token; the target's cache keeps only that path.
            target.keep_path([*range(len(pending)), *(len(pending) + node for node in result.path)])
            drafted_ids = proposal.ids
            emitted = _emitted([drafted_ids[node] for node in result.path], result, pipeline.eos_ids)
            sequence.extend(emitted)
            clock.verified()

            # Outside the timed sections: learn, record, decode the new text.
            policy.observe(sequence, [result.accept_probs[node] for node in result.tested],
                           clock.timing(draft, len(pending) + k) if trace.rounds else None)  # round 0 also read the prompt
            outcome = RoundOutcome(
                asked=asked, draft=draft, drafted_ids=drafted_ids, parents=proposal.parents,
                draft_probs=proposal.probs, target_probs=target_probs, uniforms=uniforms, next_uniform=next_uniform,
                result=result, emitted=emitted,
                untempered=(target_logits, proposal.logits) if config.greedy else None)
            round_ = record_round(len(trace.rounds), outcome, clock, texts)
            run.add_round(round_)
        if trace.stop_reason and shape is not None:
            remember_acceptance(pipeline, trace)  # the next tree run on this pair chooses its budget with it
        yield round_, trace


def tree_shape(pipeline: Pipeline, config: DecodeConfig) -> TreeShape | None:
    """The token tree each round drafts, for config.tree_budget nodes γ deep (resolved_config fills a budget of 0);
    None for chains, also where the budget buys no more than a chain."""
    if not config.tree:
        return None
    kinds.check_built(pipeline.drafter, config)  # build_pipeline said so already; a pipeline built by hand may not have
    return shape_for(config.gamma, config.tree_budget, pipeline.eos_ids, config.draft_confidence)


def resolved_config(pipeline: Pipeline, config: DecodeConfig) -> DecodeConfig:
    """config with a tree budget of 0 replaced by the one this machine affords (tree_budget.choose_budget: from the
    target's measured v(k), the draft step and the acceptance by sibling rank of this pair's earlier tree runs),
    so that the trace records the budget the run used and replays with it."""
    if not config.tree or config.tree_budget:
        return config
    return dataclasses.replace(config, tree_budget=choose_budget(pipeline, config))


def new_trace(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> tuple[Trace, list[int]]:
    """An empty trace for this run, and the prompt's token ids."""
    prompt_ids = checked_prompt_ids(pipeline, prompt, config)
    return Trace(
        config=config.to_dict(),
        prompt=prompt,
        prompt_token_count=len(prompt_ids),
        target_name=config.target,
        draft_name=config.draft,
        device=models.describe_device(pipeline.device),
        kernels=models.cpu_kernels(pipeline.device),
        dtype=str(pipeline.dtype).removeprefix("torch."),
        token_ids=[],
        target_forward_ms=list(pipeline.target_forward_ms),
        draft_step_ms=pipeline.draft_step_ms,
        templated_prompt=pipeline.tokenizer.decode(prompt_ids),
    ), prompt_ids


def checked_prompt_ids(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> list[int]:
    """The prompt's token ids, or ValueError when it encodes to nothing or fills the models' context."""
    prompt_ids = encode_prompt(pipeline.tokenizer, prompt, config.chat, config.system_prompt)
    if not prompt_ids:
        raise ValueError("the prompt encodes to no tokens")
    if len(prompt_ids) >= pipeline.context_limit:
        raise ValueError(f"the prompt has {len(prompt_ids)} tokens; the models' context holds {pipeline.context_limit}")
    return prompt_ids


def run_speculative(pipeline: Pipeline, prompt: str, config: DecodeConfig) -> Trace:
    """Run to the end and return the finished trace."""
    trace = None
    for _, trace in speculative_decode(pipeline, prompt, config):
        pass
    return trace


# ---------------------------------------------------------------- helpers of a round


def _trim_at_eos(draft, pipeline: Pipeline) -> Proposal:
    """The draft as the target's device holds it, without any node that follows an EOS (nothing does): in a chain,
    cut after the first EOS."""
    device, vocab = pipeline.device, pipeline.target.vocab_size
    if draft is None or draft.tokens.numel() == 0:
        return Proposal(torch.empty(0, dtype=torch.long, device=device), torch.empty(0, vocab, device=device), [])
    tokens, probs, parents, logits = draft.tokens.to(device), draft.probs.to(device), draft.tree_parents, draft.logits
    ids, kept, new_index = tokens.tolist(), [], {}
    for node, parent in enumerate(parents):
        if parent < 0 or (parent in new_index and ids[parent] not in pipeline.eos_ids):
            new_index[node] = len(kept)
            kept.append(node)
    if len(kept) < len(ids):
        index = torch.tensor(kept, device=device)
        tokens, probs = tokens[index], probs[index]
        parents = [new_index[parents[node]] if parents[node] >= 0 else -1 for node in kept]
        logits = [logits[node] for node in kept if node < len(logits)] if logits else logits
    return Proposal(tokens, probs, parents, logits)


def _after(pending: list[int], parents: list[int]) -> list[int]:
    """The target's tree entries for one forward: the pending tokens as a chain, then the drafted nodes, a root child
    following the last pending token. [7, 8] and parents [-1, -1, 0] -> [-1, 0, 1, 1, 2]."""
    return [*range(-1, len(pending) - 1), *(len(pending) - 1 if parent < 0 else len(pending) + parent for parent in parents)]


def _emitted(accepted_ids: list[int], result, eos_ids: list[int]) -> list[int]:
    """The accepted drafts, then the correction or bonus, unless an accepted EOS ended the text."""
    emitted = list(accepted_ids)
    if not (emitted and emitted[-1] in eos_ids):
        emitted.append(result.next_token)
    return emitted
