"""The rules a claim of the paper is judged by: which cells it reads, one sample per trial, the verdict.

The claims themselves are in `analysis.findings`. Verdicts (`Finding.status`, machine-readable):

- **not testable**: a model the claim compares did not learn the task inside its training range (mean
  accuracy below the claim's `learned` threshold on its in-range cells), the sweep lacks the runs the claim
  needs (e.g. the paper's claim is about fine-tuned GPT-2 and the sweep has only random-init runs), or
  with >= 3 seeds the difference lies within two standard errors of zero (the seeds cannot tell);
- **held** / **not held** (>= `MIN_SEEDS` seeds on every compared point): the claim's difference (the
  better side's mean accuracy minus the worse side's; a claim of several comparisons needs them all) is
  more than `STANDARD_ERRORS` standard errors above zero / its upper end (difference + 2 SE) is at or
  below zero. The standard error is over trials: each trial's mean over the compared cells is one sample,
  the two sides' variances added (Welch);
- **suggests held** / **suggests not held** (fewer seeds): the sign of the difference only.

Claims are written over relative notions, not the paper's digit counts, so that they read the same at
every scale: "beyond the training length" is a digit count above the trial's `data.max_digits`; "the
largest cells" are the larger half of the digit counts the sweep tested. Every check reads each trial's
last evaluation and reports the numbers it compared.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

HELD, NOT_HELD, NOT_TESTABLE = "held", "not held", "not testable"
SUGGESTS_HELD, SUGGESTS_NOT_HELD = "suggests held", "suggests not held"
VERDICTS = (HELD, NOT_HELD, SUGGESTS_HELD, SUGGESTS_NOT_HELD, NOT_TESTABLE)
#: seeds every compared point needs for held / not held; fewer say at most "suggests"
MIN_SEEDS = 3
#: a difference must exceed this many standard errors
STANDARD_ERRORS = 2.0
#: "learned the task": mean accuracy on the in-range cells at least this (every claim uses it)
LEARNED = 0.9
#: "does not extrapolate": no cell beyond the training length above this accuracy
NO_EXTRAPOLATION = 0.1


# ---------------------------------------------------------------------------------------------------------
# Cells: the per-seed frame (analysis.load.Sweep.cells), each trial's last evaluation
# ---------------------------------------------------------------------------------------------------------


def measured(frame: pd.DataFrame) -> pd.DataFrame:
    """Each trial's cells at its last evaluation (leaving out cells only the paper has)."""
    if frame.empty:
        return frame
    final = frame["final"] if "final" in frame else frame["epoch"] == frame["final_epoch"]
    return frame[final.astype(bool) & frame["accuracy"].notna()]


