"""How a count is said on the page: "1 token", "2 tokens", and "—" for a rate with nothing to divide."""

from __future__ import annotations


def count(number: int, noun: str, plural: str | None = None) -> str:
    """A number with its noun in the right form.

    >>> count(1, "token"), count(2, "token"), count(0, "round"), count(1, "rejection"), count(3, "try", "tries")
    ('1 token', '2 tokens', '0 rounds', '1 rejection', '3 tries')
    """
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


NOTHING = "—"  # a rate whose denominator is 0 (α before any draft is tested): never 0.000


def rate(value: float | None, digits: int) -> str:
    """A rate at `digits` places, or NOTHING where there was nothing to count.

    >>> rate(0.5, 3), rate(None, 2)
    ('0.500', '—')
    """
    return NOTHING if value is None else f"{value:.{digits}f}"
