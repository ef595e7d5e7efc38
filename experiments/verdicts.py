"""The rules a claim of the paper is judged by: the competence gate, the compared cells, one sample per seed
and point, the contrasts a check returns (`Outcome`); `experiments.decide` reads them into verdicts.

A side is one point (every axis but the seed fixed) and its sample each seed's mean over the compared cells.
Points that share their seeds (the same problems) are compared per seed (paired t), others by Welch's t.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import pandas as pd
from scipy import stats

from arith.tracking.schema import (
    ACCURACY_COLUMN,
    ACCURACY_SEEN_COLUMN,
    ACCURACY_UNSEEN_COLUMN,
    CELL_KEYS,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    N_COLUMN,
    N_SEEN_COLUMN,
    ROW_DIGITS_COLUMN,
    RUN_ID_COLUMN,
    SEED_COLUMN,
    SEED_KEYS,
)
from experiments.cells import CONFIG_PREFIXES, PAPER_COLUMNS, cell_list, cell_name, cells_on, paper_of
from experiments.intervals import Interval, paired_interval, seed_list, welch_interval

HELD, NOT_HELD, NOT_TESTABLE = "held", "not held", "not testable"
CANNOT_TELL = "the seeds cannot tell"
VERDICTS = (HELD, NOT_HELD, CANNOT_TELL, NOT_TESTABLE)
#: fewer seeds a side is not testable: two give a t interval with one degree of freedom, and no exact test
#: can reach ALPHA / 2
MIN_SEEDS = 3
#: "learned": at least this accuracy on every gated cell, every seed
LEARNED = 0.9
#: accuracies are ratios of counts or their means: a threshold is met within float rounding
TOLERANCE = 1e-9
#: "does not extrapolate": no cell beyond the training length above this accuracy
NO_EXTRAPOLATION = 0.1
#: a paper cell is one the paper's table contrasts when its two models differ there by at least this
PAPER_CONTRAST = 0.1
#: "memorised": at the gate on the test problems seen in training, at least this much lower on the others
MEMORISED_GAP = 0.3
#: read on at least this many seen problems (one right answer seen in training says little)
MEMORISED_MIN_SEEN = 10


# --- competence and compared cells, read through the paper's own tables and the digit map ---------------


def gated_cells(
    cells: pd.DataFrame, digit_map: dict[int, int] | None, fallback: Callable[[pd.DataFrame], pd.DataFrame]
) -> tuple[pd.DataFrame, bool]:
    """The cells the competence rule reads, and whether they are the paper's: those whose paper counterpart
    the paper's own model learned; where the paper has no table for the point, `fallback`'s."""
    paper = paper_of(cells, digit_map) if digit_map is not None else pd.DataFrame(columns=PAPER_COLUMNS)
    competent = paper[paper["paper_accuracy"].astype(float) >= LEARNED - TOLERANCE]
    if len(competent):
        return cells_on(cells, competent), True
    return fallback(cells), False


def competence(
    sides: dict[str, pd.DataFrame],
    digit_map: dict[int, int] | None,
    fallback: Callable[[pd.DataFrame], pd.DataFrame],
    fallback_label: str,
) -> tuple[str, str]:
    """('' when every side learned, else why not; which cells were gated on). A side learned when every
    seed reaches LEARNED on each of its `gated_cells`: a seed mean above the gate hides no seed below it."""
    why, on = [], []
    for name, cells in sides.items():
        gated, by_paper = gated_cells(cells, digit_map, fallback)
        where = (
            f"{cell_list(gated)}, where the paper's model reached {LEARNED:g}" if by_paper else fallback_label
        )
        on.append(f"{name}: {where}")
        if gated.empty:
            why.append(f"{name} has no cells to show it learned")
        elif not (below := gated[gated[ACCURACY_COLUMN] < LEARNED - TOLERANCE]).empty:
            worst = below.loc[below[ACCURACY_COLUMN].idxmin()]
            paper = worst.get("paper_accuracy")
            paper_cell = cell_name(worst.get("paper_row_digits"), worst.get("paper_col_digits"))
            paper_note = "" if pd.isna(paper) else f", the paper's {paper_cell} {paper:.2f}"
            cell = cell_name(worst[ROW_DIGITS_COLUMN], worst[COL_DIGITS_COLUMN], worst[CONTEXT_COLUMN])
            seeds_below, seeds = below[SEED_COLUMN].nunique(), gated[SEED_COLUMN].nunique()
            why.append(
                f"{name} not learned: seed {int(worst[SEED_COLUMN])} {worst[ACCURACY_COLUMN]:.2f} on {cell}"
                f"{paper_note} ({seeds_below} of {seeds} seeds below {LEARNED:g} on some cell)"
                + _memorised_note(below)
            )
    return "; ".join(why), "gated on " + "; ".join(on)


def _memorised_note(below: pd.DataFrame) -> str:
    """'; memorised: ...' when some cells below the gate are memorised, '' when none is or the trials did not
    record the split: said beside the gate's reason, since more steps on the same lines would not fix it
    the way they fix a model still learning."""
    split = [ACCURACY_SEEN_COLUMN, ACCURACY_UNSEEN_COLUMN, N_SEEN_COLUMN]
    if not set(split) <= set(below):
        return ""
    seen, unseen, n_seen = (below[c].astype(float) for c in split)
    memorised = below[
        (seen >= LEARNED - TOLERANCE) & (unseen <= seen - MEMORISED_GAP) & (n_seen >= MEMORISED_MIN_SEEN)
    ]
    if memorised.empty:
        return ""
    worst = memorised.loc[memorised[ACCURACY_UNSEEN_COLUMN].astype(float).idxmin()]
    cell = cell_name(worst[ROW_DIGITS_COLUMN], worst[COL_DIGITS_COLUMN], worst[CONTEXT_COLUMN])
    counts = f" ({int(worst[N_SEEN_COLUMN])} of {int(worst[N_COLUMN])} seen)" if N_COLUMN in worst else ""
    return (
        f"; memorised: seed {int(worst[SEED_COLUMN])} on {cell} is {worst[ACCURACY_SEEN_COLUMN]:.2f} on the "
        f"test problems it was trained on and {worst[ACCURACY_UNSEEN_COLUMN]:.2f} on the others{counts}; "
        f"{len(memorised)} of the {len(below)} cell(s) below the gate read so"
    )


def compared_cells(
    better: pd.DataFrame,
    worse: pd.DataFrame,
    digit_map: dict[int, int] | None,
    fallback: Callable[[pd.DataFrame], pd.DataFrame],
    fallback_label: str,
) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(better's, worse's cells, which) on the cells the paper's table contrasts (its better model above its
    worse by PAPER_CONTRAST), else `fallback`'s."""
    chosen = pd.DataFrame()
    if digit_map is not None:
        a, b = paper_of(better, digit_map), paper_of(worse, digit_map)
        if not (a.empty or b.empty):
            both = a.merge(b[[*CELL_KEYS, "paper_accuracy"]], on=CELL_KEYS, suffixes=("", "_worse"))
            gap = both["paper_accuracy"].astype(float) - both["paper_accuracy_worse"].astype(float)
            chosen = both[gap >= PAPER_CONTRAST - TOLERANCE]
    if chosen.empty:
        return fallback(better), fallback(worse), fallback_label
    b, w = cells_on(better, chosen), cells_on(worse, chosen)
    return b, w, f"cells {cell_list(b)}, where the paper's table contrasts them"


