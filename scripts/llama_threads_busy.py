"""llama.cpp on a busy 2-core machine: one thread against two, quiet and with a core kept busy (a class laptop).

llama.cpp's CPU threads meet at a barrier after every operation, so one thread slowed by another program holds up
the rest. This times `llama-bench` (the benchmark's own build: `python -m specviz.bench.llama_peer build`) on the
pair's requantized target (`offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0`, made on first use), plain tokens (tg) and a
4-token batch (pp4, a round's verification), at 1 and 2 threads, quiet and while a spinner process keeps one core busy,
in alternation, `--rounds` times:

    python -m scripts.llama_threads_busy --rounds 3
"""

from __future__ import annotations

import argparse
import csv
import io
import statistics
import subprocess
import sys
from contextlib import contextmanager

SPIN = "while True: pass"


@contextmanager
def busy_core(on: bool):
    spinner = subprocess.Popen([sys.executable, "-c", SPIN]) if on else None
    try:
        yield
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()


def bench(tool: str, model: str, threads: int, repeats: int) -> dict[str, float]:
    """tokens/s of a 32-token plain decode (tg32) and of a 4-token batch (pp4), llama-bench's own averages."""
    output = subprocess.run([tool, "-m", model, "-t", str(threads), "-p", "4", "-n", "32", "-r", str(repeats),
                             "-o", "csv"], capture_output=True, text=True, check=True, timeout=600).stdout
    rows = list(csv.DictReader(io.StringIO(output)))
    speeds = {}
    for row in rows:
        test = "tg32" if row["n_gen"] == "32" else "pp4"
        speeds[test] = float(row["avg_ts"])
    return speeds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="llama-bench's repeats per measurement")
    args = parser.parse_args(argv)
    from specviz.bench import llama_peer
    from specviz.models.llama_cpp import gguf_file

    if not llama_peer.built():
        print("build llama.cpp's tools first: python -m specviz.bench.llama_peer build", file=sys.stderr)
        return 2
    tool, model = str(llama_peer.tools_dir() / "llama-bench"), str(gguf_file("offline:Qwen2.5-Coder-1.5B-Instruct@Q4_0"))
    results: dict[tuple[bool, int], list[dict[str, float]]] = {}
    for round_ in range(args.rounds):
        for busy in (False, True):
            for threads in (1, 2):
                with busy_core(busy):
                    speeds = bench(tool, model, threads, args.repeats)
                results.setdefault((busy, threads), []).append(speeds)
                print(f"round {round_ + 1}: {'busy' if busy else 'quiet'}, {threads} thread(s): "
                      f"tg {speeds['tg32']:.1f} tokens/s, pp4 {speeds['pp4']:.1f} tokens/s", flush=True)
    print("\n| machine | threads | plain tokens/s (median, range) | 4-token batch tokens/s | v(4) = 4 × tg ÷ pp4 |")
    print("|---|---|---|---|---|")
    for (busy, threads), runs in sorted(results.items()):
        tg = [run["tg32"] for run in runs]
        pp = [run["pp4"] for run in runs]
        v4 = statistics.median(4 * a / b for a, b in zip(tg, pp))
        print(f"| {'one core busy' if busy else 'quiet'} | {threads} | {statistics.median(tg):.1f} ({min(tg):.1f}–"
              f"{max(tg):.1f}) | {statistics.median(pp):.1f} ({min(pp):.1f}–{max(pp):.1f}) | {v4:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
