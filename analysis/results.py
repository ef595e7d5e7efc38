"""docs/RESULTS.md from a store: the cpu reproduction's sweeps judged, the pre-search, the gpu scale.

    write_results(uri, out, paper_trial=...)   # the page, its figures in out.parent/results/figures/

The page is composed here from the store alone (every archive of docs/results/sweeps/ imported into it
first: `analysis.plan.restore_archives`), the pre-search records (docs/presearch/), the gpu scale's banked
archives (`analysis.gpu`), the recipe searches' cost-to-gate tables (`analysis.search`) and the fixed prose
beside it in docs/results/ (intro.md, presearch.md, notes.yaml), under a contents list
(`analysis.contents`). A grid of the plan with no sweep in the
store is listed as not yet run, with the reason, unless docs/results/unarchived/<grid>.md holds its
section: measured before the sweeps were archived, it is included verbatim and not re-judged.
`scripts/reproduce_cpu.py` runs the plan's sweeps, then calls this.
"""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd
import yaml

from analysis.budget import budget_table, steps_needed
from analysis.by_claim import claims_table, judged_line, judged_where
from analysis.by_digits import accuracy_by_digits_figure
from analysis.cell_text import clip_reason, command_notes
from analysis.choice import part_choice
from analysis.contents import with_contents
from analysis.curves import budget_figure, learning_curves_figure, save
from analysis.findings import Finding, awaiting_plan, one_family
from analysis.gpu import BatchResult, gpu_results, gpu_section, judged_findings, summary_rows
from analysis.load import read_sweep
from analysis.plan import (
    ARCHIVES,
    ROOT,
    TAG_WALL,
    TEXTS,
    Planned,
    grids,
    part_runs,
    ran_lines,
    repo_relative,
    seeds_of,
    unended_grids,
    waiting_parts,
)
from analysis.presearch import presearch_records, presearch_tables
from analysis.reach import (
    GpuBatch,
    GpuRate,
    PlannedGpuSweep,
    gpu_batches,
    gpu_rates,
    judged_cost,
    planned_gpu_sweeps,
)
from analysis.report import FINISHED, Analysis, analyse, render
from analysis.search_report import search_evidence, search_sections
from analysis.spend import TrialCost, planned_text, spend_table, spent_line, trial_costs
from analysis.tables import markdown_table as markdown
from arith.tracking.archive import archived_id
from arith.tracking.schema import POINT_COLUMN, SEED_COLUMN
from arith.tracking.store import client as store_client
from experiments.gpu_plan import load_gpu_plan
from experiments.registry import claims_for

#: the page's head (docs/results/intro.md) and the pre-search section's (docs/results/presearch.md)
INTRO = (TEXTS / "intro.md").read_text()
#: the verdict rules of "Findings at a glance" and the other fixed paragraphs (docs/results/notes.yaml)
_NOTES = yaml.safe_load((TEXTS / "notes.yaml").read_text())
VERDICT_RULES = _NOTES["verdict_rules"]
UNTESTABLE_NOTE = _NOTES["untestable_note"]
#: per grid, the pre-search points (`grid: point`) whose step budgets stand for its models
BUDGET_POINTS: dict[str, list[str]] = _NOTES["budget_points"]
#: per grid where the cpu model gives no one-core cost (it cannot test the claim, or no budget of it is
#: known), and per grid without a GPU rate of its own trials: what the cost columns say instead
ONE_CORE_INSTEAD: dict[str, str] = _NOTES.get("one_core_instead", {})
GPU_INSTEAD: dict[str, str] = _NOTES.get("gpu_instead", {})
#: each claim's verdict in the report before the rules of experiments/verdicts.py took their present form
VERDICTS_BEFORE: list[dict[str, str]] = _NOTES["verdicts_before"]
BEFORE_AFTER_NOTE = _NOTES["before_after_note"]
#: sections measured before the sweeps were archived (no archive holds them), included verbatim
UNARCHIVED = TEXTS / "unarchived"
#: the `gpu` scale's archives banked from lent GPUs (analysis.gpu; its plan: experiments.gpu_plan)
GPU_BANK = TEXTS / "gpu"
#: the report's figures, in this folder beside it (its links are relative)
FIGURES = Path("results") / "figures"


def unarchived_sections(folder: Path = UNARCHIVED) -> dict[str, str]:
    """The committed sections of grids measured before the sweeps were archived, by grid (file stem)."""
    return {path.stem: path.read_text().rstrip() + "\n" for path in sorted(folder.glob("*.md"))}


@dataclass(frozen=True)
class GridResult:
    """One grid of the plan: its parts with the sweep that ran each (None where none has), and the
    analysis of all its run parts read as one sweep (None when no part has run)."""

    grid: str
    parts: list[tuple[Planned, object | None]]
    analysis: Analysis | None
    #: per part, in `parts`' order, its finished trials' costs (None for a part not run)
    costs: list[list[TrialCost] | None] = field(default_factory=list)

    @property
    def search(self) -> bool:
        """A recipe search's parts: counted in the core-minutes, reported in the search's own section."""
        return any(plan.search for plan, _ in self.parts)


