"""One progress line for a running sweep, read at a glance (a Ray Tune `Callback`):

    [2:41] trials 2 done, 2 running, 2 pending, 0 failed | best test_acc: basic 0.02, padding_reverse 1.00
    | left ~3:05   (one line)

The time left (the whole sweep's, pending trials queued onto as many slots as have run at once) counts
down, rising only once its countdown has run out, and the accuracy is each point's best so far: the latest
report jumps between points and evaluations. A trial restored from a checkpoint is timed at its pace in this
session, not at that of cores it once shared. On a terminal the line is rewritten in place; into a file it
is printed every `every_s` seconds.
"""

from __future__ import annotations

import heapq
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ray.tune import Callback

from arith.tracking.schema import TEST_ACC_METRIC, point_label

#: a trial TERMINATED without its last result marked done: a stopped sweep ends every trial TERMINATED
INTERRUPTED = "INTERRUPTED"
#: the most points the line names; a larger grid shows its best few and how many there are
POINTS_SHOWN = 4


@dataclass(frozen=True)
class TrialState:
    """What the line needs of one trial, by its last report (which may be an hour old: `since_report`);
    `pace_now`: its wall seconds a step in this session."""

    status: str
    steps_done: int
    steps_total: int
    seconds: float
    since_report: float = 0.0
    pace_now: float | None = None
    point: str = ""

    @property
    def seconds_per_step(self) -> float | None:
        """Wall seconds a step: this session's pace where known, else the trial's lifetime average."""
        if self.pace_now is not None:
            return self.pace_now
        return self.seconds / self.steps_done if self.steps_done > 0 and self.seconds > 0 else None


def clock(seconds: float) -> str:
    """0:42, 12:05, 1:02:03."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def number(result: Mapping[str, Any], key: str) -> float:
    """A report's number, 0 where it has none."""
    return float(result.get(key) or 0)


def measured_rates(trials: Sequence[TrialState]) -> tuple[float | None, dict[str, float]]:
    """Wall seconds a step the trials have measured, start-up and evaluations included, pooled (a finished
    trial weighs by all of its steps): over all of them, and per point."""
    done = [t for t in trials if t.status in ("TERMINATED", "RUNNING") and t.steps_done > 0 and t.seconds > 0]

    def rate(some: list[TrialState]) -> float:
        return sum(t.seconds for t in some) / sum(t.steps_done for t in some)

    by_point = {p: rate([t for t in done if t.point == p]) for p in dict.fromkeys(t.point for t in done)}
    return (rate(done) if done else None), by_point


def seconds_left(
    trials: Sequence[TrialState], slots: int, bound: Callable[[TrialState], float] | None = None
) -> float | None:
    """Wall seconds until every trial is done, or None before any step rate is known; `bound`: the most a
    trial may run yet (a search's CPU-time budget). A pending trial starts in the slot that frees up first."""
    measured, by_point = measured_rates(trials)
    if measured is None:
        return None

    def need(t: TrialState) -> float:
        own = t.seconds_per_step if t.status == "RUNNING" else None
        left = max(0, t.steps_total - t.steps_done) * (own or by_point.get(t.point) or measured)
        return max(0.0, (min(left, bound(t)) if bound else left) - t.since_report)

    running = [t for t in trials if t.status == "RUNNING"]
    pending = [t for t in trials if t.status in ("PENDING", "PAUSED")]
    slots = max(1, slots, len(running))
    finish = [need(t) for t in running]
    finish += [0.0] * (slots - len(finish))
    heapq.heapify(finish)
    for trial in pending:
        heapq.heappush(finish, heapq.heappop(finish) + need(trial))
    return max(finish)


class SteadyTimeLeft:
    """The time left as the line shows it: a countdown from the first estimate, lowered by any lower one,
    raised only once it has run out while trials still run."""

    def __init__(self) -> None:
        self.shown: float | None = None
        self.at = 0.0

    def update(self, estimate: float | None, now: float) -> float | None:
        """The value to show at `now` (seconds), given the raw `estimate` (None: no step measured yet)."""
        if estimate is None:
            return None
        counted = None if self.shown is None else self.shown - (now - self.at)
        shown = estimate if counted is None or counted <= 0 else min(estimate, counted)
        self.shown, self.at = shown, now
        return shown


