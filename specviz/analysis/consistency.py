"""Does a trace hold together? Every check a loaded trace must pass before anything of it is drawn, with no model.

A trace is data a user may edit. The page teaches the acceptance test from it, so a file whose numbers contradict
themselves must be refused, not drawn: a rejected token whose r lies below its acceptance probability would show a
false inequality in its panel. `inconsistency(trace)` names the first thing that disagrees, in one line, by round
(numbered from 1, as the rows are) and field; None when the trace holds together:

- each tested draft: the token, text, parent and depth of the node it names; r in [0, 1); its acceptance probability
  min(1, p(x)/(l·q(x))) from its own p and q where it was its parent's first child tested (a later sibling is tested
  against the residual of those before it, which the trace does not keep); the verdict r < that probability;
- each round: the accepted count and the accepted path; a chain tested up to its first rejection; a correction where
  the last test failed, drawn where the residual has mass (p(x) > q(x) after one rejection at a position), a bonus
  where the path's last node has no children; a greedy round's correction or bonus the target's argmax (p = 1); its
  uniform where inverse-CDF sampling would draw it, as far as the recorded top-10 tells;
- the run: its ids are the rounds' emitted ids, no more than max_new_tokens, and its text is theirs.

Replaying with the models (decoding/replay.py) checks more (the uniforms came from the seed, p and q from the
models); this needs none, so it runs on every load.
"""

from __future__ import annotations

import math
import re

from specviz.core.verify_tree import tree_depths
from specviz.trace import ACCEPTED, BONUS, CORRECTED, REJECTED, Round, Token, Trace

PROB_TOLERANCE = 1e-5  # on a recomputed acceptance probability: float32 arithmetic on the recorded float32 values
_TAG = re.compile(r"<[^<>\s]{1,40}>")  # a special token's text (<|im_end|>), which the run's text leaves out


class ContradictoryTrace(ValueError):
    """A trace whose records disagree with each other: refused before anything of it is drawn."""


def checked(trace: Trace) -> Trace:
    """The trace, if it holds together; else ContradictoryTrace naming the first round and field that disagree."""
    problem = inconsistency(trace)
    if problem is not None:
        raise ContradictoryTrace(f"the trace contradicts itself at {problem}")
    return trace


def inconsistency(trace: Trace) -> str | None:
    """The first disagreement in the trace, in one line ("round 3, tokens[1].uniform: …"); None when there is none."""
    lenience = float(trace.config.get("lenience", 1.0))
    greedy = float(trace.config.get("temperature", 0.0)) == 0
    emitted: list[Token] = []
    for order, round_ in enumerate(trace.rounds):
        where = f"round {order + 1}"
        if round_.index != order:
            return f"{where}, index: {round_.index}, where the rounds count from 0 in order ({order})"
        problem = _round_problem(round_, lenience, greedy, last=order == len(trace.rounds) - 1)
        if problem is not None:
            return f"{where}, {problem}"
        emitted += round_.emitted
    ids = [token.token_id for token in emitted]
    if trace.token_ids != ids:
        first = next((index for index, (a, b) in enumerate(zip(trace.token_ids, ids)) if a != b), min(len(ids),
                                                                                                     len(trace.token_ids)))
        return (f"token_ids: the run's token {first + 1} is {_at(trace.token_ids, first)}, the rounds emitted "
                f"{_at(ids, first)} there ({len(trace.token_ids)} ids against the rounds' {len(ids)})")
    limit = trace.config.get("max_new_tokens")
    if isinstance(limit, int) and len(ids) > limit:
        return f"token_ids: {len(ids)} tokens, more than the run's max_new_tokens of {limit}"
    if _letters(trace.text) != _letters("".join(token.text for token in emitted)):
        return "text: the run's text is not the text of the tokens its rounds emitted"
    return None


def _round_problem(round_: Round, lenience: float, greedy: bool, last: bool) -> str | None:
    drafted, parents = round_.draft_token_ids, round_.draft_parents
    if round_.drafted != len(drafted):
        return f"drafted: {round_.drafted}, but the round lists {len(drafted)} drafted tokens"
    if len(parents) != len(drafted) or len(round_.draft_texts) != len(drafted):
        return (f"draft_parents, draft_texts: {len(parents)} parents and {len(round_.draft_texts)} texts for "
                f"{len(drafted)} drafted tokens")
    if any(not -1 <= parent < node for node, parent in enumerate(parents)):
        return "draft_parents: a node's parent must be an earlier node or -1"
    depths = tree_depths(parents)
    tested = [token for token in round_.tokens if token.kind in (ACCEPTED, REJECTED)]
    finals = [token for token in round_.tokens if token.kind in (CORRECTED, BONUS)]
    if round_.tokens[: len(tested)] != tested or len(finals) > 1:
        return "tokens: the tested drafts come first, then at most one correction or bonus"
    seen: set[int] = set()
    first_tested: set[int] = set()  # parents one of whose children has been tested
    path: list[int] = []
    for order, token in enumerate(tested):
        field = f"tokens[{order}]"
        node = token.node
        if node is None or not 0 <= node < len(drafted) or node in seen:
            return f"{field}.node: {node} is not a drafted node tested once"
        seen.add(node)
        if token.token_id != drafted[node]:
            return f"{field}.token_id: {token.token_id}, but node {node} drafted {drafted[node]}"
        if token.text != round_.draft_texts[node]:
            return f"{field}.text: {token.text!r}, but node {node}'s text is {round_.draft_texts[node]!r}"
        if token.parent != parents[node] or token.position != depths[node]:
            return (f"{field}: parent {token.parent} at position {token.position}, where node {node} has parent "
                    f"{parents[node]} at depth {depths[node]}")
        if token.parent != (path[-1] if path else -1):
            return f"{field}.parent: node {node} was tested off the accepted path"
        problem = _test_problem(token, lenience, first=token.parent not in first_tested)
        if problem is not None:
            return f"{field}.{problem}"
        first_tested.add(token.parent)
        if token.kind == ACCEPTED:
            path.append(node)
    if round_.accepted != len(path):
        return f"accepted: {round_.accepted}, but {len(path)} of its tokens are marked accepted"
    if not round_.is_tree and [token.node for token in tested] != list(range(min(len(path) + 1, len(drafted)))):
        return "tokens: a chain is tested in order, up to its first rejection"
    if not finals:
        return None if last else "tokens: only the last round may end without a correction or bonus"
    return _final_problem(round_, finals[0], tested, path, greedy, f"tokens[{len(tested)}]")