def grid_results(uri: str) -> list[GridResult]:
    """Every grid of the plan, analysed once (the summary and its section both read the analysis); Holm's
    correction is the page's to apply, over these and the GPU batches together (`write_results`)."""
    client = store_client(uri)
    out = []
    for grid in grids():
        parts = part_runs(client, grid)
        ids = [run.info.run_id for _, run in parts if run is not None]
        costs = [trial_costs(client, run) if run is not None else None for _, run in parts]
        result = GridResult(grid, parts, None, costs)
        if not ids or result.search:  # a search has its own section
            out.append(result)
            continue
        analysis = analyse(read_sweep(grid, uri, ids))
        waiting = waiting_parts(parts)
        if waiting:  # judged once every part of the plan has run
            analysis = replace(analysis, findings=awaiting_plan(analysis.findings, waiting, len(parts)))
        out.append(replace(result, analysis=analysis))
    return out


def section(result: GridResult, curves: str = "", by_digits: str = "") -> str:
    """The grid's part of RESULTS.md: how each part was run, its learning curves (`curves`, a link) and its
    accuracy by digit count (`by_digits`, a link, where its cells are one digit count each), then the
    analysis report of all parts read as one; or why it was not run."""
    grid, parts = result.grid, result.parts
    if result.analysis is None:
        why = "; ".join(n for plan, _ in parts for n in (plan.note, plan.why_not_run) if n)
        why = why + "; " if why else ""
        scale = parts[0][0].scale if parts else "cpu"
        head = f"## {grid}\n\n**Not yet run** at {scale} scale ({why.removesuffix('; ') or 'planned'}).\n"
        declared = [plan for plan, _ in parts if plan.estimate_core_min is not None]
        if not declared:
            return head
        lines = [
            f"\nTo run: `python scripts/reproduce_cpu.py --grids {grid}`, which runs each part below, then "
            "tags and archives it:",
            "",
        ]
        lines += [
            f"- `{_command(plan)}`\n  - core-minutes: planned {planned_text(plan)}" for plan, _ in parts
        ]
        return head + "\n".join(lines) + "\n"
    body = repo_relative(render(result.analysis, "markdown"))
    # a sweep restored from its archive: named by the id it ran under, the same each rebuild
    for _, run in parts:
        if run is not None:
            body = body.replace(run.info.run_id, archived_id(run))
    # drop the report's title (the grid's heading replaces it) and put its headings one level down
    body = "\n".join("#" + line if line.startswith("#") else line for line in body.split("\n")[1:])
    ran = [run for _, run in parts if run is not None]
    lines = [f"## {grid}", ""]
    if len(parts) > 1:
        lines += [f"Read as one sweep from {len(ran)} part(s) of the plan, each run by its own command:", ""]
    for (plan, run), cost in zip(parts, result.costs or [None] * len(parts), strict=True):
        if run is None and plan.ended_early:  # the plan ended it before it started
            lines.append(f"- **ended before it ran**: `{shlex.join(plan.sweep_args())}`: {plan.ended_early}")
            continue
        if run is None:
            lines.append(
                f"- **not yet run**: `{shlex.join(plan.sweep_args())}`"
                + (f" ({plan.note})" if plan.note else "")
            )
            if plan.estimate_core_min is not None:
                lines.append(f"  - core-minutes: planned {planned_text(plan)}")
            continue
        lines += ran_lines(plan, run.data.tags, run.info.start_time)
        if (ARCHIVES / plan.archive_name).exists():
            lines.append(f"  - archived runs: `{(ARCHIVES / plan.archive_name).relative_to(ROOT)}`")
        if plan.note:
            lines.append(f"  - note: {plan.note}")
        if plan.choose_if_at_least is not None:
            lines.append(part_choice(plan, result.analysis.sweep.tracking_uri, run.info.run_id))
        lines.append(spent_line(plan, cost or []))
    if curves:
        lines.append(
            f"\nLearning curves: each point's training loss by step, and each trial's lowest accuracy at the "
            f"end on the cells the competence gate reads (where the paper's own model learned, else the "
            f"cells in range) beside the gate's threshold.\n\n![{grid}: learning curves]({curves})"
        )
    if by_digits:
        lines.append(
            "\nAccuracy by digit count at the end: each point's mean over its judged seeds (a line) and each "
            "seed (a dot; hollow: a seed that chose the budget, never judged), the digit counts beyond the "
            f"training range shaded.\n\n![{grid}: accuracy by digit count]({by_digits})"
        )
    lines.append("\nEvery number below is the mean over the seeds each point has.")
    return "\n".join(lines) + "\n" + body


def _command(plan: Planned) -> str:
    """The part's sweeps/run.py command as the reproduction runs it (into runs/cpu), from the repository."""
    store = ROOT / "runs" / "cpu"
    return repo_relative(
        "python " + shlex.join(plan.command(f"sqlite:///{store}/mlflow.db", f"{store}/ray_results"))
    )


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
