"""One progress line for a running sweep, read at a glance (a Ray Tune `Callback`):

    [2:41] trials 2 done, 2 running, 2 pending, 0 failed | best test_acc: basic 0.02, padding_reverse 1.00
    | left ~3:05   (one line)

The time left is the whole sweep's (`sweeps.eta`), pending trials queued onto as many slots as have run at
once; a trial restored from a checkpoint is timed at its pace in this session, since a sweep resumed on an
idle machine would otherwise be told the pace of cores it once shared. On a terminal the line is rewritten
in place; into a file it is printed every `every_s` seconds, so logs stay short.
"""

from __future__ import annotations

import heapq
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ray.tune import Callback

from arith.tracking.schema import CPU_SECONDS, TEST_ACC_METRIC
from sweeps.eta import SteadyTimeLeft, best_text, measured_rates

ACCURACY = TEST_ACC_METRIC
#: a trial TERMINATED without its last result marked done: a stopped sweep ends every trial TERMINATED
INTERRUPTED = "INTERRUPTED"


@dataclass(frozen=True)
class TrialState:
    """What the line needs of one trial, by its last report (`clock`: CPU seconds; reports may be an hour
    apart, `since_report`); `pace_now`, `ratio_now`: its wall seconds a step and a CPU second this session."""

    status: str
    steps_done: int
    steps_total: int
    seconds: float
    clock: float = 0.0
    since_report: float = 0.0
    pace_now: float | None = None
    ratio_now: float | None = None
    point: str = ""

    @property
    def seconds_per_step(self) -> float | None:
        """Wall seconds a step: this session's pace where known, else the trial's lifetime average."""
        if self.pace_now is not None:
            return self.pace_now
        return self.seconds / self.steps_done if self.steps_done > 0 and self.seconds > 0 else None

    @property
    def seconds_per_clock(self) -> float | None:
        """Wall seconds per CPU second (above 1 where trials share cores): this session's, else lifetime."""
        if self.ratio_now is not None:
            return self.ratio_now
        return self.seconds / self.clock if self.clock > 0 and self.seconds > 0 else None


