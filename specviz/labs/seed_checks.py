"""The seed table: every figure the app quotes from a seed document, checked against specviz's own code.

specviz was written from five seed texts (kept outside the package, in ``../shared/seeds/``). They are
wrong in places. Each :class:`SeedRow` names one figure: where it sits in the seed (a short quote), what the
seed prints, the function of specviz that computes the same quantity (the very one the app shows), the
correct value, whether the seed has it right, and, where it does not, the arithmetic that settles it.

The package never reads the seed texts: the quote check lives in the tests, which run where the seeds are.

>>> row = SeedRow(seed="000", where="a short quote", what="a figure", seed_value="2",
...               specviz_value=lambda: 1 + 1, expected=2.0, agrees=True, settles="")
>>> row.specviz_figure()
'2'
>>> print(seed_table_markdown([row]).splitlines()[2])
| 000 | “a short quote” | a figure | 2 | 2 | ✓ |  |
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

# A value as a row holds it: a number, a token string, or a tuple of either (a distribution, a pair).
SeedValue = float | str | tuple


@dataclass(frozen=True)
class SeedRow:
    """One figure a seed prints, and what specviz computes for it."""

    seed: str  # which seed document: "000" .. "004" (its file is ../shared/seeds/<seed>_*.txt)
    where: str  # a short quote (a dozen words at most) that locates the figure in the seed's text
    what: str  # what the figure is, in a few words
    seed_value: str  # the figure exactly as the seed prints it
    specviz_value: Callable[[], SeedValue]  # specviz's own function for it, the one the app shows
    expected: SeedValue  # the correct value: what specviz_value() must return
    agrees: bool  # whether the seed's figure is right
    settles: str  # where they differ: the arithmetic that settles it, in plain words; "" when they agree

    def specviz_figure(self) -> str:
        """specviz's value, computed now and written for the table."""
        return format_value(self.specviz_value())


def format_value(value: SeedValue) -> str:
    """A value written compactly: floats to four significant figures, tuples in parentheses.

    >>> format_value(0.8000000001), format_value(161.0), format_value((0.5, "Japan"))
    ('0.8', '161', '(0.5, Japan)')
    """
    if isinstance(value, tuple):
        return "(" + ", ".join(format_value(item) for item in value) + ")"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return f"{value:.4g}"
    return str(value)


def _cell(text: str) -> str:
    """Text made safe for one markdown table cell (pipes escaped, lines joined)."""
    return " ".join(text.replace("|", "\\|").split())


def seed_table_markdown(rows: Sequence[SeedRow]) -> str:
    """The rows as one markdown table: seed, quote, what, the seed's figure, specviz's figure, ✓/✗, arithmetic."""
    lines = [
        "| seed | where in the seed | what | seed's figure | specviz | right? | the arithmetic that settles it |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        cells = [
            row.seed,
            f"“{row.where}”",
            row.what,
            row.seed_value,
            row.specviz_figure(),
            "✓" if row.agrees else "✗",
            row.settles,
        ]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines)


def seed_summary(rows: Sequence[SeedRow]) -> str:
    """One line counting the rows per seed and the figures the seeds get wrong."""
    wrong = sum(not row.agrees for row in rows)
    seeds = sorted({row.seed for row in rows})
    per_seed = ", ".join(f"{seed}: {sum(row.seed == seed for row in rows)}" for seed in seeds)
    return f"{len(rows)} figures checked ({per_seed}); the seed is wrong in {wrong} of them."
