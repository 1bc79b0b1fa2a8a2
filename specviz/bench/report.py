"""Benchmark rows -> results.json (per method and category), report.md (tables) and report.html (plotly).

The theory a speculative method is held to is the verify-cost-aware one, applied to what the rounds drafted:

    predicted speedup = Σ_rounds E_r / (Σ_rounds v(n_r + 1) + drafting time / target step)
    E_r = 1 + Σ_{j=1..d_r} Π_{i≤j} a_i            (theory.expected_path)

Round r drafted n_r tokens in d_r levels (a chain: n_r = d_r = k_r, fewer than γ where the draft stop, prompt
lookup or adaptive γ cut it; a tree: its nodes and depth), and a_i is the group's acceptance at position (depth)
i among the rounds that tested it. v(k) and the drafting time are measured; prompt lookup spends its (tiny)
proposal time in every round. `speedup_theory_iid` is the textbook form with one α for every position,
Σ E(α, d_r) / (...): a draft stop makes late positions likelier to pass than α says, and acceptance comes in
streaks, so that form under-predicts (Jensen: the mean of α_r^j exceeds α^j). Rows written before the
per-position counts existed get the textbook form. The physical limit of a method is one single-token target
forward per round: tokens/s = tokens per round / target step.
"""

from __future__ import annotations

import html as html_lib
import statistics
from collections import defaultdict

from specviz.bench import peer_table
from specviz.core import theory

ALL = "ALL"


