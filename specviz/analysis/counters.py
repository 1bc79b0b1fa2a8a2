"""A run in the counters that serving engines report, so a user can set specviz's figures beside their server's.

llama.cpp's server reports, per request, `draft_n` (draft tokens generated) and `draft_n_accepted` (of those,
accepted by the target). vLLM's speculative-decoding metrics count `num_drafts` (proposals: steps that drafted at
least one token), `num_draft_tokens`, `num_accepted_tokens` and `num_accepted_tokens_per_pos` (accepted tokens at
each draft position, over all drafts). The rates the engines derive from them, the draft acceptance rate and the
mean acceptance length, are defined with specviz's α and tokens per round in metrics.DEFINITIONS, and computed
by metrics.summarize; this module only gives them the engines' names.

Token trees (tree_metrics.py) are counted differently by each (TREE_VOCABULARY). vLLM puts every node of the tree in
`num_draft_tokens` (a tree's speculative tokens are its nodes) and the accepted path in `num_accepted_tokens`, so its
acceptance rate falls as the tree widens while tokens per round rise. llama.cpp's server drafts chains only; its
speculative example (examples/speculative, branching with -np > 1 and --draft-p-split) adds one to `n_drafted` per
batched draft step, that is per depth level whatever the branches (in the source read, commit e9cbdd6), and one to
`n_accept` per accepted token; with one branch that is one per drafted token.

>>> VOCABULARY[0]["specviz"]
'α (per-token acceptance rate)'
"""

from __future__ import annotations

from specviz.analysis.metrics import DEFINITIONS, summarize
from specviz.analysis.tree_metrics import summarize_tree
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


TREE_VOCABULARY = [  # the same for a run whose rounds drafted token trees
    {"specviz": "drafted nodes", "llama.cpp": "n_drafted", "vLLM": "num_draft_tokens",
     "relation": "vLLM counts every node of the tree; llama.cpp's speculative example counts draft steps, one per "
                 "depth level however many branches, so its n_drafted is the trees' depths summed"},
    {"specviz": "accepted path length", "llama.cpp": "n_accept", "vLLM": "num_accepted_tokens",
     "relation": "equal: the accepted path's drafted tokens, the correction or bonus left out"},
    {"specviz": DEFINITIONS["draft_acceptance_rate"].label, "llama.cpp": "n_accept ÷ n_drafted",
     "vLLM": "draft acceptance rate", "relation": "vLLM: accepted ÷ drafted nodes, which falls as the tree widens while "
                                                 "tokens per round rise; llama.cpp's example: accepted ÷ depth levels"},
    {"specviz": DEFINITIONS["alpha_tree"].label, "llama.cpp": "–", "vLLM": "–",
     "relation": f"{DEFINITIONS['alpha_tree'].formula}: near llama.cpp's example rate, which divides by the levels "
                 "drafted rather than tested"},
    {"specviz": DEFINITIONS["mean_acceptance_length"].label, "llama.cpp": "–", "vLLM": "mean acceptance length",
     "relation": "1 + accepted path ÷ drafting rounds: the tree's width does not dilute it"},
    {"specviz": DEFINITIONS["acceptance_by_depth"].label, "llama.cpp": "–", "vLLM": "num_accepted_tokens_per_pos",
     "relation": "vLLM counts accepted tokens at each depth and divides by all drafts; specviz by the rounds that "
                 "tested that depth"},
]


def engine_counters(trace: Trace) -> dict:
    """The run in llama.cpp's and vLLM's counters (the names tools rely on), and the rates they derive; a tree run
    adds its drafted nodes, its accepted path length, and llama.cpp's speculative example's n_drafted (depth levels
    drafted) and n_accept (accepted path tokens)."""
    metrics = summarize(trace)
    drafted, accepted = metrics.drafted_tokens, metrics.accepted_tokens
    counts = {
        "draft_n": drafted, "draft_n_accepted": accepted,  # llama.cpp's server
        "num_drafts": metrics.drafting_rounds, "num_draft_tokens": drafted, "num_accepted_tokens": accepted,  # vLLM
        "num_accepted_tokens_per_pos": list(metrics.accepted_per_position),
        "draft_acceptance_rate": metrics.draft_acceptance_rate,
        "mean_acceptance_length": metrics.mean_acceptance_length,
    }
    tree = summarize_tree(trace)
    if tree.is_tree:  # drafted above = the trees' nodes (vLLM's count); llama.cpp's example counts depth levels
        counts.update(n_drafted=tree.draft_levels, n_accept=tree.accepted_tokens, drafted_nodes=tree.drafted_nodes,
                      accepted_path_length=tree.accepted_tokens)
    return counts


def vocabulary_markdown(rows: list[dict] = VOCABULARY) -> str:
    """VOCABULARY (or TREE_VOCABULARY) as a Markdown table (the app's and docs/engines.md's)."""
    engine = "llama.cpp server" if rows is VOCABULARY else "llama.cpp speculative example"
    lines = [f"| specviz | {engine} | vLLM | relation |", "|---|---|---|---|"]
    lines += [f"| {row['specviz']} | `{row['llama.cpp']}` | `{row['vLLM']}` | {row['relation']} |".replace("`–`", "–")
              for row in rows]
    return "\n".join(lines)
