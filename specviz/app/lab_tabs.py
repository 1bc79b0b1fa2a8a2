"""The lab tabs of the app. As in ui.py, callbacks only translate between widgets and the labs' pure functions."""

from __future__ import annotations

import dataclasses
import functools

import gradio as gr
import torch

from specviz import engine
from specviz.app import worker
from specviz.app.policy import current_policy
from specviz.config import DecodeConfig, check_prompt
from specviz.metrics import estimate_verify_cost, summarize
from specviz.labs import bandwidth, bandwidth_figures, calculator, calculator_figures, glossary, lossless, lossless_figures
from specviz.labs import rejection, rejection_figures
from specviz.pipeline import Pipeline, build_pipeline, encode_prompt

NO_MISTAKE = "none (the correct algorithm)"
LOSSLESS_PROMPT = "Monday, Tuesday, Wednesday, Thursday, Friday. Monday, Tuesday, Wednesday,"  # drafts pass 38% of the time


def lab_callback(function):
    """Run a lab callback on the model thread (torch used from a second thread slows the live decoding, see
    worker.py), and turn its ValueError into a gr.Error with its sentence."""
    @functools.wraps(function)
    def wrapped(*args):
        try:
            return worker.call(function, *args)
        except ValueError as error:
            raise gr.Error(str(error)) from error
    return wrapped


# ---------------------------------------------------------------- 1. theory and calculator


def _measured(trace):
    """(α, c, γ, measured speedup) of the last live run, or None when it has no measured speedup."""
    if trace is None or not trace.rounds:
        return None
    metrics = summarize(trace)
    if metrics.speedup_measured is None:
        return None
    return metrics.alpha, metrics.c, int(trace.config["gamma"]), metrics.speedup_measured


@lab_callback
def theory_views(alpha, gamma, c, use_measured_cost, trace):
    verify_cost = None
    if use_measured_cost:
        if trace is None or not trace.rounds:
            raise gr.Error("No live run yet: run one on the first tab to measure v(k), or untick the box.")
        verify_cost = calculator.extend_verify_cost(estimate_verify_cost(trace), 64)
    values = calculator.readout(float(alpha), int(gamma), float(c), verify_cost=verify_cost)
    aware = values["speedup_with_verify_cost"]
    text = (f"**E[tokens per iteration] = {values['expected_tokens']:.3f}** · speedup E/(γc+1) = "
            f"**{values['speedup']:.3f}×**" + (f" · with measured v(k): **{aware:.3f}×**" if aware is not None else "")
            + f"\n\nbest γ = **{values['best_gamma']}** ({values['best_speedup']:.3f}×, {values['cost_model']}) · "
            f"operations factor {values['operations_factor']:.3f} (ĉ = c) · viable (α > c): "
            f"**{'yes' if values['viable'] else 'no'}** · γ = 1 guarantee (1+α)/(1+c) = {values['gamma_one_bound']:.3f}×")
    measured = _measured(trace)
    return (text, calculator_figures.speedup_heatmap(float(c), verify_cost, measured),
            calculator_figures.speedup_curves(float(c), verify_cost=verify_cost, measured=measured))


def reference_rows() -> list[list]:
    rows = []
    for row in calculator.reference_table():
        rows.append([row.get("name") or "", row["alpha"], row["gamma"], row["c"], round(row["expected_tokens"], 4),
                     round(row["speedup"], 4), row["best_gamma"], round(row["best_speedup"], 4),
                     round(row["gamma_one_bound"], 4), round(row["operations_factor"], 4),
                     "" if row.get("paper_measured_speedup") is None else row["paper_measured_speedup"]])
    return rows


REFERENCE_HEADERS = ["pair", "α", "γ", "c", "E", "speedup", "best γ", "speedup at best γ", "γ=1 bound", "operations",
                     "paper measured"]


