"""Trace -> HTML: one row of tokens per round, as in Figure 1 of Leviathan et al. Every string is escaped.

Colour is never the only cue: rejected tokens are struck through, corrections carry a leading mark, bonus
tokens a trailing one, and a legend names each kind. Whitespace inside tokens is drawn (· for a space,
↵ for a newline, → for a tab) so that rows show the real token boundaries.

A token-tree round is drawn as a small tree (render_tree lays it out): its accepted path and then the correction or
bonus along the row, and under each depth the siblings tried there and rejected, or never tried, each with the count
of the drafted nodes below it that were never tested.
"""

from __future__ import annotations

import html

from specviz.analysis.metrics import target_doubt
from specviz.trace import ACCEPTED, BONUS, CORRECTED, REJECTED, Round, Token, Trace
from specviz.views.render_align import align_groups
from specviz.views.render_tree import Column, Turn, hidden_tooltip, tree_columns, turn_lines, untested_tooltip

KIND_LABELS = {ACCEPTED: "accepted draft", REJECTED: "rejected draft", CORRECTED: "correction from norm(max(0, p − q))",
               BONUS: "bonus token from p"}
LEGEND_HTML = (
    '<div class="sv-legend">'
    '<span class="sv-tok sv-accepted">accepted</span>'
    '<span class="sv-tok sv-rejected">rejected</span>'
    '<span class="sv-tok sv-corrected">corrected</span>'
    '<span class="sv-tok sv-bonus">bonus</span>'
    '<span class="sv-hint">tap or hover a token: p(x), q(x), r, min(1, p/q)</span>'
    '<label class="sv-shade-toggle" title="Shade each token by the target&#x27;s doubt at its position: 1 − the '
    'probability of its top choice there (untempered in a greedy run). Rejections gather where it is high.">'
    '<input type="checkbox" class="sv-shade-flip"/>shade by the target&#x27;s doubt</label>'
    "</div>"
)
VISIBLE_WHITESPACE = {" ": "·", "\n": "↵", "\t": "→", "\r": "␍"}


def visible_text(text: str) -> str:
    """Escaped token text with whitespace drawn. '<b> x\\n' -> '&lt;b&gt;<ws>·</ws>x<ws>↵</ws>'."""
    pieces = []
    for char in text:
        if char in VISIBLE_WHITESPACE:
            pieces.append(f'<span class="sv-ws">{VISIBLE_WHITESPACE[char]}</span>')
        else:
            pieces.append(html.escape(char))
    return "".join(pieces) or '<span class="sv-ws">∅</span>'


def token_tooltip(token: Token, turn: Turn | None = None) -> str:
    """The plain-text details shown on hover (escaped later as an attribute). turn: where a tree round's token
    was tested among its siblings (None in a chain); its test is then against P, the residual-updated target."""
    lines = [f"{KIND_LABELS[token.kind]} at position {token.position}", f"token {token.token_id}: {token.text!r}",
             f"p(x) = {token.target_prob:.4f}"]
    if turn is not None:
        lines[0:1] = turn_lines(token, turn)
    if token.draft_prob is not None:
        lines.append(f"q(x) = {token.draft_prob:.4f}")
    if token.uniform is not None:
        verdict = "<" if token.kind == ACCEPTED else "≥"
        ratio = "p/q" if turn is None else "P(x)/q(x)"
        lines.append(f"r = {token.uniform:.4f} {verdict} min(1, {ratio}) = {token.accept_prob:.4f}")
    if token.overlap is not None:
        lines.append(f"β = Σ min(p, q) = {token.overlap:.4f}")
    doubt = target_doubt(token)
    if doubt is not None:
        lines.append(f"the target's doubt here: 1 − its top choice's p = {doubt:.3f}")
    return "\n".join(lines)