def beyond_training(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells whose operands are longer than the trial was trained on."""
    return frame[frame["col_digits"].astype(float) > frame["data.max_digits"].astype(float)]


def within_training(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells whose operands have a digit count the trial was trained on."""
    digits = frame["col_digits"].astype(float)
    lowest = frame["data.min_digits"].astype(float) if "data.min_digits" in frame else 1.0
    return frame[(digits >= lowest) & (digits <= frame["data.max_digits"].astype(float))]


def small_products(frame: pd.DataFrame) -> pd.DataFrame:
    """Multiplication cells with at most max_digits digits in both factors together (the easy half)."""
    total = frame["row_digits"].astype(float) + frame["col_digits"].astype(float)
    return frame[total <= frame["data.max_digits"].astype(float)]


def in_range(frame: pd.DataFrame) -> pd.DataFrame:
    """The cells a model must have learned: multiplication's small products, else the trained lengths."""
    if frame.empty:
        return frame
    return small_products(frame) if frame["row_digits"].notna().any() else within_training(frame)


def large_products(frame: pd.DataFrame) -> pd.DataFrame:
    total = frame["row_digits"].astype(float) + frame["col_digits"].astype(float)
    return frame[total > frame["data.max_digits"].astype(float)]


def _digit_half(frame: pd.DataFrame, upper: bool) -> pd.DataFrame:
    digits = sorted(frame["col_digits"].dropna().astype(int).unique())
    if not digits:
        return frame
    top = digits[len(digits) - max(1, len(digits) // 2) :]
    chosen = top if upper else ([d for d in digits if d not in top] or digits[:1])
    return frame[frame["col_digits"].isin(chosen)]


def largest_digits(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells in the larger half of the digit counts tested (4-5 of the paper's 2-5)."""
    return _digit_half(frame, upper=True)


def smaller_digits(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells in the smaller half of the digit counts tested (2-3 of the paper's 2-5)."""
    return _digit_half(frame, upper=False)


def digit_range(frame: pd.DataFrame) -> str:
    digits = sorted(frame["col_digits"].dropna().astype(int).unique())
    if not digits:
        return "no"
    return f"{digits[0]}-{digits[-1]}" if len(digits) > 1 else str(digits[0])


# ---------------------------------------------------------------------------------------------------------
# Statistics: one sample per trial, Welch standard errors, the verdict rule
# ---------------------------------------------------------------------------------------------------------


def trial_means(cells: pd.DataFrame) -> pd.Series:
    """Each trial's mean accuracy over `cells` (a trial: its run id, else its point and seed)."""
    if "run_id" in cells:
        keys = ["run_id"]
    else:
        keys = [c for c in cells.columns if c.startswith(("data.", "model.", "train."))] + ["seed"]
        keys = [k for k in keys if k in cells]
    return cells.groupby(keys, dropna=False)["accuracy"].mean()


def seeds_of(cells: pd.DataFrame) -> int:
    return int(cells["seed"].nunique()) if "seed" in cells else 1


@dataclass(frozen=True)
class Side:
    """One compared model (or pooled points): its trial means over the compared cells."""

    name: str
    samples: pd.Series
    seeds: int

    @classmethod
    def of(cls, name: str, cells: pd.DataFrame) -> Side:
        return cls(name, trial_means(cells), seeds_of(cells))

    @property
    def mean(self) -> float:
        return float(self.samples.mean()) if len(self.samples) else math.nan

    @property
    def variance_of_mean(self) -> float:
        n = len(self.samples)
        return float(self.samples.var(ddof=1)) / n if n > 1 else math.nan


@dataclass(frozen=True)
class Contrast:
    """sum(weight * mean) over sides, e.g. better - worse, or (a - b) - (c - d); positive = the claim."""

    terms: tuple[tuple[float, Side], ...]
    label: str

    @property
    def value(self) -> float:
        return round(sum(w * s.mean for w, s in self.terms), 9)  # equal means give 0, not float noise

    @property
    def standard_error(self) -> float:
        return round(math.sqrt(sum(w * w * s.variance_of_mean for w, s in self.terms)), 9)

    @property
    def seeds(self) -> int:
        return min(s.seeds for _, s in self.terms)

    def describe(self) -> str:
        se = self.standard_error
        spread = f" ± {se:.2f} SE" if not math.isnan(se) else ""
        return f"{self.label}: difference {self.value:+.2f}{spread} ({self.seeds} seed(s))"


def difference(better: Side, worse: Side, where: str = "") -> Contrast:
    """better - worse, labelled "where: better 0.90 vs worse 0.10"."""
    label = f"{better.name} {better.mean:.2f} vs {worse.name} {worse.mean:.2f}"
    return Contrast(((1.0, better), (-1.0, worse)), f"{where}: {label}" if where else label)


def judge(contrasts: Sequence[Contrast], extra_not_held: str = "") -> tuple[str, str]:
    """The verdict of a claim made of `contrasts` (each must be positive), with its evidence.

    `extra_not_held`: a reason the claim fails whatever the seeds say (e.g. basic extrapolates)."""
    evidence = "; ".join(c.describe() for c in contrasts)
    if extra_not_held:
        evidence = f"{extra_not_held}; {evidence}"
    seeds = min(c.seeds for c in contrasts)
    if seeds < MIN_SEEDS:
        held = not extra_not_held and all(c.value > 0 for c in contrasts)
        why = f"fewer than {MIN_SEEDS} seeds: the sign of the difference only"
        return (SUGGESTS_HELD if held else SUGGESTS_NOT_HELD), f"{why}; {evidence}"
    z = STANDARD_ERRORS
    if extra_not_held or any(c.value + z * c.standard_error <= 0 for c in contrasts):
        return NOT_HELD, f"a difference is at most 0 even {z:g} SE up; {evidence}"
    if all(c.value - z * c.standard_error > 0 for c in contrasts):
        return HELD, f"every difference exceeds {z:g} SE; {evidence}"
    return NOT_TESTABLE, f"the seeds cannot tell: a difference lies within {z:g} SE of 0; {evidence}"


def untestable(why: str) -> tuple[str, str]:
    return NOT_TESTABLE, why


def unlearned(sides: dict[str, pd.DataFrame], where: str) -> str:
    """'' when every side reached LEARNED on its in-range cells, else the reason (with the numbers)."""
    means = {name: float(cells["accuracy"].mean()) for name, cells in sides.items()}
    missing = [name for name, mean in means.items() if math.isnan(mean)]
    if missing:
        return f"no in-range cells ({where}) for {', '.join(missing)}"
    low = {name: mean for name, mean in means.items() if mean < LEARNED}
    if not low:
        return ""
    listed = ", ".join(f"{name} {mean:.2f}" for name, mean in low.items())
    return f"not learned in range: {listed} on {where}"
