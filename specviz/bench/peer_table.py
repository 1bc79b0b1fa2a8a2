"""Benchmark rows -> every method against llama.cpp's plain decoding of the same prompt.

Each prompt gives each method one ratio: its tokens/s over `llama_plain`'s on that prompt, both over the whole
decoding, the prompt's reading included. A method's figure is the geometric mean of its ratios over the prompts
(per category: over that category's prompts), so every prompt weighs alike whatever its length. Only prompts where
llama_plain ran count.

Where two decoders' texts part (another rounding, at a tie) they may stop at EOS after different token counts, and
on a long prompt the one that writes more spreads the prompt's reading over more tokens, which alone can move that
prompt's ratio far from 1 (docs/results.md, "Against llama.cpp"). So each method also gets `same_length`: the
geometric mean over the prompts where it wrote as many tokens as llama.cpp's plain decoding did.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

PEER = "llama_plain"  # the fastest plain decoder on a CPU: llama.cpp's own, on the same GGUF
# llama.cpp's plain decoding of the shipped file a requantized target was made from (bench/run.py): where a run has
# it, it is the peer
SHIPPED_PEER = "llama_plain_shipped"


def peer_of(rows: list[dict]) -> str:
    """The plain decoder a run is measured against: the shipped file's where the run has it, else PEER."""
    return SHIPPED_PEER if any(r["method"] == SHIPPED_PEER for r in rows) else PEER


def ratios_to_peer(rows: list[dict], peer: str | None = None) -> dict:
    """{temperature: {method: {"overall", "categories": {category: geomean}, "prompts", "lowest"}}} over the
    prompts where the peer (peer_of) ran; methods other than the peer only."""
    peer = peer or peer_of(rows)
    table: dict = {}
    for temperature in sorted({r["temperature"] for r in rows}):
        by_prompt: dict = defaultdict(dict)
        for r in rows:
            if r["temperature"] == temperature and "error" not in r and r["tokens_per_s"]:
                by_prompt[(r["category"], r["id"])][r["method"]] = r
        per_method: dict = defaultdict(lambda: defaultdict(list))
        same_length: dict = defaultdict(list)
        for (category, _), runs in by_prompt.items():
            for method, run in runs.items():
                if peer in runs and method != peer:
                    ratio = run["tokens_per_s"] / runs[peer]["tokens_per_s"]
                    per_method[method][category].append(ratio)
                    if run["tokens"] == runs[peer]["tokens"]:
                        same_length[method].append(ratio)
        table[temperature] = {}
        for method, categories in per_method.items():
            every = [ratio for ratios in categories.values() for ratio in ratios]
            means = {category: statistics.geometric_mean(ratios) for category, ratios in sorted(categories.items())}
            lowest = min(means, key=means.get)
            equal = same_length[method]
            table[temperature][method] = {"overall": statistics.geometric_mean(every), "prompts": len(every),
                                          "categories": means, "lowest": [lowest, means[lowest]],
                                          "same_length": [statistics.geometric_mean(equal) if equal else None, len(equal)]}
    return table


def markdown(table: dict, peer: str = PEER) -> list[str]:
    """The section report.md opens with when the run has llama.cpp's plain decoding (`peer`: peer_of its rows)."""
    if not any(table.values()):  # no prompt where llama.cpp's plain decoding ran
        return []
    lines = ["", f"## Against llama.cpp's plain decoding ({peer})", "",
             "Geometric mean over prompts of each method's tokens/s over llama.cpp's plain decoding of the same prompt "
             "(as many tokens: over the prompts where both wrote as many tokens).",
             ""]
    for temperature, methods in table.items():
        categories = sorted({c for figures in methods.values() for c in figures["categories"]})
        lines += [f"### T = {temperature:g}", "", "| method | prompts | overall | as many tokens (prompts) | lowest "
                  "category | " + " | ".join(categories) + " |", "|---|---|---|---|---|" + "---|" * len(categories)]
        for method, f in sorted(methods.items(), key=lambda item: -item[1]["overall"]):
            cells = " | ".join(f"{f['categories'][c]:.2f}" if c in f["categories"] else "–" for c in categories)
            equal, count = f["same_length"]
            lines.append(f"| {method} | {f['prompts']} | **{f['overall']:.2f}×** | "
                         f"{'–' if equal is None else f'{equal:.2f}×'} ({count}) | {f['lowest'][1]:.2f}× "
                         f"({f['lowest'][0]}) | {cells} |")
        lines.append("")
    return lines
