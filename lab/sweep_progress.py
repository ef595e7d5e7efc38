"""A recipe search's progress line: its scheduler's metric, and the time left *at most*, each trial ending
at its CPU-time budget at the latest (`lab.search.asha.SearchAsha`'s last rung) however many steps it has
left. A trial's CPU seconds turn into wall seconds at its ratio in this session where known (the cores it
shares now), else at its lifetime's, else at the mean of the trials'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from arith.tracking.schema import CPU_SECONDS
from sweeps.progress import SweepProgress, TrialState, number, seconds_left


@dataclass(frozen=True)
class BudgetState(TrialState):
    """A trial's state with the CPU seconds it has run (`clock`) and, where this session has measured it,
    its wall seconds per CPU second (`ratio_now`)."""

    clock: float = 0.0
    ratio_now: float | None = None

    @property
    def seconds_per_clock(self) -> float | None:
        """Wall seconds per CPU second (above 1 where trials share cores): this session's, else lifetime."""
        if self.ratio_now is not None:
            return self.ratio_now
        return self.seconds / self.clock if self.clock > 0 and self.seconds > 0 else None


def mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def budget_seconds_left(trials: Sequence[BudgetState], slots: int, clock_budget_s: float) -> float | None:
    """`seconds_left`, each trial running at most what is left of `clock_budget_s` CPU seconds."""
    seen = [t for t in trials if t.status in ("RUNNING", "TERMINATED")]
    mean_ratio = mean([t.seconds_per_clock for t in seen]) or 1.0

    def bound(t: BudgetState) -> float:
        return max(0.0, clock_budget_s - t.clock) * (t.seconds_per_clock or mean_ratio)

    return seconds_left(trials, slots, bound)


class BudgetProgress(SweepProgress):
    """`SweepProgress` showing `metric` (as `label`) and the time left at most, under `clock_budget_s`."""

    def __init__(
        self,
        steps: Mapping[str, int],
        key_of: Callable[[Mapping[str, Any]], str],
        clock_budget_s: float,
        metric: str,
        label: str | None = None,
        **line: Any,
    ) -> None:
        super().__init__(steps, key_of, **line)
        self.clock_budget_s, self.metric, self.label = clock_budget_s, metric, label or metric

    def states(self, trials: Sequence[Any]) -> list[BudgetState]:
        """The trials' states with their CPU seconds and this session's wall seconds per CPU second (the
        trials Tune has not created yet: none)."""
        states = [BudgetState(**asdict(s)) for s in super().states(trials)]
        for i, trial in enumerate(trials):
            result = trial.last_result or {}
            first = self.first_report.get(self.key_of(trial.config))
            ratio = None
            if first is not None:
                seconds = number(result, "timestamp") - number(first, "timestamp")
                steps = number(result, "step") - number(first, "step")
                clock = number(result, CPU_SECONDS) - number(first, CPU_SECONDS)
                ratio = seconds / clock if seconds > 0 and steps > 0 and clock > 0 else None
            states[i] = replace(states[i], clock=number(result, CPU_SECONDS), ratio_now=ratio)
        return states

    def estimate(self, states: Sequence[BudgetState]) -> float | None:
        return budget_seconds_left(states, self.slots, self.clock_budget_s)

    def line(self, trials: Sequence[Any]) -> str:
        return super().line(trials).replace("| left ~", "| left at most ~")
