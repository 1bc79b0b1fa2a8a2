"""The "Simulated models" tab: the course's hands-on project. No model is loaded, so it runs at once anywhere.

A run goes through the real engine on synthetic models and is drawn by the live tab's own views (rows, stats,
plots), with timings in simulated target steps.
"""

from __future__ import annotations

import gradio as gr

from specviz.app.callbacks import lab_callback
from specviz.app.fields import lab_field, run_field
from specviz.app.tabs.course_exercises import course_project_section
from specviz.app.views import views  # the live tab's views: shared render code, not a copy
from specviz.labs.simulated_models import experiments as simulated
from specviz.labs.simulated_models import figures

COLUMNS = {  # the experiments' keys (labs/simulated_models/experiments.py) as a table's headers say them
    "event": "event", "sampler": "sampler", "samples": "samples", "chi_square": "χ²", "dof": "degrees of freedom",
    "p_value": "p-value", "tvd": "TVD from p", "follows_target": "follows p",
    "alpha": "α", "gamma": "γ", "c": "c", "expected_tokens": "E[tokens per round]", "speedup": "speedup",
    "best": "best γ", "rounds": "rounds", "tokens_per_round": "tokens per round",
    "tokens_per_round_se": "± (standard error)", "tokens_per_round_theory": "tokens per round, theory",
    "speedup_se": "speedup ± (standard error)", "speedup_theory": "speedup, theory",
    "z": "z: (simulated − theory) / standard error", "agrees": "agrees with theory (|z| ≤ 3)",
    "corollary_alpha": "α > c pays (corollary 3.9)", "min_alpha": "least α that pays", "best_gamma": "at γ",
    "alpha_below": "α below it", "speedup_below": "speedup there", "speedup_below_se": "±",
    "alpha_above": "α above it", "speedup_above": "speedup there ", "speedup_above_se": "± ",
    "confirmed": "below 1, then above: confirmed",
}


def column_name(key: str) -> str:
    """A header in words: 'alpha_at_gamma_4' -> 'α that pays at γ = 4'; a key not listed keeps its words."""
    if key.startswith("alpha_at_gamma_"):
        return f"α that pays at γ = {key.removeprefix('alpha_at_gamma_')}"
    return COLUMNS.get(key, key.replace("_", " "))


def table(rows: list[dict]) -> dict:
    """Plain dict rows -> a Dataframe value (numbers rounded for reading), its headers in words (column_name)."""
    headers = [column_name(key) for key in rows[0]] if rows else []
    values = [[round(value, 4) if isinstance(value, float) else value for value in row.values()] for row in rows]
    return gr.update(value=values, headers=headers)


def _overlap(value) -> float:
    return lab_field("Overlap β", value, 0, 1)


def _cost(value) -> float:
    return lab_field("Simulated cost c", value, 0, 1)


@lab_callback
def run_view(overlap, gamma, c, max_new_tokens, temperature, seed):
    overlap, c = _overlap(overlap), _cost(c)
    gamma, seed = run_field("gamma", gamma), run_field("seed", seed)
    max_new_tokens, temperature = run_field("max_new_tokens", max_new_tokens, 8, 400), run_field("temperature", temperature)
    trace = simulated.run(overlap, gamma, c, max_new_tokens, seed, temperature)
    view = views(trace)
    speedup = simulated.simulated_speedup(trace, c)
    note = (f"Simulated speedup **{speedup:.3f}×** (tokens / Σ(drafted·c + 1) target steps). Timings below are in "
            "target steps, not milliseconds.")
    stats = (view.stats.replace(">measured speedup</abbr>", ">simulated speedup</abbr>")  # a simulated world's run
             .replace("timed after the run in this process", "in simulated target steps"))
    return view.rows, note + "\n\n" + stats, view.alpha_plot, view.speedup_plot, view.histogram_plot


@lab_callback
def distribution_view(overlap, gamma, seed):
    overlap, gamma, seed = _overlap(overlap), run_field("gamma", gamma), run_field("seed", seed)
    rows = simulated.distribution_check(overlap, gamma, seed=seed)
    frequencies = simulated.first_token_frequencies(overlap, gamma, seed=seed)
    return table(rows), figures.distribution_figure(frequencies, overlap)


@lab_callback
def speedup_view(overlap, c, seed):
    overlap, c, seed = _overlap(overlap), _cost(c), run_field("seed", seed)
    rows = simulated.simulated_vs_theory(overlap, c, seed=seed)
    return table(rows), figures.speedup_vs_gamma_figure(rows, overlap, c)


@lab_callback
def theory_view(c):
    return table(simulated.theory_table(c=_cost(c)))


@lab_callback
def viability_view(seed):
    return table(simulated.viability_table(seed=run_field("seed", seed)))


def simulated_tab() -> None:
    gr.Markdown("Synthetic target and draft over 16 words. The overlap β = Σ min(p, q) is the same at every position, "
                "so it *is* α, and the theory's assumptions hold exactly: simulation and formula must agree.")
    with gr.Row():
        overlap = gr.Slider(0, 1, value=0.7, step=0.01, label="Overlap β (= α at temperature 1)")
        gamma = gr.Slider(1, 16, value=4, step=1, label="γ")
        c = gr.Slider(0, 1, value=0.1, step=0.01, label="Simulated cost c")
        max_new_tokens = gr.Slider(8, 400, value=64, step=1, label="Max new tokens")
        temperature = gr.Slider(0, 2, value=1, step=0.05, label="Temperature")
        seed = gr.Number(0, label="Seed", precision=0, minimum=0)
    run_button = gr.Button("Run on the simulated models", variant="primary")
    rows, stats = gr.HTML(elem_id="sv-sim-rows"), gr.Markdown()
    with gr.Row():
        alpha_plot, speedup_plot = gr.Plot(label="α per position"), gr.Plot(label="Speedup")
        histogram = gr.Plot(label="Tokens per round")
    gr.Markdown("### The four experiments (seeded; rerun with another seed to see the sampling error)")
    with gr.Row():
        distribution_button = gr.Button("1. Distribution verification")
        theory_button = gr.Button("2. Theoretical speedup table")
        speedup_button = gr.Button("3. Simulated vs theoretical speedup (γ = 3, 5, 7)")
        viability_button = gr.Button("4. Minimum viability table")
    experiment_table = gr.Dataframe(interactive=False, wrap=True)
    experiment_plot = gr.Plot(label="Experiment")
    with gr.Accordion("The course's own experiments 1-4, exactly as written, beside its printed output", open=False):
        course_project_section()
    run_button.click(run_view, [overlap, gamma, c, max_new_tokens, temperature, seed],
                     [rows, stats, alpha_plot, speedup_plot, histogram])
    distribution_button.click(distribution_view, [overlap, gamma, seed], [experiment_table, experiment_plot])
    theory_button.click(theory_view, c, experiment_table)
    speedup_button.click(speedup_view, [overlap, c, seed], [experiment_table, experiment_plot])
    viability_button.click(viability_view, seed, experiment_table)


def build(demo: gr.Blocks, trace_state: gr.State, tab: gr.Tab) -> None:
    simulated_tab()