# --- statistics: one sample per seed and point, paired or Welch t intervals -------------------------------


class PooledConfigurations(ValueError):
    """A side would pool several configurations (learning rates, inits, budgets) as if they were seeds."""


@dataclass(frozen=True)
class Side:
    """One compared point (every axis but the seed fixed): per seed, its mean over the compared cells."""

    name: str
    #: seed -> the seed's mean accuracy over the compared cells
    samples: pd.Series

    @classmethod
    def of(cls, name: str, cells: pd.DataFrame) -> Side:
        """Refuses cells of several configurations or several trials of one seed: they are not seeds."""
        keys = [c for c in cells.columns if c.startswith(CONFIG_PREFIXES) and c not in SEED_KEYS]
        configs = cells[keys].astype(str).drop_duplicates()
        if keys and len(configs) > 1:
            values = "; ".join(
                f"{k} in {sorted(configs[k].unique())}" for k in keys if configs[k].nunique() > 1
            )
            raise PooledConfigurations(
                f"{name} pools {len(configs)} configurations ({values}): a side is one point; "
                "name each as its own side"
            )
        if RUN_ID_COLUMN in cells and cells.groupby(SEED_COLUMN)[RUN_ID_COLUMN].nunique().max() > 1:
            raise PooledConfigurations(f"{name} has several trials of one seed: a side is one trial a seed")
        samples = cells.groupby(SEED_COLUMN)[ACCURACY_COLUMN].mean() if len(cells) else pd.Series(dtype=float)
        samples.index = samples.index.astype(int)
        return cls(name, samples.sort_index())

    @property
    def mean(self) -> float:
        return float(self.samples.mean()) if len(self.samples) else math.nan

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.samples.index)


