"""The llama.cpp backend: a GGUF run in its own quantization through the llama.cpp Python bindings.

llama.cpp is what CPU users run GGUFs with: a Q4_K_M model decodes far faster there than the same weights
dequantized to float32 for transformers (docs/results.md, "Against llama.cpp"). Here it runs the forwards only:
each batch asks llama.cpp for the logits of its last `logits_to_keep` positions, which become p and q as any
backend's do, and rolling back removes the sequence's cache entries past a position. Drafting, verification,
recording and replay are specviz's own.

    loaded = load_gguf("offline:SmolLM2-135M-Instruct")      # weights memory-mapped once (the WeightsCache keeps them)
    model = loaded.language_model(loaded.logits_width)        # a context of its own: its own KV cache
    model.feed(torch.tensor(prompt_ids))                      # logits [1, V] after the prompt

The bindings (`llama-cpp-python`, requirements-llama.txt) build llama.cpp from source, once (pip caches the wheel;
the build's time: docs/usage.md). Nothing here imports them until a model loads.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from specviz import job
from specviz.config import MAX_TREE_NODES
from specviz.models.llama_bindings import INSTALL_COMMAND, available, bindings  # noqa: F401  (re-exported)
from specviz.models.llama_sequences import COMMITTED, SequencePlan, TreeSequences
from specviz.models.offline import ModelUnavailable

BACKEND = "llama.cpp"
CONTEXT_TOKENS = 4096  # each context's KV cache: prompt plus generation (the app's longest runs fit)
BATCH_TOKENS = 512  # tokens one llama_decode reads at most; a longer prompt is read in pieces
TREE_PATHS = MAX_TREE_NODES  # the root-to-leaf paths a context holds, one llama.cpp sequence each: any tree fits


def threads() -> int:
    """The threads llama.cpp computes with: torch's, which models/threads.py sizes to the CPU quota."""
    return max(torch.get_num_threads(), 1)


@dataclass
class LoadedGGUF:
    """A GGUF's weights, loaded once by llama.cpp, with the transformers tokenizer read from the same file.

    Shaped like loading.LoadedModel where the pipeline and the drafters' builders read it: `tokenizer`, `model_id`,
    `device`, `dtype`, `logits_width`, `eos_ids` and `language_model()`. Each language model gets a context (a KV
    cache) of its own over the shared weights."""

    model_id: str
    path: Path
    weights: object  # llama_cpp._internals.LlamaModel
    tokenizer: object
    eos_ids: list[int] = field(default_factory=list)  # every end-of-generation id, as llama.cpp's own decoding stops
    device: torch.device = torch.device("cpu")
    dtype: torch.dtype = torch.float32  # of the logits; the weights keep the GGUF's own types
    backend: str = BACKEND
    linear_kernel: str = "llama.cpp"  # the matrix kernels (loading.LoadedModel names transformers' CPU choice here)
    repacked: bool = False  # whether llama.cpp repacked the weights for its batched kernels
    repack_note: str = ""  # why not, where this CPU's repacking failed in a test process (models/repacking.py)

    @property
    def logits_width(self) -> int:
        return int(self.weights.n_vocab())

    def language_model(self, vocab_size: int, keep_features: bool = False, trees: bool = False) -> LlamaCppModel:
        """A context of its own; `trees`: one that takes branching token trees (LlamaCppModel: without flash
        attention)."""
        if keep_features:
            raise ValueError("the llama.cpp backend returns logits only: a drafter that reads the target's hidden "
                             "states (the distilled head) needs the transformers backend")
        return LlamaCppModel(self, vocab_size, trees=trees)


