"""The "You are the drafter" tab: the student proposes tokens, the real offline target verifies them."""

from __future__ import annotations

import html

import gradio as gr

from specviz.app import worker
from specviz.app.callbacks import load_pipeline, quiet_refusals, refused
from specviz.app.fields import run_field
from specviz.app.policy import current_policy
from specviz.config import DecodeConfig, DrafterSpec, check_prompt
from specviz.decoding.pipeline import encode_prompt
from specviz.labs import you_are_the_drafter
from specviz.models.presets import offline_drafter
from specviz.views.render import KIND_LABELS, visible_text

INTRO = ("Be the draft model. Pick the token you think comes next (or type a few words), and the real target "
         "verifies your proposal with the exact rule. You are certain, so your q is one-hot and your token passes "
         "with probability p(x): even the target's favourite passes only with max p. A rejection draws the correction "
         "from norm(max(0, p − q)), which is p without your token. Beside your acceptance rate: the real draft's "
         "mean overlap β̄, the mean of β = Σ min(p, q) at the same places, which hedges where you cannot.")


def _pipeline():
    draft = DrafterSpec.parse(offline_drafter()).without_lookup()  # the model: every proposal is the student's
    return load_pipeline(DecodeConfig(draft=str(draft), chat=True, system_prompt=""))


def start(prompt, temperature):
    try:
        check_prompt(prompt, current_policy().max_prompt_chars)
    except ValueError as error:
        raise refused(f"{str(error)[:1].upper()}{str(error)[1:]}.") from None
    temperature = run_field("temperature", temperature)  # the live tab's range and sentence
    pipeline = _pipeline()
    ids = encode_prompt(pipeline.tokenizer, prompt, True, "")
    game = you_are_the_drafter.Game(context_ids=ids, prompt_length=len(ids), temperature=temperature)
    return (game, *_views(pipeline, game))


def play(game, choice, typed):
    if game is None:
        raise gr.Error("Press Start first.")
    pipeline = _pipeline()
    if typed and typed.strip():
        proposal = pipeline.tokenizer(typed, add_special_tokens=False)["input_ids"][: you_are_the_drafter.MAX_PROPOSAL]
    elif choice is not None:
        proposal = [int(choice)]
    else:
        raise gr.Error("Pick a token, or type a few words to propose.")
    if not proposal:
        raise gr.Error("That text has no tokens to propose.")
    try:
        worker.call(you_are_the_drafter.propose, pipeline, game, proposal)
    except ValueError as error:
        raise gr.Error(f"{str(error)[:1].upper()}{str(error)[1:]}.") from None
    return (game, *_views(pipeline, game), "")


def _views(pipeline, game):
    options = worker.call(you_are_the_drafter.choices, pipeline, game)
    picker = gr.update(choices=[(repr(text), str(token)) for token, text, _ in options], value=None)
    return picker, _rows_html(pipeline, game), _score(game)


def _rows_html(pipeline, game) -> str:
    """One row per proposal, with the live rows' chips (render.py's classes, spaces drawn as ·): the tested tokens,
    the correction or bonus, then in grey the rest of the proposal, which was never tested."""
    text = pipeline.tokenizer.decode(game.context_ids[game.prompt_length:])
    return (f'<div id="sv-you-text"><b>So far:</b> {html.escape(text) or "(nothing yet)"}</div>'
            + "".join(proposal_row_html(number, entry) for number, entry in enumerate(game.history, 1)))


def proposal_row_html(number: int, entry: dict) -> str:
    """One proposal as a row of chips (escaped): tested tokens, the closing token, then the untested rest."""
    chips = []
    for token in entry["tokens"]:
        title = f"{KIND_LABELS[token['kind']]}: p(x) = {token['p']:.3f}" + (f", r = {token['r']:.3f}" if "r" in token else "")
        chips.append(f'<span class="sv-tok sv-{token["kind"]}" title="{html.escape(title, quote=True)}">'
                     f'{visible_text(token["text"])}</span>')
    chips += [f'<span class="sv-tok sv-untested" title="proposed after the rejection, never tested">'
              f'{visible_text(token["text"])}</span>' for token in entry.get("untested", [])]
    return f'<div class="sv-row"><span class="sv-label">{number}</span>{"".join(chips)}</div>'


def _score(game) -> str:
    if not game.tested:
        return "Your acceptance rate will appear here after your first proposal."
    last = game.history[-1]["tokens"]
    tested = [t for t in last if t["kind"] in ("accepted", "rejected")]
    steps = " · ".join(f"{t['text']!r}: p = {t['p']:.3f}, r = {t['r']:.3f} → {t['kind']}" for t in tested)
    yours = f"**Your acceptance rate = {game.alpha:.3f}** ({game.accepted}/{game.tested} proposed tokens accepted)"
    drafter = ("" if game.drafter_alpha is None else
               f" · **the real draft's mean overlap β̄ = {game.drafter_alpha:.3f}** (the mean of β = Σ min(p, q) at the same "
               f"{len(game.drafter_beta)} places)")
    return f"{yours}{drafter}\n\nLast proposal: {steps}; then {last[-1]['kind']} {last[-1]['text']!r}."


def you_draft_tab() -> None:
    gr.Markdown(INTRO)
    game = gr.State(None)
    with gr.Row():
        prompt = gr.Textbox("Finish the sentence in a few words: The capital of France is", label="Prompt", lines=1, scale=3)
        temperature = gr.Slider(0, 2, value=0.7, step=0.05, label="Temperature (0 = greedy)", scale=1)
        begin = gr.Button("Start", variant="primary", scale=1)
    picker = gr.Radio([], label="The target's 10 most likely next tokens (pick one)", elem_id="sv-you-picker")
    with gr.Row():
        typed = gr.Textbox(label="…or type your own proposal (up to 8 tokens)", scale=3)
        go = gr.Button("Propose", variant="primary", scale=1)
    rows = gr.HTML(elem_id="sv-you-rows")
    score = gr.Markdown(elem_id="sv-you-score")
    begin.click(quiet_refusals(start), [prompt, temperature], [game, picker, rows, score], api_name="you_draft_start")
    go.click(quiet_refusals(play), [game, picker, typed], [game, picker, rows, score, typed], api_name="you_draft_propose")


def build(demo: gr.Blocks, trace_state: gr.State, tab: gr.Tab) -> None:
    you_draft_tab()
