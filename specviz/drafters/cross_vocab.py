"""A draft model from another family: it reads and writes its own tokens, and proposes the target's.

Each round:
1. **Align the context.** The committed target tokens are decoded to text and that text is tokenized the draft's
   way. The draft's cache keeps the longest prefix of those draft tokens it already holds (after a rejection, or
   where the text's tokenization merged differently from the tokens the draft drafted) and reads the rest.
2. **Draft x_1..x_k in the target's vocabulary.** The draft's next-token logits [V_D] become logits over the
   target's vocabulary [V_T] through the bridge (vocab_bridge.py): each shared token at its target id, -inf
   elsewhere. Standardizing them (temperature, top-k, top-p) gives q_i over the target's vocabulary, renormalized
   over the shared tokens, and x_i is drawn from q_i. The draft then reads x_i's own draft token.
3. The target verifies x_1..x_k with q_1..q_k by the usual rule, unchanged.

At temperature 0 step 2 is free of the shared tokens (transformers' universal assisted generation): the draft
writes its own greedy tokens d_1..d_m over its whole vocabulary, their text is re-tokenized the target's way
(retokenize.py: a window of committed tokens fixes the start, a held-back last piece the end), and the target tokens
that text became are x_1..x_k, each with a one-hot q. Any proposal is exact at temperature 0: the rule then accepts
x_i exactly when it is the target's own argmax, and corrects to that argmax otherwise.

It is exact for the same reason every draft is: x_i was drawn from exactly q_i, the distribution the rule is given.
A draft whose probability falls on tokens the target does not have only loses acceptance, never exactness. The
naïve alternative, which draws from the shared tokens but reports the draft's un-renormalized probabilities as q,
gives the rule the wrong q and the output leaves p (tests/test_cross_vocab.py's negative control).
"""

from __future__ import annotations

import torch

from specviz.core.sampling import one_hot, sample
from specviz.drafters import retokenize
from specviz.drafters.base import BY_MODEL, Draft, common_prefix_length, empty_draft, refuse_tree
from specviz.drafters.vocab_bridge import VocabBridge
from specviz.models.loading import LanguageModel

MORE_OWN_TOKENS = 2  # at temperature 0 the draft writes up to γ * this of its own tokens to fill γ target tokens


def start_tokens(tokenizer) -> list[int]:
    """The special tokens `tokenizer` puts before a text (a BOS; none for SmolLM2 or Qwen), found by tokenizing a
    probe with and without them: what comes before the probe's own first token."""
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    marked = tokenizer("a", add_special_tokens=True)["input_ids"]
    return list(marked[: marked.index(plain[0])]) if plain and plain[0] in marked else []


