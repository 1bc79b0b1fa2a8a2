"""Training data for the distilled draft: text the target writes itself, with its last hidden state at every token.

The target generates from two kinds of prompt in left-padded batches with a KV cache:
- the project's own templated requests (distill_prompts.py);
- requests the target writes itself (Magpie, Xu et al. 2024): fed only its chat template up to the start of a
  user turn, an instruction-tuned model writes a user request drawn from what it learned users ask. These are far
  more varied than any template, and no benchmark prompt is involved.

Sampling uses an explicit torch.Generator. While the target generates, we keep its final-norm hidden state h_j (the
vector its LM head turns into the next-token distribution) at every position. That is all distillation needs:
the teacher's distribution at any position is softmax(W h_j), recomputed on the fly from h_j.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from specviz.decoding.pipeline import encode_prompt
from specviz.distill.prompts import first_stage_prompts, passage_prompts, vocabulary_words

TEMPERATURES = (0.0, 1.0, 0.7)  # batches cycle through these: greedy text for T = 0 decoding, samples for T > 0
REQUEST_TEMPERATURE = 0.8  # self-written requests: at 1.0 many ramble on without ending the turn
REQUEST_TOKENS = 96  # a self-written request that has not ended its turn by then is dropped
REQUEST_MIN_WORDS = 4
PASSAGE_TOKENS = 120  # a first-stage answer is cut to this many tokens before a second-stage prompt quotes it


@dataclass
class Sequence:
    token_ids: list[int]  # prompt then generated tokens, every one of them fed to the target
    features: torch.Tensor  # [len(token_ids), H] float16: the target's final-norm hidden state at each token
    prompt_length: int


@dataclass
class Corpus:
    sequences: list[Sequence]
    seconds: float  # generation time

    @property
    def token_count(self) -> int:
        return sum(len(s.token_ids) for s in self.sequences)

    @property
    def generated_count(self) -> int:
        return sum(len(s.token_ids) - s.prompt_length for s in self.sequences)

    def save(self, path) -> None:
        torch.save({"sequences": [(s.token_ids, s.features, s.prompt_length) for s in self.sequences],
                    "seconds": self.seconds}, path)

    @classmethod
    def load(cls, path) -> Corpus:
        data = torch.load(path, weights_only=True)
        return cls([Sequence(list(ids), feats, int(n)) for ids, feats, n in data["sequences"]], float(data["seconds"]))


def build_corpus(hf_model, tokenizer, eos_ids: list[int], prompt_count: int, passage_count: int, max_new_tokens: int,
                 batch_size: int, seed: int, log=print, word_prompts: bool = False, request_count: int = 0) -> Corpus:
    """Stage 1: answers to `prompt_count` templated requests (half of them built around random words of the
    target's vocabulary with `word_prompts`) and to `request_count` requests the target writes itself. Stage 2:
    `passage_count` requests that quote stage-1 answers (summarise, extract, answer from a document)."""
    started = time.perf_counter()
    generator = torch.Generator(device=hf_model.device).manual_seed(seed)
    words = vocabulary_words(tokenizer.get_vocab()) if word_prompts else ()
    prompts = first_stage_prompts(prompt_count, seed, words)
    if request_count:
        prompts += self_written_requests(hf_model, tokenizer, eos_ids, request_count, batch_size, generator, log)
    first = _generate_all(hf_model, tokenizer, eos_ids, prompts, max_new_tokens, batch_size, generator, log)
    long_answers = [s for s in first if len(s.token_ids) - s.prompt_length >= PASSAGE_TOKENS // 2]
    passages = [tokenizer.decode(s.token_ids[s.prompt_length:][:PASSAGE_TOKENS], skip_special_tokens=True)
                for s in long_answers[:passage_count]]
    second = _generate_all(hf_model, tokenizer, eos_ids, passage_prompts(passages, seed + 1), max_new_tokens, batch_size,
                           generator, log)
    return Corpus(first + second, time.perf_counter() - started)


def self_written_requests(hf_model, tokenizer, eos_ids, count: int, batch_size: int, generator: torch.Generator,
                          log=print) -> list[str]:
    """`count` distinct user requests written by the target from its bare chat template (Magpie).

    The model is fed the template up to where a user's words would begin (system turn, then the user header) and
    samples; a request counts once it ends its turn within REQUEST_TOKENS and has REQUEST_MIN_WORDS words or more.
    """
    marker = "\x00REQUEST\x00"
    template = tokenizer.apply_chat_template([{"role": "user", "content": marker}], tokenize=False,
                                             add_generation_prompt=True)
    header = tokenizer(template[: template.index(marker)], add_special_tokens=False)["input_ids"]  # [P]
    requests: dict[str, None] = {}  # insertion-ordered set: the result does not depend on hashing
    for attempt in range(max(4, 4 * count // batch_size + 4)):
        if len(requests) >= count:
            break
        for s in generate_batch(hf_model, [header] * batch_size, REQUEST_TOKENS, REQUEST_TEMPERATURE, generator,
                                eos_ids):
            written = s.token_ids[s.prompt_length:]
            if written and written[-1] in eos_ids:
                text = tokenizer.decode(written[:-1], skip_special_tokens=True).strip()
                if len(text.split()) >= REQUEST_MIN_WORDS:
                    requests.setdefault(text)
        log(f"  requests: {min(len(requests), count)}/{count} after {attempt + 1} batches")
    return list(requests)[:count]


def _generate_all(hf_model, tokenizer, eos_ids, prompts, max_new_tokens, batch_size, generator, log) -> list[Sequence]:
    encoded = [encode_prompt(tokenizer, prompt, chat=True) for prompt in prompts]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))  # similar lengths batch with little padding
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    results: list[Sequence] = []
    for number, batch in enumerate(batches):
        temperature = TEMPERATURES[number % len(TEMPERATURES)]
        results += generate_batch(hf_model, [encoded[i] for i in batch], max_new_tokens, temperature, generator, eos_ids)
        log(f"  batch {number + 1}/{len(batches)} (T={temperature}): {sum(len(s.token_ids) for s in results):,} tokens")
    return results


@torch.inference_mode()
def generate_batch(hf_model, prompts: list[list[int]], max_new_tokens: int, temperature: float,
                   generator: torch.Generator, eos_ids: list[int]) -> list[Sequence]:
    """Generate from B prompts at once (left-padded) and return each sequence with its hidden states."""
    from transformers import DynamicCache

    device = hf_model.device
    rows, width = len(prompts), max(len(p) for p in prompts)
    input_ids = torch.zeros(rows, width, dtype=torch.long)
    mask = torch.zeros(rows, width, dtype=torch.long)
    for row, ids in enumerate(prompts):
        input_ids[row, width - len(ids):] = torch.tensor(ids)
        mask[row, width - len(ids):] = 1
    input_ids, mask = input_ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # [B, P]
    cache = DynamicCache(config=hf_model.config)
    eos = torch.tensor(eos_ids, device=device)

    hidden = hf_model.model(input_ids=input_ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                            use_cache=True).last_hidden_state  # [B, P, H]
    prompt_features = hidden.to(torch.float16).cpu()
    new_features, new_tokens = [], []  # per step: [B, H] for the token fed at that step, [B] the token sampled
    done = torch.zeros(rows, dtype=torch.bool, device=device)
    last_position = positions[:, -1:]  # [B, 1]
    for step in range(max_new_tokens):
        logits = hf_model.lm_head(hidden[:, -1]).float()  # [B, V]
        if temperature == 0:
            token = logits.argmax(-1)
        else:
            token = torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=generator)[:, 0]
        token = torch.where(done, torch.zeros_like(token), token)  # [B]
        new_tokens.append(token.cpu())
        done = done | torch.isin(token, eos)
        if bool(done.all()) or step == max_new_tokens - 1:
            break
        mask = torch.cat([mask, torch.ones(rows, 1, dtype=mask.dtype, device=device)], dim=1)
        last_position = last_position + 1
        hidden = hf_model.model(input_ids=token[:, None], attention_mask=mask, position_ids=last_position,
                                past_key_values=cache, use_cache=True).last_hidden_state  # [B, 1, H]
        new_features.append(hidden[:, 0].to(torch.float16).cpu())

    tokens = torch.stack(new_tokens, dim=1)  # [B, steps]
    features = torch.stack(new_features, dim=1) if new_features else torch.zeros(rows, 0, hidden.shape[-1])  # [B, fed, H]
    sequences = []
    for row, ids in enumerate(prompts):
        generated = tokens[row].tolist()
        ends = [i for i, t in enumerate(generated) if t in eos_ids]
        generated = generated[: ends[0] + 1] if ends else generated
        fed = min(len(generated), features.shape[1])  # the last sampled token was never fed, so it has no state
        row_features = torch.cat([prompt_features[row, width - len(ids):], features[row, :fed]])
        sequences.append(Sequence(list(ids) + generated[:fed], row_features, len(ids)))
    return sequences
