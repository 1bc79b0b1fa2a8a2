"""A run in the counters that serving engines report, so a user can set specviz's figures beside their server's.

llama.cpp's server reports, per request, `draft_n` (draft tokens generated) and `draft_n_accepted` (of those,
accepted by the target). vLLM's speculative-decoding metrics count `num_drafts` (proposals: steps that drafted at
least one token), `num_draft_tokens`, `num_accepted_tokens` and `num_accepted_tokens_per_pos` (accepted tokens at
each draft position, over all drafts). From those the engines derive their headline rates:

    draft acceptance rate  = num_accepted_tokens / num_draft_tokens  (llama.cpp: draft_n_accepted / draft_n)
    mean acceptance length = 1 + num_accepted_tokens / num_drafts    (vLLM; tokens a drafting step yields)

specviz's α differs from the draft acceptance rate: it divides by the drafts that were *tested*, since a draft
after a rejection is never looked at, so it is the per-token probability the theory's E = (1 − α^(γ+1))/(1 − α)
needs. The acceptance rate divides by every drafted token, so it is lower whenever rounds end early.

>>> VOCABULARY[0]["specviz"]
'α (per-token acceptance rate)'
"""

from __future__ import annotations

from specviz.trace import ACCEPTED, Trace

VOCABULARY = [  # specviz's term, the engines' nearest counters, and how one becomes the other
    {"specviz": "α (per-token acceptance rate)", "llama.cpp": "–", "vLLM": "–",
     "relation": "accepted ÷ tested drafts; the engines divide by all drafts (below), which is lower when rounds "
                 "stop at a rejection"},
    {"specviz": "drafted tokens", "llama.cpp": "draft_n", "vLLM": "num_draft_tokens", "relation": "equal"},
    {"specviz": "accepted tokens", "llama.cpp": "draft_n_accepted", "vLLM": "num_accepted_tokens",
     "relation": "equal"},
    {"specviz": "accepted ÷ drafted", "llama.cpp": "draft_n_accepted ÷ draft_n",
     "vLLM": "draft acceptance rate", "relation": "equal"},
    {"specviz": "rounds that drafted", "llama.cpp": "–", "vLLM": "num_drafts",
     "relation": "equal (an adaptive round of 0 drafts is a plain step, not a draft)"},
    {"specviz": "acceptance length", "llama.cpp": "–", "vLLM": "mean acceptance length",
     "relation": "1 + accepted ÷ rounds that drafted"},
    {"specviz": "tokens per round", "llama.cpp": "–", "vLLM": "–",
     "relation": "generated tokens ÷ target calls: the acceptance length, with plain steps counted as rounds"},
    {"specviz": "α per position", "llama.cpp": "–", "vLLM": "num_accepted_tokens_per_pos",
     "relation": "vLLM counts accepted tokens at each position; specviz divides by the drafts that reached it"},
]


def engine_counters(trace: Trace) -> dict:
    """The run in llama.cpp's and vLLM's counters (the names tools rely on), and the rates they derive."""
    gamma = int(trace.config["gamma"])
    drafted = sum(round_.drafted for round_ in trace.rounds)
    accepted = sum(round_.accepted for round_ in trace.rounds)
    drafts = sum(1 for round_ in trace.rounds if round_.drafted > 0)
    per_position = [0] * gamma
    for round_ in trace.rounds:
        for token in round_.tokens:
            if token.kind == ACCEPTED:
                per_position[token.position - 1] += 1
    return {
        "draft_n": drafted, "draft_n_accepted": accepted,  # llama.cpp's server
        "num_drafts": drafts, "num_draft_tokens": drafted, "num_accepted_tokens": accepted,  # vLLM
        "num_accepted_tokens_per_pos": per_position,
        "draft_acceptance_rate": accepted / drafted if drafted else None,
        "mean_acceptance_length": 1 + accepted / drafts if drafts else None,
    }


def vocabulary_markdown() -> str:
    """VOCABULARY as a Markdown table (the app's and docs/engines.md's)."""
    lines = ["| specviz | llama.cpp server | vLLM | relation |", "|---|---|---|---|"]
    lines += [f"| {row['specviz']} | `{row['llama.cpp']}` | `{row['vLLM']}` | {row['relation']} |".replace("`–`", "–")
              for row in VOCABULARY]
    return "\n".join(lines)