def best_text(best: Mapping[str, float], label: str) -> str:
    """`best test_acc: basic 0.01, padding_reverse 1.00` (points by label, in the grid's order); a grid of
    more points, its best few: `best test_acc (3 of 17 points): ...`."""
    if not best:
        return f"best {label} -"
    shown = list(best.items())
    head = f"best {label}"
    if len(shown) > POINTS_SHOWN:
        head += f" ({POINTS_SHOWN} of {len(shown)} points)"
        shown = sorted(shown, key=lambda pair: -pair[1])[:POINTS_SHOWN]
    return f"{head}: " + ", ".join(f"{point_label(point)} {value:.2f}" for point, value in shown)


def progress_line(
    trials: Sequence[TrialState],
    elapsed: float,
    best_by_point: Mapping[str, float],
    slots: int,
    label: str = TEST_ACC_METRIC,
    left: float | None = None,
) -> str:
    """The line itself (no newline); `left`: the time left to show, else estimated here."""
    named = {"TERMINATED": "done", "RUNNING": "running", "ERROR": "failed", INTERRUPTED: "interrupted"}
    counts = Counter(named.get(t.status, "pending") for t in trials)
    shown = [f"{counts[n]} {n}" for n in ("done", "running", "pending", "failed", "interrupted")]
    trials_text = ", ".join(shown if counts["interrupted"] else shown[:-1])
    parts = [f"[{clock(elapsed)}] trials {trials_text}", best_text(best_by_point, label)]
    if counts["running"] + counts["pending"]:
        left = seconds_left(trials, slots) if left is None else left
        parts.append("left ~" + ("?" if left is None else clock(left)))
    return " | ".join(parts)


