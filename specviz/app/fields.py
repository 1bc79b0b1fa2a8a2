"""The lab tabs' numeric fields, checked as the live tab checks its own: one sentence per refusal, naming the field,
its range and what was sent, and no traceback in the server log.

A field that is also a run setting (temperature, γ, seed, max new tokens, lenience) goes through the live tab's
table: config.check_field with request.field_limits (the sliders' ends, narrowed by a hosted server's caps). A
lab-only field (samples, runs, a round number) gets a FieldRange of its own, which words its sentence the same way.
"""

from __future__ import annotations

from specviz.app.callbacks import refused
from specviz.app.policy import current_policy
from specviz.app.request import field_limits
from specviz.config import FieldRange, as_number, check_field, shown


def run_field(name: str, value, low: float | None = None, high: float | None = None):
    """A run setting checked against the live tab's field table (and `low`/`high` where the lab's widget is narrower):
    the number, or a Refusal with the live tab's sentence. run_field("temperature", "hot") refuses with
    "temperature must be a number from 0 to 2 (0 means greedy), got 'hot'."."""
    live_low, live_high = field_limits(current_policy()).get(name, (None, None))
    low = live_low if low is None else max(low, live_low) if live_low is not None else low
    high = live_high if high is None else min(high, live_high) if live_high is not None else high
    try:
        return check_field(name, value, low, high)
    except ValueError as error:
        raise refused(f"{error}.") from None


def lab_field(name: str, value, low: float, high: float, whole: bool = False, note: str = ""):
    """A lab-only number in [low, high], worded as check_field words a run setting: the number (an int where
    `whole`), or a Refusal. lab_field("samples", 2.5, 100, 200_000, whole=True) refuses with
    "samples must be a whole number from 100 to 200000, got 2.5."."""
    number = as_number(value, whole, from_text=True)
    if number is None or not low <= number <= high:
        raise refused(f"{name} must be {FieldRange(low, high, whole, note=note).describe()}, got {shown(value)}.")
    return number
