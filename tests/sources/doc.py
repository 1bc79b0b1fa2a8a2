"""docs/sources-checked.md: every figure the app quotes from its source documents, checked against specviz's code.

`python -m tests.sources.doc` writes it; tests/test_seed_table.py checks that it is current. The document lives in
docs/, out of the app: it audits the sources specviz was written from, which students never read.
"""

from pathlib import Path

from tests.sources.checks import seed_report_markdown
from tests.sources.rows import SEED_ROWS
from tests.sources.rows_course import COURSE_ROWS

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "sources-checked.md"
# In the sources' order; within one, the other tabs' figures first, then the course's in its order (sorted is stable)
SHOWN_ROWS = sorted(SEED_ROWS + COURSE_ROWS, key=lambda row: row.seed)
INTRO = (
    "# The sources, checked\n\n"
    "specviz was written from five documents: three articles (*Accelerating LLM Inference: Speculative Decoding*, a "
    "short explainer; *Speculative decoding for LLM inference*, a blog post on memory bandwidth and Chen et al.'s "
    "algorithm; *Implementing LLM Speculative Sampling in Under 100 Lines of Code*, with measured speedups), an "
    "overview of batched verification, and the seven-lesson course *Fast Inference from Transformers via "
    "Speculative Decoding*. They are wrong in places.\n\n"
    "Each row is one figure the app quotes: a short quote that finds it in its source, the figure as the source "
    "prints it, and the value specviz computes with the same function the app shows it with. ✓ means the source's "
    "figure is the correct value at the precision it prints (161 for 161.2 is right; 2.12 for 2.1288 is not). A ✗ "
    "row gives the arithmetic that settles it. The course's exercises print no answer: their rows show — and "
    "specviz's answer, which the app's *Course exercises* tab works step by step.\n\n"
    "Written by `python -m tests.sources.doc`; `tests/test_seed_table.py` checks that it is current.\n\n"
)


def document() -> str:
    return INTRO + seed_report_markdown(SHOWN_ROWS) + "\n"


if __name__ == "__main__":
    DOCUMENT.write_text(document(), encoding="utf-8")
    print(f"wrote {DOCUMENT} ({len(SHOWN_ROWS)} rows)")