class SweepProgress(Callback):
    """The Tune callback that keeps the line up to date. `steps`: every trial's total steps by its key
    (`key_of(trial.config)`), so that the trials Tune has not created yet count as pending."""

    #: the reported value shown, and its name on the line (a search shows its scheduler's); class defaults,
    #: like the two below, so that a callback pickled before one was added still has it after a --resume
    metric = label = TEST_ACC_METRIC
    #: the most trials seen running at once; the width of the line last written on a terminal
    slots, width = 1, 0

    def __init__(
        self,
        steps: Mapping[str, int],
        key_of: Callable[[Mapping[str, Any]], str],
        stream: TextIO | None = None,
        every_s: float = 30.0,
        tty: bool | None = None,
    ) -> None:
        self.steps = dict(steps)
        self.key_of = key_of
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.every_s = 1.0 if self.tty else every_s
        self.restart()

    def restart(self) -> None:
        """Start the session's clock, and forget what an earlier session saw (read again from the reports)."""
        self.start, self.started_at, self.last_shown = time.monotonic(), time.time(), -math.inf
        self.best_by_point: dict[str, float] = {}
        self.time_left = SteadyTimeLeft()
        #: when each trial was first seen running in this session (wall clock)
        self.running_since: dict[str, float] = {}
        #: each trial's first report in this session, its pace's baseline
        self.first_report: dict[str, Mapping[str, Any]] = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A resumed sweep gets back the callback its first session pickled; the clock starts again."""
        self.__dict__.update(state)
        self.restart()

    def states(self, trials: Sequence[Any]) -> list[TrialState]:
        out, seen = [], set()
        now = time.time()
        for trial in trials:
            key = self.key_of(trial.config)
            seen.add(key)
            result = trial.last_result or {}
            running = trial.status == "RUNNING"
            if running:
                self.running_since.setdefault(key, now)
            else:  # not running now: its clock starts again when it next runs
                self.running_since.pop(key, None)
            pace_now = self.pace(key, result)
            if result.get("iterations_since_restore") == result.get("training_iteration"):
                pace_now = None  # begun in this session: its lifetime rate counts its start and evaluations
            reported = number(result, "timestamp")
            if reported < self.started_at:  # reported in an earlier session, restarted in this one
                reported = self.running_since.get(key, now)
            out.append(
                TrialState(
                    status=self.status_of(trial.status, result),
                    steps_done=int(number(result, "step")),
                    steps_total=self.steps.get(key, 0),
                    seconds=number(result, "time_total_s"),
                    since_report=max(0.0, now - reported) if running else 0.0,
                    pace_now=pace_now,
                    point=key.partition("|")[0],
                )
            )
        out += [
            TrialState("PENDING", 0, n, 0.0, point=key.partition("|")[0])
            for key, n in self.steps.items()
            if key not in seen
        ]
        return out

    def pace(self, key: str, result: Mapping[str, Any]) -> float | None:
        """Wall seconds a step since the trial's first report in this session (None before its second); a
        report below that step (a retry from its checkpoint) starts the baseline again."""
        reported, step = number(result, "timestamp"), number(result, "step")
        if reported < self.started_at or step <= 0:
            return None
        first = self.first_report.get(key)
        if first is None or step < number(first, "step"):
            self.first_report[key] = result
            return None
        seconds, steps = reported - number(first, "timestamp"), step - number(first, "step")
        return seconds / steps if seconds > 0 and steps > 0 else None

    @staticmethod
    def status_of(status: str, result: Mapping[str, Any]) -> str:
        """Tune's status, but a NaN loss or a refused setting (which end a trial without an error, so that
        it is not retried) is a failure, and a TERMINATED trial without its last result done interrupted."""
        if result.get("nonfinite_loss") or result.get("config_error"):
            return "ERROR"
        if status == "TERMINATED" and not result.get("done"):
            return INTERRUPTED
        return status

    def remember(self, results: Sequence[Mapping[str, Any]], points: Sequence[str]) -> None:
        """Take each point's best value of the metric from evaluated reports (`points`: each report's)."""
        for result, point in zip(results, points, strict=True):
            if result.get("evaluated") and self.metric in result:
                value = float(result[self.metric])
                self.best_by_point[point] = max(value, self.best_by_point.get(point, value))

    def estimate(self, states: Sequence[TrialState]) -> float | None:
        """The raw time left, before `SteadyTimeLeft` steadies it."""
        return seconds_left(states, self.slots)

    def line(self, trials: Sequence[Any]) -> str:
        if not self.best_by_point:  # a resumed sweep: what its trials last reported
            reported = [t for t in trials if t.last_result]
            self.remember([t.last_result for t in reported], [self.point_of(t) for t in reported])
        states = self.states(trials)
        self.slots = max(self.slots, sum(s.status == "RUNNING" for s in states))
        elapsed = time.monotonic() - self.start
        left = self.time_left.update(self.estimate(states), elapsed)
        best = {p: self.best_by_point[p] for p in self.points() if p in self.best_by_point}
        return progress_line(states, elapsed, best, self.slots, self.label, left)

    def point_of(self, trial: Any) -> str:
        return self.key_of(trial.config).partition("|")[0]

    def points(self) -> list[str]:
        """The sweep's points in the grid's order."""
        return list(dict.fromkeys(key.partition("|")[0] for key in self.steps))

    def show(self, trials: Sequence[Any], force: bool = False, end: str = "") -> None:
        now = time.monotonic()
        if not force and now - self.last_shown < self.every_s:
            return
        self.last_shown = now
        text = self.line(trials)
        if self.tty:
            self.stream.write("\r" + text.ljust(self.width) + end)
            self.width = len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info) -> None:
        self.remember([result], [self.point_of(trial)])

    def on_step_end(self, iteration: int, trials: list, **info) -> None:
        self.show(trials)

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info) -> None:
        self.show(trials, force=True)

    on_trial_error = on_trial_complete

    def on_experiment_end(self, trials: list, **info) -> None:
        self.show(trials, force=True, end="\n")


def tune_output(
    steps: Mapping[str, int],
    key_of: Callable[[Mapping[str, Any]], str],
    quiet: bool = False,
    verbose: bool = False,
    line: Callable[..., SweepProgress] = SweepProgress,
) -> dict[str, Any]:
    """`tune.RunConfig` arguments for the sweep's output: by default the progress line alone (`line` makes
    it); `quiet` nothing; `verbose` Tune's own per-trial table, with the progress line as plain lines."""
    if verbose:
        return {"callbacks": [line(steps, key_of, tty=False)]}
    return {"verbose": 0, "callbacks": [] if quiet else [line(steps, key_of)]}