def token_html(token: Token, round_index: int, turn: Turn | None = None) -> str:
    title = html.escape(token_tooltip(token, turn), quote=True)
    node = "" if token.node is None or turn is None else f' data-node="{token.node}"'
    doubt = target_doubt(token)
    shade = "" if doubt is None else f' style="--sv-doubt:{doubt:.3f}"'  # the legend's "shade by the target's doubt"
    # tabindex: a tap (a phone) or a click (a projector) focuses the token, and CSS shows data-details in a panel
    # at the foot of the screen until a tap elsewhere; title stays for a mouse's hover
    return (f'<span class="sv-tok sv-{token.kind}" title="{title}" data-details="{title}" tabindex="0" '
            f'data-round="{round_index}" data-position="{token.position}"{node}{shade}>{visible_text(token.text)}</span>')


def round_html(round_: Round) -> str:
    if round_.is_tree:
        return tree_round_html(round_)
    if round_.draft_own_texts:
        return aligned_round_html(round_)
    tokens = "".join(token_html(token, round_.index) for token in round_.tokens)
    untested = round_.draft_texts[len([t for t in round_.tokens if t.kind in (ACCEPTED, REJECTED)]):]
    skipped = "".join(f'<span class="sv-tok sv-untested" title="drafted, never tested">{visible_text(text)}</span>'
                      for text in untested)
    label = f"{round_.index + 1}" if round_.drafted == 0 else f"{round_.index + 1} · {round_.accepted}/{round_.drafted}"
    return f'<div class="sv-row"><span class="sv-label">{label}</span>{tokens}{skipped}{lone_token_note(round_)}</div>'


def tree_round_html(round_: Round) -> str:
    """A tree round: one column per depth, the path's token on top and the other siblings hanging under it."""
    label = (f'<span class="sv-label sv-tree-label" title="a token tree: {round_.accepted} accepted along one path '
             f'of the {round_.drafted} drafted nodes">{round_.index + 1} · path {round_.accepted} of '
             f'{round_.drafted} nodes</span>')
    return f'<div class="sv-row">{label}{"".join(_column_html(c, round_) for c in tree_columns(round_))}</div>'


def aligned_round_html(round_: Round) -> str:
    """A draft of another tokenizer: its own pieces (top) over the target tokens they became (bottom), joined where
    they cover the same characters; the verdicts colour the target's tokens; then the correction or bonus."""
    tested = [token for token in round_.tokens if token.kind in (ACCEPTED, REJECTED)]
    chips = [token_html(tested[j], round_.index) if j < len(tested) else
             f'<span class="sv-tok sv-untested" title="drafted, never tested">{visible_text(text)}</span>'
             for j, text in enumerate(round_.draft_texts)]
    groups = []
    for group in align_groups(round_.draft_own_texts, round_.draft_texts):
        own = "".join(f'<span class="sv-tok sv-own">{visible_text(round_.draft_own_texts[i])}</span>' for i in group.own)
        target = "".join(chips[j] for j in group.target) or (
            '<span class="sv-note" title="held back: these pieces could still merge with what the draft writes next, '
            'so they become target tokens in a later round">held back</span>')
        groups.append(f'<span class="sv-align"><span class="sv-align-own">{own}</span>'
                      f'<span class="sv-align-target">{target}</span></span>')
    after = "".join(token_html(token, round_.index) for token in round_.tokens if token.kind in (CORRECTED, BONUS))
    label = f"{round_.index + 1} · {round_.accepted}/{round_.drafted}"
    shared = (f"; the draft's mass on tokens both vocabularies hold: {sum(round_.shared_mass) / len(round_.shared_mass):.1%}"
              " (mean over its draft steps)" if round_.shared_mass else "")
    title = html.escape(f"top: the draft's own tokens; bottom: the target tokens they became{shared}", quote=True)
    return (f'<div class="sv-row sv-aligned" title="{title}"><span class="sv-label">{label}</span>{"".join(groups)}'
            f'{after}{lone_token_note(round_)}</div>')


