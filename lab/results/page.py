"""docs/RESULTS.md composed: the claims table first (and how far each position scheme holds beyond its
training), then the record's pages (findings by grid, the not-testable table, spend, pre-search, searches,
the gpu scale, one page a grid)."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from analysis.by_digits import accuracy_by_digits_figure
from analysis.cell_text import clip_reason
from analysis.curves import learning_curves_figure
from analysis.findings import Finding
from analysis.sweep import FINISHED
from arith.tracking.schema import SEED_COLUMN
from arith.tracking.store import client as store_client
from experiments.registry import claims_for
from lab.analysis_claims import claims_table, judged_line, judged_where, one_family
from lab.analysis_output import save
from lab.budget import budget_figure, budget_table, steps_needed
from lab.contents import headings, with_contents
from lab.gpu_plan import load_gpu_plan
from lab.gpu_section import BatchResult, gpu_results, gpu_section, judged_findings, summary_rows
from lab.plan import (
    TAG_WALL,
    grids,
    seeds_of,
    unended_grids,
)
from lab.presearch import presearch_records, presearch_tables
from lab.reach import (
    gpu_batches,
    gpu_rates,
    planned_gpu_sweeps,
)
from lab.results.claims import verdicts_table
from lab.results.grids import (
    BEFORE_AFTER_NOTE,
    FIGURES,
    GPU_BANK,
    INTRO,
    VERDICT_RULES,
    VERDICTS_BEFORE,
    GridResult,
    grid_results,
    section,
    unarchived_sections,
)
from lab.results.lengths import lengths_table
from lab.results.untestable import untestable_table
from lab.search.report import search_evidence, search_sections
from lab.spend import spend_table


def summary(
    results: list[GridResult], unarchived: set[str] = frozenset(), gpu: Sequence[BatchResult] = ()
) -> str:
    """One line per claim of the paper: its verdict on the grid's reported sweeps, "not re-judged" for a
    grid whose section was measured before the sweeps were archived, or that it was not run; then each
    claim judged on a banked `gpu` batch."""
    lines = [
        "## Findings at a glance",
        "",
        VERDICT_RULES,
        "",
        "| grid | claim | status | effect | 95% CI | p | p (Holm) | judged on seeds | sweeps' seeds | "
        "sweep minutes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    blank = " | " * 5
    for result in results:
        if result.analysis is not None:
            ran = [(plan, run) for plan, run in result.parts if run is not None]
            minutes = sum(int(run.data.tags[TAG_WALL]) for _, run in ran) / 60
            trials = result.analysis.sweep.trials
            finished = {int(s) for s in trials.loc[trials["status"] == FINISHED, SEED_COLUMN]}
            measured = f"{seeds_of(ran, finished)} | {minutes:.0f}"
            lines += [
                f"| {result.grid} | {f.claim} | **{f.status}** | {_numbers(f)} | {measured} |"
                for f in result.analysis.findings
            ]
        elif result.grid in unarchived and claims_for(result.grid):
            lines.append(
                f"| {result.grid} | all of its claims | **not re-judged** (see its section) |{blank}| |"
            )
        elif claims_for(result.grid):
            lines.append(f"| {result.grid} | all of its claims | not yet run |{blank}| |")
    located = where_judged(results, gpu)
    claims = [c for r in results for c in claims_for(r.grid)]
    lead = judged_line([f for _, f in located], [c.text for c in claims])
    lines[2:2] = [lead, BY_CLAIM, "", claims_table(located, claims)]
    return "\n".join(lines + summary_rows(gpu)) + "\n"


BY_CLAIM = (
    "Each claim of the paper once (a claim judged in several grids: each verdict, where; the weakest "
    "contrast's effect and interval, and the seeds it was judged on); then every grid's row."
)


def where_judged(results: list[GridResult], gpu: Sequence[BatchResult]) -> list[tuple[str, Finding]]:
    """Every finding of the report with where it was reached: its grid, or a gpu batch's grid and name
    (a batch's judged findings only: its pre-search's are in the gpu section)."""
    return [(r.grid, f) for r in results if r.analysis for f in r.analysis.findings] + [
        (f"{f.grid} (gpu: {r.batch.name})", f) for r in gpu for f in judged_findings(r)
    ]


def _numbers(finding: Finding) -> str:
    return " | ".join(finding.numbers.values())


def before_after(results: list[GridResult]) -> str:
    """Each claim's verdict in the report before these rules (docs/results/notes.yaml `verdicts_before`)
    beside its verdict now."""
    now = {(f.grid, f.claim_text): f for r in results if r.analysis for f in r.analysis.findings}
    lines = [BEFORE_AFTER_NOTE, "", "| grid | claim | before | after | why, after |", "|---|---|---|---|---|"]
    for old in VERDICTS_BEFORE:
        finding: Finding | None = now.get((old["grid"], old["claim"]))
        after = f"**{finding.status}**" if finding else "not judged"
        why = _short_why(finding) if finding else ""
        lines.append(f"| {old['grid']} | {old['claim']} | {old['before']} | {after} | {why} |")
    return "### Verdicts before and after\n\n" + "\n".join(lines) + "\n"


def _short_why(finding: Finding) -> str:
    """The first clause of a verdict's reason, cut where it would not fit the table (its full evidence is
    in the grid's section)."""
    return clip_reason(finding.evidence)


