"""The Verification rules tab's cross-vocabulary case: a draft with another tokenizer, verified with the
renormalized q (exact) and with the draft's own q (the naïve mapping), on preset cases and any shared mass s."""

from __future__ import annotations

import gradio as gr

from specviz.app.callbacks import lab_callback, refused
from specviz.app.fields import lab_field
from specviz.labs.verification_rules import cross_vocab, cross_vocab_figures

TITLE = "Across tokenizers: why q must be renormalized"
SAMPLES = 20_000  # emissions sampled per rule for the χ² test (seed 0): a few milliseconds
LOWEST_SHARED_MASS = 0.05  # the slider's left end: s = 0 would leave the draft nothing to propose
TEXT = (
    "A draft with another tokenizer proposes only the tokens both vocabularies share, so if its own q_D puts mass "
    "**s** there, x is really drawn from q_D on those tokens divided by s; the rule's guarantee needs exactly that "
    "q, and given it the exact rule emits p at any s. The naïve mapping copies q_D(x) across instead: its q is too "
    "small by the factor s, so min(1, p/q) passes too often, the residual comes from the wrong q, and the output "
    "leans towards the draft. Slide s towards 1 and the naïve error vanishes: it is exact only when the draft loses "
    "nothing."
)


def _shared_mass(case: dict) -> float:
    return round(float(sum(case["q_draft_on_target"])), 4)


def _case(name) -> dict:
    if name not in cross_vocab.CASES:
        raise refused(f"Choose one of the cross-vocabulary cases, got {name!r:.60}.")
    return cross_vocab.CASES[name]


@lab_callback
def cross_vocab_view(name, shared_mass):
    """The case's figure and table with the draft's q rescaled to the shared mass s."""
    case = _case(name)
    shared_mass = lab_field("Shared mass s", shared_mass, LOWEST_SHARED_MASS, 1.0)
    q_own = cross_vocab.at_shared_mass(case["q_draft_on_target"], shared_mass)  # [V]
    outcomes = cross_vocab.cross_vocab_outcomes(case["target_probs"], q_own)
    chi_square = cross_vocab.chi_square_by_rule(case["target_probs"], q_own, samples=SAMPLES, seed=0)
    figure = cross_vocab_figures.cross_vocab_figure(case["target_probs"], q_own, case["tokens"], outcomes)
    return figure, cross_vocab_figures.cross_vocab_table(outcomes, chi_square, SAMPLES)


def case_shared_mass(name):
    """The slider moves to the chosen case's own s."""
    return gr.update(value=_shared_mass(_case(name)))


def cross_vocab_case() -> None:
    """The accordion, to be built at the end of the Verification rules tab (inside its `with gr.Tab`)."""
    first = next(iter(cross_vocab.CASES))
    with gr.Accordion(TITLE, open=False, elem_id="sv-cross-vocab"):
        gr.Markdown(TEXT)
        with gr.Row():
            case = gr.Dropdown(list(cross_vocab.CASES), value=first, label="Case (p and the draft's own q)")
            shared_mass = gr.Slider(LOWEST_SHARED_MASS, 1.0, value=_shared_mass(cross_vocab.CASES[first]),
                                    step=0.01, label="Shared mass s: the draft's own mass on tokens the target has")
        show = gr.Button("Compare the exact and the naïve rule", variant="primary")
        figure = gr.Plot(label="What each rule emits across tokenizers")
        table = gr.Markdown(elem_id="sv-cross-vocab-table")
    show.click(cross_vocab_view, [case, shared_mass], [figure, table], api_name="rules_cross_vocab")
    shared_mass.release(cross_vocab_view, [case, shared_mass], [figure, table])
    case.input(case_shared_mass, [case], [shared_mass], queue=False).then(
        cross_vocab_view, [case, shared_mass], [figure, table])
