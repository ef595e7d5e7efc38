"""The paper's claims, each once: which carry a verdict, where, and on what.

The findings table has a row per grid that tests a claim (a claim's recipes, variants and replications are
grids of their own, a gpu batch another), so one claim may read *not testable* in three rows and *held* in
a fourth. A reader asks first which of the paper's claims this project has judged: these read the same
findings one claim at a time (a claim is its text; its paper label rides in brackets on the finding).
"""

from __future__ import annotations

from collections.abc import Sequence

from analysis.findings import Finding
from experiments.claim import Claim


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
