"""What checking k drafted tokens costs on llama.cpp's CPU kernels, per quantization and repacking: v(k) and c.

    python -m specviz.bench.kernels --out docs/data/kernels       # about 15 minutes on two cores, quantizing included

Speculative decoding pays on a CPU only where a forward over the k tokens a round checks costs about one over one
token. Whether it does is a property of llama.cpp's kernels: which tensor types it repacks into an interleaved layout
and multiplies as a GEMM. This measures it for the Qwen2.5-Coder pair's 1.5B target as shipped (Q4_K_M: Q4_K with a
Q6_K output layer and half its `ffn_down`) and requantized from that file with the bindings' quantizer
(models/requantize.py: every tensor Q4_0, Q4_K, IQ4_NL, or Q8_0 for contrast), each loaded with repacking on and
off, and for the 0.5B draft as shipped and as Q4_0.

Each configuration is one llama.cpp model and context in this process (two threads, flash attention on auto, as the
backend runs). After a `--context`-token prompt, one timed forward feeds k tokens (k = 1..`--max-k`) with logits
kept for every position, as verification needs them, and is cropped back off. All configurations are timed in turn,
repeat by repeat, the k in a shuffled order, so that the machine's drift falls on all alike; each figure is the
median over `--repeats`, with the spread (half the interquartile range over the median) beside it. v(k) is a
configuration's k-token forward over its own one-token forward; "× shipped" is its one-token forward over the
shipped file's, unrepacked, timed in the same repeats. Repacking is tried only where a child process showed that it
works on this CPU (models/repacking.py).

The physical bound beside them: the bytes a one-token forward reads (every tensor but the token embedding, which is
gathered a row at a time) over the memory bandwidth measured here (a two-thread sum over 1 GiB). `--limits` prints
only the machine's two limits: that bandwidth, and the 8-bit multiply-adds a second of torch's int8 GEMM, which
bound what each further token of a batch must cost.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

SHIPPED = "Q4_K_M"


@dataclass
class Configuration:
    """One file loaded one way."""

    role: str  # "target" or "draft"
    quantization: str  # "Q4_K_M" (shipped), or a requantization's name
    repack: bool
    path: str
    file_bytes: int
    read_bytes: int  # what a one-token forward reads: every tensor but the token embedding
    ms: dict[int, list[float]] = field(default_factory=dict)  # k -> each repeat's time of a k-token forward

    @property
    def label(self) -> str:
        return f"{self.role} {self.quantization}, repacking {'on' if self.repack else 'off'}"

    def median(self, k: int) -> float:
        return statistics.median(self.ms[k])

    def spread(self, k: int) -> float:
        """Half the interquartile range over the median: how much one repeat's time moved."""
        times = sorted(self.ms[k])
        if len(times) < 4:
            return (times[-1] - times[0]) / 2 / statistics.median(times)
        quartiles = statistics.quantiles(times, n=4)
        return (quartiles[2] - quartiles[0]) / 2 / statistics.median(times)

    def v(self, k: int) -> float:
        return self.median(k) / self.median(1)


def weight_bytes(path: Path) -> tuple[int, int]:
    """(the file's bytes, the bytes a one-token forward reads: every tensor but token_embd)."""
    from gguf import GGUFReader

    tensors = GGUFReader(str(path)).tensors
    return path.stat().st_size, sum(int(t.n_bytes) for t in tensors if not t.name.startswith("token_embd"))


def bandwidth_gb_s(threads: int, gib: int = 1, repeats: int = 5) -> float:
    """Memory read bandwidth: the best of `repeats` sums over `gib` GiB of float32 with `threads` threads."""
    import torch

    torch.set_num_threads(threads)
    data = torch.ones(gib << 28)  # gib GiB of float32
    data.sum()  # touch every page once
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        data.sum()
        best = min(best, time.perf_counter() - started)
    return data.numel() * 4 / best / 1e9


def int8_gmacs(threads: int, repeats: int = 5) -> float:
    """What the cores multiply at best: 8-bit multiply-adds a second (in G) of torch's int8 GEMM (oneDNN, with
    AVX-512 VNNI where the CPU has it), the best of `repeats` over a 1024 × 4096 by 4096 × 4096 product."""
    import torch

    torch.set_num_threads(threads)
    left = torch.randint(-128, 127, (1024, 4096), dtype=torch.int8)
    right = torch.randint(-128, 127, (4096, 4096), dtype=torch.int8)
    torch._int_mm(left, right)  # warm up
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        torch._int_mm(left, right)
        best = min(best, time.perf_counter() - started)
    return 1024 * 4096 * 4096 / best / 1e9


def files(quantizations: list[str], draft_quantizations: list[str]) -> list[tuple[str, str, Path]]:
    """(role, quantization, path) of every file measured: the shipped pair and its requantized copies (made now if
    missing)."""
    from specviz.models.requantize import REQUANTIZATIONS, requantized_gguf
    from specviz.models.split_gguf import QWEN_CODER_DRAFT, QWEN_CODER_TARGET, assembled_gguf

    chosen = []
    for role, model, wanted in (("target", QWEN_CODER_TARGET, quantizations),
                                ("draft", QWEN_CODER_DRAFT, draft_quantizations)):
        source = assembled_gguf(model)
        for name in wanted:
            path = source if name == SHIPPED else requantized_gguf(source, REQUANTIZATIONS[name])
            chosen.append((role, name, path))
    return chosen


