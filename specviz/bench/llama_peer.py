"""llama.cpp's own decoders as the benchmark's peer, built from a pinned, hash-checked source into the cache.

    python -m specviz.bench.llama_peer build      # once; prints the tools' folder

The source is the sdist of the llama.cpp bindings that requirements-llama.txt pins: it vendors llama.cpp at the
commit the bindings were built from, so the peer and specviz's llama.cpp backend run the same kernels. Three tools:
- llama-completion: plain decoding (one target forward per token);
- llama-speculative-simple: llama.cpp's speculative decoding, with a draft model's GGUF (`-md`), or n-gram drafting
  from the context (`--spec-type ngram-simple`);
- llama-bench: v(k), a k-token forward's time over a one-token forward's.

Each run's figure is tokens per second over the tool's own timings of reading the prompt and decoding (model loading
left out, as specviz's timings leave it out). It is a benchmark tool, never an app dependency.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from specviz.models.offline import cache_root

SOURCE = "llama-cpp-python==0.3.36"  # the bindings' sdist, which vendors llama.cpp (requirements-llama.txt)
SOURCE_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
TOOLS = ("llama-completion", "llama-speculative-simple", "llama-bench")
BUILD_TIMEOUT_S = 3600


def tools_dir() -> Path:
    return cache_root() / f"llama.cpp-tools-{SOURCE.split('==')[1]}" / "bin"


def built() -> bool:
    return all((tools_dir() / tool).is_file() for tool in TOOLS)


def build(log=print) -> Path:
    """Download the pinned sdist through pip, check its sha256, and build the tools (once) into tools_dir()."""
    if built():
        return tools_dir()
    with tempfile.TemporaryDirectory(prefix="llama-tools-") as staging:
        staging = Path(staging)
        log(f"downloading {SOURCE}'s source through pip")
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d",
                        str(staging), SOURCE], check=True, capture_output=True, text=True)
        (archive,) = staging.glob("*.tar.gz")
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != SOURCE_SHA256:
            raise RuntimeError(f"{archive.name} has sha256 {digest}, not the pinned {SOURCE_SHA256}; not built")
        with tarfile.open(archive) as source:
            source.extractall(staging, filter="data")
        (tree,) = staging.glob("*/vendor/llama.cpp")
        build_dir = staging / "build"
        log(f"building {', '.join(TOOLS)} (about 10 minutes on two cores)")
        subprocess.run(["cmake", "-S", str(tree), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                        "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                        "-DLLAMA_BUILD_SERVER=OFF"], check=True, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        subprocess.run(["cmake", "--build", str(build_dir), "--config", "Release", "-j", str(os.cpu_count() or 2),
                        "--target", *TOOLS], check=True, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        destination = tools_dir()
        partial = destination.with_name(destination.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        for tool in TOOLS:
            shutil.copy2(build_dir / "bin" / tool, partial / tool)
        shutil.rmtree(destination, ignore_errors=True)
        os.replace(partial, destination)
    return destination


@dataclass
class PeerRun:
    """One run of a llama.cpp tool: what it generated and its own timings."""

    text: str
    tokens: int  # generated tokens
    prompt_ms: float  # reading the prompt
    decode_ms: float  # generating
    drafted: int | None = None  # speculative decoding's drafted and accepted tokens
    accepted: int | None = None

    @property
    def wall_ms(self) -> float:
        return self.prompt_ms + self.decode_ms

    @property
    def tokens_per_s(self) -> float:
        return 1e3 * self.tokens / self.wall_ms if self.wall_ms > 0 else 0.0


def _common(model: Path, prompt_file: Path, max_new_tokens: int, temperature: float, seed: int, threads: int) -> list[str]:
    return ["-m", str(model), "-f", str(prompt_file), "-n", str(max_new_tokens), "--temp", str(temperature),
            "--seed", str(seed), "-t", str(threads), "-tb", str(threads), "-c", "4096"]


def plain(model: Path, prompt: str, max_new_tokens: int, temperature: float = 0.0, seed: int = 0,
          threads: int = 2) -> PeerRun:
    """llama-completion: plain decoding of `prompt` (the chat-templated text, special tokens parsed)."""
    output = _run(["llama-completion", "-no-cnv", "--no-display-prompt", "--perf"], model, prompt, max_new_tokens,
                  temperature, seed, threads)
    prompt_ms, prompt_tokens = _perf(output.stderr, "prompt eval time")
    decode_ms, runs = _perf(output.stderr, "eval time")
    # The first token comes from the prompt's forward, each later one from a one-token run.
    return PeerRun(output.stdout, runs + 1, prompt_ms, decode_ms)


def speculative(model: Path, prompt: str, max_new_tokens: int, draft_max: int, draft: Path | None = None,
                ngram: int = 3, temperature: float = 0.0, seed: int = 0, threads: int = 2) -> PeerRun:
    """llama-speculative-simple: with a draft model's GGUF, else n-gram drafting over the context (`ngram` tokens
    matched, at most draft_max drafted, as specviz's prompt lookup)."""
    if draft is not None:
        drafter = ["--spec-type", "draft-simple", "-md", str(draft), "--spec-draft-n-max", str(draft_max),
                   "--spec-draft-n-min", "0"]
    else:
        drafter = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", str(ngram), "--spec-ngram-simple-size-m",
                   str(draft_max), "--spec-ngram-simple-min-hits", "1"]
    output = _run(["llama-speculative-simple", *drafter], model, prompt, max_new_tokens, temperature, seed, threads)
    log = output.stdout + output.stderr
    encoded = re.search(r"encoded\s+(\d+) tokens in\s+([\d.]+) seconds", log)
    decoded = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds", log)
    drafted, accepted = re.search(r"n_drafted\s*=\s*(\d+)", log), re.search(r"n_accept\s*=\s*(\d+)", log)
    if not (encoded and decoded):
        raise RuntimeError(f"llama-speculative-simple printed no timings: {log[-500:]}")
    text = output.stdout.lstrip("\n")  # the tool echoes the prompt's pieces before what it generates
    text = text[len(prompt):] if text.startswith(prompt) else text
    return PeerRun(text, int(decoded.group(1)), 1e3 * float(encoded.group(2)), 1e3 * float(decoded.group(2)),
                   int(drafted.group(1)) if drafted else None, int(accepted.group(1)) if accepted else None)