def theory_tab(trace_state: gr.State) -> tuple:
    gr.Markdown("E = (1 − α^(γ+1))/(1 − α) tokens per iteration; S = E/(γc + 1). Move the sliders; the red dot is "
                "your last live run (tick *compare with plain decoding* there).")
    with gr.Row():
        alpha = gr.Slider(0, 0.99, value=0.8, step=0.01, label="α: acceptance rate")
        gamma = gr.Slider(1, 32, value=4, step=1, label="γ: drafted tokens per iteration")
        c = gr.Slider(0, 1, value=0.05, step=0.005, label="c: draft step cost / target step cost")
    measured_cost = gr.Checkbox(False, label="Cost model with the verify cost v(k) measured in the last live run "
                                             "(the CPU story); unticked: v(k) = 1 (the GPU story)")
    readout = gr.Markdown()
    with gr.Row():
        heatmap, curves = gr.Plot(label="Speedup over (α, γ)"), gr.Plot(label="Speedup against γ")
    gr.Markdown("**Reference configurations** (every value computed here; the T5 pairs are Leviathan et al.'s)")
    gr.Dataframe(value=reference_rows(), headers=REFERENCE_HEADERS, interactive=False, wrap=True)
    inputs = [alpha, gamma, c, measured_cost, trace_state]
    for widget in (alpha, gamma, c):
        widget.release(theory_views, inputs, [readout, heatmap, curves])
    measured_cost.change(theory_views, inputs, [readout, heatmap, curves])
    return alpha, inputs, [readout, heatmap, curves]


# ---------------------------------------------------------------- 2. sampling lab


def _distributions(vocab_text, target_text, draft_text):
    vocab = [word.strip() for word in str(vocab_text).split(",") if word.strip()]
    target_probs, target_note = rejection.parse_distribution(target_text, len(vocab) or None)
    draft_probs, draft_note = rejection.parse_distribution(draft_text, len(target_probs))
    if len(vocab) != len(target_probs):
        raise ValueError(f"The vocabulary has {len(vocab)} words but p has {len(target_probs)} numbers.")
    notes = " ".join(f"{name}: {note}" for name, note in (("p", target_note), ("q", draft_note)) if note)
    return vocab, target_probs, draft_probs, notes


def load_preset(name):
    preset = rejection.PRESETS[name]
    as_text = lambda values: ", ".join(f"{value:g}" for value in values)  # noqa: E731
    return ", ".join(preset["vocab"]), as_text(preset["target_probs"]), as_text(preset["draft_probs"]), preset["note"]


@lab_callback
def overlap_view(vocab_text, target_text, draft_text):
    vocab, target_probs, draft_probs, notes = _distributions(vocab_text, target_text, draft_text)
    classical = rejection.classical_rejection(target_probs, draft_probs, vocab)
    text = (f"**β = Σ min(p, q) = {classical['beta']:.4f}**: speculative sampling accepts the draft with this probability. "
            f"Classical rejection sampling accepts with 1/M = **{classical['acceptance']:.4f}** "
            f"(M = max p/q = {classical['bound']:.4g}). {classical['explanation']} {notes}")
    return text, rejection_figures.overlap_figure(vocab, target_probs, draft_probs)


@lab_callback
def step_view(vocab_text, target_text, draft_text, seed):
    vocab, target_probs, draft_probs, _ = _distributions(vocab_text, target_text, draft_text)
    step = rejection.speculative_step(target_probs, draft_probs, torch.Generator().manual_seed(int(seed)))
    return rejection_figures.step_figure(step, vocab), gr.update(value=int(seed) + 1)


@lab_callback
def sample_view(vocab_text, target_text, draft_text, sample_count, mistake, seed):
    vocab, target_probs, draft_probs, _ = _distributions(vocab_text, target_text, draft_text)
    chosen = None if mistake == NO_MISTAKE else mistake
    counts = rejection.sample_many(target_probs, draft_probs, int(sample_count), torch.Generator().manual_seed(int(seed)),
                                   mistake=chosen)
    predicted = rejection.exact_output_distribution(target_probs, draft_probs, chosen) if chosen else None
    statistic, dof, p_value = rejection.chi_square_test(counts, target_probs)
    total = sum(counts)
    tvd = rejection.total_variation([count / total for count in counts], target_probs)
    verdict = "follows p" if p_value > 1e-3 else "does NOT follow p"
    text = (f"{total:,} samples{'' if chosen is None else f' with the mistake *{chosen}*'}: χ² = {statistic:.1f} ({dof} dof), "
            f"p-value **{p_value:.3g}**, TVD to p **{tvd:.4f}** (sampling noise ≈ {rejection.tvd_noise(target_probs, total):.4f}): "
            f"the output **{verdict}**.")
    return text, rejection_figures.histogram_figure(vocab, counts, target_probs, chosen, predicted)


