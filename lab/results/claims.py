"""docs/RESULTS.md's first table: the paper's claims, each verdict with what it rests on and where its
evidence is.

One row a claim of the paper; the claims beyond it (other papers' schemes, the paper's findings on another
task) in a second table after it, row for row alike. A judged claim's row gives the verdict, the effect
and 95% CI of its weakest contrast, the seeds, the scale and machine its sweeps ran at and the compute
they took, and links its grid's page (`report/<grid>.md`), where every number behind it is; a claim
judged in several grids (or a banked gpu batch) gives each one's in turn. A claim judged nowhere links
the pages of the grids that tried it (their findings say why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from analysis.findings import Finding, seed_span
from experiments.claim import Claim
from lab.gpu_section import BatchResult, judged_findings
from lab.plan import TAG_MACHINE
from lab.results.grids import GridResult

HEADER = (
    "| the paper's claim | paper | verdict | effect | 95% CI | seeds | scale | machine | compute "
    "| evidence |",
    "|---|---|---|---|---|---|---|---|---|---|",
)
#: a claim's source that names a table or figure of the paper
PAPER_LABELS = ("tb:", "fig:")
#: the claims beyond the paper (other papers' schemes, the paper's findings on another task): a table of
#: their own after the paper's, so that the first table is the paper's claims alone
BEYOND = "Beyond the paper: the claims of the experiments that go past it, judged by the same rules."
BEYOND_HEADER = (
    "| the claim | its source | verdict | effect | 95% CI | seeds | scale | machine | compute | evidence |",
    HEADER[1],
)


@dataclass(frozen=True)
class Verdict:
    """One judged finding and what it rests on: where its sweeps ran, and its evidence's page."""

    finding: Finding
    scale: str
    machine: str
    compute: str
    evidence: str

    def cells(self) -> tuple[str, ...]:
        interval = self.finding.weakest_interval
        test = "paired" if interval.paired else "Welch"
        seeds = f"{seed_span(interval.seeds)} ({len(interval.seeds)}, {test})"
        return (f"{interval.effect:+.3f}", interval.ci, seeds, self.scale, self.machine, self.compute)


def grid_verdicts(result: GridResult, link: str) -> list[Verdict]:
    """The judged findings of one grid: its scale, the machines its parts ran on and the core-minutes
    they spent."""
    if result.analysis is None:
        return []
    ran = [run for _, run in result.parts if run is not None]
    machine = "; ".join(sorted({run.data.tags.get(TAG_MACHINE, "") for run in ran} - {""})) or "-"
    spent = sum(c.core_minutes for part in result.costs if part for c in part)
    scale, evidence = result.analysis.sweep.scale, f"[{result.grid}]({link})"
    return [
        Verdict(f, scale, machine, f"{spent:,.0f} core-min", evidence)
        for f in result.analysis.findings
        if f.judged
    ]


def batch_verdicts(result: BatchResult, machine: str, link: str) -> list[Verdict]:
    """The judged findings of one banked gpu batch: its GPU and wall minutes."""
    compute = f"{result.minutes:.0f} min on one GPU"
    return [
        Verdict(f, "gpu", machine, compute, f"[{f.grid} (gpu: {result.batch.name})]({link})")
        for f in judged_findings(result)
    ]


def verdicts_table(
    results: Sequence[GridResult],
    gpu: Sequence[BatchResult],
    claims: Sequence[Claim],
    grid_link: Mapping[str, str],
    gpu_link: str,
    gpu_machine: Mapping[str, str],
) -> str:
    """The table: one row a claim of `claims` (and any other a finding judges), its verdicts (several
    where several grids judged it, each cell then says each one's, in turn), else where it was tried
    (`grid_link`: each grid's page) or that no grid has run it. `gpu_machine`: each batch's GPU."""
    judged: dict[str, list[Verdict]] = {}
    for result in results:
        for v in grid_verdicts(result, grid_link.get(result.grid, "")):
            judged.setdefault(v.finding.claim_text, []).append(v)
    for batch in gpu:
        for v in batch_verdicts(batch, gpu_machine.get(batch.batch.name, "-"), gpu_link):
            judged.setdefault(v.finding.claim_text, []).append(v)
    tried: dict[str, list[str]] = {}
    for result in results:
        for f in result.analysis.findings if result.analysis else ():
            tried.setdefault(f.claim_text, []).append(result.grid)
    sources = {c.text: c.source for c in claims}
    for verdicts in judged.values():
        sources.setdefault(verdicts[0].finding.claim_text, verdicts[0].finding.source)

    def row(text: str, source: str) -> str:
        if text in judged:
            verdicts = judged[text]
            status = " / ".join(dict.fromkeys(f"**{v.finding.status}**" for v in verdicts))
            columns = zip(*(v.cells() for v in verdicts), strict=True)
            cells = [" / ".join(column) for column in columns]
            evidence = "; ".join(dict.fromkeys(v.evidence for v in verdicts))
            return f"| {text} | {source} | {status} | {' | '.join(cells)} | {evidence} |"
        grids = list(dict.fromkeys(tried.get(text, [])))
        verdict = "not testable" if grids else "not yet run"
        where = ", ".join(f"[{g}]({grid_link[g]})" for g in grids if g in grid_link)
        return f"| {text} | {source} | {verdict} | | | | | | | {where} |"

    papers = [row(t, s) for t, s in sources.items() if of_the_paper(s)]
    beyond = [row(t, s) for t, s in sources.items() if not of_the_paper(s)]
    text = "\n".join([*HEADER, *papers]) + "\n"
    if beyond:
        text += "\n" + BEYOND + "\n\n" + "\n".join([*BEYOND_HEADER, *beyond]) + "\n"
    return text


def of_the_paper(source: str) -> bool:
    """A claim the paper makes (its source a table or figure of it), not one beyond it ("no table: ...")."""
    return source.startswith(PAPER_LABELS)
