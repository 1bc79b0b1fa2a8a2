"""The "Glossary" tab: every term the page uses, defined once, and the same counts in llama.cpp's and vLLM's words,
with where the quoted figures come from."""

from __future__ import annotations

import gradio as gr

from specviz.analysis.counters import vocabulary_markdown
from specviz.labs import glossary

SOURCES_NOTE = (
    "### Where the figures come from\n\nspecviz was written from three articles (*Accelerating LLM Inference: "
    "Speculative Decoding*; *Speculative decoding for LLM inference*; *Implementing LLM Speculative Sampling in "
    "Under 100 Lines of Code*), an overview of batched verification, and the course *Fast Inference from "
    "Transformers via Speculative Decoding*. Every figure the app quotes from them is checked against specviz's own "
    "code in `docs/sources-checked.md`, with the arithmetic wherever a source is wrong.")


def build(demo: gr.Blocks, trace_state: gr.State, tab: gr.Tab) -> None:
    gr.Markdown(glossary.glossary_markdown(), elem_id="sv-glossary")
    gr.Markdown("### Engine vocabulary: specviz's figures in llama.cpp's and vLLM's counters\n\n"
                "A run's stats panel and `generate --json` (`engine_counters`) give these counts, to set beside your "
                "server's.\n\n" + vocabulary_markdown())
    gr.Markdown(SOURCES_NOTE)