def sampling_tab() -> tuple:
    first = list(rejection.PRESETS)[0]
    vocab_text, target_text, draft_text, note = load_preset(first)
    with gr.Row():
        preset = gr.Dropdown(list(rejection.PRESETS), value=first, label="Preset")
        vocab = gr.Textbox(vocab_text, label="Vocabulary (comma separated)")
        target = gr.Textbox(target_text, label="p: target distribution")
        draft = gr.Textbox(draft_text, label="q: draft distribution")
    preset_note = gr.Markdown(note)
    overlap_text = gr.Markdown()
    with gr.Row():
        overlap_plot, step_plot = gr.Plot(label="p, q and their overlap"), gr.Plot(label="One speculative sample")
    with gr.Row():
        seed = gr.Number(0, label="Seed", precision=0, minimum=0)
        step_button = gr.Button("Draw one speculative sample")
        sample_count = gr.Slider(1_000, rejection.MAX_SAMPLES, value=100_000, step=1_000, label="N samples")
        mistake = gr.Radio([NO_MISTAKE, *rejection.MISTAKES], value=NO_MISTAKE, label="Common mistake")
        sample_button = gr.Button("Sample N", variant="primary")
    gr.Markdown(" · ".join(f"*{name}*: {what}" for name, what in rejection.MISTAKES.items()))
    sample_text, histogram = gr.Markdown(), gr.Plot(label="Empirical distribution against p")
    fields = [vocab, target, draft]
    preset.change(load_preset, preset, [*fields, preset_note]).then(overlap_view, fields, [overlap_text, overlap_plot])
    for field in fields:
        field.submit(overlap_view, fields, [overlap_text, overlap_plot])
    step_button.click(step_view, [*fields, seed], [step_plot, seed])
    sample_button.click(sample_view, [*fields, sample_count, mistake, seed], [sample_text, histogram])
    return fields, [overlap_text, overlap_plot]


# ---------------------------------------------------------------- 4. memory bandwidth


@lab_callback
def bandwidth_view(params_billions, bytes_per_param, bandwidth_gb_s, tflops, batch, tokens):
    params, bandwidth_bytes = float(params_billions) * 1e9, float(bandwidth_gb_s) * 1e9
    flops = float(tflops) * 1e12 if tflops else None
    read_s = bandwidth.weight_read_seconds(params, float(bytes_per_param), bandwidth_bytes)
    lines = [f"Reading the weights once: **{read_s * 1e3:.2f} ms** (P·bytes / bandwidth) — the floor of every decoding step."]
    if flops:
        lines.append(f"Compute for batch {int(batch)}: **{bandwidth.compute_seconds(params, float(batch), flops) * 1e3:.3f} ms** "
                     f"(2·P·B / FLOP/s). Compute overtakes memory at **B ≈ "
                     f"{bandwidth.crossover_batch(float(bytes_per_param), bandwidth_bytes, flops):.0f}**.")
    walltime = bandwidth.min_walltime_seconds(int(tokens), params, float(bytes_per_param), bandwidth_bytes, flops, int(batch))
    lines.append(f"Minimum walltime for {int(tokens)} tokens, one at a time: **{walltime:.2f} s**. Scoring γ+1 tokens in "
                 "one pass costs about one weight read while B·(γ+1) stays below the crossover: that is the room "
                 "speculative decoding uses.")
    figure = bandwidth_figures.roofline_figure(bandwidth_bytes, flops, params=params, bytes_per_param=float(bytes_per_param))
    return "\n\n".join(lines), figure


def bandwidth_preset(name):
    preset = bandwidth.PRESETS[name]
    tflops = preset["flops_per_s"] / 1e12 if preset["flops_per_s"] else 0
    return preset["params"] / 1e9, preset["bytes_per_param"], preset["bandwidth_bytes_per_s"] / 1e9, tflops


def measure_machine():
    """Time one forward of the offline target over k = 1..32 new tokens on this machine."""
    config = DecodeConfig().validate()
    pipeline = worker.call(build_pipeline, config)
    context = encode_prompt(pipeline.tokenizer, LOSSLESS_PROMPT, chat=False)
    timings = worker.call(bandwidth.measure_forward_ms, pipeline.target, context, 32)
    flat = bandwidth.bandwidth_bound_until(timings)
    text = (f"One forward of {config.target} on {pipeline.device} ({str(pipeline.dtype).removeprefix('torch.')}): "
            f"{timings[1]:.1f} ms for 1 token, {timings[32]:.1f} ms for 32. It stays within 1.25× of one token's time "
            f"up to **k = {flat}**: beyond that this hardware is no longer bandwidth-bound, so verifying γ+1 tokens "
            "costs more than one step, and a CPU gains less than a GPU.")
    return text, bandwidth_figures.measured_forward_figure(timings)


