"""The live tab's gallery: real runs recorded where the Qwen2.5-Coder pair is installed (specviz/gallery.py),
each opened in one click with no model, into the same views a live run fills. Opening one skips the queue
(queue=False): it loads a file and draws it, so a class waiting behind others' runs still sees real rejections."""

from __future__ import annotations

import functools

import gradio as gr

from specviz import gallery
from specviz.app.pair_menu import CUSTOM_PAIR, PAIRS, pair_help
from specviz.app.policy import current_policy
from specviz.app.request import RunRequest
from specviz.app.views import views
from specviz.models import split_gguf


def gallery_buttons() -> list[tuple[gr.Button, gallery.Entry]]:
    """An accordion of one button per shipped entry, in the entries' order; nothing where none ships."""
    found = gallery.entries()
    if not found:
        return []
    with gr.Accordion("Gallery: real runs, recorded (they open with no model)", open=True, elem_id="sv-gallery"):
        gr.Markdown("Real drafts and real rejections of real pairs, saved as traces with where, when and how they "
                    "were made. Each opens in the views here without loading a model.")
        return [(gr.Button(entry.title, size="sm", elem_id=f"sv-gallery-{entry.name}"), entry) for entry in found]


def open_entry(entry: gallery.Entry) -> tuple:
    """The live views of one recorded run, its title, what to look at and its provenance on the status line; and
    the controls set to its settings (pair, drafter, prompt, γ, T, seed and the rest), so that Run repeats it live,
    or says what to install where its models are missing (the status line says which)."""
    trace = entry.trace()
    request = RunRequest.from_config(trace.config, trace.prompt, compare=trace.baseline is not None)
    view = views(trace)
    models = (request.target, request.draft) if request.pair == CUSTOM_PAIR else PAIRS[request.pair]
    missing = split_gguf.first_missing(models)
    again = (f"To run it live, install its models: `{missing.install_command}`" if missing is not None
             else "**Run** repeats it live with these settings")
    view.status, view.download = f"**{entry.title}**: {entry.about}. *{entry.caption()}.* {again}.", None
    settings = dict(zip(RunRequest.field_names(), request.api_args()))
    settings["pair"] = gr.update(value=request.pair, info=pair_help(request.pair, current_policy(), request.target,
                                                                     request.draft, request.backend))
    # no Step session (the next Step starts afresh); the controls, in RunRequest's order; the Custom boxes shown or not
    return (*view.values(), None, *settings.values(), gr.update(visible=request.pair == CUSTOM_PAIR))


def wire_gallery(buttons: list[tuple[gr.Button, gallery.Entry]], outputs: list, step_state: gr.State,
                 controls: dict, custom_row: gr.Row) -> None:
    """Each button opens its entry into `outputs` and sets `controls` (RunRequest's fields, in their order)."""
    for button, entry in buttons:
        button.click(functools.partial(open_entry, entry), None,
                     [*outputs, step_state, *controls.values(), custom_row], queue=False)
