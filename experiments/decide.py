"""The verdict of each claim of one report: its Holm-adjusted p-values for and against the paper's direction,
read at one level over the report's verdicts, and what more seeds would do where the seeds cannot tell.

- **held**: the adjusted one-sided p < ALPHA / 2 (the 95% interval's lower end, Holm-corrected, above 0);
- **not held**: the adjusted p against the paper's direction < ALPHA / 2, or a reason it fails anyway;
- **not testable**: a compared model did not learn, the runs are missing, or a side has < MIN_SEEDS seeds;
- **the seeds cannot tell**: otherwise, with the seeds the observed spread says would tell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from experiments.intervals import ALPHA, holm, p_is
from experiments.verdicts import CANNOT_TELL, HELD, MIN_SEEDS, NOT_HELD, NOT_TESTABLE, Contrast, Outcome


def would_tell(contrast: Contrast, level: float) -> str:
    """What more seeds would do for the claim's weakest contrast at one-sided `level`: tell it in the
    paper's direction, or against it where the observed effect runs against it."""
    interval = contrast.interval
    n = contrast.seeds_to_tell(level)
    against = ", in the direction against the paper's" if n and interval.effect < 0 else ""
    if interval.zero_spread:
        if not n:
            return "with no spread and no effect no number of seeds would"
        return f"with no spread the exact test needs about {n} seeds per side{against}"
    if math.isnan(interval.se):
        return f"one seed per side measures no spread: at least {MIN_SEEDS} seeds per side"
    if n is None:
        return "at the observed spread no feasible number of seeds would"
    if against:
        return f"about {n} seeds per side would tell{against}, at the observed mean and spread"
    return f"at the observed mean and spread about {n} seeds per side would"


def decide(outcome: Outcome, p_holm: float, verdicts: int, p_against_holm: float) -> tuple[str, str]:
    """The verdict of one claim and its evidence, given its Holm-adjusted p-values for and against the
    paper's direction over the `verdicts` reached in the same report."""
    notes = "; ".join(outcome.notes)
    if outcome.untestable:
        return NOT_TESTABLE, "; ".join(filter(None, [outcome.untestable, notes]))
    evidence = "; ".join(filter(None, [*(c.describe() for c in outcome.contrasts), notes]))
    if outcome.too_few_seeds:
        return NOT_TESTABLE, f"{outcome.too_few_seeds}; for reference, not a verdict: {evidence}"
    if outcome.fails:
        return NOT_HELD, f"{outcome.fails}; {evidence}"
    # the family is the report's verdicts, more than its claims where a claim is judged in several grids
    family = f"over {verdicts} verdict" + ("" if verdicts == 1 else "s")
    if p_holm < ALPHA / 2:  # False for NaN: not judged
        return HELD, f"Holm-adjusted {p_is(p_holm)} {family}; {evidence}"
    if p_against_holm < ALPHA / 2:
        against = f"Holm-adjusted {p_is(p_against_holm)} {family}"
        return NOT_HELD, f"against the paper's direction: {against}; {evidence}"
    level = ALPHA / 2 / max(verdicts, 1)
    worst = max(outcome.contrasts, key=lambda c: (math.isnan(c.interval.p), c.interval.p))
    held = f"Holm-adjusted {p_is(p_holm)} {family}; " if not math.isnan(p_holm) else ""
    return CANNOT_TELL, f"{held}{would_tell(worst, level)}; {evidence}"


def decide_family(outcomes: Sequence[Outcome]) -> list[tuple[str, str, float]]:
    """Every claim of one report judged together: (status, evidence, Holm-adjusted p) each, both directions
    adjusted over the verdicts reached (a claim judged in two grids is two)."""
    adjusted = holm([o.p for o in outcomes])
    against = holm([o.p_against for o in outcomes])
    verdicts = sum(not math.isnan(p) for p in adjusted)
    return [(*decide(o, p, verdicts, q), p) for o, p, q in zip(outcomes, adjusted, against, strict=True)]
