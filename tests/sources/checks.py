"""The seed table: every figure the app quotes from a seed document, checked against specviz's own code.

specviz was written from five seed texts (kept outside the package, in ``../shared/seeds/``). They are
wrong in places. Each :class:`SeedRow` names one figure: where it sits in the seed (a short quote), what the
seed prints, the function of specviz that computes the same quantity (the very one the app shows), the
correct value, whether the seed has it right, and, where it does not, the arithmetic that settles it.

The package never reads the seed texts: the quote check lives in the tests, which run where the seeds are.

The seed's figure is read by :func:`parse_seed_figure`, and :func:`figures_agree` says whether it is the correct
value as the seed rounds it: 2.12 is not 16.8244 / 7.9031 = 2.1288 (that prints as 2.13), 161 is 161.24.

>>> row = SeedRow(seed="003", where="a short quote", what="HBM bandwidth", seed_value="1935 GB/s",
...               specviz_value=lambda: 1555e9, expected=1555e9, agrees=False, settles="the datasheet says so")
>>> row.specviz_figure()
'1555 GB/s'
>>> print(*seed_table_markdown([row]).splitlines()[2].split(" | "), sep=chr(10))
| the overview of batched verification (article)
“a short quote”
HBM bandwidth
1935 GB/s
1555 GB/s
✗
the datasheet says so |
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# A value as a row holds it: a number, a token string, or a tuple of either (a distribution, a pair).
SeedValue = float | str | tuple

NO_FIGURE = "—"  # seed_value of an exercise whose answer the seed does not print: the row checks specviz's answer
UNITS = {"GB/s": 1e9, "TFLOPS": 1e12, "GB": 1e9, "MB": 1e6, "ms": 1e-3, "B": 1e9, "%": 0.01, "x": 1.0, "×": 1.0}
# Printed names and phrases, as the values specviz holds for them
ALIASES = {
    "GPT2-XLARGE": "openai-community/gpt2-xl",
    "GPT2-SMALL": "openai-community/gpt2",
    "accept if r > p(x)/q(x)": "accept when r is above p(x)/q(x)",
    "accept if r < p(x)/q(x)": "accept when r is below p(x)/q(x)",
    "reject if r > p(x)/q(x), otherwise accept": "accept when r is below p(x)/q(x)",
}
_NUMBER = re.compile(r"^(-?\d[\d,]*(?:\.\d+)?)\s*(" + "|".join(re.escape(unit) for unit in UNITS) + r")?$")


@dataclass(frozen=True)
class SeedRow:
    """One figure a seed prints, and what specviz computes for it."""

    seed: str  # which seed document: "000" .. "004" (its file is ../shared/seeds/<seed>_*.txt)
    where: str  # a short quote (a dozen words at most) that locates the figure in the seed's text
    what: str  # what the figure is, in a few words
    seed_value: str  # the figure exactly as the seed prints it; NO_FIGURE for an exercise the seed leaves unanswered
    specviz_value: Callable[[], SeedValue]  # specviz's own function for it, the one the app shows
    expected: SeedValue  # the correct value: what specviz_value() must return
    agrees: bool  # whether the seed's figure is right
    settles: str  # where they differ: the arithmetic that settles it, in plain words; "" when they agree

    def specviz_figure(self) -> str:
        """specviz's value, computed now and written in the unit the seed prints its figure in."""
        return format_value(self.specviz_value(), unit_of(self.seed_value))


def _figure_text(text: str) -> str:
    """The figure itself: what follows the last '=' ("1 − β = 0.1" -> "0.1"), trimmed."""
    return text.rsplit("=", 1)[-1].strip() if "=" in text else text.strip()


def unit_of(seed_value: str) -> str:
    """The unit a printed number carries ('' for none, for tuples and for words): '11.4 ms' -> 'ms'."""
    match = _NUMBER.match(_figure_text(seed_value))
    return (match.group(2) or "") if match else ""


def _parse_number(text: str) -> tuple[float, int] | None:
    """A printed number as (value in base units, decimals printed), or None: '1,555 GB/s' -> (1.555e12, 0)."""
    match = _NUMBER.match(text.strip())
    if not match:
        return None
    digits, unit = match.group(1).replace(",", ""), match.group(2) or ""
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits) * UNITS.get(unit, 1.0), decimals


def parse_seed_figure(seed_value: str) -> SeedValue | None:
    """The seed's printed figure as a value to compare: a number in base units, a tuple, or a string.

    >>> parse_seed_figure("11.4 ms"), parse_seed_figure("γ + 1 = 5"), parse_seed_figure("[0, 0.5, 0.5, 0]")
    (0.0114, 5.0, (0.0, 0.5, 0.5, 0.0))
    >>> parse_seed_figure("GPT2-XLARGE, GPT2-SMALL"), parse_seed_figure(NO_FIGURE)
    (('openai-community/gpt2-xl', 'openai-community/gpt2'), None)
    """
    text = seed_value.strip()
    if text in ("", NO_FIGURE):
        return None
    if text in ALIASES:
        return ALIASES[text]
    if text.startswith("[") and text.endswith("]"):
        return tuple(_parse_number(item)[0] for item in text[1:-1].split(","))
    number = _parse_number(_figure_text(text))
    if number is not None:
        return number[0]
    items = [item.strip() for item in text.split(",")]
    if len(items) > 1 and all(re.fullmatch(r"[\w-]+", item) for item in items):
        return tuple(ALIASES.get(item, item) for item in items)
    return text


