"""The benchmark: specviz against plain decoding and transformers' own methods, on real prompts.

    python -m specviz.bench --quick                       # one prompt per category, 32 tokens, greedy, one repeat
    python -m specviz.bench --questions ../shared/data/spec_bench/question.jsonl --limit 10 --out bench-out

Every method decodes the same prompts with the same target, in one process. For each prompt the methods run
in turn, `--repeats` times over (interleaved, so a slow moment of the machine hits them all), after one
warm-up each; the median wall time of each is kept. Results per method and category go to `--out`:
results.json, report.md and report.html (see bench_report).

Methods (`--methods`, all by default; those needing a draft model run only with `--draft MODEL`):
- plain: specviz's autoregressive decoding;            hf_generate: transformers' generate();
- specviz: speculative decoding at fixed γ;             specviz_adaptive: with adaptive γ (at most γ);
- specviz_tree: token trees, γ deep, of --tree-budget nodes (0: what this machine's measured v(k) affords), for
  each draft that drafts trees (a draft model: the kind row's `trees`);
- hf_prompt_lookup: generate(prompt_lookup_num_tokens=γ); hf_assisted: generate(assistant_model=…) at specviz's γ and draft stop;
  hf_assisted_defaults: the same at transformers' defaults (20 tokens, stop below 0.4);
- llama_plain, llama_speculative, llama_ngram: llama.cpp's own tools on the same GGUF files (bench/llama_peer.py):
  plain decoding, speculative decoding with each --draft model's GGUF at γ, and n-gram drafting at γ;
  llama_plain_shipped: llama.cpp's plain decoding of the shipped GGUF a requantized target ("…@Q4_0") was made from.
specviz and specviz_adaptive run once per drafter: prompt lookup ("ngram") and each --draft model. With
--backend llama.cpp, specviz's methods (plain included) run their forwards on llama.cpp (models/llama_cpp.py), and
transformers' methods are not offered.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from specviz import paths
from specviz.analysis.metrics import run_wall_ms, summarize
from specviz.analysis.tree_metrics import node_budget, round_depth, summarize_tree
from specviz.bench import hf_baselines, quality
from specviz.config import (
    DRAFT_MODEL,
    NGRAM_DRAFTER,
    QUANTIZED_DRAFT_MODEL,
    QUANTIZED_DRAFTER,
    TRANSFORMERS,
    DecodeConfig,
    DrafterSpec,
)
from specviz.decoding import engine, plain
from specviz.decoding.calibration import calibrate, calibration_sizes
from specviz.decoding.pipeline import build_pipeline, encode_prompt
from specviz.drafters import kinds
from specviz.drafters.weights import int4_copy
from specviz.models import loading as models
from specviz.models import profiling

DEFAULT_PROMPTS = paths.ASSETS / "bench_prompts.jsonl"
METHODS = ("plain", "hf_generate", "specviz", "specviz_adaptive", "specviz_tree", "hf_prompt_lookup", "hf_assisted",
           "hf_assisted_defaults", "llama_plain", "llama_plain_shipped", "llama_speculative", "llama_ngram")
HF_METHODS = ("hf_generate", "hf_prompt_lookup", "hf_assisted", "hf_assisted_defaults")  # they need a transformers model
# llama.cpp's own tools (bench/llama_peer.py)
LLAMA_METHODS = ("llama_plain", "llama_plain_shipped", "llama_speculative", "llama_ngram")
QUICK = dict(limit=1, max_new_tokens=32, temperatures=[0.0], repeats=1)


@dataclass(frozen=True)
class Method:
    kind: str  # one of METHODS
    drafter: str | None = None  # a draft name (config.DrafterSpec), for the speculative kinds
    gamma: int | None = None  # a fixed γ other than --gamma (a sweep of specviz), else None

    @property
    def label(self) -> str:
        if self.drafter is None:
            return self.kind
        spec = DrafterSpec.parse(self.drafter)
        shown = spec.written(Path(spec.model).name or spec.model) if spec.model else str(spec)  # a folder by its name
        label = f"{self.kind}[{shown}]"
        return label if self.gamma is None else f"{label} γ={self.gamma}"


def load_prompts(path: str | os.PathLike, categories: list[str] | None, limit: int | None) -> list[dict]:
    """Spec-Bench-format JSONL (question_id, category, turns): the first turn, at most `limit` per category."""
    chosen, seen = [], {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                category, prompt = str(item["category"]), str(item["turns"][0])
            except (ValueError, KeyError, IndexError, TypeError) as error:
                raise ValueError(f"{path}:{number}: not a Spec-Bench question ({error})") from None
            if (categories and category not in categories) or seen.get(category, 0) >= (limit or 1 << 30):
                continue
            seen[category] = seen.get(category, 0) + 1
            chosen.append({"id": item.get("question_id", number), "category": category, "prompt": prompt,
                           "rank": seen[category]})
    # Round-robin over the categories (every category's first prompt, then every second one...), so that a run
    # cut short, or resumed later, has covered every category alike.
    order = {category: index for index, category in enumerate(seen)}
    return sorted(chosen, key=lambda item: (item.pop("rank"), order[item["category"]]))


def plan_methods(methods: list[str], drafts: list[str], extra_gammas: list[int] = ()) -> list[Method]:
    """The method instances to run: speculative kinds once per drafter (specviz also at each extra fixed γ);
    hf_assisted once per draft model."""
    plan = []
    for kind in methods:
        if kind in ("plain", "hf_generate", "hf_prompt_lookup", "llama_plain", "llama_plain_shipped", "llama_ngram"):
            plan.append(Method(kind))
        elif kind == "llama_speculative":  # a draft model's GGUF: neither prompt lookup nor a 4-bit copy of transformers'
            plan += [Method(kind, draft) for draft in drafts  # once per draft model: "suffix+D" drafts with D too
                     if DrafterSpec.parse(draft).kind == DRAFT_MODEL and not DrafterSpec.parse(draft).lookup_first]
        elif kind in ("specviz", "specviz_adaptive"):
            for drafter in [NGRAM_DRAFTER, *drafts]:
                plan.append(Method(kind, drafter))
                if kind == "specviz":
                    plan += [Method(kind, drafter, gamma) for gamma in extra_gammas]
        elif kind == "specviz_tree":
            plan += [Method(kind, draft) for draft in drafts if _drafts_trees(draft)]
        elif kind in ("hf_assisted", "hf_assisted_defaults"):  # not the distilled draft: generate() cannot drive it
            plan += [Method(kind, draft) for draft in drafts if _assistant(draft)]
    return plan


def _assistant(draft: str) -> bool:
    """Whether generate(assistant_model=…) can use this draft: a draft model or a 4-bit copy (the kind row's `assistant`),
    not prompt lookup, the distilled head or a lookup-first drafter."""
    spec = DrafterSpec.parse(draft)
    return kinds.KINDS[spec.kind].assistant and not spec.lookup_first


def _drafts_trees(draft: str) -> bool:
    """Whether this draft drafts token trees: a draft model (the kind row's `trees`), with or without lookup first."""
    return kinds.KINDS[DrafterSpec.parse(draft).kind].trees


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (Linux reports kilobytes, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


class Runner:
    """Loads the models once and runs any method on any prompt, timed alike (device synchronised)."""

    def __init__(self, target: str, drafts: list[str], gamma: int, max_new_tokens: int, ngram_size: int = 3,
                 draft_confidence: float = 0.0, tree_budget: int = 0, trees: bool = False, draft_window: int = 0,
                 draft_vocab: int = 0, backend: str = TRANSFORMERS):
        self.backend = backend
        self.target = models.load_model(target, backend=backend)
        self.assistants = ({draft: self._assistant_model(draft) for draft in drafts if _assistant(draft)}
                           if backend == TRANSFORMERS else {})
        self.base = DecodeConfig(target=target, gamma=gamma, max_new_tokens=max_new_tokens, ngram_size=ngram_size,
                                 draft_confidence=draft_confidence, tree_budget=tree_budget, backend=backend).validate()
        self.levers = dict(draft_window=draft_window, draft_vocab=draft_vocab)  # for specviz's draft models only
        self.pipelines = {NGRAM_DRAFTER: build_pipeline(self.base)}
        self._scorer = None  # the target's language model that scores texts (target_nll), on a backend without hf_model
        for draft in drafts:
            self.pipelines[draft] = build_pipeline(DecodeConfig(**self._settings(draft)))
        for draft, pipeline in self.pipelines.items():  # as the app and the CLI do before a run: adaptive γ starts
            # from these costs, and a tree's budget and shape read v(k) and the draft step
            tree = trees and draft != NGRAM_DRAFTER and _drafts_trees(draft)
            calibrate(pipeline, target, calibration_sizes(DecodeConfig(**{**self._settings(draft), "tree": tree})))

    def _settings(self, draft: str) -> dict:
        """The base settings with this drafter, and the draft-model levers where it runs a draft model."""
        runs_model = kinds.KINDS[DrafterSpec.parse(draft).kind].runs_model
        return {**self.base.to_dict(), "draft": draft, **(self.levers if runs_model else {})}

    def _assistant_model(self, draft: str) -> models.LoadedModel:
        target, spec = self.target, DrafterSpec.parse(draft)
        if spec.kind == QUANTIZED_DRAFTER:  # the same copy the int4 drafter uses, as a model generate() can call
            return models.LoadedModel(int4_copy(target), target.tokenizer, draft, target.device, target.dtype)
        if spec.kind == QUANTIZED_DRAFT_MODEL:  # the draft's 4-bit copy (the drafter's numbers and kernels, dense
            # prompt path included, as an HF model)
            from specviz.models.int4 import quantized_copy

            fresh = models.load_fresh(spec.model, target.device, target.dtype, pack_weights=False)
            return models.LoadedModel(quantized_copy(fresh.hf_model, dense_prompt=True), fresh.tokenizer, draft, target.device,
                                      target.dtype)
        return models.load_model(draft, target.device, target.dtype)

    def config(self, method: Method, temperature: float, max_new_tokens: int | None = None) -> DecodeConfig:
        return DecodeConfig(**{**self._settings(method.drafter or NGRAM_DRAFTER), "temperature": temperature,
                               "gamma": method.gamma or self.base.gamma, "adaptive": method.kind == "specviz_adaptive",
                               "tree": method.kind == "specviz_tree",
                               "max_new_tokens": max_new_tokens or self.base.max_new_tokens}).validate()

    def run(self, method: Method, prompt: str, temperature: float, max_new_tokens: int | None = None) -> dict:
        """One timed run: generated ids, wall ms, and for specviz the finished trace."""
        config = self.config(method, temperature, max_new_tokens)
        pipeline = self.pipelines[config.draft]
        if method.kind == "plain":
            baseline = plain.baseline_decode(pipeline, prompt, config)
            return {"token_ids": baseline.token_ids, "wall_ms": baseline.wall_ms, "step_ms": baseline.step_ms,
                    "text": baseline.text}  # the llama.cpp tools' texts are compared with it
        if method.kind.startswith("specviz"):
            trace = engine.run_speculative(pipeline, prompt, config)
            return {"token_ids": trace.token_ids, "wall_ms": run_wall_ms(trace), "trace": trace}
        if method.kind in LLAMA_METHODS:
            return self._llama_tool(method, prompt, config)
        hf_method = {"hf_generate": "generate", "hf_prompt_lookup": "prompt_lookup", "hf_assisted": "assisted",
                     "hf_assisted_defaults": "assisted_defaults"}[method.kind]
        prompt_ids = encode_prompt(self.target.tokenizer, prompt, config.chat)
        try:
            run = hf_baselines.run_hf(self.target, prompt_ids, config, hf_method, self.assistants.get(method.drafter))
        except RuntimeError as error:  # a peer that fails on one prompt is a finding, not the benchmark's end
            return {"token_ids": [], "wall_ms": 0.0, "error": f"{type(error).__name__}: {str(error)[:300]}"}
        return {"token_ids": run.token_ids, "wall_ms": run.wall_ms}

    def _llama_tool(self, method: Method, prompt: str, config: DecodeConfig) -> dict:
        """One run of llama.cpp's own tool on the target's GGUF (and the draft's), over the chat-templated prompt; its
        text is tokenized back into the target's ids, for the identity check against plain decoding."""
        from specviz.bench import llama_peer
        from specviz.models.llama_cpp import gguf_file, threads
        from specviz.models.requantize import split_variant

        tokenizer = self.target.tokenizer
        text = tokenizer.decode(encode_prompt(tokenizer, prompt, config.chat))
        settings = dict(temperature=config.temperature, seed=config.seed, threads=threads())
        model = gguf_file(config.target)
        if method.kind == "llama_plain_shipped":  # the file the target was requantized from
            model = gguf_file(split_variant(config.target)[0])
        if method.kind in ("llama_plain", "llama_plain_shipped"):
            run = llama_peer.plain(model, text, config.max_new_tokens, **settings)
        else:
            draft = gguf_file(DrafterSpec.parse(method.drafter).model) if method.drafter else None
            run = llama_peer.speculative(model, text, config.max_new_tokens, config.gamma, draft, config.ngram_size,
                                         **settings)
        ids = tokenizer(run.text, add_special_tokens=False)["input_ids"]
        return {"token_ids": ids, "tokens": run.tokens, "wall_ms": run.wall_ms, "text": run.text}

    def target_nll(self, prompt: str, token_ids: list[int], temperature: float) -> float | None:
        """The target's mean −log p per generated token of a run's text (quality.target_nll); None for no text."""
        prompt_ids = encode_prompt(self.target.tokenizer, prompt, self.base.chat)
        if not token_ids:
            return None
        if not hasattr(self.target, "hf_model") and self._scorer is None:  # llama.cpp: one context, kept for every text
            self._scorer = self.target.language_model(len(self.target.tokenizer))
        return quality.target_nll(self.target, prompt_ids, token_ids, temperature, self._scorer)

    def verify_costs(self, prompt: str, max_k: int) -> dict[int, float]:
        """Measured v(k) = t(k)/t(1) for k = 1..max_k, after the prompt (the target forward over k tokens)."""
        ids = encode_prompt(self.target.tokenizer, prompt, True)
        timings = profiling.measure_verify_costs(self.pipelines[NGRAM_DRAFTER].target, ids, max_k=max_k)
        return {k: round(v, 4) for k, v in profiling.relative_costs(timings).items()}


WARM_UP_TOKENS = 16


def run_benchmark(runner: Runner, prompts: list[dict], plan: list[Method], temperatures: list[float],
                  repeats: int, log=print, done: list[dict] = (), on_prompt=lambda rows: None) -> list[dict]:
    """Every method on every prompt at every temperature; one row per (temperature, prompt, method).

    `done` holds the rows of an earlier, interrupted run: prompts they cover are not run again. `on_prompt`
    receives each prompt's new rows as soon as they exist (the CLI appends them to a file, for --resume)."""
    rows = list(done)
    finished = {(row["temperature"], row["id"]) for row in rows}
    for method in plan:  # warm-up: first-call costs (allocations, lazy imports) stay out of the figures
        for temperature in temperatures:
            runner.run(method, prompts[0]["prompt"], temperature, WARM_UP_TOKENS)
    for temperature in temperatures:
        for item in prompts:
            if (temperature, item["id"]) in finished:
                continue
            runs = {method: [] for method in plan}
            for repeat in range(repeats):  # interleaved, every other pass reversed, so drifts hit every method alike
                for method in plan if repeat % 2 == 0 else reversed(plan):
                    runs[method].append(runner.run(method, item["prompt"], temperature))
            rows += _prompt_rows(item, temperature, runs)
            if temperature > 0:  # does each method's text follow the target? (quality.py; outside the timing)
                for row, method_runs in zip(rows[-len(plan):], runs.values()):
                    row["target_nll"] = runner.target_nll(item["prompt"], _median_run(method_runs)["token_ids"],
                                                          temperature)
            on_prompt(rows[-len(plan):])
            plain = next((r for r in rows[-len(plan):] if r["method"] == "plain"), None)
            log(f"T={temperature} {item['category']:>15} #{item['id']}: " + "  ".join(
                f"{r['method']} {r['tokens_per_s']:.1f}" + (f" ({r['speedup']:.2f}x)" if plain and r is not plain
                                                             and r["speedup"] is not None else "")
                + (f" failed: {r['error']}" if "error" in r else "")
                for r in rows[-len(plan):]))
    return rows


def _median_run(method_runs: list[dict]) -> dict:
    """The run of median wall time among a method's repeats: the one its row's figures (and nll) describe."""
    return sorted(method_runs, key=lambda run: run["wall_ms"])[len(method_runs) // 2]


def _prompt_rows(item: dict, temperature: float, runs: dict) -> list[dict]:
    plain_runs = next((v for m, v in runs.items() if m.kind == "plain"), None)
    plain_ids = plain_runs[0]["token_ids"] if plain_runs else None
    plain_text = plain_runs[0].get("text", "").strip() if plain_runs else None
    plain_step_ms = statistics.median(r["step_ms"] for r in plain_runs) if plain_runs else None
    rows = []
    for method, method_runs in runs.items():
        walls = [r["wall_ms"] for r in method_runs]
        median_run = _median_run(method_runs)
        tokens = median_run.get("tokens", len(median_run["token_ids"]))  # a llama.cpp tool counts its own
        row = {"temperature": temperature, "category": item["category"], "id": item["id"], "method": method.label,
               "kind": method.kind, "drafter": method.drafter, "tokens": tokens, "wall_ms": statistics.median(walls),
               "wall_ms_runs": walls, "rss_mb": round(peak_rss_mb(), 1)}
        row["tokens_per_s"] = 1e3 * tokens / row["wall_ms"] if row["wall_ms"] else 0.0
        if "tokens" in median_run:  # a llama.cpp tool, by its text (speculative decoding may run past the count)
            text = median_run["text"].strip()
            same = text.startswith(plain_text) or plain_text.startswith(text)
            row["text"] = median_run["text"]
        else:
            same = median_run["token_ids"] == plain_ids
        row["identical"] = same if temperature == 0 and plain_ids is not None else None
        if "trace" in median_run:
            row.update(_speculative_figures(median_run["trace"], plain_step_ms))
        errors = [r["error"] for r in method_runs if "error" in r]
        if errors:  # kept as a row that says so; the report leaves it out of every figure
            row.update(error=errors[0], identical=None)
        rows.append(row)
    plain_row = next((r for r in rows if r["kind"] == "plain"), None)
    for row in rows:
        row["speedup"] = (row["tokens_per_s"] / plain_row["tokens_per_s"]
                          if plain_row and plain_row["tokens_per_s"] and "error" not in row else None)
    return rows


def _speculative_figures(trace, plain_step_ms: float | None) -> dict:
    """α, tokens per round, c, the rounds' draft lengths (nodes) and depths, and the tests and acceptances per
    position (a tree's depth), from the trace (c against plain's own step)."""
    metrics, tree = summarize(trace), summarize_tree(trace)
    return {"alpha": metrics.alpha, "tested": metrics.tested_positions, "accepted": metrics.accepted_tokens,
            "tested_per_depth": tree.tested_per_depth, "accepted_per_depth": tree.accepted_per_depth,
            "draft_depths": [round_depth(round_) for round_ in trace.rounds], "tree_budget": node_budget(trace),
            "rounds": metrics.rounds, "tokens_per_round": metrics.tokens_per_round,
            "c": metrics.draft_step_ms / plain_step_ms if plain_step_ms else metrics.c,
            "draft_lengths": [round_.drafted for round_ in trace.rounds], "forward_ms": trace.forward_ms,
            "draft_ms": sum(round_.draft_ms for round_ in trace.rounds),
            "verify_ms": sum(round_.verify_ms for round_ in trace.rounds), "target_step_ms": plain_step_ms}