def load_gguf(model_id: str, path: Path | None = None, repack: bool | None = None) -> LoadedGGUF:
    """Load a GGUF (an offline model's, else the file `model_id` names; `model_id@Q4_0` that file requantized, see
    models/requantize.py) with llama.cpp, memory-mapped, on the CPU.

    repack: let llama.cpp copy the weights into its interleaved layout (its "extra buffer types", on by default in
    its own tools), which runs a batch of rows as one GEMM for the types it repacks (Q4_0, Q4_K, IQ4_NL on x86) and
    made every one-token step faster on the AVX-512 machine of docs/results.md ("Verification that costs one
    forward"). None: wherever a child process showed that it works on this CPU (models/repacking.py: on some it
    crashes the process); the refusal's reason is kept in `repack_note`."""
    from specviz.models.repacking import repacking_works

    llama_cpp, internals = bindings()
    path = Path(path or gguf_file(model_id))
    note = ""
    if repack is None:
        repack, note = repacking_works(path)
    job.stage(f"Loading {model_id} with llama.cpp ({path.name}{', repacked' if repack else ''})")
    params = llama_cpp.llama_model_default_params()
    params.n_gpu_layers = 0  # the CPU: the regime this backend is here to show
    params.use_extra_bufts = repack
    try:
        weights = internals.LlamaModel(path_model=str(path), params=params, verbose=False)
    except ValueError as error:
        raise ModelUnavailable(f"llama.cpp could not load {path} ({error}).") from error
    tokenizer = gguf_tokenizer(model_id, path)
    eos = sorted({token for token in range(weights.n_vocab()) if llama_cpp.llama_vocab_is_eog(weights.vocab, token)})
    return LoadedGGUF(model_id, path, weights, tokenizer, eos, repacked=repack, repack_note=note)


def gguf_file(model_id: str) -> Path:
    """The GGUF behind an offline model id (the embedded SmolLM2, a split model assembled from its parts), or a
    .gguf file's path, requantized where the id ends in "@TYPE"; ModelUnavailable in one sentence otherwise."""
    from specviz.config import OFFLINE_MODEL
    from specviz.models.offline import gguf_path
    from specviz.models.requantize import requantized_gguf, split_variant
    from specviz.models.split_gguf import SPLIT_MODELS, assembled_gguf

    try:
        base, requantization = split_variant(model_id)
    except ValueError as error:
        raise ModelUnavailable(f"{str(error)[:1].upper()}{str(error)[1:]}.") from None
    if requantization is not None:  # made from the base's GGUF on first use, then kept
        return requantized_gguf(gguf_file(base), requantization)
    if model_id == OFFLINE_MODEL:
        return gguf_path()
    if model_id in SPLIT_MODELS:
        return assembled_gguf(SPLIT_MODELS[model_id])
    path = Path(os.path.expanduser(model_id))
    if path.suffix == ".gguf" and path.is_file():
        return path
    raise ModelUnavailable(f"The llama.cpp backend runs GGUF files: an offline model or a path to a .gguf file, not "
                           f"{model_id!r}.")