class CrossVocabDrafter:
    """A causal LM with a tokenizer of its own, drafting chains of target tokens through a VocabBridge."""

    costless = False
    forward_seconds = 0.0  # its forwards are the draft model's, which the pipeline times
    chains_only = ("a draft of another tokenizer drafts one chain of the tokens both vocabularies share, retokenizing "
                   "the text after each")

    def __init__(self, model: LanguageModel, bridge: VocabBridge, target_tokenizer, draft_tokenizer,
                 confidence: float = 0.0):
        self.model, self.bridge, self.confidence = model, bridge.to(model.device), confidence
        self.target_tokenizer, self.draft_tokenizer = target_tokenizer, draft_tokenizer
        self.draft_of = bridge.draft_of  # target id -> draft id, for the tokens both hold
        self.name = f"{model.name} (across tokenizers)"
        self.cached_ids: list[int] = []  # the draft tokens the model's cache holds
        self.start_ids = start_tokens(draft_tokenizer)  # e.g. Gemma's <bos>: what its text begins with in training

    def begin(self) -> None:
        self.model.reset()
        self.cached_ids = []

    def draft_context(self, sequence: list[int]) -> list[int]:
        """1. The committed target tokens as the draft tokenizes their text (special tokens such as a chat
        template's "<|im_start|>" become the draft's own where it has them), after the tokens the draft's tokenizer
        starts every text with (Gemma's <bos>: without it Gemma-3-270M's greedy drafts were accepted far less)."""
        text = self.target_tokenizer.decode(list(sequence), skip_special_tokens=False)
        return self.start_ids + list(self.draft_tokenizer(text, add_special_tokens=False)["input_ids"])

    def propose(self, sequence, gamma, standardize, generator, tree=None) -> Draft:
        if tree is not None:
            raise refuse_tree(self)
        if gamma == 0:
            return empty_draft(self.bridge.target_width, BY_MODEL)
        seen = self.draft_context(sequence)
        valid = min(common_prefix_length(self.cached_ids, seen), len(seen) - 1)  # re-read at least the last token
        self.model.crop(valid)
        new_ids = torch.tensor(seen[valid:], dtype=torch.long, device=self.model.device)
        logits = self.model.feed(new_ids)  # [1, V_D]
        if getattr(standardize, "greedy", False):
            return self._propose_by_text(sequence, seen, logits, gamma, len(new_ids))
        tokens, probs, raw, fed, shared = [], [], [], [], []
        for step in range(gamma):  # 2. draft in the target's vocabulary, read back in the draft's
            if step > 0:
                fed.append(self.draft_of[int(tokens[-1])])
                logits = self.model.feed(torch.tensor([fed[-1]], device=self.model.device))
            target_logits = self.bridge.target_logits(logits)  # [1, V_T]: -inf off the shared tokens
            raw.append(target_logits)
            draft_probs = standardize(target_logits)[0]  # [V_T], q_i: renormalized over the shared tokens
            tokens.append(sample(draft_probs, generator).view(1))
            probs.append(draft_probs)
            own = torch.softmax(logits[0].float(), dim=-1)  # [V_D], the draft's untempered distribution
            shared.append(float(self.bridge.shared_mass(own)))  # what of the draft's belief it could propose
            if self.confidence > 0 and float(own[self.draft_of[int(tokens[-1])]]) < self.confidence:
                break
        self.cached_ids = seen + fed
        own_texts = [self.draft_tokenizer.decode([self.draft_of[int(token)]]) for token in tokens]
        return Draft(torch.cat(tokens), torch.stack(probs), len(tokens), raw, caught_up=len(new_ids), source=BY_MODEL,
                     shared_mass=shared, own_texts=own_texts)

    def _propose_by_text(self, sequence, seen, logits, gamma, caught_up) -> Draft:
        """2, at temperature 0: the draft's own greedy tokens d_1.., until their text holds γ target tokens that no
        later text can change (or the draft ends, stops or reaches γ * MORE_OWN_TOKENS); q one-hot on each."""
        own, shared, proposed, ended = [], [], [], False
        for step in range(gamma * MORE_OWN_TOKENS):
            if step > 0:
                logits = self.model.feed(torch.tensor([own[-1]], device=self.model.device))
            distribution = torch.softmax(logits[0].float(), dim=-1)  # [V_D]
            own.append(int(distribution.argmax()))
            shared.append(float(self.bridge.shared_mass(distribution)))
            ended = own[-1] == self.draft_tokenizer.eos_token_id
            unsure = self.confidence > 0 and float(distribution[own[-1]]) < self.confidence  # the draft stop
            proposed = self._target_tokens(sequence, seen, own, ended, last=unsure)
            if ended or unsure or len(proposed) >= gamma:
                break
        self.cached_ids = seen + own[:-1]  # the last one was drawn, not yet read
        proposed = proposed[:gamma]
        probs = one_hot(torch.tensor(proposed, dtype=torch.long, device=self.model.device), self.bridge.target_width)
        own_texts = [self.draft_tokenizer.decode([token], skip_special_tokens=False) for token in own]
        return Draft(torch.tensor(proposed, dtype=torch.long, device=self.model.device), probs, len(own), None,
                     caught_up=caught_up, source=BY_MODEL, shared_mass=shared, own_texts=own_texts)

    def _target_tokens(self, sequence, seen, own, ended, last=False) -> list[int]:
        """The target tokens the draft's text `own` has become so far: where the draft ended (its EOS), all of them
        and the target's EOS; where it stops here (`last`: its draft stop), all of them, the last piece too, since
        nothing more is coming to hold it back for; else those that the last own token's text (the lookahead) leaves
        unchanged."""
        written = own[:-1] if ended else own
        text = retokenize.own_text(self.draft_tokenizer, seen, written)
        held = text if ended or last else retokenize.own_text(self.draft_tokenizer, seen, written[:-1])
        if text is None or held is None:  # a decoder that rewrites across the boundary: propose nothing
            return []
        ids = retokenize.stable_continuation(self.target_tokenizer, sequence, held, text[len(held):])
        if ended and self.target_tokenizer.eos_token_id is not None:
            ids.append(self.target_tokenizer.eos_token_id)
        return ids
