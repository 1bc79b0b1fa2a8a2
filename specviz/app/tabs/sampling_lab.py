"""The "Sampling lab" tab: one speculative step on hand-made distributions, and many, against a common mistake."""

from __future__ import annotations

import gradio as gr
import torch

from specviz.analysis.metrics import SIGNIFICANCE, chi_square_test, chi_square_verdict, total_variation
from specviz.app.callbacks import lab_callback, refused
from specviz.app.fields import lab_field, run_field
from specviz.labs.sampling_lab import figures, rejection

NO_MISTAKE = "none (the correct algorithm)"


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
    return text, figures.overlap_figure(vocab, target_probs, draft_probs)


@lab_callback
def step_view(vocab_text, target_text, draft_text, seed):
    vocab, target_probs, draft_probs, _ = _distributions(vocab_text, target_text, draft_text)
    seed = run_field("seed", seed)
    step = rejection.speculative_step(target_probs, draft_probs, torch.Generator().manual_seed(seed))
    return figures.step_figure(step, vocab), gr.update(value=seed + 1)


@lab_callback
def sample_view(vocab_text, target_text, draft_text, sample_count, mistake, seed):
    vocab, target_probs, draft_probs, _ = _distributions(vocab_text, target_text, draft_text)
    sample_count = lab_field("N samples", sample_count, 1, rejection.MAX_SAMPLES, whole=True)
    seed = run_field("seed", seed)
    if mistake not in (NO_MISTAKE, *rejection.MISTAKES):
        raise refused(f"The common mistake must be one of {', '.join(map(repr, [NO_MISTAKE, *rejection.MISTAKES]))}; "
                      f"got {mistake!r:.60}.")
    chosen = None if mistake == NO_MISTAKE else mistake
    counts = rejection.sample_many(target_probs, draft_probs, sample_count, torch.Generator().manual_seed(seed),
                                   mistake=chosen)
    predicted = rejection.exact_output_distribution(target_probs, draft_probs, chosen) if chosen else None
    statistic, dof, p_value = chi_square_test(counts, target_probs)
    total = sum(counts)
    tvd = total_variation([count / total for count in counts], target_probs)
    text = (f"{total:,} samples{'' if chosen is None else f' with the mistake: *{rejection.MISTAKES[chosen]}*'}: "
            f"χ² = {statistic:.1f} ({dof} dof), TVD to p **{tvd:.4f}** "
            f"(sampling noise ≈ {rejection.tvd_noise(target_probs, total):.4f}): "
            f"**{chi_square_verdict(p_value)}** (a p-value below {SIGNIFICANCE:g} says the output "
            "does not follow p).")
    return text, figures.histogram_figure(vocab, counts, target_probs, chosen, predicted)


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
        mistake = gr.Radio([("None: the correct algorithm", NO_MISTAKE), *rejection.mistake_choices()], value=NO_MISTAKE,
                           label="Common mistake: the sampler…")
        sample_button = gr.Button("Sample N", variant="primary")
    sample_text, histogram = gr.Markdown(), gr.Plot(label="Empirical distribution against p")
    fields = [vocab, target, draft]
    preset.change(load_preset, preset, [*fields, preset_note]).then(overlap_view, fields, [overlap_text, overlap_plot])
    for field in fields:
        field.submit(overlap_view, fields, [overlap_text, overlap_plot])
    step_button.click(step_view, [*fields, seed], [step_plot, seed])
    sample_button.click(sample_view, [*fields, sample_count, mistake, seed], [sample_text, histogram])
    return fields, [overlap_text, overlap_plot]


def build(demo: gr.Blocks, trace_state: gr.State, tab: gr.Tab) -> None:
    """The tab's contents (groups.LAB_TABS calls it inside its Tab); the first preset's overlap draws on page load."""
    inputs, outputs = sampling_tab()
    demo.load(overlap_view, inputs, outputs)