def _column_html(column: Column, round_: Round) -> str:
    top = "" if column.token is None else token_html(column.token, round_.index, column.turn)
    branches = []
    for branch in column.branches:
        if branch.token is not None:  # tried and rejected
            chip = token_html(branch.token, round_.index, branch.turn)
        else:
            title = html.escape(untested_tooltip(branch, column), quote=True)
            chip = (f'<span class="sv-tok sv-untested" title="{title}" data-round="{round_.index}" '
                    f'data-position="{branch.turn.depth}" data-node="{branch.node}">{visible_text(branch.text)}</span>')
        if branch.hidden:
            title = html.escape(hidden_tooltip(branch, round_.draft_texts), quote=True)
            chip += f'<span class="sv-tok sv-untested sv-hidden-count" title="{title}">+{len(branch.hidden)}</span>'
        branches.append(f'<span class="sv-branch">{chip}</span>')
    hanging = f'<span class="sv-branches">{"".join(branches)}</span>' if branches else ""
    return f'<span class="sv-depth" data-depth="{column.turn.depth}">{top}{hanging}</span>'


def lone_token_note(round_: Round) -> str:
    """Why a round that drafted nothing shows one token: round 1 reads the prompt (a draft that continues from the
    target's cache has nothing to start from yet), so its token is the target's own pick; later, a plain step."""
    if round_.drafted:
        return ""
    if round_.index == 0:
        text, why = ("prompt read: the target's first token", "Round 1: the target reads the prompt and picks the "
                     "first token itself; the drafter starts from what the target has read, so it drafts from round 2.")
    else:
        text, why = "nothing drafted: the target's own token", "A plain step: the drafter proposed nothing this round."
    return f'<span class="sv-note" title="{html.escape(why, quote=True)}">{text}</span>'


def rows_html(trace: Trace | None, last: int | None = None) -> str:
    """The legend, then all rounds as rows (the newest `last` when given).

    There is no wrapper element (the page styles the component by its id): while a run streams, each update is
    then the previous one plus new rows, and Gradio sends only the appended rows instead of the whole history.
    """
    if trace is None or not trace.rounds:
        return (f'{LEGEND_HTML}<div class="sv-empty">No run yet: press Run (or Step, one round at a time); example '
                'prompts are under Settings.</div>')
    rounds = trace.rounds if last is None else trace.rounds[-last:]
    hidden = len(trace.rounds) - len(rounds)
    note = f'<div class="sv-more">… {hidden} earlier rounds</div>' if hidden else ""
    hints = f"{tree_hint_html(trace)}{cross_hint_html(trace)}{templated_prompt_html(trace)}"
    return f'{LEGEND_HTML}{hints}{note}{"".join(round_html(r) for r in rounds)}'


def tree_hint_html(trace: Trace) -> str:
    """How to read a tree round, under the legend of a tree run (from its first update, so streaming appends)."""
    if not trace.config.get("tree") and not any(round_.is_tree for round_ in trace.rounds):
        return ""
    return ('<div class="sv-hint sv-tree-hint">tree rounds: the accepted path runs along the row; rejected siblings '
            'hang under the depth they were tried at (untried ones greyed); “+n”: the drafted nodes below one, never '
            'tested</div>')


def cross_hint_html(trace: Trace) -> str:
    """How to read a round drafted in another tokenizer (from the first round that has one)."""
    if not any(round_.draft_own_texts for round_ in trace.rounds):
        return ""
    return ('<div class="sv-hint sv-cross-hint">a draft of another tokenizer: in each round its own tokens (grey, '
            'top) are joined to the target tokens they became (bottom) where both cover the same characters; the '
            'verdicts apply to the target\'s tokens</div>')


def templated_prompt_html(trace: Trace) -> str:
    """Everything the target reads before the first round, collapsed: the chat template and its system prompt
    too, so that a first round copying from hidden text is no mystery."""
    if not trace.templated_prompt:
        return ""
    return ('<details class="sv-prompt"><summary>What the model reads: the prompt as templated, '
            f'{trace.prompt_token_count} tokens</summary><pre>{html.escape(trace.templated_prompt)}</pre></details>')


def final_text_html(trace: Trace | None) -> str:
    """The escaped text (append-only while streaming, like the rows; the page keeps its whitespace)."""
    return "" if trace is None else html.escape(trace.text)
