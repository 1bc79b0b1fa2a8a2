"""A lean 4-bit decode step for Llama and Qwen2 causal LMs: same numbers as the 4-bit copy, less overhead.

Drafting is one token at a time, and for a 135M model on a CPU the 4-bit kernels are a minority of each step:
transformers' Llama forward spends the rest in Python and small ops (seven linears, masks and a growing cache per
layer). This module runs the same weights with less around them, as gpt-fast does:

- q, k and v are one 4-bit linear, and so are gate and up (their rows stacked: each row keeps its own groups, so
  every code and scale is the one `int4.Int4Linear` would use; Qwen2's q/k/v biases are stacked alike);
- the KV cache is preallocated and a rollback only moves its length (no concatenation per token);
- norms, rotary tables and embeddings are the target's own modules, called as transformers calls them.

Its logits equal the 4-bit copy's (`int4.quantized_copy`; tested), so q is unchanged; a drafted
token costs less than through transformers' forward: 13.6 ms against 17.4 ms for the default run's draft
(docs/results.md, "What the float32 CPU path's machinery buys"; docs/research.md, "A lean decode step"). It is called
like a transformers causal LM (`models.LanguageModel` feeds it), taking any `Cache` it is handed, such as the
target's prompt cache, and returning its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.models.checkpoint_memory import page_out
from specviz.models.int4 import Int4Linear, Int8RowLinear

ARCHITECTURES = ("llama", "qwen2")  # the same decoder layer; Qwen2 adds biases to q, k and v


def supports(hf_model: torch.nn.Module) -> bool:
    """Whether the lean step reproduces this model: a Llama or Qwen2 with SiLU and full attention in every layer."""
    config = hf_model.config
    return (
        config.model_type in ARCHITECTURES
        and config.hidden_act == "silu"
        and getattr(config, "pretraining_tp", 1) == 1
        and all(kind == "full_attention" for kind in getattr(config, "layer_types", None) or ())
    )


class KVBuffer:
    """Keys and values of every layer in preallocated storage: [layers, 1, kv_heads, capacity, head_dim] each.

    `length` tokens are valid; a rollback (`crop`, with transformers' negative count) just lowers it, and a
    write past the capacity doubles it.
    """

    def __init__(self, layers: int, kv_heads: int, head_dim: int, capacity: int, dtype: torch.dtype):
        self.keys = torch.zeros(layers, 1, kv_heads, capacity, head_dim, dtype=dtype)
        self.values = torch.zeros_like(self.keys)
        self.length = 0

    @classmethod
    def from_cache(cls, cache, layers: int, kv_heads: int, head_dim: int, dtype: torch.dtype) -> KVBuffer:
        """A copy of a transformers cache (the target's, for a twin) or an empty buffer for an empty one."""
        length = cache.get_seq_length() if cache is not None else 0
        buffer = cls(layers, kv_heads, head_dim, max(512, 2 * length), dtype)
        for index in range(layers if length else 0):
            buffer.keys[index, :, :, :length] = cache.layers[index].keys
            buffer.values[index, :, :, :length] = cache.layers[index].values
        buffer.length = length
        return buffer

    def reserve(self, extra: int) -> None:
        needed = self.length + extra
        if needed > self.keys.shape[3]:
            capacity = max(needed, 2 * self.keys.shape[3])
            grown_keys = self.keys.new_zeros(*self.keys.shape[:3], capacity, self.keys.shape[4])
            grown_values = torch.zeros_like(grown_keys)
            grown_keys[..., : self.length, :] = self.keys[..., : self.length, :]
            grown_values[..., : self.length, :] = self.values[..., : self.length, :]
            self.keys, self.values = grown_keys, grown_values

    def get_seq_length(self) -> int:
        return self.length

    def crop(self, max_length: int) -> None:
        """Keep the first max_length tokens; a negative max_length removes that many (transformers' convention)."""
        self.length = self.length + max_length if max_length < 0 else min(self.length, max_length)


@dataclass
class DecoderOutput:
    logits: torch.Tensor  # [1, logits_to_keep, V]
    past_key_values: KVBuffer


@dataclass
class HiddenOutput:  # what get_decoder's step returns, as a transformers decoder's output names it
    last_hidden_state: torch.Tensor  # [1, t, H], after the final norm
    past_key_values: KVBuffer


class Int4Decoder:
    """A Llama (or Qwen2) causal LM's decode step on 4-bit stacked projections and an int8 head (the int4 draft's numbers)."""

    def __init__(self, hf_model: torch.nn.Module, dense_prompt: bool = False, release_float: bool = False):
        """dense_prompt: also keep the codes for Int4Linear's dense path, which reads a prompt about twice as fast
        (a draft model that encodes prompts itself; the target's copy starts from the target's cache).
        release_float: the float model is dropped after this, so give each float W's pages back once quantized
        (checkpoint_memory.page_out), which lowers the peak of loading (docs/results.md)."""
        if not supports(hf_model):
            raise ValueError(f"the lean int4 step runs {' and '.join(ARCHITECTURES)} models with full attention; this one is "
                             f"{hf_model.config.model_type!r}")
        config, decoder = hf_model.config, hf_model.get_decoder()
        self.config = config
        self.heads, self.kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.intermediate = config.intermediate_size
        self.embed, self.rotary, self.norm = decoder.embed_tokens, decoder.rotary_emb, decoder.norm
        self.layers = []
        for layer in decoder.layers:
            attention, mlp = layer.self_attn, layer.mlp
            self.layers.append((
                layer.input_layernorm, Int4Linear([attention.q_proj, attention.k_proj, attention.v_proj], dense_prompt),
                Int4Linear(attention.o_proj, dense_prompt), layer.post_attention_layernorm,
                Int4Linear([mlp.gate_proj, mlp.up_proj], dense_prompt), Int4Linear(mlp.down_proj, dense_prompt),
            ))
            if release_float:
                for linear in (attention.q_proj, attention.k_proj, attention.v_proj, attention.o_proj,
                               mlp.gate_proj, mlp.up_proj, mlp.down_proj):
                    page_out(linear.weight)
        self.head = Int8RowLinear(hf_model.get_output_embeddings())
        self.dtype = self.embed.weight.dtype

    def __call__(self, input_ids: torch.Tensor, past_key_values=None, logits_to_keep: int = 1,
                 attention_mask: torch.Tensor | None = None, position_ids: torch.Tensor | None = None, **_) -> DecoderOutput:
        """Feed input_ids [1, t] after the cached tokens; return the logits of the last logits_to_keep positions.
        A token tree passes its bool attention_mask [1, 1, t, cached + t] and position_ids [1, t] (tree_attention)."""
        hidden, cache = self._layers(input_ids, past_key_values, attention_mask, position_ids)  # [1, t, H]
        return DecoderOutput(self.head(self.norm(hidden[:, -logits_to_keep:])), cache)

    def get_decoder(self):
        """The step without its head, called as a transformers decoder is (LanguageModel runs a head subset after
        it): (input_ids=, past_key_values=, attention_mask=, position_ids=) -> .last_hidden_state [1, t, H], after
        the final norm, and .past_key_values."""
        def decode(input_ids, past_key_values=None, attention_mask=None, position_ids=None, **_) -> HiddenOutput:
            hidden, cache = self._layers(input_ids, past_key_values, attention_mask, position_ids)
            return HiddenOutput(self.norm(hidden), cache)
        return decode

    def get_output_embeddings(self) -> Int8RowLinear:
        return self.head

    def _layers(self, input_ids: torch.Tensor, past_key_values, attention_mask: torch.Tensor | None,
                position_ids: torch.Tensor | None) -> tuple[torch.Tensor, KVBuffer]:
        """Every decoder layer over input_ids [1, t] after the cached tokens: hidden states [1, t, H] before the final
        norm, and the cache that now holds them."""
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        cache = past_key_values
        if not isinstance(cache, KVBuffer):
            cache = KVBuffer.from_cache(cache, len(self.layers), self.kv_heads, self.head_dim, self.dtype)
        new, start = input_ids.shape[1], cache.length
        cache.reserve(new)
        end = start + new
        hidden = self.embed(input_ids)  # [1, t, H]
        if position_ids is None:
            position_ids = torch.arange(start, end, device=input_ids.device).view(1, -1)
        cos, sin = self.rotary(hidden, position_ids)  # [1, t, d]
        # Token i of the t new ones sees the cache and new tokens 0..i (None: a single token sees everything).
        mask = None if new == 1 else torch.ones(new, end, dtype=torch.bool, device=input_ids.device).tril(start)
        if attention_mask is not None:
            mask = attention_mask[0, 0]  # [t, end]: a token tree's
        widths = [self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim]
        for index, (attention_norm, qkv, output, mlp_norm, gate_up, down) in enumerate(self.layers):
            query, key, value = qkv(attention_norm(hidden)).split(widths, -1)
            query = query.view(1, new, self.heads, self.head_dim).transpose(1, 2)  # [1, heads, t, d]
            key = key.view(1, new, self.kv_heads, self.head_dim).transpose(1, 2)  # [1, kv_heads, t, d]
            query, key = apply_rotary_pos_emb(query, key, cos, sin)
            cache.keys[index, :, :, start:end] = key
            cache.values[index, :, :, start:end] = value.view(1, new, self.kv_heads, self.head_dim).transpose(1, 2)
            attended = torch.nn.functional.scaled_dot_product_attention(
                query, cache.keys[index, :, :, :end], cache.values[index, :, :, :end], attn_mask=mask, enable_gqa=True
            )  # [1, heads, t, d]
            hidden = hidden + output(attended.transpose(1, 2).reshape(1, new, -1))
            gate, up = gate_up(mlp_norm(hidden)).split([self.intermediate, self.intermediate], -1)
            hidden = hidden + down(torch.nn.functional.silu(gate) * up)
        cache.length = end
        return hidden, cache
