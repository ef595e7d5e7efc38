"""The progress line's time left (sweeps/progress.py), fed a recorded sweep: the reports
`make demo`'s six trials sent to Tune (tests/data/demo_progress.json, their result.json files) replayed
every few seconds, as the line sees them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweeps.progress import SteadyTimeLeft, TrialState, best_text, measured_rates, seconds_left

RECORDED = Path(__file__).parent / "data" / "demo_progress.json"


def states_at(now: float, trials: list[dict], steps: int) -> list[TrialState]:
    """What the line knows of each trial at `now`: its last report by then (reports are [time, step,
    time_total_s]), the seconds since it, pending before its start, done at its last step."""
    out = []
    for trial in trials:
        reports, point = trial["reports"], trial["trial"].partition("|")[0]
        start = reports[0][0] - reports[0][2]
        seen = [r for r in reports if r[0] <= now]
        if now < start:
            out.append(TrialState("PENDING", 0, steps, 0.0, point=point))
        elif seen and seen[-1][1] == steps:
            out.append(TrialState("TERMINATED", steps, steps, seen[-1][2], point=point))
        else:
            step, seconds, since = (
                (seen[-1][1], seen[-1][2], now - seen[-1][0]) if seen else (0, 0.0, now - start)
            )
            out.append(TrialState("RUNNING", step, steps, seconds, since_report=since, point=point))
    return out


def replay() -> list[tuple[float, float | None, float, float]]:
    """(time, shown time left, what was left, the countdown from the previous sample) every 5 s and at
    every report."""
    recorded = json.loads(RECORDED.read_text())
    trials, steps = recorded["trials"], recorded["steps"]
    end = max(t["reports"][-1][0] for t in trials)
    times = sorted(
        {*(float(t) for t in range(0, int(end), 5)), *(r[0] for t in trials for r in t["reports"])}
    )
    steady, out, last = SteadyTimeLeft(), [], None
    for now in times:
        shown = steady.update(seconds_left(states_at(now, trials, steps), recorded["slots"]), now)
        counted = last[1] - (now - last[0]) if last and last[1] is not None else float("inf")
        out.append((now, shown, end - now, counted))
        last = (now, shown)
    return out


def test_time_left_never_rises_while_the_trials_keep_to_what_was_foreseen() -> None:
    """A rise is allowed only once the countdown has run out with trials still running (they are later
    than foreseen); the recorded sweep's trials ran as foreseen until its last seconds."""
    samples = replay()
    shown = [(now, left, counted) for now, left, _, counted in samples if left is not None]
    assert shown[0][0] < 60  # a first estimate within a minute (two reports of the first trials)
    rises = [(now, left, counted) for now, left, counted in shown if left > counted + 1e-9]
    assert all(counted <= 0 for _, _, counted in rises), rises
    assert sum(left for _, left, _ in rises) < 10, rises  # the last seconds of the last trial


def test_time_left_is_close_once_a_trial_has_finished() -> None:
    """From the first trial's end on, the time shown is within 15 s of what the sweep then took (it took
    8 minutes), where the line it replaces wandered from under a minute to nearly four."""
    samples = replay()
    first_end = min(t["reports"][-1][0] for t in json.loads(RECORDED.read_text())["trials"])
    after = [(now, left, actual) for now, left, actual, _ in samples if now >= first_end]
    assert after and all(abs(left - actual) <= 15 for _, left, actual in after), after


def test_the_countdown_goes_lower_with_a_lower_estimate_and_up_only_once_it_has_run_out() -> None:
    steady = SteadyTimeLeft()
    assert steady.update(None, 0.0) is None  # no step measured yet
    assert steady.update(100.0, 0.0) == 100.0
    assert steady.update(150.0, 10.0) == 90.0  # a higher estimate: the countdown goes on
    assert steady.update(50.0, 20.0) == 50.0  # a lower one is taken
    assert steady.update(80.0, 70.0) == 80.0  # run out with trials left: the new estimate


def test_a_waiting_trial_is_timed_at_its_points_measured_pace() -> None:
    trials = [
        TrialState("TERMINATED", 100, 100, 50.0, point="a"),
        TrialState("RUNNING", 50, 100, 100.0, point="b"),
        TrialState("PENDING", 0, 100, 0.0, point="b"),
        TrialState("PENDING", 0, 100, 0.0, point="c"),
    ]
    overall, by_point = measured_rates(trials)
    assert by_point == {"a": 0.5, "b": 2.0} and overall == pytest.approx(150 / 150)
    # one slot: b's 50 steps at its own 2 s, then b's 100 at b's 2 s, then c's 100 at the pooled 1 s
    assert seconds_left(trials, slots=1) == pytest.approx(100 + 200 + 100)


def test_the_best_of_each_point_is_shown_by_its_label() -> None:
    assert best_text({}, "test_acc") == "best test_acc -"
    assert best_text({"format=basic": 0.01, "format=padding_reverse": 1.0}, "test_acc") == (
        "best test_acc: basic 0.01, padding_reverse 1.00"
    )
    many = {f"lr={i}": i / 10 for i in range(6)}
    assert (
        best_text(many, "length/score") == "best length/score (4 of 6 points): 5 0.50, 4 0.40, 3 0.30, 2 0.20"
    )
