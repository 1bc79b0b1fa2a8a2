"""Benchmark rows -> every method against llama.cpp's plain decoding of the same prompt, and the goals against it.

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
# it, it is the peer, and the goals are the shipped file's (SHIPPED_*)
SHIPPED_PEER = "llama_plain_shipped"
REPEATING = ("summarization", "rag", "extraction")  # the categories where the output copies the prompt
OVERALL_GOAL = 1.0  # specviz's fastest exact path, over all prompts
REPEATING_GOAL = 1.1  # ... on each category where text repeats
CATEGORY_FLOOR = 0.95  # ... on every category
PLAIN_GOAL = 0.9  # specviz's plain decoding on its llama.cpp backend


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


def goals(table: dict) -> list[dict]:
    """The goals against llama.cpp at each temperature: what was measured and whether it met the goal (the shipped
    file's where the table is against it: it has llama_plain, the same file's, as a method)."""
    if any(PEER in methods for methods in table.values()):
        return shipped_goals(table)
    found = []
    for temperature, methods in table.items():
        exact = {m: f for m, f in methods.items() if m.startswith("specviz")}  # speculative, and exact: specviz's
        if not exact:
            continue
        fastest = max(exact, key=lambda m: exact[m]["overall"])
        best = exact[fastest]
        t = f"T = {temperature:g}"
        found.append(_goal(t, f"fastest exact speculative path ({fastest}) overall", best["overall"], OVERALL_GOAL))
        for category in REPEATING:
            if category in best["categories"]:
                found.append(_goal(t, f"{fastest} on {category}", best["categories"][category], REPEATING_GOAL))
        found.append(_goal(t, f"{fastest}, lowest category ({best['lowest'][0]})", best["lowest"][1], CATEGORY_FLOOR))
        if "plain" in methods:
            found.append(_goal(t, "specviz's plain decoding overall", methods["plain"]["overall"], PLAIN_GOAL))
        for method, figures in methods.items():
            if method.startswith("llama_speculative["):
                ours = "specviz[" + method.split("[", 1)[1]
                if ours in methods:
                    found.append(_goal(t, f"{ours} over {method}", methods[ours]["overall"] / figures["overall"], 1.0,
                                       strictly=True))
    return found


# The goals against llama.cpp's plain decoding of the shipped Q4_K_M, where specviz verifies with a requantized copy
SHIPPED_OVERALL_GOAL = 1.25
SHIPPED_COPYING_GOAL = 1.5  # on each of SHIPPED_COPYING
SHIPPED_COPYING = ("summarization", "rag", "extraction", "coding")
SAME_FILE_GOAL = 1.15  # over llama.cpp's plain decoding of the very file specviz verifies with
LLAMA_SPECULATIVE = ("llama_speculative", "llama_ngram")  # llama.cpp's own speculative decoding, which specviz must beat


def shipped_goals(table: dict) -> list[dict]:
    """The shipped file's goals at each temperature, for the fastest exact speculative path."""
    found = []
    for temperature, methods in table.items():
        exact = {m: f for m, f in methods.items() if m.startswith("specviz")}
        if not exact:
            continue
        fastest = max(exact, key=lambda m: exact[m]["overall"])
        best = exact[fastest]
        t = f"T = {temperature:g}"
        found.append(_goal(t, f"fastest exact speculative path ({fastest}) overall", best["overall"],
                           SHIPPED_OVERALL_GOAL))
        for category in SHIPPED_COPYING:
            if category in best["categories"]:
                found.append(_goal(t, f"{fastest} on {category}", best["categories"][category], SHIPPED_COPYING_GOAL))
        found.append(_goal(t, f"{fastest}, lowest category ({best['lowest'][0]})", best["lowest"][1], CATEGORY_FLOOR))
        if PEER in methods:
            found.append(_goal(t, f"{fastest} over llama.cpp's plain decoding of the same file",
                               best["overall"] / methods[PEER]["overall"], SAME_FILE_GOAL))
        for method, figures in methods.items():
            if method.split("[")[0] in LLAMA_SPECULATIVE:
                found.append(_goal(t, f"{fastest} over {method}", best["overall"] / figures["overall"], 1.0,
                                   strictly=True))
    return found


def _goal(temperature: str, what: str, value: float, goal: float, strictly: bool = False) -> dict:
    met = value > goal if strictly else value >= goal
    return {"temperature": temperature, "what": what, "value": value, "goal": f"{'>' if strictly else '≥'} {goal:g}×",
            "met": met}


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
    against = "the shipped file" if peer == SHIPPED_PEER else "llama.cpp"
    lines += [f"### The goals against {against}", "", "| T | what | measured | goal | |", "|---|---|---|---|---|"]
    for goal in goals(table):
        lines.append(f"| {goal['temperature']} | {goal['what']} | {goal['value']:.2f}× | {goal['goal']} "
                     f"| {'met' if goal['met'] else 'missed'} |")
    return lines