def _test_problem(token: Token, lenience: float, first: bool) -> str | None:
    """What is wrong with one tested draft's numbers ("uniform: …"), or None."""
    for name in ("target_prob", "draft_prob", "uniform", "accept_prob", "overlap"):
        value = getattr(token, name)
        if value is None:
            return f"{name}: missing on a tested draft"
        if not 0 <= value <= 1 or (name == "uniform" and value == 1):
            return f"{name}: {value!r} is not a probability"
    if first and token.draft_prob > 0:  # tested against p itself: min(1, p/(l·q)) from its own numbers
        expected = min(1.0, token.target_prob / (lenience * token.draft_prob))
        if not math.isclose(token.accept_prob, expected, rel_tol=PROB_TOLERANCE, abs_tol=PROB_TOLERANCE):
            return (f"accept_prob: {token.accept_prob:.6g}, but min(1, p/q) from its p = {token.target_prob:.6g} and "
                    f"q = {token.draft_prob:.6g} is {expected:.6g}")
    passed = token.uniform < token.accept_prob
    if passed != (token.kind == ACCEPTED):
        relation = "below" if passed else "not below"
        return (f"uniform: r = {token.uniform:.6g} is {relation} its acceptance probability {token.accept_prob:.6g}, "
                f"yet the token is marked {token.kind}")
    return None


def _final_problem(round_: Round, final: Token, tested: list[Token], path: list[int], greedy: bool,
                   field: str) -> str | None:
    """What is wrong with the round's correction or bonus, or None."""
    parent = path[-1] if path else -1
    if final.parent != parent or final.position != len(path) + 1:
        return f"{field}: a {final.kind} token at position {final.position} after node {final.parent}, not after the " \
               f"accepted path (node {parent}, position {len(path) + 1})"
    if round_.next_uniform is None or not 0 <= round_.next_uniform < 1:
        return f"next_uniform: {round_.next_uniform!r} is not the uniform a {final.kind} token is drawn with"
    if not 0 < final.target_prob <= 1:
        return f"{field}.target_prob: {final.target_prob!r}: the target gives the {final.kind} token no probability"
    if greedy and final.target_prob != 1:
        return f"{field}.target_prob: {final.target_prob!r}, where a greedy run's {final.kind} token is the argmax (p = 1)"
    # Inverse CDF over token ids (core/sampling.sample_with_uniform): the uniform lies past every listed token of a
    # lower id and short of every listed token of a higher id, in the distribution it was drawn from (the residual's
    # top-10 for a correction, p's for a bonus; the whole of it where the vocabulary has at most ten tokens).
    drawn_from = final.residual_top if final.kind == CORRECTED else final.target_top
    below = sum(top.prob for top in drawn_from if top.token_id < final.token_id)
    above = sum(top.prob for top in drawn_from if top.token_id > final.token_id)
    if drawn_from and not below - PROB_TOLERANCE <= round_.next_uniform < 1 - above + PROB_TOLERANCE:
        return (f"next_uniform: {round_.next_uniform:.6g} cannot have drawn token {final.token_id} by inverse CDF: the "
                f"listed tokens below it hold {below:.6g} of the distribution, those above it {above:.6g}")
    children = [node for node, node_parent in enumerate(round_.draft_parents) if node_parent == parent]
    rejected_here = [token for token in tested if token.parent == parent and token.kind == REJECTED]
    if final.kind == BONUS and children:
        return f"{field}.kind: a bonus token after node {parent}, which has drafted children to test"
    if final.kind == CORRECTED:
        if not rejected_here or tested[-1] is not rejected_here[-1]:
            return f"{field}.kind: a correction where no draft was rejected last"
        if len(rejected_here) != len(children):
            return f"{field}.kind: a correction while node {parent} has children not yet tested"
        if len(rejected_here) == 1 and (final.draft_prob is None or not final.target_prob > final.draft_prob):
            return (f"{field}.token_id: {final.token_id} has p = {final.target_prob:.6g} ≤ q = {final.draft_prob}, "
                    "where norm(max(0, p − q)) gives it no probability")
    return None


def _letters(text: str) -> str:
    """A text's printable ASCII, special tokens' tags and spaces left out: what a token-by-token decode and a whole
    decode of the same ids share (a character split over byte tokens decodes as U+FFFD token by token)."""
    return "".join(character for character in _TAG.sub("", text) if "!" <= character <= "~")


def _at(ids: list[int], index: int) -> str:
    return str(ids[index]) if index < len(ids) else "nothing"
