"""The distilled draft: an EAGLE-style head (Li et al. 2024) that reads the target's own last hidden state.

At position j the target's final-norm hidden state h_j [H] is what its LM head turns into p(x_{j+1}). The head
takes the pair (h_j, x_{j+1}), the state and the token actually chosen after it, and predicts h_{j+1}:

    ĥ_{j+1} = Layer(FC([h_j ; E x_{j+1}]))        E: the target's frozen token embedding [V, H]
    q(x_{j+2}) = softmax(W_S ĥ_{j+1})             W_S: the target's LM head restricted to the S most frequent tokens

With `current_token`, the pair also carries x_j, the token the target read at j: FC([h_j ; E x_j ; E x_{j+1}]).
Then one attention layer can copy (an induction head): the pair that read a token x can hand on the token that
followed x earlier in the context, which the final state h_j itself hardly keeps.

One decoder layer with the target's shapes does the work, with its own KV cache over the pairs. Drafting
token i+1 after token i feeds (ĥ, x̂_i): the head's own prediction stands in for the state the target has not
computed yet. Tokens outside S get q = 0; they are never drafted but the target can still produce them in the
correction step, so speculative decoding stays exact. Only the FC and the layer are trained and shipped;
E and W_S are the target's own weights, taken at load time.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import torch
from torch import nn

from specviz import paths
from specviz.core.sampling import sample
from specviz.drafters.base import BY_MODEL, Draft, empty_draft, refuse_tree
from specviz.models.loading import LanguageModel

ASSET = paths.ASSETS / "smollm2-135m-draft.safetensors"
# Printed by `python -m specviz.distill` (the recipe is deterministic: two runs of an earlier one wrote identical
# weights); a damaged or swapped file is refused.
ASSET_SHA256 = "a8150a509081e37288a0dcae564cf2a12f95122e447f6facddab9b67c13d1239"


class FeatureDraft(nn.Module):
    """The trainable FC + decoder layer, and the frozen embedding and restricted head borrowed from the target."""

    def __init__(self, target_config, head_ids: torch.Tensor, embedding: torch.Tensor, head_weight: torch.Tensor,
                 current_token: bool = False):
        super().__init__()
        from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

        self.config = layer_config(target_config)
        hidden = self.config.hidden_size
        self.current_token = current_token
        self.fc = nn.Linear((3 if current_token else 2) * hidden, hidden, bias=True)
        self.layer = LlamaDecoderLayer(self.config, layer_idx=0)
        self.rotary = LlamaRotaryEmbedding(self.config)
        self.register_buffer("head_ids", head_ids.long(), persistent=False)  # [S] target ids the head can propose
        self.embedding = nn.Embedding.from_pretrained(embedding, freeze=True)  # [V, H], the target's
        self.head = nn.Linear(hidden, head_ids.numel(), bias=False)  # [S, H], rows of the target's LM head
        self.head.weight = nn.Parameter(head_weight, requires_grad=False)

    def forward(self, features: torch.Tensor, next_ids: torch.Tensor, positions: torch.Tensor, cache=None,
                attention_mask: torch.Tensor | None = None, current_ids: torch.Tensor | None = None) -> torch.Tensor:
        """features [B, n, H] (h_j), next_ids [B, n] (x_{j+1}), positions [B, n] (j) -> predicted h_{j+1} [B, n, H].

        current_ids [B, n] (x_j) is read only by a draft with `current_token`.
        attention_mask: [B, 1, n, K] bool (True = may attend) over the K cached + new pairs; None for one pair.
        """
        parts = [features, self.embedding(current_ids)] if self.current_token else [features]
        x = self.fc(torch.cat(parts + [self.embedding(next_ids)], dim=-1))  # [B, n, H]
        cos_sin = self.rotary(x, positions)
        return self.layer(x, attention_mask=attention_mask, position_ids=positions, past_key_values=cache,
                          use_cache=cache is not None, position_embeddings=cos_sin)

    def head_logits(self, predicted: torch.Tensor) -> torch.Tensor:
        """[..., H] -> logits over the S head tokens [..., S]."""
        return self.head(predicted)

    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {name: value for name, value in self.state_dict().items() if name.startswith(("fc.", "layer."))}


def layer_config(target_config):
    """A one-layer Llama config with the target's widths (hidden, heads, MLP, RoPE), attention through SDPA."""
    from transformers import LlamaConfig

    keys = ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "rms_norm_eps",
            "max_position_embeddings", "rope_parameters", "hidden_act", "head_dim")
    values = {key: getattr(target_config, key) for key in keys if getattr(target_config, key, None) is not None}
    config = LlamaConfig(vocab_size=target_config.vocab_size, num_hidden_layers=1, **values)
    config._attn_implementation = "sdpa"
    return config


