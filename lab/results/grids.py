"""Each grid of the plan read from the store and judged once, and its section of docs/RESULTS.md."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from analysis.load import read_sweep
from analysis.report import Analysis, analyse, render
from arith.tracking.archive import archived_id
from arith.tracking.store import client as store_client
from lab.analysis_claims import awaiting_plan
from lab.choice import part_choice
from lab.plan import (
    ARCHIVES,
    ROOT,
    TEXTS,
    Planned,
    grids,
    part_runs,
    ran_lines,
    repo_relative,
    waiting_parts,
)
from lab.spend import TrialCost, planned_text, spent_line, trial_costs

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
#: the `gpu` scale's archives banked from lent GPUs (lab.gpu_section; its plan: lab.gpu_plan)
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
            f"\nTo run: `python -m lab.reproduce --grids {grid}`, which runs each part below, then "
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
