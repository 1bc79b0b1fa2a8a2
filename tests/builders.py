"""Hand-built traces whose every number is known, and tiny models built from configs, shared by the tests.

The transformers and tokenizers imports are inside the builders that need them, so a test that reads only a
hand-built trace does not import them.
"""

from typing import TYPE_CHECKING

import torch

from specviz.config import DecodeConfig
from specviz.trace import ACCEPTED, BONUS, CORRECTED, REJECTED, Baseline, Round, Token, Trace

if TYPE_CHECKING:
    from transformers import LlamaForCausalLM, Qwen2ForCausalLM

# Hand-built traces


def chain_round(index: int, drafted: int, kinds: list[str], draft_ms: float) -> Round:
    """A round whose tokens have these kinds at positions 1, 2, ..; a correction sits at the rejected position."""
    tokens, position = [], 0
    for kind in kinds:
        position += kind != CORRECTED  # the correction replaces the rejected draft at its position
        tokens.append(Token(token_id=index * 10 + position, text="x", kind=kind, position=position, target_prob=0.5,
                            draft_prob=None if kind == BONUS else 0.5, accept_prob=None if kind in (BONUS, CORRECTED) else 1.0))
    accepted = kinds.count(ACCEPTED)
    return Round(index=index, drafted=drafted, accepted=accepted, tokens=tokens, draft_ms=draft_ms, verify_ms=10.0,
                 draft_forwards=drafted, draft_token_ids=list(range(drafted)), draft_texts=["x"] * drafted)


def hand_built_trace() -> Trace:
    """Four rounds (tokens produced 3, 3, 1, 1; 8 in all), draft steps of 1 ms against a 10 ms target step: c = 0.1."""
    rounds = [
        chain_round(0, 4, [ACCEPTED, ACCEPTED, REJECTED, CORRECTED], draft_ms=4.0),  # position 4 drafted, never tested
        chain_round(1, 2, [ACCEPTED, ACCEPTED, BONUS], draft_ms=2.0),
        chain_round(2, 0, [BONUS], draft_ms=0.0),
        chain_round(3, 3, [REJECTED, CORRECTED], draft_ms=3.0),
    ]
    token_ids = [token.token_id for round_ in rounds for token in round_.emitted]
    config = DecodeConfig(gamma=4, adaptive=True, temperature=1.0).to_dict()
    return Trace(config=config, prompt="p", prompt_token_count=1, target_name="t", draft_name="d", device="cpu",
                 dtype="float32", rounds=rounds, token_ids=token_ids, stop_reason="max_new_tokens", wall_ms=40.0,
                 forward_ms=35.0, baseline=Baseline(text="", token_ids=list(token_ids), wall_ms=80.0, step_ms=10.0))


TREE_PARENTS = [-1, -1, 0, 0, 2]  # nodes 0, 1 at depth 1; nodes 2, 3 under node 0 (depth 2); node 4 under node 2 (depth 3)


def tree_token(kind: str, position: int, node: int | None, parent: int) -> Token:
    drafted = kind in (ACCEPTED, REJECTED)
    return Token(token_id=20 + (node if node is not None else 9), text="x", kind=kind, position=position,
                 target_prob=0.5, draft_prob=0.5 if drafted else None, uniform=0.5 if drafted else None,
                 accept_prob=0.6 if drafted else None, node=node, parent=parent)


def tree_round(index: int, drafted: int, accepted: int, tokens: list[Token], parents: list[int]) -> Round:
    return Round(index=index, drafted=drafted, accepted=accepted, tokens=tokens, draft_ms=1.0, verify_ms=10.0,
                 draft_forwards=3 if drafted else 0, draft_token_ids=[20 + j for j in range(drafted)],
                 draft_texts=["x"] * drafted, draft_parents=parents)


def hand_built_tree_trace() -> Trace:
    """Three rounds, γ = 3, budget 5:
    1. the module docstring's example: accept node 0 (1st sibling, depth 1), reject node 2 (1st sibling, depth 2),
       accept node 3 (2nd sibling, depth 2), which has no child: bonus. 3 tokens.
    2. reject node 0, reject node 1 (1st and 2nd siblings at depth 1): correction. 1 token.
    3. a plain step (nothing drafted). 1 token."""
    rounds = [
        tree_round(0, 5, 2, [tree_token(ACCEPTED, 1, 0, -1), tree_token(REJECTED, 2, 2, 0), tree_token(ACCEPTED, 2, 3, 0),
                             tree_token(BONUS, 3, None, 3)], TREE_PARENTS),
        tree_round(1, 5, 0, [tree_token(REJECTED, 1, 0, -1), tree_token(REJECTED, 1, 1, -1),
                             tree_token(CORRECTED, 1, None, -1)], TREE_PARENTS),
        tree_round(2, 0, 0, [tree_token(BONUS, 1, None, -1)], []),
    ]
    token_ids = [token.token_id for round_ in rounds for token in round_.emitted]
    config = DecodeConfig(gamma=3, tree=True, tree_budget=5, temperature=1.0).to_dict()
    return Trace(config=config, prompt="p", prompt_token_count=1, target_name="t", draft_name="d", device="cpu",
                 dtype="float32", rounds=rounds, token_ids=token_ids, stop_reason="max_new_tokens", wall_ms=40.0,
                 forward_ms=35.0)