def _same_as_printed(printed: str, value: float) -> bool:
    """Whether `value`, rounded as the seed rounds `printed`, is the printed number."""
    number = _parse_number(printed)
    if number is None:
        return False
    scale = UNITS.get(unit_of(printed), 1.0)
    return round(value / scale, number[1]) == round(number[0] / scale, number[1])


def figures_agree(seed_value: str, expected: SeedValue) -> bool:
    """Whether the seed's printed figure is the correct value to the precision the seed prints.

    >>> figures_agree("2.12x", 16.8244 / 7.9031), figures_agree("161", 161.24), figures_agree("161", 200.64)
    (False, True, False)
    >>> figures_agree("[1.0, 0.0, 0.0, 0.0]", (1.0, 0.0, 0.0, 0.0)), figures_agree("40MB", 21_233_664)
    (True, False)
    """
    parsed = parse_seed_figure(seed_value)
    if parsed is None:
        return False
    if isinstance(parsed, float):
        return isinstance(expected, int | float) and _same_as_printed(_figure_text(seed_value), float(expected))
    if isinstance(parsed, tuple) and seed_value.strip().startswith("["):
        items = seed_value.strip()[1:-1].split(",")
        return (isinstance(expected, tuple) and len(items) == len(expected)
                and all(_same_as_printed(item, value) for item, value in zip(items, expected)))
    return parsed == expected


def format_value(value: SeedValue, unit: str = "") -> str:
    """A value written compactly, in `unit` where given: floats to four significant figures, tuples in parentheses.

    >>> format_value(0.8000000001), format_value(161.0), format_value((0.5, "Japan")), format_value(0.01415, "ms")
    ('0.8', '161', '(0.5, Japan)', '14.15 ms')
    """
    if isinstance(value, tuple):
        return "(" + ", ".join(format_value(item) for item in value) + ")"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        separator = "" if unit in ("%", "x", "×", "B") else " "
        return f"{value / UNITS.get(unit, 1.0):.4g}" + (separator + unit if unit else "")
    return str(value)


SOURCES = {  # the source documents by their number, as a reader knows them: their titles
    "000": "*Accelerating LLM Inference: Speculative Decoding* (article)",
    "001": "*Speculative decoding for LLM inference* (blog post)",
    "002": "*Fast Inference from Transformers via Speculative Decoding* (course)",
    "003": "the overview of batched verification (article)",
    "004": "*Implementing LLM Speculative Sampling in Under 100 Lines of Code* (article)",
}
_MATH = re.compile(r"(\$[^$]+\$)")
_MARKDOWN = re.compile(r"([\\`*_\[\]<>#])")


def _quoted(text: str) -> str:
    """A source's words in quotes, its LaTeX ($...$) left for the page to render and every other Markdown character
    escaped, so that the words show as the source prints them."""
    parts = [part if _MATH.fullmatch(part) else _MARKDOWN.sub(r"\\\1", part) for part in _MATH.split(text)]
    return "“" + "".join(parts) + "”"


def _cell(text: str) -> str:
    """Text made safe for one markdown table cell (pipes escaped, lines joined)."""
    return " ".join(text.replace("|", "\\|").split())


def seed_table_markdown(rows: Sequence[SeedRow]) -> str:
    """The rows as one markdown table: seed, quote, what, the seed's figure, specviz's figure, ✓/✗, arithmetic."""
    lines = [
        "| source | where in it | what | its figure | specviz | right? | the arithmetic that settles it |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        cells = [
            SOURCES[row.seed],
            _quoted(row.where),
            row.what,
            row.seed_value,
            row.specviz_figure(),
            "✓" if row.agrees else "✗",
            row.settles,
        ]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines)


def seed_summary(rows: Sequence[SeedRow]) -> str:
    """One line counting the rows per source and the figures the sources get wrong."""
    wrong = sum(not row.agrees for row in rows)
    seeds = sorted({row.seed for row in rows})
    per_seed = "; ".join(f"{SOURCES[seed]}: {sum(row.seed == seed for row in rows)}" for seed in seeds)
    return f"{len(rows)} figures checked ({per_seed}). A source is wrong in {wrong} of them."


def seed_report_markdown(rows: Sequence[SeedRow], only_wrong: bool = False) -> str:
    """The summary line, then the table of every row (or only the ✗ rows): docs/sources-checked.md's body."""
    shown = [row for row in rows if not (only_wrong and row.agrees)]
    return seed_summary(rows) + "\n\n" + seed_table_markdown(shown)