def bandwidth_tab() -> tuple:
    first = list(bandwidth.PRESETS)[0]
    params, bytes_per_param, bandwidth_gb_s, tflops = bandwidth_preset(first)
    with gr.Row():
        preset = gr.Dropdown(list(bandwidth.PRESETS), value=first, label="Preset")
        params_widget = gr.Number(params, label="Parameters P (billions)", minimum=0.001)
        bytes_widget = gr.Number(bytes_per_param, label="Bytes per parameter", minimum=0.1)
        bandwidth_widget = gr.Number(bandwidth_gb_s, label="Memory bandwidth (GB/s)", minimum=0.1)
        flops_widget = gr.Number(tflops, label="TFLOP/s (0 = ignore compute)", minimum=0)
        batch = gr.Number(1, label="Batch B", precision=0, minimum=1)
        tokens = gr.Number(1000, label="N tokens", precision=0, minimum=1)
    readout, roofline = gr.Markdown(), gr.Plot(label="Memory and compute time per step against batch")
    with gr.Row():
        measure_button = gr.Button("Measure this machine (the offline target, k = 1..32 tokens)")
    measured_text, measured_plot = gr.Markdown(), gr.Plot(label="Forward time against tokens on this machine")
    fields = [params_widget, bytes_widget, bandwidth_widget, flops_widget, batch, tokens]
    preset.change(bandwidth_preset, preset, fields[:4]).then(bandwidth_view, fields, [readout, roofline])
    for field in fields:
        field.submit(bandwidth_view, fields, [readout, roofline])
    measure_button.click(measure_machine, None, [measured_text, measured_plot])
    return fields, [readout, roofline]


# ---------------------------------------------------------------- 5. losslessness (real model)


def _lossless_config(temperature, lenience) -> DecodeConfig:
    """The offline target with prompt lookup, as the lab runs it (no chat template: the prompt is a plain prefix)."""
    try:
        return DecodeConfig(temperature=float(temperature), lenience=float(lenience), chat=False, gamma=4).validate()
    except ValueError as error:
        raise gr.Error(f"Setting out of range: {error}.") from error


def _lossless_pipeline(config: DecodeConfig) -> Pipeline:
    from specviz.app.ui import load_pipeline  # the app's loader turns loading failures into gr.Error

    return load_pipeline(config)


def _check_text(check: lossless.DistributionCheck) -> str:
    first = lossless.first_token_counts(check.speculative)
    statistic, dof, p_value = lossless.chi_square_against_exact(first, check.exact_first)
    tvd, band = lossless.tvd_to_exact(first, check.exact_first), lossless.noise_band(check.exact_first, check.runs)
    sequences, two_sample_band = lossless_figures.sequence_tvd(check)
    alpha = "–" if check.alpha is None else f"{check.alpha:.3f}"
    warning = "" if check.lenience == 1 else f"\n\n**Lenience {check.lenience}: NOT lossless. The output is expected to drift from p.**"
    return (f"{check.runs} runs · α = {alpha} over {check.tested} tested drafts · first token: TVD(speculative, p) = "
            f"**{tvd:.4f}** (99% noise band {band:.4f}) · χ² = {statistic:.1f}, {dof} dof, p-value **{p_value:.3g}** · "
            f"first {check.tokens} token(s): TVD(speculative, plain) = {sequences:.4f} (two-sample noise ≥ {two_sample_band:.4f})"
            + warning)