def verify_costs(model: Path, max_k: int = 16, threads: int = 2, context: int = 256) -> dict[int, float]:
    """v(k) from llama-bench: the time of a k-token batch after `context` cached tokens over a one-token one."""
    sizes = sorted({1, 2, 4, 8, max_k})
    output = subprocess.run([str(tools_dir() / "llama-bench"), "-m", str(model), "-t", str(threads), "-o", "csv",
                             "-n", "0", "-p", ",".join(map(str, sizes)), "-d", str(context), "-r", "3"],
                            check=True, capture_output=True, text=True)
    lines = [line for line in output.stdout.splitlines() if line.strip()]
    header = [name.strip('"') for name in lines[0].split(",")]
    times = {}
    for line in lines[1:]:
        row = dict(zip(header, (cell.strip('"') for cell in line.split(","))))
        times[int(row["n_prompt"])] = float(row["avg_ns"]) / 1e6
    return {k: times[k] / times[1] for k in sorted(times)}


def _run(command: list[str], model: Path, prompt: str, max_new_tokens: int, temperature: float, seed: int,
         threads: int) -> subprocess.CompletedProcess:
    if not built():
        raise RuntimeError("llama.cpp's tools are not built: python -m specviz.bench.llama_peer build")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as prompt_file:
        prompt_file.write(prompt + "\n")  # the tools drop one trailing newline from a prompt file (a chat prompt ends in one)
        prompt_file.flush()
        argv = [str(tools_dir() / command[0]), *command[1:],
                *_common(model, Path(prompt_file.name), max_new_tokens, temperature, seed, threads)]
        return subprocess.run(argv, check=True, capture_output=True, text=True, errors="replace", timeout=900)


def _perf(log: str, label: str) -> tuple[float, int]:
    """(ms, count) from llama.cpp's perf line 'LABEL = X ms / N tokens|runs'."""
    found = re.search(rf"_print:\s+{label} =\s+([\d.]+) ms /\s+(\d+)", log)
    if not found:
        raise RuntimeError(f"llama.cpp printed no '{label}': {log[-500:]}")
    return float(found.group(1)), int(found.group(2))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["build"]:
        print("usage: python -m specviz.bench.llama_peer build", file=sys.stderr)
        return 2
    print(build())
    return 0


if __name__ == "__main__":
    sys.exit(main())