def build_results(args: dict, environment: dict, verify_costs: dict[int, float], rows: list[dict]) -> dict:
    """Aggregate rows into per (temperature, category, method) summaries and the headline figures."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    failed, rows = [row for row in rows if "error" in row], [row for row in rows if "error" not in row]
    for row in rows:
        groups[(row["temperature"], row["category"], row["method"])].append(row)
        groups[(row["temperature"], ALL, row["method"])].append(row)
    summaries = [_summarize(t, category, method, group, verify_costs) for (t, category, method), group in groups.items()]
    peer = peer_table.ratios_to_peer(rows)
    return {"args": args, "environment": environment, "verify_costs": {str(k): v for k, v in verify_costs.items()},
            "summaries": summaries, "figures": headline_figures(rows, summaries), "rows": rows + failed,
            "against_llama_plain": {f"T={t:g}": methods for t, methods in peer.items()},
            "failed": [{key: row[key] for key in ("temperature", "id", "method", "error")} for row in failed]}


def _summarize(temperature, category, method, group, verify_costs) -> dict:
    summary = {"temperature": temperature, "category": category, "method": method, "prompts": len(group),
               "tokens_per_s": statistics.median(r["tokens_per_s"] for r in group),
               "speedup": _median([r["speedup"] for r in group]),
               "speedup_interval": interval([r["speedup"] for r in group], statistics.median),
               "peak_rss_mb": max(r["rss_mb"] for r in group)}
    flags = [r["identical"] for r in group if r["identical"] is not None]
    summary["identical"] = f"{sum(flags)}/{len(flags)}" if flags else None
    speculative = [r for r in group if "alpha" in r]
    if speculative:
        tested = sum(r["tested"] for r in speculative)
        alpha = sum(r["accepted"] for r in speculative) / tested if tested else 0.0
        c = statistics.mean(r["c"] for r in speculative)
        lengths = [k for r in speculative for k in r["draft_lengths"]]  # nodes per round (a chain: k_r)
        depths = [d for r in speculative for d in r.get("draft_depths", r["draft_lengths"])]
        tokens = sum(r["tokens"] for r in speculative)
        rounds = sum(r["rounds"] for r in speculative)
        step_ms = _median([r["target_step_ms"] for r in speculative])
        draft_steps = sum(r["draft_ms"] for r in speculative) / step_ms if step_ms else rounds * c * statistics.mean(lengths)
        iid = predicted_speedup(alpha, lengths, verify_costs, draft_steps)
        rates = acceptance_by_depth(speculative)
        predicted = (theory.speedup_of_drafted_rounds([a or 0.0 for a in rates], depths, lengths, verify_costs, draft_steps)
                     if rates is not None and depths else iid)
        summary.update(alpha=alpha, c=c, tokens_per_round=tokens / rounds, mean_draft_length=statistics.mean(lengths),
                       mean_depth=statistics.mean(depths) if depths else 0.0, acceptance_by_depth=rates,
                       speedup_theory=predicted, speedup_theory_iid=iid,
                       measured_over_theory=summary["speedup"] / predicted if summary["speedup"] and predicted else None)
        if step_ms:
            wall = sum(r["wall_ms"] for r in speculative)
            summary["limit_tokens_per_s"] = 1e3 * (tokens / rounds) / step_ms
            summary["ms_per_token"] = {  # where each generated token's time goes, against the limit
                "limit": step_ms * rounds / tokens,
                "verify_beyond_one_step": (sum(r["verify_ms"] for r in speculative) - rounds * step_ms) / tokens,
                "drafting": sum(r["draft_ms"] for r in speculative) / tokens,
                # a round's time is its drafting and its verification (acceptance tests included): what of it ran
                # outside model forwards (sampling, tests, cache bookkeeping) is already in the two columns before
                "outside_forwards": (wall - sum(r["forward_ms"] for r in speculative)) / tokens,
                "measured": wall / tokens}
    return summary


def acceptance_by_depth(rows: list[dict]) -> list[float | None] | None:
    """The rows' acceptance at each position (a tree's depth): accepted there ÷ rounds that tested it, pooled over
    the rows (tree_metrics.TreeMetrics' counts); None when a row predates those counts."""
    if not all("tested_per_depth" in r for r in rows):
        return None
    size = max((len(r["tested_per_depth"]) for r in rows), default=0)
    tested, accepted = [0] * size, [0] * size
    for r in rows:
        for depth, (t, a) in enumerate(zip(r["tested_per_depth"], r["accepted_per_depth"])):
            tested[depth] += t
            accepted[depth] += a
    return [a / t if t else None for t, a in zip(tested, accepted)]


def predicted_speedup(alpha: float, draft_lengths: list[int], verify_costs: dict[int, float],
                      draft_steps: float = 0.0) -> float | None:
    """Σ E(α, k_r) / (Σ v(k_r + 1) + draft_steps) over rounds (theory.speedup_over_rounds), draft_steps being the
    drafting time in target steps (Σ k_r c for a draft model); v beyond the measured range is theory's extension."""
    if not draft_lengths:
        return None
    alpha = min(max(alpha, 0.0), 1.0)
    return theory.speedup_over_rounds(alpha, draft_lengths, verify_cost=verify_costs, draft_steps=draft_steps)


def headline_figures(rows: list[dict], summaries: list[dict]) -> dict:
    """The headline figures, per temperature: each a median of per-prompt ratios unless said otherwise."""
    figures = {}
    for temperature in sorted({r["temperature"] for r in rows}):
        at_t = [r for r in rows if r["temperature"] == temperature]
        by_prompt: dict[tuple, dict[str, dict]] = defaultdict(dict)
        for r in at_t:
            by_prompt[(r["category"], r["id"])][r["method"]] = r
        methods = list(dict.fromkeys(r["method"] for r in at_t))
        entry = {"plain_over_hf_generate": _median_ratio(by_prompt, "plain", "hf_generate")}
        for method in methods:
            if method.startswith("specviz") and " γ=" not in method:  # the same γ as transformers' methods
                drafter = method[method.index("[") : method.index("]") + 1]
                equivalent = "hf_prompt_lookup" if drafter == "[ngram]" else f"hf_assisted{drafter}"
                if equivalent in methods:
                    entry[f"{method}_over_{equivalent}"] = _median_ratio(by_prompt, method, equivalent)
        per_category = [s for s in summaries if s["temperature"] == temperature and s["category"] != ALL]
        for method in methods:
            speedups = [s["speedup"] for s in per_category if s["method"] == method and s["speedup"]]
            if method != "plain" and speedups:
                entry[f"{method}_speedup_geomean_over_categories"] = statistics.geometric_mean(speedups)
                entry[f"{method}_speedup_geomean_interval"] = interval(speedups, statistics.geometric_mean)
                entry[f"{method}_worst_category_speedup"] = min(speedups)
            theory_ratios = [s["measured_over_theory"] for s in per_category
                             if s["method"] == method and s.get("measured_over_theory")]
            if theory_ratios:
                entry[f"{method}_measured_over_theory_median"] = statistics.median(theory_ratios)
        for adaptive in (m for m in methods if m.startswith("specviz_adaptive")):
            fixed = [m for m in methods if m.startswith("specviz[" + adaptive.split("[", 1)[1].split("]")[0] + "]")]
            scores = {m: entry.get(f"{m}_speedup_geomean_over_categories") for m in [adaptive, *fixed]}
            if fixed and all(scores.values()):
                best = max(fixed, key=scores.get)
                entry[f"{adaptive}_best_fixed"] = best
                entry[f"{adaptive}_over_best_fixed"] = scores[adaptive] / scores[best]
        flags = [r["identical"] for r in at_t if r["identical"] is not None and r["method"] != "plain"]
        if flags:
            entry["greedy_identical"] = f"{sum(flags)}/{len(flags)}"
        figures[f"T={temperature:g}"] = entry
    figures["peak_rss_mb"] = max(r["rss_mb"] for r in rows)
    return figures


def _median_ratio(by_prompt: dict, numerator: str, denominator: str) -> float | None:
    """The median over prompts of numerator's tokens/s over denominator's, where both ran."""
    return _median([p[numerator]["tokens_per_s"] / p[denominator]["tokens_per_s"] for p in by_prompt.values()
                    if numerator in p and denominator in p and p[denominator]["tokens_per_s"]])


INTERVAL_LEVEL = 0.95  # the benchmark's intervals: the middle 95% of resamples over its prompts (or categories)


def interval(values: list, statistic, resamples: int = 2000) -> list[float] | None:
    """[low, high] of `statistic` (a median, a geometric mean) over `values` resampled with replacement: how much the
    figure rests on which prompts were drawn; None with fewer than three values. Seeded: the same rows give the same
    interval.

    >>> interval([1.0, 1.0, 1.0, 1.0], statistics.median)
    [1.0, 1.0]
    """
    import numpy as np

    values = np.asarray([value for value in values if value is not None], dtype=float)
    if values.size < 3:
        return None
    draws = values[np.random.default_rng(0).integers(0, values.size, (resamples, values.size))]
    figures = [statistic(row) for row in draws.tolist()]
    tail = (1 - INTERVAL_LEVEL) / 2
    return [float(value) for value in np.quantile(figures, [tail, 1 - tail])]


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _range(value, before: str = "") -> str:
    """An interval as "(1.10–1.40)"; anything else as it is; "" for None."""
    if value is None:
        return ""
    if isinstance(value, list) and len(value) == 2:
        return f"{before}({value[0]:.2f}–{value[1]:.2f})"
    return str(value)


def _fmt(value, spec: str = ".2f", suffix: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{suffix}"


def markdown(results: dict) -> str:
    env, args = results["environment"], results["args"]
    lines = ["# specviz benchmark", "",
             f"target `{args['target']}` on {env['device']} ({env['dtype']}, linear kernel {env['linear_kernel']}, "
             f"{env['torch_threads']} torch threads), γ = {args['gamma']}, {args['max_new_tokens']} new tokens, "
             f"{args['repeats']} timed repeats per prompt (median), prompts from `{args['questions']}`.", "",
             "v(k), the target forward over k tokens relative to one: "
             + ", ".join(f"v({k}) = {v:.2f}" for k, v in results["verify_costs"].items()), "", "## Figures", ""]
    for key, entry in results["figures"].items():
        if isinstance(entry, dict):
            shown = (f"{name} {_fmt(value, '.3f') if isinstance(value, float) else _range(value)}"
                     for name, value in entry.items())
            lines.append(f"- **{key}**: " + "; ".join(shown))
        else:
            lines.append(f"- **{key}**: {entry}")
    ran = [r for r in results["rows"] if "error" not in r]
    lines += peer_table.markdown(peer_table.ratios_to_peer(ran), peer_table.peer_of(ran))
    for failure in results.get("failed", []):  # a peer that failed on a prompt: out of every figure, said here
        lines.append(f"- **failed** at T = {failure['temperature']:g} on prompt #{failure['id']}: {failure['method']}, "
                     f"{failure['error']}")
    header = ("| category | method | prompts | tok/s | speedup | α | tok/round | nodes/round | depth | c | theory "
              "| measured/theory | identical | of limit |")
    for temperature in sorted({s["temperature"] for s in results["summaries"]}):
        lines += ["", f"## T = {temperature:g}", "", header, "|" + "---|" * 14]
        for s in sorted((s for s in results["summaries"] if s["temperature"] == temperature),
                        key=lambda s: (s["category"] == ALL, s["category"])):
            of_limit = s["tokens_per_s"] / s["limit_tokens_per_s"] if s.get("limit_tokens_per_s") else None
            lines.append(
                f"| {s['category']} | {s['method']} | {s['prompts']} | {s['tokens_per_s']:.1f} "
                f"| {_fmt(s['speedup'], '.2f', 'x')}{_range(s.get('speedup_interval'), ' ')} | {_fmt(s.get('alpha'), '.2f')} "
                f"| {_fmt(s.get('tokens_per_round'), '.2f')} "
                f"| {_fmt(s.get('mean_draft_length'), '.2f')} | {_fmt(s.get('mean_depth'), '.2f')} | {_fmt(s.get('c'), '.4f')} "
                f"| {_fmt(s.get('speedup_theory'), '.2f', 'x')} | {_fmt(s.get('measured_over_theory'), '.2f')} "
                f"| {s['identical'] or '–'} | {_fmt(of_limit, '.0%')} |")
    lines += _depth_table(results["summaries"])
    gaps = [s for s in results["summaries"] if s["category"] == ALL and "ms_per_token" in s]
    if gaps:
        lines += ["", "## Where a token's time goes (ms per token, all prompts)", "",
                  "| T | method | physical limit | verify beyond one step | drafting | of these, outside forwards | measured |",
                  "|---|---|---|---|---|---|---|"]
        for s in gaps:
            g = s["ms_per_token"]
            lines.append(f"| {s['temperature']:g} | {s['method']} | {g['limit']:.1f} | {g['verify_beyond_one_step']:.1f} "
                         f"| {g['drafting']:.2f} | {g.get('outside_forwards', 0.0):.2f} | {g['measured']:.1f} |")
    return "\n".join(lines) + "\n"


def _depth_table(summaries: list[dict], shown: int = 8) -> list[str]:
    """α by depth (position) per method over all prompts: what the theory's E_r is built from."""
    rows = [s for s in summaries if s["category"] == ALL and s.get("acceptance_by_depth")]
    if not rows:
        return []
    lines = ["", "## Acceptance by depth (a chain's by position), all prompts", "",
             "| T | method | " + " | ".join(f"d{d}" for d in range(1, shown + 1)) + " | theory (i.i.d. α) |",
             "|---|---|" + "---|" * (shown + 1)]
    for s in rows:
        rates = (s["acceptance_by_depth"] + [None] * shown)[:shown]
        lines.append(f"| {s['temperature']:g} | {s['method']} | " + " | ".join(_fmt(a, '.2f') for a in rates)
                     + f" | {_fmt(s.get('speedup_theory_iid'), '.2f', 'x')} |")
    return lines


def html(results: dict) -> str:
    """A standalone page: the markdown figures, then per temperature the speedup and measured-vs-theory charts."""
    import plotly.graph_objects as go

    from specviz.views.figures import LAYOUT, base_figure

    parts, include = [], True
    for temperature in sorted({s["temperature"] for s in results["summaries"]}):
        at_t = [s for s in results["summaries"] if s["temperature"] == temperature]
        categories = sorted({s["category"] for s in at_t}, key=lambda c: (c == ALL, c))  # all prompts last
        labels = ["all prompts (median)" if c == ALL else c for c in categories]
        speedup_of = {(s["category"], s["method"]): s["speedup"] for s in at_t}
        bars = [go.Bar(name=method, x=labels, y=[speedup_of.get((c, method)) for c in categories])
                for method in dict.fromkeys(s["method"] for s in at_t) if method != "plain"]  # plain is the 1.0 line
        speedups = base_figure(*bars)
        below = dict(orientation="h", yanchor="top", y=-0.12, xanchor="left", x=0.0)
        speedups.update_layout(**{**LAYOUT, "height": 480, "legend": below}, barmode="group",
                               yaxis_title="× plain tokens/s", title=f"Speedup over plain decoding, T = {temperature:g}")
        speedups.add_hline(y=1.0, line_dash="dot")
        theory_points = [s for s in at_t if s.get("speedup_theory") and s["category"] != ALL]
        by_method = {method: [s for s in theory_points if s["method"] == method] for method in dict.fromkeys(
            s["method"] for s in theory_points)}
        scatter = base_figure(*[go.Scatter(name=method, mode="markers", text=[s["category"] for s in points],
                                           x=[s["speedup_theory"] for s in points], y=[s["speedup"] for s in points])
                                for method, points in by_method.items()])
        top = max([1.5] + [max(s["speedup_theory"], s["speedup"] or 0) for s in theory_points])
        scatter.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="measured = theory", line=dict(dash="dot")))
        scatter.update_layout(**{**LAYOUT, "height": 420}, xaxis_title="predicted speedup", yaxis_title="measured speedup",
                              title=f"Measured against verify-cost-aware theory, T = {temperature:g}")
        for figure in (speedups, scatter):
            parts.append(figure.to_html(full_html=False, include_plotlyjs=include))
            include = False
    body = html_lib.escape(markdown(results))
    return ("<!doctype html><html><head><meta charset='utf-8'><title>specviz benchmark</title></head><body>"
            + "".join(parts) + f"<pre>{body}</pre></body></html>")