def clock(seconds: float) -> str:
    """0:42, 12:05, 1:02:03."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def seconds_left(
    trials: Sequence[TrialState], slots: int, clock_budget_s: float | None = None
) -> float | None:
    """Wall seconds until every trial is done (at most, with `clock_budget_s`), or None before any step
    rate is known. A pending trial starts in the slot that frees up first; with a CPU-time budget a trial
    needs no more than what is left of it, at its ratio of wall to CPU time."""
    seen = [t for t in trials if t.status in ("RUNNING", "TERMINATED")]
    measured, by_point = measured_rates(trials)
    mean_rate = mean([t.seconds_per_step for t in seen])
    if mean_rate is None:
        return None
    mean_ratio = mean([t.seconds_per_clock for t in seen]) or 1.0

    def need(t: TrialState) -> float:
        own = t.seconds_per_step if t.status == "RUNNING" else None
        rate = own or by_point.get(t.point) or measured or mean_rate
        by_steps = max(0, t.steps_total - t.steps_done) * rate
        if clock_budget_s is not None:
            by_clock = max(0.0, clock_budget_s - t.clock) * (t.seconds_per_clock or mean_ratio)
            by_steps = min(by_steps, by_clock)
        return max(0.0, by_steps - t.since_report)

    running = [t for t in trials if t.status == "RUNNING"]
    pending = [t for t in trials if t.status in ("PENDING", "PAUSED")]
    slots = max(1, slots, len(running))
    finish = [need(t) for t in running]
    finish += [0.0] * (slots - len(finish))
    heapq.heapify(finish)
    for trial in pending:
        heapq.heappush(finish, heapq.heappop(finish) + need(trial))
    return max(finish)


def progress_line(
    trials: Sequence[TrialState],
    elapsed: float,
    best_by_point: Mapping[str, float],
    slots: int,
    clock_budget_s: float | None = None,
    label: str = ACCURACY,
    left: float | None = None,
) -> str:
    """The line itself (no newline); `left`: the time left to show, else estimated here."""
    counts = {"done": 0, "running": 0, "pending": 0, "failed": 0, "interrupted": 0}
    for t in trials:
        key = {"TERMINATED": "done", "RUNNING": "running", "ERROR": "failed", INTERRUPTED: "interrupted"}
        counts[key.get(t.status, "pending")] += 1
    shown = {name: n for name, n in counts.items() if n or name != "interrupted"}
    trials_text = ", ".join(f"{n} {name}" for name, n in shown.items())
    parts = [f"[{clock(elapsed)}] trials {trials_text}", best_text(best_by_point, label)]
    if counts["running"] + counts["pending"]:
        left = seconds_left(trials, slots, clock_budget_s) if left is None else left
        bound = "left at most ~" if clock_budget_s is not None else "left ~"
        parts.append(bound + ("?" if left is None else clock(left)))
    return " | ".join(parts)


class SweepProgress(Callback):
    """The Tune callback that keeps the line up to date. `steps`: every trial's total steps by its key
    (`key_of(trial.config)`), so that the trials Tune has not created yet count as pending; `metric`: the
    reported value shown, as `label`."""

    def __init__(
        self,
        steps: Mapping[str, int],
        key_of: Callable[[Mapping[str, Any]], str],
        stream: TextIO | None = None,
        every_s: float = 30.0,
        tty: bool | None = None,
        clock_budget_s: float | None = None,
        metric: str = ACCURACY,
        label: str | None = None,
    ) -> None:
        self.clock_budget_s = clock_budget_s
        self.metric, self.label = metric, label or metric
        self.steps = dict(steps)
        self.key_of = key_of
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.every_s = 1.0 if self.tty else every_s
        self.start, self.started_at = time.monotonic(), time.time()
        self.last_shown = -math.inf
        #: the best value each point has reported; the shown time left
        self.best_by_point: dict[str, float] = {}
        self.time_left = SteadyTimeLeft()
        self.slots = 1
        self.width = 0
        #: when each trial was first seen running in this session (wall clock)
        self.running_since: dict[str, float] = {}
        #: each trial's first report in this session: (timestamp, step, CPU seconds), its pace's baseline
        self.first_report: dict[str, tuple[float, int, float]] = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A resumed sweep gets back the callback its first session pickled: settings added to this class
        since take their defaults, and the clock starts again."""
        self.__dict__.update(clock_budget_s=None, metric=ACCURACY, label=ACCURACY, slots=1, width=0)
        self.__dict__.update(state)
        self.start, self.started_at, self.last_shown = time.monotonic(), time.time(), -math.inf
        self.running_since, self.first_report = {}, {}
        self.best_by_point, self.time_left = {}, SteadyTimeLeft()  # read again from the trials' reports

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
            reported = float(result.get("timestamp", 0) or 0)
            step = int(result.get("step", 0) or 0)
            cpu = float(result.get(CPU_SECONDS, 0.0) or 0.0)
            pace_now, ratio_now = self.pace(key, reported, step, cpu)
            if result.get("iterations_since_restore") == result.get("training_iteration"):
                pace_now = None  # begun in this session: its lifetime rate counts its start and evaluations
            if reported < self.started_at:  # reported in an earlier session, restarted in this one
                reported = self.running_since.get(key, now)
            out.append(
                TrialState(
                    status=self.status_of(trial.status, result),
                    steps_done=step,
                    steps_total=self.steps.get(key, 0),
                    seconds=float(result.get("time_total_s", 0.0) or 0.0),
                    clock=cpu,
                    since_report=max(0.0, now - reported) if running else 0.0,
                    pace_now=pace_now,
                    ratio_now=ratio_now,
                    point=key.partition("|")[0],
                )
            )
        out += [
            TrialState("PENDING", 0, n, 0.0, point=key.partition("|")[0])
            for key, n in self.steps.items()
            if key not in seen
        ]
        return out

    def pace(self, key: str, reported: float, step: int, cpu: float) -> tuple[float | None, float | None]:
        """Wall seconds a step and a CPU second since the trial's first report in this session (None before
        its second); a report below that step (a retry from its checkpoint) starts the baseline again."""
        if reported < self.started_at or step <= 0:
            return None, None
        first = self.first_report.get(key)
        if first is None or step < first[1]:
            self.first_report[key] = (reported, step, cpu)
            return None, None
        seconds, steps, clock_s = reported - first[0], step - first[1], cpu - first[2]
        if seconds <= 0 or steps <= 0:
            return None, None
        return seconds / steps, (seconds / clock_s if clock_s > 0 else None)

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

    def line(self, trials: Sequence[Any]) -> str:
        if not self.best_by_point:  # a resumed sweep: what its trials last reported
            reported = [t for t in trials if t.last_result]
            self.remember([t.last_result for t in reported], [self.point_of(t) for t in reported])
        states = self.states(trials)
        self.slots = max(self.slots, sum(s.status == "RUNNING" for s in states))
        elapsed = time.monotonic() - self.start
        left = self.time_left.update(seconds_left(states, self.slots, self.clock_budget_s), elapsed)
        best = {p: self.best_by_point[p] for p in self.points() if p in self.best_by_point}
        return progress_line(states, elapsed, best, self.slots, self.clock_budget_s, self.label, left)

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

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info) -> None:
        self.show(trials, force=True)

    def on_experiment_end(self, trials: list, **info) -> None:
        self.show(trials, force=True, end="\n")


def tune_output(
    steps: Mapping[str, int],
    key_of: Callable[[Mapping[str, Any]], str],
    quiet: bool = False,
    verbose: bool = False,
    **shown: Any,
) -> dict[str, Any]:
    """`tune.RunConfig` arguments for the sweep's output: by default the progress line alone; `quiet`
    nothing; `verbose` Tune's own per-trial table, with the progress line as plain lines. `shown`: the
    line's `SweepProgress` settings."""
    if verbose:
        return {"callbacks": [SweepProgress(steps, key_of, tty=False, **shown)]}
    line = SweepProgress(steps, key_of, **shown)
    return {"verbose": 0, "callbacks": [] if quiet else [line]}
