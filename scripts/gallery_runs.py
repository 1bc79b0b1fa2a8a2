"""The runs the gallery ships (assets/gallery), and the command that records them all in one process (the models
load once):

    python -m scripts.gallery_runs            # needs the Qwen2.5-Coder pair installed (README)
    python -m scripts.gallery_runs 3-coder-code-t1   # one of them again

Each is `python -m specviz generate <options> --baseline` run in this process (plain decoding timed in turn with the
rounds, so each entry's race and measured speedup come from its own timings), its trace kept with its provenance:
that command, the machine, the versions, the date and the models' sha256. The prompts are our own.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from specviz.app.request import EXAMPLES
from specviz.trace import Trace
from specviz.views import gallery

CODE = "Write a Python function that returns the n-th Fibonacci number, iteratively, with a short docstring."
PROSE = "In one paragraph, explain to a twelve-year-old why the sky is blue and sunsets are red."
CODER = ["--preset", "qwen2.5-coder"]

# name -> (title, about, generate options)
RUNS: dict[str, tuple[str, str, list[str]]] = {
    "0-default-run": (  # the page's first screen: the controls' own pair, prompt and settings (test_gallery checks)
        "SmolLM2-135M ← its 4-bit copy · the page's default run",
        "the run the page's controls ask for, recorded: Run decodes the same live on your machine, and the race "
        "below the rows replays both runs at their measured pace",
        ["--prompt", EXAMPLES[0], "--draft", "ngram+int4", "--draft-vocab", "8192", "--gamma", "4",
         "--max-new-tokens", "64", "--temperature", "0", "--system-prompt", ""]),
    "1-coder-code-t0": (
        "Qwen2.5-Coder pair · code · greedy",
        "code is where drafts run long: look for rows of twelve green tokens, and the red ones where the 0.5B draft "
        "guessed another name or comment",
        [*CODER, "--prompt", CODE, "--temperature", "0", "--max-new-tokens", "96"]),
    "2-coder-prose-t0": (
        "Qwen2.5-Coder pair · prose · greedy",
        "prose is harder to guess: shorter drafts (the draft stop ends them early) and more red",
        [*CODER, "--prompt", PROSE, "--temperature", "0", "--max-new-tokens", "96"]),
    "3-coder-code-t1": (
        "Qwen2.5-Coder pair · code · T = 1",
        "sampling: a draft token with q > p may be rejected even when it is the likeliest, and the blue correction "
        "comes from norm(max(0, p − q)); open p vs q at a red token",
        [*CODER, "--prompt", CODE, "--temperature", "1", "--seed", "1", "--max-new-tokens", "96"]),
    "4-coder-prose-t1": (
        "Qwen2.5-Coder pair · prose · T = 1",
        "sampled prose: α per position falls fastest here; compare its α plot with the greedy code run's",
        [*CODER, "--prompt", PROSE, "--temperature", "1", "--seed", "1", "--max-new-tokens", "96"]),
    "5-coder-long-anatomy": (
        "Qwen2.5-Coder pair · 256 tokens, with plain decoding",
        "a long run compared with plain decoding: the Round anatomy tab shows where each round's time went, and "
        "the speedup plot the measured speedup against the theory's",
        [*CODER, "--prompt", CODE + " Then write three unit tests for it.", "--temperature", "0",
         "--max-new-tokens", "256"]),
    "6-coder-tree-t0": (
        "Qwen2.5-Coder pair · token tree · greedy",
        "each round drafts a tree of continuations, all verified in one target forward; the rows show the path "
        "the target took through it",
        [*CODER, "--prompt", PROSE, "--temperature", "0", "--max-new-tokens", "96", "--tree"]),
    "7-coder-smollm2-draft-t0": (
        "Qwen2.5-Coder ← SmolLM2-135M (another tokenizer) · greedy",
        "the draft writes in its own vocabulary: each row shows the draft's own pieces above the target tokens "
        "they became, then the usual verdicts",
        ["--preset", "qwen2.5-coder-smollm2-draft", "--prompt", CODE, "--temperature", "0",
         "--max-new-tokens", "96"]),
}


def record(name: str, folder: Path = gallery.GALLERY_DIR) -> Path:
    """Run `python -m specviz generate` with the run's options in this process, and write its trace as an entry."""
    from specviz import cli

    title, about, options = RUNS[name]
    options = [*options, "--baseline"]  # every entry is compared with plain decoding, timed in turn: the race shows it
    with tempfile.TemporaryDirectory() as work:
        trace_file = Path(work) / "trace.json"
        if cli.main(["generate", *options, "--json", "--trace-out", str(trace_file)]) != 0:
            raise RuntimeError(f"the gallery run {name} failed (its error is above)")
        trace = Trace.from_json(trace_file.read_text(encoding="utf-8"))
    path = folder / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    command = ["python", "-m", "specviz", "generate", *options]  # what reproduces it, the trace aside
    gallery.write_entry(path, title, about, trace, command)
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB, {len(trace.rounds)} rounds)")
    return path


def main(argv: list[str] | None = None) -> int:
    names = (sys.argv[1:] if argv is None else argv) or list(RUNS)
    unknown = [name for name in names if name not in RUNS]
    if unknown:
        print(f"specviz: no gallery run named {', '.join(unknown)}; the runs are {', '.join(RUNS)}", file=sys.stderr)
        return 2
    for name in names:
        record(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
