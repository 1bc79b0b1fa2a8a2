"""The benchmark's intervals (bench/report.interval): how much a figure rests on the prompts drawn."""

import statistics

from specviz.bench import report


def test_the_interval_holds_the_figure_widens_with_the_spread_and_needs_three_prompts():
    steady = report.interval([1.3, 1.31, 1.29, 1.3, 1.32], statistics.median)
    spread = report.interval([0.8, 1.9, 1.1, 1.6, 1.3], statistics.median)
    assert steady[0] <= 1.3 <= steady[1] and spread[0] <= 1.3 <= spread[1]
    assert spread[1] - spread[0] > 5 * (steady[1] - steady[0])
    assert report.interval([1.2, 1.4], statistics.median) is None and report.interval([1.2, None, 1.4], min) is None
    geomean = report.interval([1.1, 1.2, 1.4, 2.0], statistics.geometric_mean)
    assert geomean[0] < statistics.geometric_mean([1.1, 1.2, 1.4, 2.0]) < geomean[1]


def test_a_summary_and_the_markdown_carry_the_speedups_interval():
    rows = [{"temperature": 0.0, "category": "c", "method": "m", "tokens_per_s": 10.0, "speedup": value, "rss_mb": 1.0,
             "identical": None} for value in (1.2, 1.3, 1.5, 1.1)]
    summary = report._summarize(0.0, "c", "m", rows, {1: 1.0})
    low, high = summary["speedup_interval"]
    assert low <= summary["speedup"] <= high
    assert f"{summary['speedup']:.2f}x ({low:.2f}–{high:.2f})" == (f"{report._fmt(summary['speedup'], '.2f', 'x')}"
                                                                  f"{report._range(summary['speedup_interval'], ' ')}")