def _check_prefix(prompt) -> None:
    """The same checks as the live tab's prompt (and hosted mode's length cap), as a gr.Error."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise gr.Error("The prefix is empty.")
    try:
        check_prompt(prompt, current_policy().max_prompt_chars)
    except ValueError as error:
        raise gr.Error(f"{str(error)[:1].upper()}{str(error)[1:]}.") from error


def lossless_run(prompt, runs, tokens, temperature, lenience):
    _check_prefix(prompt)
    config = _lossless_config(temperature, lenience)
    if config.greedy:
        raise gr.Error("At temperature 0 there is no distribution to compare: use the greedy check, or raise it.")
    pipeline = _lossless_pipeline(config)
    feed = worker.Ahead(lossless.check_distribution(pipeline, prompt, config, int(runs), int(tokens)))
    seen, finished = 0, False
    try:
        while not finished:
            seen, check, finished = feed.newer_than(seen)
            if check is not None:
                yield _check_text(check), lossless_figures.distribution_figure(check)
    except ValueError as error:
        raise gr.Error(str(error)) from error
    finally:
        feed.close()


def greedy_run(prompt):
    _check_prefix(prompt)
    config = dataclasses.replace(_lossless_config(0, 1), max_new_tokens=48)
    pipeline = _lossless_pipeline(config)
    result = worker.call(lossless.check_greedy, pipeline, prompt, config)
    return f"**{'Identical' if result.identical else 'Different'}.** {result.explanation}"


def lenience_sweep(prompt, runs, temperature):
    _check_prefix(prompt)
    rows, checks = [], []
    for value in (1.0, 0.8, 0.5, 0.3):
        config = _lossless_config(temperature, value)
        pipeline = _lossless_pipeline(config)
        *_, check = worker.call(lambda: list(lossless.check_distribution(pipeline, prompt, config, int(runs), 1)))
        checks.append(check)
        rows = lossless.lenience_rows(checks)
        table = [[row["lenience"], "yes" if row["lossless"] else "NO", None if row["alpha"] is None else round(row["alpha"], 3),
                  round(row["tvd_to_p"], 4), round(row["noise_band"], 4), f"{row['chi_square_p']:.3g}"] for row in rows]
        yield table, lossless_figures.lenience_figure(rows)


def lossless_tab() -> None:
    gr.Markdown("Speculative decoding on the real offline target (prompt lookup drafts), against the target itself. "
                "Each run uses its own seed; p is the target's exact next-token distribution from one forward.")
    prompt = gr.Textbox(LOSSLESS_PROMPT, label="Prefix (no chat template)", lines=2)
    with gr.Row():
        runs = gr.Slider(20, 1000, value=200, step=10, label="Runs")
        tokens = gr.Slider(1, 3, value=1, step=1, label="Tokens compared")
        temperature = gr.Slider(0.1, 2, value=1, step=0.05, label="Temperature")
        lenience = gr.Slider(0.1, 1, value=1, step=0.05, label="Lenience (1 = exact; below 1 is NOT lossless)")
    with gr.Row():
        compare_button = gr.Button("Compare distributions", variant="primary")
        greedy_button = gr.Button("Greedy equality check")
        sweep_button = gr.Button("Lenience sweep (1, 0.8, 0.5, 0.3)")
    summary, histogram = gr.Markdown(), gr.Plot(label="First token: p, speculative and plain")
    greedy_text = gr.Markdown()
    sweep_table = gr.Dataframe(headers=["lenience", "lossless", "α", "TVD to p", "noise band", "χ² p-value"],
                               interactive=False)
    sweep_plot = gr.Plot(label="Lenience: α against drift")
    compare_button.click(lossless_run, [prompt, runs, tokens, temperature, lenience], [summary, histogram])
    greedy_button.click(greedy_run, prompt, greedy_text)
    sweep_button.click(lenience_sweep, [prompt, runs, temperature], [sweep_table, sweep_plot])


# ---------------------------------------------------------------- all labs


def build_lab_tabs(demo: gr.Blocks, trace_state: gr.State) -> None:
    """The lab tabs, to be called inside `with gr.Blocks()`, after the live tab. Initial views load with the page."""
    with gr.Tab("Theory") as theory:
        _, theory_inputs, theory_outputs = theory_tab(trace_state)
    # Redrawn when the tab is opened, so the last live run's point shows (a change listener on the trace state
    # would make Gradio hash the whole trace on every streamed update).
    theory.select(theory_views, theory_inputs, theory_outputs)
    with gr.Tab("Sampling lab"):
        sampling_inputs, sampling_outputs = sampling_tab()
    with gr.Tab("Simulated models"):
        from specviz.app.simulated_tab import simulated_tab

        simulated_tab()
    with gr.Tab("Memory bandwidth"):
        bandwidth_inputs, bandwidth_outputs = bandwidth_tab()
    with gr.Tab("Losslessness"):
        lossless_tab()
    with gr.Tab("Glossary"):
        gr.Markdown(glossary.glossary_markdown())
    demo.load(theory_views, theory_inputs, theory_outputs)
    demo.load(overlap_view, sampling_inputs, sampling_outputs)
    demo.load(bandwidth_view, bandwidth_inputs, bandwidth_outputs)
