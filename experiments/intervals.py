"""The statistics a verdict reads: a contrast's 95% t interval and one-sided p-values both ways (paired or
Welch), exact tests where the seeds show no spread, and Holm's correction over a report's claims."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

#: a standard error this small is no spread: per-seed means of the same counts differ by float rounding only
NO_SPREAD = 1e-12
#: two-sided level of the reported intervals (95%); held needs the Holm-adjusted one-sided p below ALPHA / 2
ALPHA = 0.05


@dataclass(frozen=True)
class Interval:
    """A contrast's effect, its 95% t interval and one-sided p for (effect > 0) and against the paper's
    direction. With `zero_spread` no t interval exists: the p-values are the exact sign test's (paired) or
    Mann-Whitney's (two sides). `possible`: the contrast's range, where the interval is shown clipped."""

    effect: float
    se: float
    df: float
    low: float
    high: float
    p: float
    seeds: tuple[int, ...]
    paired: bool
    p_against: float = math.nan
    zero_spread: bool = False
    possible: tuple[float, float] = (-math.inf, math.inf)

    @property
    def ci(self) -> str:
        """The 95% interval as text, clipped to the possible range (saying so); '' without one."""
        if math.isnan(self.low):
            return ""
        low, high = max(self.low, self.possible[0]), min(self.high, self.possible[1])
        clipped = " clipped to the possible range" if (low, high) != (self.low, self.high) else ""
        return f"[{low:+.3f}, {high:+.3f}]{clipped}"

    def describe(self) -> str:
        seeds = f"seeds {seed_list(self.seeds)}" + (", paired" if self.paired else ", Welch")
        if self.zero_spread:
            test = "exact sign test" if self.paired else "exact Mann-Whitney test"
            return (
                f"effect {self.effect:+.3f}, zero spread over the seeds: no t interval; {test} one-sided "
                f"{p_is(self.p)} ({seeds})"
            )
        if math.isnan(self.low):
            return f"effect {self.effect:+.3f} ({seeds}: no spread to estimate)"
        return (
            f"effect {self.effect:+.3f}, 95% CI {self.ci}, "
            f"one-sided {p_is(self.p)} ({seeds}, df {self.df:.1f})"
        )


def p_is(p: float) -> str:
    """`p = 0.0044`, or `p < 0.0001` below what the text rounds to."""
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.2g}"


def seed_list(seeds: Sequence[int]) -> str:
    return ", ".join(map(str, seeds)) or "none"


def _t_interval(effect: float, se: float, df: float) -> tuple[float, float, float, float]:
    """(low, high, one-sided p for, one-sided p against) of a t statistic with se > 0."""
    if math.isnan(se) or math.isnan(df) or df <= 0:
        return math.nan, math.nan, math.nan, math.nan
    half = float(stats.t.ppf(1 - ALPHA / 2, df)) * se
    t = effect / se
    return effect - half, effect + half, float(stats.t.sf(t, df)), float(stats.t.cdf(t, df))


def _sign_test(differences: np.ndarray) -> tuple[float, float]:
    """One-sided exact sign test p-values (for, against) of per-seed differences; zeros carry no sign."""
    positive, negative = int((differences > 0).sum()), int((differences < 0).sum())
    n = positive + negative
    if n == 0:
        return 1.0, 1.0
    return (
        float(stats.binomtest(positive, n, 0.5, alternative="greater").pvalue),
        float(stats.binomtest(negative, n, 0.5, alternative="greater").pvalue),
    )


def paired_interval(differences: Sequence[float], seeds: Sequence[int] = ()) -> Interval:
    """The per-seed differences' mean with its t interval (scipy.stats.ttest_rel's); with no spread, the
    exact sign test's p-values."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    effect = float(d.mean()) if n else math.nan
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    if se <= NO_SPREAD:
        p_for, p_against = _sign_test(np.round(d, 12))
        return Interval(effect, 0.0, n - 1.0, math.nan, math.nan, p_for, tuple(seeds), True, p_against, True)
    low, high, p, p_against = _t_interval(effect, se, n - 1.0)
    return Interval(effect, se, n - 1.0, low, high, p, tuple(seeds), True, p_against)


def welch_interval(terms: Sequence[tuple[float, Sequence[float]]], seeds: Sequence[int] = ()) -> Interval:
    """sum(weight * mean) over independent samples, Welch-Satterthwaite df (ttest_ind(equal_var=False)'s);
    with no spread, for two sides the exact Mann-Whitney p-values."""
    parts = [(w, np.asarray(x, dtype=float)) for w, x in terms]
    effect = float(sum(w * x.mean() for w, x in parts)) if all(len(x) for _, x in parts) else math.nan
    if any(len(x) < 2 for _, x in parts):
        return Interval(effect, math.nan, math.nan, math.nan, math.nan, math.nan, tuple(seeds), False)
    v = [w * w * x.var(ddof=1) / len(x) for w, x in parts]
    se2 = sum(v)
    if math.sqrt(se2) <= NO_SPREAD:
        p_for = p_against = math.nan
        if len(parts) == 2 and parts[0][0] > 0 > parts[1][0]:
            a, b = (np.round(x, 12) for _, x in parts)
            p_for = float(stats.mannwhitneyu(a, b, alternative="greater", method="exact").pvalue)
            p_against = float(stats.mannwhitneyu(a, b, alternative="less", method="exact").pvalue)
        return Interval(
            effect, 0.0, math.nan, math.nan, math.nan, p_for, tuple(seeds), False, p_against, True
        )
    denominator = sum(vi * vi / (len(x) - 1) for vi, (_, x) in zip(v, parts, strict=True))
    df = se2 * se2 / denominator if denominator > 0 else float(min(len(x) for _, x in parts) - 1)
    low, high, p, p_against = _t_interval(effect, math.sqrt(se2), df)
    return Interval(effect, math.sqrt(se2), df, low, high, p, tuple(seeds), False, p_against)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN entries, claims not judged, stay NaN)."""
    judged = sorted((p, i) for i, p in enumerate(pvalues) if not math.isnan(p))
    m = len(judged)
    out = [math.nan] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(judged):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
