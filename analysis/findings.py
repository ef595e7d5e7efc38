"""A sweep's findings: each claim of its experiment judged on the sweep's per-seed numbers, with its reason.

The claims are declared with their experiment (`experiments.catalog`, collected by `experiments.registry`):
a sweep of grid G is judged by G's experiment's claims (a variant holds its parent's; a grid this checkout
does not declare, by its `variant_of` tag's). The verdicts follow `experiments.verdicts` (held, not held,
the seeds cannot tell, not testable), Holm's correction over a report's claims. A claim whose grid's budget
a pre-search chose is judged only on other seeds: the sweep's parent-run tag `presearch_seeds`, else what
the experiment declares (`Grid.presearch_seeds`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from arith.tracking.schema import ACCURACY_COLUMN, SEED_COLUMN
from experiments.claim import Claim
from experiments.decide import decide_family
from experiments.intervals import Interval
from experiments.registry import claims_for, presearch_record
from experiments.verdicts import (  # noqa: F401  (the verdicts are re-exported: tests and scripts read them here)
    CANNOT_TELL,
    HELD,
    LEARNED,
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
    claim: str
    status: str
    evidence: str
    #: the claim's contrasts as the analysis read them (Holm's correction is over a report's findings)
    outcome: Outcome = field(default_factory=Outcome, repr=False, compare=False)
    #: Holm-adjusted one-sided p over the claims judged in the same report (NaN: not judged)
    p_holm: float = math.nan

    @property
    def claim_text(self) -> str:
        """The claim without its paper label (`claim` is "text [label]")."""
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
        """The interval of the claim's weakest contrast (its largest one-sided p): what its verdict rests
        on, all of its contrasts having to hold."""
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


def chose_budget_seeds(tag: str | None, grid: str = "") -> tuple[int, ...]:
    """The seeds of the pre-search that chose the sweep's budget: its `presearch_seeds` tag (JSON list; none
    without the tag)."""
    if tag:
        try:
            return tuple(int(s) for s in json.loads(tag))
        except (ValueError, TypeError):
            pass
    return ()


def outcome_of(
    claim: Claim, frame: pd.DataFrame, digit_map=None, presearch_tag: str | None = None, grid: str = ""
) -> Outcome:
    """The claim read off the per-seed cells of a sweep of `grid` (the claim's own or a variant of it):
    seeds that chose its budget left out, pooled sides refused."""
    chose = chose_budget_seeds(presearch_tag, grid)
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
    """What the check reads on the given seeds (a claim's own pre-search seeds, shown for reference)."""
    try:
        outcome = claim.check(frame, digit_map)
    except PooledConfigurations as err:
        return str(err)
    if outcome.untestable:
        return outcome.untestable
    return "; ".join(c.describe() for c in outcome.contrasts)


def judged(grid: str, claims: list[tuple[Claim, Outcome]]) -> list[Finding]:
    """Findings of one report, Holm-corrected together (`experiments.verdicts.decide_family`)."""
    verdicts = decide_family([o for _, o in claims])
    return [
        Finding(grid, f"{c.text} [{c.source}]", status, evidence, o, p)
        for (c, o), (status, evidence, p) in zip(claims, verdicts, strict=True)
    ]


def evaluate_findings(
    frame: pd.DataFrame,
    grid: str,
    digit_map: dict[int, int] | None = None,
    presearch_tag: str | None = None,
    variant_of: str = "",
) -> list[Finding]:
    """Every claim the grid tests (its parent's too, for a variant), judged on the per-seed cells
    (`analysis.load.Sweep.cells`), Holm's correction over the grid's claims (a report of several grids:
    `rejudge`)."""
    claims = [(c, outcome_of(c, frame, digit_map, presearch_tag, grid)) for c in claims_for(grid, variant_of)]
    return judged(grid, claims)


def rejudge(findings: list[Finding]) -> list[Finding]:
    """The findings of several sweeps judged as one report: Holm's correction over all of them."""
    verdicts = decide_family([f.outcome for f in findings])
    return [
        Finding(f.grid, f.claim, status, evidence, f.outcome, p)
        for f, (status, evidence, p) in zip(findings, verdicts, strict=True)
    ]


def one_family(holders: Sequence[Any]) -> None:
    """Holm's correction over the findings of several reports read as one page (each holder has a
    `findings` list: a grid's analysis, a banked GPU batch): each gets its own findings back, rejudged."""
    every = rejudge([f for h in holders for f in h.findings])
    for holder in holders:
        holder.findings, every = every[: len(holder.findings)], every[len(holder.findings) :]


def awaiting_plan(
    findings: list[Finding], waiting: int, parts: int, see: str = "Core-minutes, below"
) -> list[Finding]:
    """A planned sweep's findings while `waiting` of its `parts` have not run: none of them judged yet.

    The plan fixed the sweep's seeds before any of it ran, so a verdict on the parts run so far would be an
    interim look that the plan did not declare (and one whose sides hold enough seeds would read as if the
    sweep were done). A claim the parts so far would judge becomes not testable, what they read kept as no
    verdict, its outcome untestable so that Holm's correction (`one_family`) leaves it out of the page's
    family; a claim already not testable keeps its own reason, the parts waiting said after it. `see`:
    where the reader finds the parts (the page's section, or the plan's file)."""
    waits = f"the plan's sweep of it is not complete: {waiting} of {parts} parts not yet run ({see})"
    out = []
    for f in findings:
        if not f.judged:
            outcome = replace(f.outcome, notes=(*f.outcome.notes, waits))  # kept when Holm rejudges it
            out.append(replace(f, evidence=f"{f.evidence}; {waits}", outcome=outcome))
            continue
        why = f"{waits}; its seeds were fixed before it ran, and it is judged once all of them have"
        read = "; ".join(c.describe() for c in f.outcome.contrasts)
        notes = [f"the parts run so far read, for reference, not a verdict: {read}"]
        out.append(Finding(f.grid, f.claim, NOT_TESTABLE, "; ".join([why, *notes]), untestable(why, notes)))
    return out


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
    if fmt == "html":
        return frame.to_html(index=False)
    if fmt == "latex":
        return frame.to_latex(
            index=False, caption="Claims of the paper on this sweep", label="tab:findings", escape=True
        )
    lines = [
        "| claim | status | effect | 95% CI | p | p (Holm) | seeds | evidence |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {f.claim} | **{f.status}** | " + " | ".join(f.numbers.values()) + f" | {f.evidence} |"
        for f in findings
    ]
    return "\n".join(lines) + "\n"
