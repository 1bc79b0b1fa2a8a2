"""What the load test reports: one JSON summary of the class's burst, and its goals with whether each is
met (a goal that could not be measured, such as memory without the server's process id, is said so and does
not fail the run)."""

from __future__ import annotations

import math

PLACE_WITHIN_S = 1.0  # every session sees its queue place this soon after pressing Run
MEMORY_WITHIN = 0.10  # server memory after the burst, relative to a single session's
QUEUED = 2  # the teacher's lane is judged only where a queue formed: a student saw at least this many waiting
AT_REST_WITHIN = 1.2  # alone on the server, the teacher's first row is at most this times a student's alone


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile: the smallest value with at least `fraction` of them at or below it.

    >>> percentile([4.0, 1.0, 3.0, 2.0], 0.5), percentile(list(range(1, 21)), 0.95), percentile([], 0.5)
    (2.0, 19, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def _rounded(value, digits: int = 2):
    return None if value is None else round(value, digits)


def summarize(sessions: int, runs: int, burst: dict, single: dict, memory: dict | None = None) -> dict:
    """The JSON summary. `burst`: class_burst's presses (and the server's memory after it, "rss_after" and
    "rss_peak" in bytes or None); `single`: one session alone before it ("first_row_s", "rss" in bytes or None,
    "errors"); `memory`: the optional runs in a row (loadtest.memory_runs)."""
    presses, teacher = burst["presses"], burst.get("teacher", {})
    errors = single["errors"] + [press.error for press in presses if press.error] + \
        [press.error for press in teacher.values() if press.error] + (memory["errors"] if memory else [])
    first_rows = [press.first_row_s for press in presses if press.first_row_s is not None]
    places = [press.place_s for press in presses if not press.error]
    rss_single, rss_after = single.get("rss"), burst.get("rss_after")
    summary = {
        "sessions": sessions,
        "runs": sum(press.error is None for press in presses),
        "runs_expected": sessions * runs,
        "errors": len(errors),
        "crosstalk": sum(press.own is False for press in [*presses, *teacher.values()]) + (memory["crosstalk"] if memory else 0),
        "first_row_p50_s": _rounded(percentile(first_rows, 0.5)),
        "first_row_p95_s": _rounded(percentile(first_rows, 0.95)),
        "end_p50_s": _rounded(percentile([press.end_s for press in presses if not press.error], 0.5)),
        "place_seen_max_s": None if None in places or not places else _rounded(max(places)),
        "place_not_seen": sum(place is None for place in places),
        "longest_queue": max((press.place[1] for press in presses if press.place), default=0),
        "single_first_row_s": _rounded(single.get("first_row_s")),
        "rss_single_mb": _rounded(rss_single and rss_single / 2**20, 1),
        "rss_after_mb": _rounded(rss_after and rss_after / 2**20, 1),
        "rss_peak_mb": _rounded(burst.get("rss_peak") and burst["rss_peak"] / 2**20, 1),
        "rss_vs_single": _rounded(rss_after / rss_single - 1, 4) if rss_single and rss_after else None,
        "teacher": {kind: {"first_row_s": _rounded(press.first_row_s), "place_s": _rounded(press.place_s)}
                    for kind, press in teacher.items()},
        "teacher_alone_first_row_s": {kind: _rounded(seconds) for kind, seconds in burst.get("teacher_alone", {}).items()},
        "error_messages": errors[:10],
    }
    if memory:
        summary["memory_runs"], summary["rss_growth"] = memory["rss_mb"], _rounded(memory["growth"], 4)
    summary["goals_met"] = {name: goal["met"] for name, goal in goals(summary).items()}
    return summary


def goals(summary: dict) -> dict:
    """Each goal: what it asks, what was measured, and whether it is met (None: not measured)."""
    teacher_rows = [entry["first_row_s"] for entry in summary["teacher"].values()]
    alone_rows, single = list(summary.get("teacher_alone_first_row_s", {}).values()), summary["single_first_row_s"]
    queued = summary["longest_queue"] >= QUEUED
    class_p50 = summary["first_row_p50_s"]
    return {
        "errors": {"goal": "0 errors", "measured": summary["errors"], "met": summary["errors"] == 0},
        "crosstalk": {"goal": "0 cross-talk", "measured": summary["crosstalk"], "met": summary["crosstalk"] == 0},
        "all_served": {"goal": "every Run served", "measured": f"{summary['runs']}/{summary['runs_expected']}",
                       "met": summary["runs"] == summary["runs_expected"]},
        "queue_place": {"goal": f"every session sees its queue place within {PLACE_WITHIN_S:g} s of pressing Run",
                        "measured": (f"slowest {summary['place_seen_max_s']} s" if summary["place_not_seen"] == 0
                                     else f"{summary['place_not_seen']} never saw it"),
                        "met": summary["place_not_seen"] == 0 and summary["place_seen_max_s"] is not None
                        and summary["place_seen_max_s"] <= PLACE_WITHIN_S},
        "memory": {"goal": f"server memory after the burst within {MEMORY_WITHIN:.0%} of a single session's",
                   "measured": None if summary["rss_vs_single"] is None else
                   f"{summary['rss_after_mb']} MB against {summary['rss_single_mb']} MB ({summary['rss_vs_single']:+.1%})",
                   "met": None if summary["rss_vs_single"] is None else summary["rss_vs_single"] <= MEMORY_WITHIN},
        "teacher": {"goal": "with the class queued, the teacher's Step and Run show a row sooner than the class's "
                            "median",
                    "measured": None if not teacher_rows else f"{teacher_rows} s against {class_p50} s" + (
                        "" if queued else f"; no queue formed (at most {summary['longest_queue']} waiting), so the "
                                          "teacher's lane had nobody to pass: not judged"),
                    "met": None if not teacher_rows or not queued else
                    None not in teacher_rows and class_p50 is not None and max(teacher_rows) < class_p50},
        "teacher_at_rest": {"goal": f"with nobody else running, the teacher's Step and Run show a row within "
                                    f"{AT_REST_WITHIN:g}× a student's Run alone",
                            "measured": None if not alone_rows else f"{alone_rows} s against {single}",
                            "met": None if not alone_rows or single is None or None in alone_rows else
                            max(alone_rows) <= AT_REST_WITHIN * single},
    }


def goals_table(goals_met: dict) -> str:
    """The goals as lines a person reads: MET / NOT MET / not measured, the goal, what was measured."""
    words = {True: "MET", False: "NOT MET", None: "not measured"}
    return "\n".join(f"{words[goal['met']]:>12}  {goal['goal']}: {goal['measured']}" for goal in goals_met.values())


def failed(summary: dict) -> bool:
    """Whether a measured goal is not met."""
    return False in summary["goals_met"].values()