def measure(configurations: list[Configuration], max_k: int, repeats: int, context: int, seed: int = 0,
            log=print) -> None:
    """Time every configuration's k-token forwards in turn, `repeats` times (fills each Configuration.ms)."""
    import torch

    from specviz.models.llama_cpp import LlamaCppModel, load_gguf

    rng = random.Random(seed)
    prompt = torch.tensor([rng.randrange(1000, 30000) for _ in range(context)])
    tokens = torch.tensor([rng.randrange(1000, 30000) for _ in range(max_k)])
    models = []
    for configuration in configurations:
        loaded = load_gguf(configuration.path, Path(configuration.path), repack=configuration.repack)
        model = LlamaCppModel(loaded, loaded.logits_width, context_tokens=context + max_k + 8)
        model.feed(prompt)
        for k in (1, max_k, 1):  # page the weights in and warm the kernels
            model.feed(tokens[:k], logits_to_keep=k)
            model.crop(context)
        models.append(model)
        configuration.ms = {k: [] for k in range(1, max_k + 1)}
        log(f"loaded {configuration.label}")
    for repeat in range(repeats):
        order = list(range(len(models)))
        rng.shuffle(order)
        for index in order:
            model, configuration = models[index], configurations[index]
            sizes = list(range(1, max_k + 1))
            rng.shuffle(sizes)
            for k in sizes:
                started = time.perf_counter()
                model.feed(tokens[:k], logits_to_keep=k)  # logits for every position, as verification keeps them
                configuration.ms[k].append(1e3 * (time.perf_counter() - started))
                model.crop(context)
        log(f"repeat {repeat + 1} of {repeats} done")


def table(configurations: list[Configuration], bandwidth: float, ks=(2, 3, 4, 5, 8, 9)) -> str:
    """The results as a markdown table, targets then drafts."""
    shipped = {c.role: c for c in configurations if c.quantization == SHIPPED and not c.repack}
    ks = [k for k in ks if all(k in c.ms for c in configurations)]
    header = ("| model | file | repacking | MB read a token | ms a token (spread) | × shipped | "
              + " | ".join(f"v({k})" for k in ks) + " | bound: bytes ÷ bandwidth |")
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for c in configurations:
        one = c.median(1)
        base = shipped.get(c.role)
        relative = f"{one / base.median(1):.2f}" if base else ""
        bound = c.read_bytes / bandwidth / 1e6
        lines.append(f"| {c.role} | {c.quantization} | {'on' if c.repack else 'off'} | {c.read_bytes / 1e6:,.0f} | "
                     f"{one:.1f} (±{100 * c.spread(1):.0f}%) | {relative} | "
                     + " | ".join(f"{c.v(k):.2f}" for k in ks) + f" | {bound:.1f} ms |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specviz.bench.kernels", description=__doc__.split("\n")[0])
    parser.add_argument("--targets", default="Q4_K_M,Q4_K,Q4_0,IQ4_NL,Q8_0",
                        help="the target's files: Q4_K_M is the shipped one, the others requantized from it")
    parser.add_argument("--drafts", default="Q4_K_M,Q4_0", help="the draft's files, likewise")
    parser.add_argument("--max-k", type=int, default=9)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--context", type=int, default=256, help="tokens in the cache before each timed forward")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, help="a folder for results.json and table.md")
    parser.add_argument("--limits", action="store_true",
                        help="only the machine's limits: memory bandwidth and int8 multiply-adds a second")
    args = parser.parse_args(argv)
    if args.limits:
        print(f"memory bandwidth, two-thread sum over 1 GiB: {bandwidth_gb_s(args.threads):.1f} GB/s")
        print(f"int8 GEMM (torch, oneDNN), {args.threads} threads: {int8_gmacs(args.threads):.0f} G multiply-adds/s")
        return 0
    if args.max_k < 1 or args.repeats < 1 or args.context < 1:
        print("--max-k, --repeats and --context must each be at least 1", file=sys.stderr)
        return 2

    import torch

    from specviz.models.repacking import repacking_works
    from specviz.models.requantize import REQUANTIZATIONS

    for name in (args.targets + "," + args.drafts).split(","):
        if name != SHIPPED and name not in REQUANTIZATIONS:
            print(f"{name!r} is neither {SHIPPED} nor one of {', '.join(REQUANTIZATIONS)}", file=sys.stderr)
            return 2
    torch.set_num_threads(args.threads)  # the backend computes with torch's threads (models/llama_cpp.threads)
    configurations, notes = [], []
    for role, name, path in files(args.targets.split(","), args.drafts.split(",")):
        file_bytes, read_bytes = weight_bytes(path)
        works, why = repacking_works(path)
        if not works:
            notes.append(f"{path.name}: {why}")
        for repack in (False, True) if works else (False,):
            configurations.append(Configuration(role, name, repack, str(path), file_bytes, read_bytes))
    bandwidth = bandwidth_gb_s(args.threads)
    print(f"memory bandwidth, two-thread sum over 1 GiB: {bandwidth:.1f} GB/s", file=sys.stderr)
    measure(configurations, args.max_k, args.repeats, args.context, log=lambda line: print(line, file=sys.stderr))
    result = table(configurations, bandwidth)
    print(result)
    for note in notes:
        print(note)
    if args.out:
        from specviz.models.loading import cpu_name

        args.out.mkdir(parents=True, exist_ok=True)
        record = {"cpu": cpu_name(), "machine": platform.machine(), "threads": args.threads, "context": args.context,
                  "repeats": args.repeats, "bandwidth_gb_s": bandwidth, "notes": notes,
                  "configurations": [{**asdict(c), "v": {k: c.v(k) for k in c.ms}} for c in configurations]}
        (args.out / "results.json").write_text(json.dumps(record, indent=1))
        (args.out / "table.md").write_text(result + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