@dataclass(frozen=True)
class Contrast:
    """sum(weight * side), e.g. better - worse or (a - b) - (c - d); positive is the paper's direction."""

    terms: tuple[tuple[float, Side], ...]
    label: str

    @property
    def paired(self) -> bool:
        seeds = {s.seeds for _, s in self.terms}
        return len(seeds) == 1 and len(next(iter(seeds))) > 1

    @property
    def interval(self) -> Interval:
        """Its 95% interval; `possible` is the range sum(weight * accuracy) spans, accuracies in [0, 1]."""
        possible = (sum(min(w, 0.0) for w, _ in self.terms), sum(max(w, 0.0) for w, _ in self.terms))
        if self.paired:
            seeds = self.terms[0][1].seeds
            d = sum(w * s.samples.loc[list(seeds)].to_numpy() for w, s in self.terms)
            return replace(paired_interval(d, seeds), possible=possible)
        seeds = sorted(set().union(*(s.seeds for _, s in self.terms)))
        return replace(
            welch_interval([(w, s.samples.to_numpy()) for w, s in self.terms], seeds), possible=possible
        )

    def describe(self) -> str:
        return f"{self.label}: {self.interval.describe()}"

    def seeds_to_tell(self, level: float) -> int | None:
        """The seeds a side at which the observed mean and spread would put the interval (one-sided `level`)
        clear of 0; None when no spread was measured, the effect is 0, or past 1,000."""
        i = self.interval
        if i.zero_spread:
            return _exact_seeds(level, self.paired) if i.effect != 0 else None
        if math.isnan(i.se) or i.effect == 0:
            return None
        if self.paired:
            sd = i.se * math.sqrt(len(i.seeds))
            spread = [(1.0, sd * sd)]
        else:
            spread = [(w * w, float(s.samples.var(ddof=1))) for w, s in self.terms]
        for n in range(2, 1001):
            se = math.sqrt(sum(w2 * v / n for w2, v in spread))
            df = n - 1.0
            if not self.paired and se > 0:
                df = se**4 / sum((w2 * v / n) ** 2 / (n - 1) for w2, v in spread)
            if se == 0 or abs(i.effect) - float(stats.t.ppf(1 - level, df)) * se > 0:
                return n
        return None


def _exact_seeds(level: float, paired: bool) -> int:
    """The fewest seeds at which a difference with no spread reaches `level`: the sign test's 0.5^n
    (paired) or Mann-Whitney's 1 / C(2n, n)."""
    n = 1
    while (0.5**n if paired else 1 / math.comb(2 * n, n)) >= level:
        n += 1
    return max(n, MIN_SEEDS)


def difference(better: Side, worse: Side, where: str = "") -> Contrast:
    """better - worse, labelled "where: better 0.90 vs worse 0.10"."""
    label = f"{better.name} {better.mean:.2f} vs {worse.name} {worse.mean:.2f}"
    return Contrast(((1.0, better), (-1.0, worse)), f"{where}: {label}" if where else label)


@dataclass(frozen=True)
class Outcome:
    """What a check read off the numbers: the contrasts (each must be positive), or why the claim cannot
    be tested, or a reason it fails whatever the seeds say; `notes`: what else the verdict shows."""

    contrasts: tuple[Contrast, ...] = ()
    untestable: str = ""
    fails: str = ""
    notes: tuple[str, ...] = ()

    @property
    def too_few_seeds(self) -> str:
        """Why the sides hold too few seeds for a verdict ('' when every side has MIN_SEEDS)."""
        short = [side for c in self.contrasts for _, side in c.terms if len(side.seeds) < MIN_SEEDS]
        if not short:
            return ""
        fewest = min(short, key=lambda side: len(side.seeds))
        return (
            f"{fewest.name} has {len(fewest.seeds)} seed(s) ({seed_list(fewest.seeds)}): a verdict needs at "
            f"least {MIN_SEEDS} seeds a side"
        )

    @property
    def judged(self) -> bool:
        return bool(self.contrasts) and not (self.untestable or self.fails or self.too_few_seeds)

    @property
    def p(self) -> float:
        """The claim's one-sided p: the largest of its contrasts' (all must hold); NaN when not judged."""
        return max(c.interval.p for c in self.contrasts) if self.judged else math.nan

    @property
    def p_against(self) -> float:
        """The one-sided p that some contrast goes against the paper's direction (any one suffices, so
        Bonferroni over them); NaN when not judged."""
        if not self.judged:
            return math.nan
        return min(1.0, len(self.contrasts) * min(c.interval.p_against for c in self.contrasts))


def untestable(why: str, notes: Sequence[str] = ()) -> Outcome:
    return Outcome(untestable=why, notes=tuple(notes))


def compared(contrasts: Sequence[Contrast], fails: str = "", notes: Sequence[str] = ()) -> Outcome:
    return Outcome(tuple(contrasts), fails=fails, notes=tuple(notes))
