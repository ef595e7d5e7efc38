"""A sweep's findings: each claim of its experiment judged on the sweep's per-seed numbers, with its reason.

The claims are declared with their experiment (`experiments.registry.claims_for`; a variant holds its
parent's). The verdicts follow `experiments.verdicts`, Holm's correction over a report's claims. Seeds of
a pre-search that chose the grid's budget (tag `presearch_seeds`) are never judged on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from analysis.tables import markdown_rows
from arith.tracking.schema import ACCURACY_COLUMN, SEED_COLUMN
from experiments.claim import Claim
from experiments.decide import decide_family
from experiments.intervals import Interval
from experiments.registry import claims_for, presearch_record
from experiments.verdicts import (  # noqa: F401  (the verdicts are re-exported: tests and scripts read them here)
    CANNOT_TELL,
    HELD,
    NOT_HELD,
    NOT_TESTABLE,
    VERDICTS,
    Outcome,
    PooledConfigurations,
    untestable,
)


@dataclass(frozen=True)
class Finding:
    grid: str
    #: "text [paper label]"
    claim: str
    status: str
    evidence: str
    outcome: Outcome = field(default_factory=Outcome, repr=False, compare=False)
    #: Holm-adjusted one-sided p over the claims judged in the same report (NaN: not judged)
    p_holm: float = math.nan

    @property
    def claim_text(self) -> str:
        return self.claim.rsplit(" [", 1)[0]

    @property
    def source(self) -> str:
        """The claim's paper label (`tb:*`, `fig:*`)."""
        return self.claim.rsplit(" [", 1)[-1].rstrip("]")

    @property
    def judged(self) -> bool:
        """Whether the claim carries a verdict here: held, not held, or the seeds cannot tell."""
        return self.status != NOT_TESTABLE

    @property
    def weakest_interval(self) -> Interval:
        """The contrast with the largest one-sided p: the verdict rests on it, all having to hold."""
        return max((c.interval for c in self.outcome.contrasts), key=lambda i: (math.isnan(i.p), i.p))

    @property
    def numbers(self) -> dict[str, str]:
        """effect, 95% CI, one-sided p, Holm-adjusted p and seeds of the claim's weakest contrast."""
        if not self.outcome.contrasts or self.outcome.untestable:
            return {"effect": "", "95% CI": "", "p": "", "p (Holm)": "", "seeds": ""}
        i = self.weakest_interval
        return {
            "effect": f"{i.effect:+.3f}",
            "95% CI": i.ci,
            "p": "" if math.isnan(i.p) else f"{i.p:.2g}",
            "p (Holm)": "" if math.isnan(self.p_holm) else f"{self.p_holm:.2g}",
            "seeds": ", ".join(map(str, i.seeds)) + (" (paired)" if i.paired else " (Welch)"),
        }


def chose_budget_seeds(tag: str | None) -> tuple[int, ...]:
    """The seeds of the pre-search that chose the sweep's budget: its `presearch_seeds` tag (JSON list)."""
    try:
        return tuple(int(s) for s in json.loads(tag)) if tag else ()
    except (ValueError, TypeError):
        return ()


def outcome_of(
    claim: Claim, frame: pd.DataFrame, digit_map=None, presearch_tag: str | None = None, grid: str = ""
) -> Outcome:
    """The claim read off a sweep's per-seed cells: seeds that chose its budget left out, pooling refused."""
    chose = chose_budget_seeds(presearch_tag)
    if chose and not frame.empty:
        fresh = frame[~frame[SEED_COLUMN].isin(chose)]
        if fresh.empty:
            seeds = ", ".join(map(str, sorted(frame[SEED_COLUMN].dropna().astype(int).unique())))
            source = presearch_record(grid) or "the sweep's presearch_seeds tag"
            why = (
                f"judged on the seeds that chose its budget: seeds {seeds}, and the pre-search ({source}) "
                f"ran seeds {', '.join(map(str, chose))}; fresh seeds are needed"
            )
            return untestable(why, [f"for reference, not a verdict: {_as_read(claim, frame, digit_map)}"])
        frame = fresh
    if claim.reads != ACCURACY_COLUMN and not frame.empty:
        if claim.reads not in frame or frame[claim.reads].isna().all():
            return untestable(f"the claim reads {claim.reads}, which the sweep's trials did not record")
        frame = frame.assign(**{ACCURACY_COLUMN: frame[claim.reads]})
    try:
        return claim.check(frame, digit_map)
    except PooledConfigurations as err:
        return untestable(str(err))


def _as_read(claim: Claim, frame: pd.DataFrame, digit_map) -> str:
    try:
        outcome = claim.check(frame, digit_map)
    except PooledConfigurations as err:
        return str(err)
    if outcome.untestable:
        return outcome.untestable
    return "; ".join(c.describe() for c in outcome.contrasts)


def evaluate_findings(
    frame: pd.DataFrame,
    grid: str,
    digit_map: dict[int, int] | None = None,
    presearch_tag: str | None = None,
    variant_of: str = "",
) -> list[Finding]:
    """Every claim the grid tests judged on the per-seed cells, Holm-corrected together."""
    claims = claims_for(grid, variant_of)
    outcomes = [outcome_of(c, frame, digit_map, presearch_tag, grid) for c in claims]
    verdicts = decide_family(outcomes)
    return [
        Finding(grid, f"{c.text} [{c.source}]", status, evidence, o, p)
        for c, o, (status, evidence, p) in zip(claims, outcomes, verdicts, strict=True)
    ]


def seed_span(seeds: Sequence[int]) -> str:
    """Seeds as runs of consecutive ones: (0, 1, 2, 3, 4) -> "0-4", (0, 2, 3) -> "0, 2-3"."""
    runs: list[list[int]] = []
    for seed in sorted(seeds):
        if runs and seed == runs[-1][-1] + 1:
            runs[-1].append(seed)
        else:
            runs.append([seed])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


def verdict_numbers(finding: Finding) -> str:
    """A judged finding's weakest contrast in short: "+0.150 [+0.066, +0.234], seeds 20-29 (10, paired)"."""
    interval = finding.weakest_interval
    test = "paired" if interval.paired else "Welch"
    seeds = f"seeds {seed_span(interval.seeds)} ({len(interval.seeds)}, {test})"
    return f"{interval.effect:+.3f} {interval.ci}, {seeds}"


FINDING_COLUMNS = ["grid", "claim", "status", "effect", "95% CI", "p", "p (Holm)", "seeds", "evidence"]


def findings_frame(findings: list[Finding]) -> pd.DataFrame:
    rows = [
        {"grid": f.grid, "claim": f.claim, "status": f.status, **f.numbers, "evidence": f.evidence}
        for f in findings
    ]
    return pd.DataFrame(rows, columns=FINDING_COLUMNS)


def render_findings(findings: list[Finding], fmt: str, grid: str) -> str:
    if not findings:
        return f"No claim of the paper is tested by grid {grid!r}.\n"
    frame = findings_frame(findings).drop(columns="grid")
    if fmt == "csv":
        return frame.to_csv(index=False)
    if fmt == "latex":
        return frame.to_latex(
            index=False, caption="Claims of the paper on this sweep", label="tab:findings", escape=True
        )
    rows = [[f.claim, f"**{f.status}**", *f.numbers.values(), f.evidence] for f in findings]
    return markdown_rows(frame.columns, rows) + "\n"