def scripted_trace(plain_ms_per_token: float = 30.0) -> Trace:
    """Six rounds of a scripted pair with known step times: a 10 ms target step, v(k) = 1 + (k - 1)/4, 1 ms draft
    steps; every round drafts 3 and keeps 2 (3 tokens a round), 4 ms outside the forwards a round; round 1 also reads
    a prompt for 20 ms more."""
    rounds = []
    for index in range(6):
        verify_forward = 10.0 * (1 + 3 / 4) + (20.0 if index == 0 else 0.0)
        tokens = [Token(3 * index + i, f"t{i}", kind, i + 1, 0.5, 0.5, 0.1, 1.0)
                  for i, kind in enumerate([ACCEPTED, ACCEPTED, REJECTED])] + [Token(99, "c", CORRECTED, 3, 0.5)]
        rounds.append(Round(index, 3, 2, tokens, draft_ms=3.0, verify_ms=verify_forward + 4.0, draft_forwards=3,
                            verify_forward_ms=verify_forward, draft_forward_ms=3.0))
    wall = sum(round_.draft_ms + round_.verify_ms for round_ in rounds)
    return Trace(DecodeConfig(gamma=3).to_dict(), "p", 4, "t", "d", "cpu", "float32", rounds,
                 token_ids=list(range(18)), wall_ms=wall, record_ms=6.0, forward_ms=0.0,
                 target_forward_ms=[10.0, 12.5, 15.0, 17.5], draft_step_ms=1.0,
                 baseline=Baseline("", list(range(18)), 18 * plain_ms_per_token, 10.0))


# Tiny models

VOCAB = 256  # tiny_model's vocabulary


def tiny_model(architecture: str, seed: int, device: str, dtype: torch.dtype, layers: int = 2):
    """A random-weight causal LM of a real architecture; initializer_range 0.2 spreads its logits (few near-ties)."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    from specviz.models.loading import TransformersModel

    config_class, model_class = {"llama": (LlamaConfig, LlamaForCausalLM), "qwen2": (Qwen2Config, Qwen2ForCausalLM)}[
        architecture]
    config = config_class(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                          initializer_range=0.2, tie_word_embeddings=False)
    torch.manual_seed(seed)  # only for the throwaway weights, never for decoding
    model = model_class(config).to(device=device, dtype=dtype).eval()
    if architecture == "qwen2":  # q/k/v biases start at zero: make them matter
        for name, parameter in model.named_parameters():
            if name.endswith("proj.bias"):
                parameter.data.normal_(0, 0.2)
    return TransformersModel(model, VOCAB, torch.device(device), name=f"{architecture}-{seed}")


def _seeded(model):
    """Weights from an explicit generator (small, with norms near 1), so every run builds the same model."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.1 + (parameter.dim() == 1))
    return model


def tiny_llama(**overrides) -> "LlamaForCausalLM":
    """A random Llama with widths the 4-bit kernel takes; its weights come from an explicit generator."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096, **overrides)
    model = LlamaForCausalLM(config).eval()
    return _seeded(model)


def tiny_qwen2(**overrides) -> "Qwen2ForCausalLM":
    """A random Qwen2 (biases on q, k and v; tied embeddings, as the 0.5B draft has) of the same widths."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                         tie_word_embeddings=True, **overrides)
    model = Qwen2ForCausalLM(config).eval()
    return _seeded(model)


class Tiny(torch.nn.Module):
    """An embedding, one linear and a head tied to the embedding: the CPU kernels' and checkpoint copies' test model."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(60, 16)  # fewer ids than the timing input's first id (100)
        self.inner = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(16, 60, bias=False)
        self.head.weight = self.embed.weight  # tied, as in SmolLM2

    def get_input_embeddings(self):
        return self.embed

    def forward(self, input_ids, use_cache=False, logits_to_keep=1):
        return self.head(self.inner(self.embed(input_ids)))[:, -logits_to_keep:]


def word_level_tokenizer(words):
    from tokenizers import Tokenizer
    from tokenizers import models as tokenizer_models
    from transformers import PreTrainedTokenizerFast

    vocab = {word: index for index, word in enumerate(words)}
    backend = Tokenizer(tokenizer_models.WordLevel(vocab, unk_token="<unk>"))
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
