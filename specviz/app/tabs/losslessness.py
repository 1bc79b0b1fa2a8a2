"""The "Losslessness" tab: speculative decoding on the real offline target against the target's own distribution."""

from __future__ import annotations

import dataclasses
import time

import gradio as gr

from specviz.analysis.metrics import SIGNIFICANCE, chi_square_verdict
from specviz.app import worker
from specviz.app.callbacks import load_pipeline, quiet_refusals
from specviz.app.estimates import announced, remaining
from specviz.app.fields import lab_field, run_field
from specviz.app.policy import current_policy
from specviz.config import DecodeConfig, check_prompt
from specviz.labs.losslessness import checks as lossless
from specviz.labs.losslessness import figures

LENIENCES = (1.0, 0.8, 0.5, 0.3)
RUN_S = 0.21  # s, one run of the distribution check on two cores (docs/results.md, "Lab actions"); progress says what is left
LOSSLESS_PROMPT = "Monday, Tuesday, Wednesday, Thursday, Friday. Monday, Tuesday, Wednesday,"  # drafts pass 38% of the time


def _lossless_config(temperature, lenience) -> DecodeConfig:
    """The offline target with prompt lookup, as the lab runs it (no chat template: the prompt is a plain prefix);
    temperature and lenience are checked against the live tab's field table."""
    temperature, lenience = run_field("temperature", temperature), run_field("lenience", lenience)
    return DecodeConfig(temperature=temperature, lenience=lenience, chat=False, gamma=4).validate()


def _check_text(check: lossless.DistributionCheck) -> str:
    first = lossless.first_token_counts(check.speculative)
    statistic, dof, p_value = lossless.chi_square_against_exact(first, check.exact_first)
    tvd, band = lossless.tvd_to_exact(first, check.exact_first), lossless.noise_band(check.exact_first, check.runs)
    sequences, two_sample_band = figures.sequence_tvd(check)
    alpha = "–" if check.alpha is None else f"{check.alpha:.3f}"
    warning = ("" if check.lenience == 1 else
               f"\n\n**Lenience {check.lenience}: NOT lossless. The output is expected to drift from p.**")
    return (f"{check.runs} runs · acceptance over these runs = {alpha} ({check.tested} tested drafts) · "
            f"first token: TVD(speculative, p) = "
            f"**{tvd:.4f}** (99% noise band {band:.4f}) · χ² = {statistic:.1f}, {dof} dof: "
            f"**{chi_square_verdict(p_value)}** · "
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
    runs, tokens = lab_field("Runs", runs, 20, 1000, whole=True), lab_field("Tokens compared", tokens, 1, 3, whole=True)
    if config.greedy:
        raise gr.Error("At temperature 0 there is no distribution to compare: use the greedy check, or raise it.")
    yield f"*Starting {runs} runs: about {runs * RUN_S:.0f} s on a two-core CPU (the first also loads the model)…*", gr.skip()
    pipeline = load_pipeline(config)
    feed = worker.Ahead(lossless.check_distribution(pipeline, prompt, config, runs, tokens))
    seen, finished, started = 0, False, time.perf_counter()
    try:
        while not finished:
            seen, check, finished = feed.newer_than(seen)
            if check is not None:
                progress = remaining(check.runs, runs, time.perf_counter() - started)
                yield f"*{progress}*\n\n" + _check_text(check), figures.distribution_figure(check)
    except ValueError as error:
        raise gr.Error(str(error)) from error
    finally:
        feed.close()


@announced("greedy check")
def greedy_run(prompt):
    _check_prefix(prompt)
    config = dataclasses.replace(_lossless_config(0, 1), max_new_tokens=48)
    pipeline = load_pipeline(config)
    result = worker.call(lossless.check_greedy, pipeline, prompt, config)
    return f"**{'Identical' if result.identical else 'Different'}.** {result.explanation}"


def lenience_sweep(prompt, runs, temperature):
    """Each lenience's first tokens over `runs` seeded runs (lossless.check_first_token: the round's one forward,
    then the runs' uniforms through verify()), a row and the plot after each lenience."""
    _check_prefix(prompt)
    runs = lab_field("Runs", runs, 20, 1000, whole=True)
    checks = []
    for value in LENIENCES:
        config = _lossless_config(temperature, value)
        pipeline = load_pipeline(config)
        checks.append(worker.call(lossless.check_first_token, pipeline, prompt, config, runs))
        rows = lossless.lenience_rows(checks)
        table = [[row["lenience"], "yes" if row["lossless"] else "NO", None if row["alpha"] is None else round(row["alpha"], 3),
                  round(row["tvd_to_p"], 4), round(row["noise_band"], 4),
                  chi_square_verdict(row["chi_square_p"])] for row in rows]
        yield table, figures.lenience_figure(rows)


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
        sweep_button = gr.Button(f"Lenience sweep ({', '.join(f'{value:g}' for value in LENIENCES)})")
    summary, histogram = gr.Markdown(), gr.Plot(label="First token: p, speculative and plain")
    greedy_text = gr.Markdown()
    sweep_table = gr.Dataframe(headers=["lenience", "lossless", "acceptance", "TVD to p", "noise band",
                                        f"χ² verdict (p-value against {SIGNIFICANCE:g})"],
                               interactive=False)
    sweep_plot = gr.Plot(label="Lenience: acceptance against drift")
    compare_button.click(quiet_refusals(lossless_run), [prompt, runs, tokens, temperature, lenience], [summary, histogram])
    greedy_button.click(quiet_refusals(greedy_run), prompt, greedy_text)
    sweep_button.click(quiet_refusals(lenience_sweep), [prompt, runs, temperature], [sweep_table, sweep_plot])


def build(demo: gr.Blocks, trace_state: gr.State, tab: gr.Tab) -> None:
    lossless_tab()
