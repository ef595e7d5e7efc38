"""The progress line's two numbers a researcher acts on, made steady (`sweeps.progress` draws the line):
the time left counts down and rises only once its countdown has run out (not whenever the trial that
reported last was between evaluations), and the accuracy is each point's best so far (the latest report of
whichever trial reported last jumps between points).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from arith.tracking.schema import point_label

#: the most points the line names; a larger grid shows its best few and how many there are
POINTS_SHOWN = 4


def measured_rates(trials: Sequence) -> tuple[float | None, dict[str, float]]:
    """Wall seconds a step the trials (`TrialState`s) have measured, start-up and evaluations included,
    pooled (a finished trial weighs by all of its steps): over all of them, and per point."""
    done = [t for t in trials if t.status in ("TERMINATED", "RUNNING") and t.steps_done > 0 and t.seconds > 0]
    by_point: dict[str, list[tuple[float, int]]] = {}
    for t in done:
        by_point.setdefault(t.point, []).append((t.seconds, t.steps_done))

    def rate(pairs: list[tuple[float, int]]) -> float:
        return sum(s for s, _ in pairs) / sum(n for _, n in pairs)

    overall = rate([p for pairs in by_point.values() for p in pairs]) if done else None
    return overall, {point: rate(pairs) for point, pairs in by_point.items()}


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