def causal_mask(new: int, total: int, device=None) -> torch.Tensor:
    """[1, 1, new, total] bool: the i-th of the `new` last pairs sees every pair up to and including itself."""
    rows = torch.arange(new, device=device).view(-1, 1) + (total - new)
    return (torch.arange(total, device=device).view(1, -1) <= rows).view(1, 1, new, total)


# ---------------------------------------------------------------- the shipped file


def load_for_target(target) -> FeatureDraft:
    """The shipped draft for a loaded target (models.LoadedModel), or ValueError saying why it cannot be used.

    SPECVIZ_DRAFT_FILE names another trained file (no pinned hash then), for trying a new training run.
    """
    from specviz.config import OFFLINE_MODEL

    if target.model_id != OFFLINE_MODEL:
        raise ValueError(f"the distilled draft reads the hidden states of {OFFLINE_MODEL} and works with that target "
                         f"only, not {target.model_id!r}; choose prompt lookup or a draft model")
    override = os.environ.get("SPECVIZ_DRAFT_FILE")
    path = Path(override) if override else ASSET
    if not path.is_file():
        raise ValueError(f"the distilled draft file {path} is missing; reinstall specviz or run python -m specviz.distill")
    draft = load(path, target.hf_model, None if override else ASSET_SHA256)
    if target.device.type == "cpu":
        from specviz.models import cpu_linear

        cpu_linear.use_kernel(draft, target.linear_kernel)  # one drafted row at a time: the target's faster kernel
    return draft



def save(draft: FeatureDraft, path, metadata: dict) -> str:
    """Write the trainable weights in float16 with the head's token ids; return the file's sha256."""
    from safetensors.torch import save_file

    tensors = {name: value.detach().to(torch.float16).contiguous() for name, value in draft.trainable_state().items()}
    tensors["head_ids"] = draft.head_ids.to(torch.int32).contiguous()
    save_file(tensors, str(path), metadata={"specviz": json.dumps(metadata, sort_keys=True)})
    return sha256(path)


def load(path, target_hf_model, expected_sha256: str | None = None) -> FeatureDraft:
    """The draft in `path`, joined to the target's embedding and LM head, in the target's dtype and device."""
    from safetensors.torch import load_file

    if expected_sha256 is not None and sha256(path) != expected_sha256:
        raise ValueError(f"{path} does not match the pinned sha256 {expected_sha256}: the file is damaged or replaced")
    tensors = load_file(str(path))
    head_ids = tensors.pop("head_ids").long()
    embedding = target_hf_model.get_input_embeddings().weight.detach()  # [V, H]
    head_weight = target_hf_model.get_output_embeddings().weight.detach()[head_ids]  # [S, H]
    current_token = tensors["fc.weight"].shape[1] == 3 * embedding.shape[1]  # FC over [h ; E x_j ; E x_{j+1}]
    draft = FeatureDraft(target_hf_model.config, head_ids, embedding, head_weight, current_token)
    missing, unexpected = draft.load_state_dict(tensors, strict=False)
    trained_missing = [name for name in missing if name.startswith(("fc.", "layer."))]
    if trained_missing or unexpected:
        raise ValueError(f"{path} does not fit this target: missing {trained_missing}, unexpected {unexpected}")
    dtype = target_hf_model.get_input_embeddings().weight.dtype
    return draft.to(device=embedding.device, dtype=dtype).eval()


def metadata(path) -> dict:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as handle:
        return json.loads(handle.metadata().get("specviz", "{}"))


def sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class FeatureDrafter:
    """The distilled draft (FeatureDraft above): reads the target's last hidden states instead of re-reading text.

    Its cache holds pairs (h_j, x_{j+1}), with x_j too for a draft that reads the current token, for every position
    whose state h_j the target has computed. Each proposal first feeds the pairs the last verification made true
    (accepted tokens and the correction), then drafts γ tokens, each step feeding its own predicted state with the
    token it just drew. Until the target has encoded the prompt there is no state to read, so the first round drafts
    nothing.
    """

    costless = False
    chains_only = "the distilled head reads the target's states along one path"

    def __init__(self, draft, target: LanguageModel, name: str):
        from transformers import DynamicCache

        self.draft = draft  # a FeatureDraft
        self.target = target  # a LanguageModel created with keep_features=True
        self.name = name
        self.new_cache = lambda: DynamicCache(config=draft.config)
        self.cache = None
        self.true_pairs = 0  # pairs in the cache built from the target's own states (never from predictions)
        self.forward_seconds = 0.0

    def begin(self) -> None:
        self.cache = self.new_cache()
        self.true_pairs = 0

    def propose(self, sequence, gamma, standardize, generator, tree=None) -> Draft:
        if tree is not None:
            raise refuse_tree(self)
        vocab, device = self.target.vocab_size, self.target.device
        known = self.target.cached_length  # states h_0..h_{known-1} exist
        if gamma == 0 or known != len(sequence) - 1 or self.target.features is None:
            return empty_draft(vocab, BY_MODEL)
        started = time.perf_counter()
        # Roll back the pairs fed from predicted states, then feed the pairs j = true_pairs..n-2 made true since.
        predicted_pairs = self.cache.get_seq_length() - self.true_pairs
        if predicted_pairs > 0:
            self.cache.crop(-predicted_pairs)
        first, last = self.true_pairs, len(sequence) - 1
        features = self.target.features[first:last].unsqueeze(0)  # [1, n, H]
        ids = torch.tensor(sequence[first:], dtype=torch.long, device=device).view(1, -1)  # [1, n + 1]
        predicted = self._step(features, ids[:, 1:], first, ids[:, :-1])  # [1, n, H]
        self.true_pairs = last
        state = predicted[:, -1:]  # [1, 1, H]: ĥ for the position after the sequence
        head_ids = self.draft.head_ids  # [S]
        tokens, probs = [], []
        for step in range(gamma):
            if step > 0:  # pair (ĥ, x̂): the predicted state stands in for the one the target has not computed
                current = tokens[-2] if step > 1 else ids[0, -1]  # x_j, the token read at that position
                state = self._step(state, tokens[-1].view(1, 1), last + step - 1, current.view(1, 1))
            # Warping the S head logits costs a twelfth of warping all V with -inf outside the head, and q is then 0
            # outside the head's support. The two agree up to float rounding (~1e-6 relative) except on ties:
            # greedy breaks them alike (head_ids ascend, so argmax takes the lowest id either way) and top-k keeps
            # every tie at the k-th logit either way, but top-p sorts with an unstable sort, so among tokens tied
            # at the nucleus edge it may keep a different one than over all V. Exactness is unaffected: q is the
            # distribution the token was really drawn from, and that q is what verify() tests.
            head_probs = standardize(self.draft.head_logits(state[0]))[0]  # [S]
            tokens.append(head_ids[sample(head_probs, generator)].view(1))
            probs.append(torch.zeros(vocab, device=device).index_copy_(0, head_ids, head_probs))  # [V]
        self.forward_seconds += time.perf_counter() - started
        return Draft(torch.cat(tokens), torch.stack(probs), gamma, source=BY_MODEL)

    def _step(self, features: torch.Tensor, next_ids: torch.Tensor, first_position: int,
              current_ids: torch.Tensor) -> torch.Tensor:
        count = next_ids.shape[1]
        positions = torch.arange(first_position, first_position + count, device=next_ids.device).view(1, -1)
        mask = causal_mask(count, first_position + count, next_ids.device) if count > 1 else None
        with torch.inference_mode():
            return self.draft(features.to(self.draft.fc.weight.dtype), next_ids, positions, self.cache, mask,
                              current_ids)
