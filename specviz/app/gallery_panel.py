"""The live tab's gallery: real runs recorded where the Qwen2.5-Coder pair is installed (specviz/gallery.py),
each opened in one click with no model, into the same views a live run fills. Opening one skips the queue
(queue=False): it loads a file and draws it, so a class waiting behind others' runs still sees real rejections."""

from __future__ import annotations

import functools

import gradio as gr

from specviz import gallery
from specviz.app.views import views


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
    """The live views of one recorded run, its title, what to look at and its provenance on the status line."""
    view = views(entry.trace())
    view.status, view.download = f"**{entry.title}**: {entry.about}. *{entry.caption()}.*", None
    return (*view.values(), None)  # and no Step session: the next Step starts afresh


def wire_gallery(buttons: list[tuple[gr.Button, gallery.Entry]], outputs: list, step_state: gr.State) -> None:
    for button, entry in buttons:
        button.click(functools.partial(open_entry, entry), None, [*outputs, step_state], queue=False)
