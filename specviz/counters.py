"""A run in the counters that serving engines report, so a user can set specviz's figures beside their server's.

llama.cpp's server reports, per request, `draft_n` (draft tokens generated) and `draft_n_accepted` (of those,
accepted by the target). vLLM's speculative-decoding metrics count `num_drafts` (proposals: steps that drafted at
least one token), `num_draft_tokens`, `num_accepted_tokens` and `num_accepted_tokens_per_pos` (accepted tokens at
each draft position, over all drafts). The rates the engines derive from them, the draft acceptance rate and the
mean acceptance length, are defined with specviz's α and tokens per round in metrics.DEFINITIONS, and computed
by metrics.summarize; this module only gives them the engines' names.

>>> VOCABULARY[0]["specviz"]
'α (per-token acceptance rate)'
"""

from __future__ import annotations

from specviz.metrics import DEFINITIONS, summarize
from specviz.trace import Trace

VOCABULARY = [  # specviz's term, the engines' nearest counters, and how one becomes the other
    {"specviz": "α (per-token acceptance rate)", "llama.cpp": "–", "vLLM": "–",
     "relation": f"{DEFINITIONS['alpha'].formula}; the engines divide by all drafts (below), which is lower when "
                 "rounds stop at a rejection"},
    {"specviz": "drafted tokens", "llama.cpp": "draft_n", "vLLM": "num_draft_tokens", "relation": "equal"},
    {"specviz": "accepted tokens", "llama.cpp": "draft_n_accepted", "vLLM": "num_accepted_tokens",
     "relation": "equal"},
    {"specviz": DEFINITIONS["draft_acceptance_rate"].label, "llama.cpp": "draft_n_accepted ÷ draft_n",
     "vLLM": "draft acceptance rate", "relation": "equal"},
    {"specviz": "drafting rounds", "llama.cpp": "–", "vLLM": "num_drafts",
     "relation": "equal (an adaptive round of 0 drafts is a plain step, not a draft)"},
    {"specviz": DEFINITIONS["mean_acceptance_length"].label, "llama.cpp": "–", "vLLM": "mean acceptance length",
     "relation": DEFINITIONS["mean_acceptance_length"].formula.removesuffix(" (vLLM)")},
    {"specviz": DEFINITIONS["tokens_per_round"].label, "llama.cpp": "–", "vLLM": "–",
     "relation": f"{DEFINITIONS['tokens_per_round'].formula}: the mean acceptance length, with plain steps counted "
                 "as rounds"},
    {"specviz": "α per position", "llama.cpp": "–", "vLLM": "num_accepted_tokens_per_pos",
     "relation": "vLLM counts accepted tokens at each position; specviz divides by the drafts that reached it"},
]


def engine_counters(trace: Trace) -> dict:
    """The run in llama.cpp's and vLLM's counters (the names tools rely on), and the rates they derive."""
    metrics = summarize(trace)
    drafted, accepted = metrics.drafted_tokens, metrics.accepted_tokens
    return {
        "draft_n": drafted, "draft_n_accepted": accepted,  # llama.cpp's server
        "num_drafts": metrics.drafting_rounds, "num_draft_tokens": drafted, "num_accepted_tokens": accepted,  # vLLM
        "num_accepted_tokens_per_pos": list(metrics.accepted_per_position),
        "draft_acceptance_rate": metrics.draft_acceptance_rate,
        "mean_acceptance_length": metrics.mean_acceptance_length,
    }


def vocabulary_markdown() -> str:
    """VOCABULARY as a Markdown table (the app's and docs/engines.md's)."""
    lines = ["| specviz | llama.cpp server | vLLM | relation |", "|---|---|---|---|"]
    lines += [f"| {row['specviz']} | `{row['llama.cpp']}` | `{row['vLLM']}` | {row['relation']} |".replace("`–`", "–")
              for row in VOCABULARY]
    return "\n".join(lines)