def gguf_tokenizer(model_id: str, path: Path):
    """The transformers tokenizer stored in the GGUF (ids, chat template, EOS), read from the file once and then
    from a folder in the cache.

    Read with transformers' own GGUF tokenizer reader and converter, which parse only the tokenizer's fields.
    AutoTokenizer's GGUF path would first parse every field of the file into a model config as well, element by
    element: many times slower (docs/results.md, "Against llama.cpp", "Memory and start")."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    from transformers.integrations.gguf.gguf_tokenizer_mapping import convert_gguf_tokenizer, get_gguf_tokenizer

    from specviz.models.offline import cache_root

    stat = path.stat()
    folder = cache_root() / "tokenizers" / f"{path.stem}-{stat.st_size}"
    if (folder / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(folder)
    job.stage(f"Reading {model_id}'s tokenizer from its GGUF, once")
    architecture, fields, settings = get_gguf_tokenizer(str(path))
    backend, extra = convert_gguf_tokenizer(architecture, fields)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, **settings, **extra)
    staging = folder.with_name(folder.name + f".partial-{os.getpid()}")
    tokenizer.save_pretrained(staging)
    if folder.exists():  # another process saved it meanwhile
        shutil.rmtree(staging, ignore_errors=True)
    else:
        os.replace(staging, folder)
    return tokenizer


class LlamaCppModel:
    """The LanguageModel Protocol (models/protocol.py) over one llama.cpp context: sequence 0 of its KV cache.

    feed() puts k tokens in one llama_decode at positions cached_length.., asking for logits at the last
    logits_to_keep of them; crop() removes the sequence's entries from a position on. feed_tree() puts a token
    tree's entries in one llama_decode as well, one sequence per path (models/llama_sequences.py); keep_path()
    leaves sequence 0 holding the committed text and the kept path, and nothing else.
    """

    def __init__(self, loaded: LoadedGGUF, vocab_size: int, context_tokens: int = CONTEXT_TOKENS, trees: bool = False):
        llama_cpp, internals = bindings()
        self._llama_cpp = llama_cpp
        self.loaded = loaded
        self.name = loaded.model_id
        self.vocab_size = vocab_size
        self.device = torch.device("cpu")
        self.max_length = min(context_tokens, int(loaded.weights.n_ctx_train()) or context_tokens)
        params = llama_cpp.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_ubatch = self.max_length, BATCH_TOKENS, BATCH_TOKENS
        params.n_threads = params.n_threads_batch = threads()
        sequences = TREE_PATHS if trees else 1  # a chain context keeps llama.cpp's one-sequence set-up
        params.n_seq_max, params.kv_unified = sequences, True  # one cache the sequences of a tree share
        params.swa_full = True  # a sliding-window layer keeps every entry, so a rollback never needs a re-read
        # Flash attention on auto, as llama.cpp's own tools run (the bindings' Llama class turns it off): the logits
        # then equal llama-completion's, which the benchmark compares with. A context for token trees runs without it:
        # once a tree's other paths leave the cache, the next token may take a freed cell below a kept one, and the
        # CPU flash-attention kernel then gives wrong logits (measured on the pinned build: up to 1.05 off, where the
        # plain attention path agrees exactly; tests/test_model_protocol.py).
        self.trees = trees
        params.flash_attn_type = (llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED if trees
                                  else llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO)
        self.context = internals.LlamaContext(model=loaded.weights, params=params, verbose=False)
        self.batch = internals.LlamaBatch(n_tokens=BATCH_TOKENS, embd=0, n_seq_max=sequences, verbose=False)
        self.width = loaded.logits_width  # of each logits row llama.cpp writes
        self._cached_length = 0
        self.tree = TreeSequences(sequences)  # the entries fed by feed_tree, until keep_path
        self.tokens_fed = self.forward_calls = 0
        self.forward_seconds = 0.0

    @property
    def cached_length(self) -> int:
        return self._cached_length

    @property
    def tree_parents(self) -> list[int]:
        return self.tree.parents

    def reset(self) -> None:
        self.context.kv_cache_clear()
        self._cached_length = 0
        self.tree.reset()

    def feed(self, token_ids: torch.Tensor, logits_to_keep: int = 1, sync: bool = True) -> torch.Tensor:
        """Append token_ids [k]; logits [logits_to_keep, vocab_size] (float32, CPU) of the last positions."""
        if self.tree.parents:
            raise ValueError(f"{self.name}: keep a path of the token tree (keep_path) before feeding a sequence")
        return self._feed(token_ids.view(-1).tolist(), logits_to_keep)

    def feed_tree(self, token_ids: torch.Tensor, parents: list[int], logits_to_keep: int | None = None,
                  sync: bool = True) -> torch.Tensor:
        """Token-tree entries token_ids [m], entry j a child of parents[j], in one llama_decode; logits
        [logits_to_keep (default m), vocab_size] of the last entries. Each entry sits at its depth's position in the
        sequences of the paths through it, so it attends to the committed text and its own ancestors only."""
        ids, parents = token_ids.view(-1).tolist(), [int(parent) for parent in parents]
        keep = logits_to_keep or len(ids)
        if len(parents) != len(ids) or not ids or not 1 <= keep <= len(ids):
            raise ValueError(f"{self.name}: feed a tree of {len(ids)} entries with {len(parents)} parents, keeping "
                             f"the logits of {keep}")
        self._check_room(len(ids))
        base = self._cached_length - len(self.tree.parents)  # the committed text's length
        try:
            plan = self.tree.add(parents, base, branches=self.trees)
        except ValueError as error:
            raise ValueError(f"{self.name}: {error}") from None
        for source, sequence, end in plan.copies:  # a new path first shares its ancestors' cache entries
            self.context.kv_cache_seq_cp(source, sequence, -1, end)
        return self._feed(ids, keep, plan)

    def keep_path(self, path: list[int]) -> None:
        """Keep the entries of `path` (root to leaf) as committed text: their sequence, cut after the path's end,
        becomes sequence 0 and every other entry of the tree leaves the cache."""
        sequence = self.tree.kept(path)
        base = self._cached_length - len(self.tree.parents)
        self.context.kv_cache_seq_rm(sequence, base + len(path), -1)
        self.context.kv_cache_seq_keep(sequence)  # entries of other paths go; the kept ones lose other ids
        if sequence != COMMITTED:
            self.context.kv_cache_seq_cp(sequence, COMMITTED, -1, -1)
            self.context.kv_cache_seq_rm(sequence, -1, -1)
        self.tree.reset()
        self._cached_length = base + len(path)

    def crop(self, length: int) -> None:
        """Remove the cache's entries from position `length` on."""
        if self.tree.parents:
            if length > self._cached_length - len(self.tree.parents):
                raise ValueError(f"{self.name}: crop into a token tree; keep a path of it first (keep_path)")
            self.keep_path([])
        if length < self._cached_length:
            if not self.context.kv_cache_seq_rm(COMMITTED, length, -1):
                raise RuntimeError(f"{self.name}: llama.cpp could not remove cache entries after position {length}")
            self._cached_length = length

    def _check_room(self, count: int) -> None:
        if self._cached_length + count > self.max_length:
            raise ValueError(f"{self.name}: {self._cached_length + count} tokens overflow the context of "
                             f"{self.max_length}")

    def _feed(self, ids: list[int], logits_to_keep: int, plan: SequencePlan | None = None) -> torch.Tensor:
        job.check()  # a stopped run ends here, before the next forward
        if not ids or not 1 <= logits_to_keep <= len(ids):
            raise ValueError(f"{self.name}: feed {len(ids)} tokens keeping the logits of {logits_to_keep}")
        self._check_room(len(ids))
        started = time.perf_counter()
        rows = []
        for start in range(0, len(ids), BATCH_TOKENS):  # a long prompt in pieces; a round's tokens in one batch
            piece = ids[start:start + BATCH_TOKENS]
            keep = max(0, logits_to_keep - (len(ids) - start - len(piece)))  # of this piece's last positions
            part = plan and plan.piece(start, start + len(piece))  # a long tree (a prompt read with it) in pieces too
            rows.append(self._decode(piece, min(keep, len(piece)), part))
        logits = torch.cat([row for row in rows if row.numel()])[-logits_to_keep:]  # [logits_to_keep, V]
        self.forward_seconds += time.perf_counter() - started
        self.tokens_fed += len(ids)
        self.forward_calls += 1
        return logits[:, : self.vocab_size]

    def _decode(self, ids: list[int], keep: int, plan: SequencePlan | None) -> torch.Tensor:
        """One llama_decode of ids, at the next positions in sequence 0 or where a tree's plan puts them; logits
        [keep, width] of the last `keep` (copied out)."""
        batch = self.batch.batch
        batch.n_tokens = len(ids)
        for index, token in enumerate(ids):
            batch.token[index] = token
            batch.pos[index] = plan.positions[index] if plan else self._cached_length + index
            members = plan.members[index] if plan else (COMMITTED,)
            batch.n_seq_id[index] = len(members)
            for slot, sequence in enumerate(members):
                batch.seq_id[index][slot] = sequence
            batch.logits[index] = index >= len(ids) - keep
        self.context.decode(self.batch)
        self._cached_length += len(ids)
        if keep == 0:
            return torch.empty(0, self.width)
        pointer = self._llama_cpp.llama_get_logits(self.context.ctx)  # the kept rows, in batch order: [keep, width]
        rows = np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(keep, self.width))
        return torch.from_numpy(rows.copy())
