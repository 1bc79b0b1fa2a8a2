"""The quiet-and-busy benchmark's goals and report (bench/busy_machine.py), on hand-made runs: no timing here."""

from specviz.bench import busy_machine


def _run(busy: bool, measured: float, low: float, high: float, predicted: float, said_busy: bool) -> dict:
    return {"pair": "p", "draft": "d", "busy_core": busy, "measured": measured, "low": low, "high": high,
            "predicted": predicted, "ratio": measured / predicted, "others_busy_cores": 0.75 if busy else 0.02,
            "plain_spread": 0.4, "said_busy": said_busy}


def test_the_goals_are_met_when_every_ratio_holds_busy_intervals_hold_the_quiet_median_and_busy_is_said():
    runs = [_run(False, 1.50, 1.45, 1.55, 1.52, False), _run(True, 1.40, 1.20, 1.60, 1.45, True),
            _run(False, 1.52, 1.47, 1.57, 1.50, False), _run(True, 1.45, 1.30, 1.70, 1.50, True)]
    met = busy_machine.goals(runs)
    assert met["ratio_within"]["met"] and met["busy_intervals_hold_quiet_median"]["held"] == 2
    assert met["busy_said"]["met"] and met["busy_intervals_hold_quiet_median"]["quiet_median"] == 1.51
    assert "| 2 | yes | 1.40× (1.20–1.60) | 1.45× |" in busy_machine.report(runs, met, "a CPU")


def test_each_goal_can_be_missed():
    runs = [_run(False, 1.50, 1.45, 1.55, 1.20, False), _run(True, 1.10, 1.00, 1.30, 1.15, False)]
    met = busy_machine.goals(runs)
    assert not met["ratio_within"]["met"]  # 1.50 measured against 1.20 predicted
    assert met["busy_intervals_hold_quiet_median"]["held"] == 0 and not met["busy_intervals_hold_quiet_median"]["met"]
    assert not met["busy_said"]["met"]
    assert busy_machine.report(runs, met, "a CPU").count("MISSED") == 3