#: the generated pages beside docs/RESULTS.md, and the way from one of them to the figures
REPORT = Path("results") / "report"
FIGURES_FROM_REPORT = Path("..") / "figures"


def write_results(
    uri: str,
    out: Path,
    intro: str = INTRO,
    paper_trial: Callable[[str], str] | None = None,
) -> None:
    """Write docs/RESULTS.md to `out` (the claims table and where the rest is) and its pages under
    `out.parent/results/report/` (how claims are judged, the findings by grid, pre-search, searches, the
    gpu scale, one page a grid), the figures in `out.parent/results/figures/`, from the store at `uri`;
    `paper_trial(grid)` says how long the grid's trials are at paper scale (the not-testable table)."""
    every_part = grid_results(uri)
    # a recipe search's parts count in the core-minutes; what it found is its own section's
    results = [r for r in every_part if not r.search]
    progress = {r.grid: r.parts for r in every_part if r.search}  # how far each search has got
    gpu_plan = load_gpu_plan()
    with tempfile.TemporaryDirectory() as tmp:  # a store of its own: gpu sweeps never mix with cpu ones
        gpu = gpu_results(GPU_BANK, gpu_plan, f"sqlite:///{tmp}/gpu.db")
    one_family([*(r.analysis for r in results if r.analysis is not None), *gpu])  # one page, one family
    kept = unarchived_sections()
    unarchived = {r.grid: kept[r.grid] for r in results if r.analysis is None and r.grid in kept}
    figures = out.parent / FIGURES
    figures.mkdir(parents=True, exist_ok=True)
    curves, by_digits = {}, {}
    for r in results:
        if r.analysis is None:
            continue
        if (figure := learning_curves_figure(r.analysis.sweep)) is not None:
            save(figure, figures / f"{r.grid}.png")
            curves[r.grid] = (FIGURES_FROM_REPORT / f"{r.grid}.png").as_posix()
        if (figure := accuracy_by_digits_figure(r.analysis.sweep)) is not None:
            save(figure, figures / f"{r.grid}_by_digits.png")
            by_digits[r.grid] = (FIGURES_FROM_REPORT / f"{r.grid}_by_digits.png").as_posix()
    files = presearch_records()
    every = [rec for records in files.values() for rec in records]
    budgets = budget_table(every)
    budget_curves = ""
    if (figure := budget_figure(every)) is not None:
        save(figure, figures / "budget.png")
        budget_curves = (FIGURES_FROM_REPORT / "budget.png").as_posix()
    # the not-testable table also reads points pre-searched at one budget: whether it was reached
    banked = gpu_batches(GPU_BANK, gpu_plan)
    findings = [
        summary(results, set(unarchived), gpu),
        before_after(results),
        untestable_table(
            results,
            budget_table(every, single=True),
            curves,
            paper_trial,
            steps_needed(every),
            banked,
            gpu_rates(every),
            {r.grid: found for r in results if (found := search_evidence(uri, r.grid, progress))},
            judged_where(where_judged(results, gpu)),
            planned_gpu_sweeps(gpu_plan, banked),
        ),
        spend_table(
            [p for r in every_part for p in zip((plan for plan, _ in r.parts), r.costs, strict=True)],
            set(unarchived),
            unended_grids(store_client(uri)),
        ),
    ]
    link = FIGURES_FROM_REPORT.as_posix()
    searches = search_sections(uri, figures=figures, link=link, plan_parts=progress)
    pages = {
        "about": intro.rstrip() + "\n",
        "findings": "# Findings, grid by grid\n\n" + "\n".join(filter(None, findings)),
        "presearch": "# Pre-search\n\n" + presearch_tables(files, budgets, budget_curves),
        **({"searches": "# Recipe searches\n\n" + searches} if searches else {}),
        "gpu": "# The gpu scale\n\n" + gpu_section(gpu),
        **{
            r.grid: unarchived.get(r.grid) or section(r, curves.get(r.grid, ""), by_digits.get(r.grid, ""))
            for r in results
        },
    }
    folder = out.parent / REPORT
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in linked(pages).items():
        (folder / f"{name}.md").write_text(with_contents(text, grids()))
    grid_link = {r.grid: (REPORT / f"{r.grid}.md").as_posix() for r in results}
    machines = {b.batch: b.machine for batches in banked.values() for b in batches}
    claims = [c for r in results for c in claims_for(r.grid)]
    table = verdicts_table(results, gpu, claims, grid_link, (REPORT / "gpu.md").as_posix(), machines)
    if lengths := lengths_table(results):  # beyond the paper: how far each position scheme holds
        table += "\n" + lengths
    out.write_text(front_page(table, [name for name in pages if name not in grid_link], grid_link))
    print(f"wrote {out} and {len(pages)} pages in {folder}")


