"""docs/RESULTS.md composed: the claims at a glance, the not-testable table, spend, then every section."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from analysis.by_claim import claims_table, judged_line, judged_where
from analysis.by_digits import accuracy_by_digits_figure
from analysis.cell_text import clip_reason, command_notes
from analysis.curves import learning_curves_figure, save
from analysis.findings import Finding, one_family
from analysis.report import FINISHED
from analysis.tables import markdown_table as markdown
from arith.tracking.schema import POINT_COLUMN, SEED_COLUMN
from arith.tracking.store import client as store_client
from experiments.registry import claims_for
from lab.budget import budget_figure, budget_table, steps_needed
from lab.contents import with_contents
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
    GpuBatch,
    GpuRate,
    PlannedGpuSweep,
    gpu_batches,
    gpu_rates,
    judged_cost,
    planned_gpu_sweeps,
)
from lab.results.grids import (
    BEFORE_AFTER_NOTE,
    BUDGET_POINTS,
    FIGURES,
    GPU_BANK,
    GPU_INSTEAD,
    INTRO,
    ONE_CORE_INSTEAD,
    UNTESTABLE_NOTE,
    VERDICT_RULES,
    VERDICTS_BEFORE,
    GridResult,
    grid_results,
    section,
    unarchived_sections,
)
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


def untestable_table(
    results: list[GridResult],
    budgets: pd.DataFrame,
    curves: dict[str, str],
    paper_trial: Callable[[str], str] | None = None,
    steps: dict[str, list[float | None]] | None = None,
    gpu: dict[str, list[GpuBatch]] | None = None,
    rates: dict[tuple[str, str], list[GpuRate]] | None = None,
    searched: dict[str, str] | None = None,
    judged: Mapping[str, Sequence[str]] | None = None,
    planned: dict[str, list[PlannedGpuSweep]] | None = None,
) -> str:
    """Each claim judged not testable: why (and where it is judged all the same: `judged`, by claim text,
    `judged_where`), its learning curves, the steps the pre-search extrapolates its
    models need, what a recipe search for it found (`searched`, by grid, where one has run), what a judged
    sweep would cost on one core (at those `steps`, by "grid: point") and on a GPU (the GPU plan's judged
    batch of the grid at its setting's measured pace, `planned`, and the banked `gpu` batches of the grid
    or its parent), and how long a trial is at paper scale (`paper_trial(grid)`, where given);
    empty when none is."""
    steps_to = next((c for c in budgets.columns if c.startswith("steps to ")), "")
    rows = []
    for result in results:
        findings = [f for f in result.analysis.findings if not f.judged] if result.analysis else []
        if not findings:
            continue
        estimates = []
        for name in BUDGET_POINTS.get(result.grid, []):
            rows_of = (
                budgets[budgets["grid"] + ": " + budgets[POINT_COLUMN] == name] if len(budgets) else budgets
            )
            if rows_of.empty:
                continue
            by_estimate = rows_of.groupby(steps_to, sort=False)[SEED_COLUMN]  # which seeds said what
            for estimate, seeds in by_estimate:
                said = f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"
                label = "" if len(rows_of) == 1 else f" ({said})"
                estimates.append(f"{name}{label}: {estimate}")
        per_grid = {
            "learning curves": f"[figure]({curves[result.grid]})" if result.grid in curves else "",
            "steps to pass the gate (pre-search, cpu model)": "; ".join(estimates) or "no budget series",
        }
        if searched:
            per_grid["recipe search (pre-search seeds)"] = searched.get(result.grid, "none run")
        if paper_trial is not None:
            per_grid["a trial at paper scale"] = paper_trial(result.grid)
        costs = [c for part in result.costs if part for c in part]
        plans = [plan for plan, _ in result.parts]
        instead = ONE_CORE_INSTEAD.get(result.grid, ""), GPU_INSTEAD.get(result.grid, "")
        for f in findings:
            cost = judged_cost(
                result.grid,
                plans,
                f.claim,
                costs,
                steps or {},
                gpu or {},
                BUDGET_POINTS,
                *instead,
                rates,
                planned,
            )
            elsewhere = (judged or {}).get(f.claim, ())
            also = f"; judged in {'; '.join(elsewhere)}" if elsewhere else ""
            rows.append(
                {
                    "grid": result.grid,
                    "claim": f.claim,
                    "why": f.evidence + also,
                    **per_grid,
                    **cost,
                }
            )
    if not rows:
        return ""
    rows, commands = command_notes(rows)
    table = markdown(pd.DataFrame(rows))
    return f"### Not testable: why, and what it would take\n\n{UNTESTABLE_NOTE}\n\n{table}\n{commands}"


def write_results(
    uri: str,
    out: Path,
    intro: str = INTRO,
    paper_trial: Callable[[str], str] | None = None,
) -> None:
    """Write the page to `out` (and its figures beside it) from the store at `uri`; `paper_trial(grid)`
    says how long the grid's trials are at paper scale (the not-testable table shows it;
    the sweeps' grids are not the analysis's to read)."""
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
            curves[r.grid] = (FIGURES / f"{r.grid}.png").as_posix()
        if (figure := accuracy_by_digits_figure(r.analysis.sweep)) is not None:
            save(figure, figures / f"{r.grid}_by_digits.png")
            by_digits[r.grid] = (FIGURES / f"{r.grid}_by_digits.png").as_posix()
    files = presearch_records()
    every = [rec for records in files.values() for rec in records]
    budgets = budget_table(every)
    budget_curves = ""
    if (figure := budget_figure(every)) is not None:
        save(figure, figures / "budget.png")
        budget_curves = (FIGURES / "budget.png").as_posix()
    sections = [
        unarchived.get(r.grid) or section(r, curves.get(r.grid, ""), by_digits.get(r.grid, ""))
        for r in results
    ]
    # the not-testable table also reads points pre-searched at one budget: whether it was reached
    banked = gpu_batches(GPU_BANK, gpu_plan)
    head = [
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
    parts = [
        intro.rstrip() + "\n",
        *filter(None, head),
        presearch_tables(files, budgets, budget_curves),
        # once one has run
        *filter(None, [search_sections(uri, figures=figures, link=FIGURES.as_posix(), plan_parts=progress)]),
        *sections,
        gpu_section(gpu),
    ]
    out.write_text(with_contents("\n".join(parts), grids()))
    print(f"wrote {out}")
