"""The results page's reading of the analysis's findings: the paper's claims one at a time, one Holm family
for a whole page, and no verdict on a planned sweep while any of its parts waits.

The findings table has a row per grid that tests a claim (a claim's recipes, variants and replications are
grids of their own, a gpu batch another), so one claim may read *not testable* in three rows and *held* in
a fourth. A reader asks first which of the paper's claims this project has judged: these read the same
findings one claim at a time (a claim is its text; its paper label rides in brackets on the finding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from analysis.findings import NOT_TESTABLE, Finding, untestable, verdict_numbers
from experiments.claim import Claim
from experiments.decide import decide_family


def judged_line(findings: Sequence[Finding], claims: Sequence[str]) -> str:
    """How many of the report's claims (`claims`, by text) a finding judges, a claim judged in several
    grids counted once, and which: the table's lead."""
    judged = {f.claim_text: f.source for f in findings if f.judged}
    verdicts = sum(f.judged for f in findings)
    total = len(set(claims) | {f.claim_text for f in findings})
    which = f": {', '.join(sorted(set(judged.values())))}" if judged else ""
    many = (
        f"; its {verdicts} verdicts are the family Holm's correction adjusts over"
        if verdicts > len(judged)
        else ""
    )
    return (
        f"**Judged: {len(judged)} of the {total} claims below**{which} (a claim judged in several grids "
        f"counts once here{many}); each row of the others says why it is not judged yet.\n"
    )


def judged_where(findings: Sequence[tuple[str, Finding]]) -> dict[str, list[str]]:
    """Where each claim (by its text and label) carries a verdict, from (where: a grid, or a gpu batch's
    grid, finding) pairs: "reverse_posembed_replication: **held** (+0.150, 95% CI [...], seeds ...)"."""
    out: dict[str, list[str]] = {}
    for where, f in findings:
        if f.judged:
            n = f.numbers
            said = f"{n['effect']}, 95% CI {n['95% CI']}, seeds {n['seeds']}"
            out.setdefault(f.claim, []).append(f"{where}: **{f.status}** ({said})")
    return out


def claims_table(findings: Sequence[tuple[str, Finding]], claims: Sequence[Claim]) -> str:
    """One row per claim of the paper (`claims`, in the report's order; a claim met only in `findings`
    after them): its verdicts and where each was reached, from (where, finding) pairs, or, where none
    judges it, the grids that tried it (their rows in the tables below say why) or that none has run."""
    sources = {c.text: c.source for c in claims}
    for _, f in findings:
        sources.setdefault(f.claim_text, f.source)
    lines = [
        "| the paper's claim | paper | verdict | where it is judged: effect, 95% CI, seeds |",
        "|---|---|---|---|",
    ]
    for text, source in sources.items():
        mine = [(where, f) for where, f in findings if f.claim_text == text]
        judged = [(where, f) for where, f in mine if f.judged]
        if judged:
            verdict = " / ".join(dict.fromkeys(f"**{f.status}**" for _, f in judged))
            where = "; ".join(f"{w}: **{f.status}**, {verdict_numbers(f)}" for w, f in judged)
        elif mine:
            verdict = "not testable"
            tried = list(dict.fromkeys(w for w, _ in mine))
            why = "its row below says why" if len(tried) == 1 else "their rows below say why"
            where = f"tried in {', '.join(tried)} ({why})"
        else:
            verdict, where = "not yet run", ""
        lines.append(f"| {text} | {source} | {verdict} | {where} |")
    return "\n".join(lines) + "\n"


def one_family(holders: Sequence[Any]) -> None:
    """Holm's correction over the findings of several reports read as one page (each holder has a
    `findings` list: a grid's analysis, a banked GPU batch): each gets its own findings back, rejudged."""
    every = [f for h in holders for f in h.findings]
    verdicts = decide_family([f.outcome for f in every])
    every = [
        Finding(f.grid, f.claim, status, evidence, f.outcome, p)
        for f, (status, evidence, p) in zip(every, verdicts, strict=True)
    ]
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
