"""Repacking on or off (argv[1]): Qwen2.5-Coder-1.5B's Q4_K_M GGUF on specviz's llama.cpp backend reads a
1000-token prompt, then times forwards over k tokens after it (each cropped back off; the median of the last 4 of
5), and prints the peak RSS. Run by COMMAND.sh, once per setting, each in its own process."""

import resource
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from specviz.models import llama_cpp  # noqa: E402 (the project root is put on the path first)

PROMPT_TOKENS, SIZES = 1000, (1, 2, 3, 4, 5, 8, 12, 16)


def main(repack: bool) -> None:
    bindings, internals = llama_cpp._bindings()
    path = llama_cpp.gguf_file("offline:Qwen2.5-Coder-1.5B-Instruct")
    params = bindings.llama_model_default_params()
    params.n_gpu_layers, params.use_extra_bufts = 0, repack
    weights = internals.LlamaModel(path_model=str(path), params=params, verbose=False)
    model = llama_cpp.LlamaCppModel(llama_cpp.LoadedGGUF("target", path, weights, None, []), int(weights.n_vocab()))
    ids = torch.tensor([(index * 7919) % 30000 + 100 for index in range(PROMPT_TOKENS + max(SIZES))])  # [1016]
    for _ in range(2):  # the second read is timed: the first pages the weights in
        model.reset()
        started = time.perf_counter()
        model.feed(ids[:PROMPT_TOKENS])
        prompt_s = time.perf_counter() - started
    print("repack", repack, f"prompt {PROMPT_TOKENS} tokens s", round(prompt_s, 2))
    ms = {}
    for k in SIZES:
        samples = []
        for _ in range(5):
            started = time.perf_counter()
            model.feed(ids[PROMPT_TOKENS: PROMPT_TOKENS + k], logits_to_keep=k)
            samples.append((time.perf_counter() - started) * 1e3)
            model.crop(PROMPT_TOKENS)
        ms[k] = statistics.median(samples[1:])
    print("ms", {k: round(value, 1) for k, value in ms.items()})
    print("v", {k: round(value / ms[1], 2) for k, value in ms.items()})
    print("maxrss MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)


if __name__ == "__main__":
    main(sys.argv[1] == "on")