#: what each page of the record holds, for the front page's list
PAGE_TITLES = {
    "about": "How the claims are judged, and what each scale is",
    "findings": "Every grid's findings, the verdicts before and after, not testable: why and what it "
    "would take, and the compute spent",
    "presearch": "The pre-search: steps to competence",
    "searches": "Recipe searches: the cost to the gate",
    "gpu": "The gpu scale: batches banked from lent GPUs",
}


def front_page(table: str, pages: Sequence[str], grid_link: Mapping[str, str]) -> str:
    """docs/RESULTS.md: the claims table first, then where everything else is."""
    lines = [
        "# Results: the paper's claims, judged",
        "",
        "Generated by `python -m lab.results` from the archived sweeps (docs/results/sweeps/, "
        "docs/results/gpu/), one row a claim of the paper: a claim judged in several grids gives each "
        "verdict and its numbers in turn; every number behind a row is on its grid's page.",
        "",
        table,
        "## The record",
        "",
        *(f"- [{PAGE_TITLES.get(name, name)}]({(REPORT / name).as_posix()}.md)" for name in pages),
        "- Each grid's sweeps, tables and figures: "
        + ", ".join(f"[{grid}]({path})" for grid, path in grid_link.items()),
        "",
    ]
    return "\n".join(lines)


def linked(pages: Mapping[str, str]) -> dict[str, str]:
    """The pages with each link to a heading of another page (`](#anchor)`, written for one page) pointed
    at the page that holds it."""
    where = {anchor: name for name, text in pages.items() for _, _, anchor in headings(text)}
    out = {}
    for name, text in pages.items():
        own = {anchor for _, _, anchor in headings(text)}

        def moved(match: re.Match, own: set[str] = own) -> str:
            anchor = match.group(1)
            if anchor in own or anchor not in where:
                return match.group(0)
            return f"]({where[anchor]}.md#{anchor})"

        out[name] = re.sub(r"\]\(#([^)]+)\)", moved, text)
    return out


def record_text(out: Path) -> str:
    """docs/RESULTS.md (at `out`) and every page of its record, one text (what a check of the whole reads)."""
    pages = sorted((out.parent / REPORT).glob("*.md"))
    return "\n".join([out.read_text(), *(page.read_text() for page in pages)])
