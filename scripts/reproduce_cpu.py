"""Run the `cpu` miniature of every grid in sequence, then regenerate docs/RESULTS.md from the MLflow store.

    python scripts/reproduce_cpu.py                       # every planned sweep, then the report
    python scripts/reproduce_cpu.py --grids nl_mix        # one sweep, then the report
    python scripts/reproduce_cpu.py --report-only         # only rewrite docs/RESULTS.md from the store
    python scripts/reproduce_cpu.py --archive             # only archive the store's sweeps

Each sweep is `sweeps/run.py --scale cpu` into one local store (default runs/cpu/mlflow.db). After a sweep
the script tags its parent run with the command, the machine and the wall time, and archives it in
docs/results/sweeps/ (one JSON-lines file per part of the plan, arith/tracking/archive.py). First of all every
archive the store lacks is imported into it: an archived part counts as run (`--rerun` runs it again), and
the report is rebuilt from the store alone, on any clone: a grid with no sweep there is listed as not
yet run, with the reason, unless the earlier report (--out) has its section: that is kept as it was,
marked "not re-judged" (measured before the archives existed, its store is elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from analysis.budget import budget_table  # noqa: E402
from analysis.curves import budget_figure, learning_curves_figure, save  # noqa: E402
from analysis.findings import NOT_TESTABLE, Finding, claims_for, rejudge  # noqa: E402
from analysis.gpu import gpu_section  # noqa: E402
from analysis.load import find_parent, load_sweep, sweep_runs  # noqa: E402
from analysis.report import Analysis, analyse, render  # noqa: E402
from analysis.tables import markdown_table as markdown  # noqa: E402
from arith.tracking.archive import SOURCE_TAG, export_sweep, import_sweep  # noqa: E402
from arith.tracking.store import client as _client  # noqa: E402
from sweeps.grids import GRIDS, points  # noqa: E402
from sweeps.progress import trial_steps  # noqa: E402

TAG_COMMAND, TAG_MACHINE, TAG_WALL = "reproduce.command", "reproduce.machine", "reproduce.wall_s"
#: the report's fixed prose and the plan, kept as markdown and YAML beside the report they make
TEXTS = ROOT / "docs" / "results"
#: each part's latest sweep as a portable file (arith/tracking/archive.py), restored into the store before the
#: report is written: a fresh clone rebuilds docs/RESULTS.md from them with --report-only
ARCHIVES = TEXTS / "sweeps"
#: the `gpu` scale: its plan and the archives banked from lent GPUs (analysis.gpu)
GPU_PLAN, GPU_BANK = TEXTS / "gpu_plan.yaml", TEXTS / "gpu"


#: the page's head (docs/results/intro.md) and the pre-search section's (docs/results/presearch.md)
INTRO = (TEXTS / "intro.md").read_text()
PRESEARCH_INTRO = (TEXTS / "presearch.md").read_text()
#: the verdict rules of "Findings at a glance"; a carried section's note, what it adds by grid and where its
#: tables paired unlike cells (docs/results/notes.yaml)
_NOTES = yaml.safe_load((TEXTS / "notes.yaml").read_text())
VERDICT_RULES = _NOTES["verdict_rules"]
CARRIED_NOTE = _NOTES["carried_note"]
CARRIED_EXTRA = {grid: " " + text for grid, text in _NOTES["carried_extra"].items()}
UNLIKE_CELLS = " " + _NOTES["unlike_cells"]
BUDGET_NOTE = _NOTES["budget_note"]
UNTESTABLE_NOTE = _NOTES["untestable_note"]
#: per grid, the pre-search points (`grid: point`) whose step budgets stand for its models
BUDGET_POINTS: dict[str, list[str]] = _NOTES["budget_points"]
#: each claim's verdict in the report before the rules of analysis/verdicts.py took their present form
VERDICTS_BEFORE: list[dict[str, str]] = _NOTES["verdicts_before"]
BEFORE_AFTER_NOTE = _NOTES["before_after_note"]
#: the note carried sections opened with before; replaced by CARRIED_NOTE where an earlier report has it
CARRIED_NOTE_BEFORE = _NOTES.get("carried_note_before", "")
#: the report's figures, in this folder beside it (its links are relative)
FIGURES = Path("results") / "figures"


@dataclass(frozen=True)
class Planned:
    """One cpu sweep of the reproduction: which grid, which of its points, which seeds, and why.

    A grid may have several: parts of its study run apart (seeds added later, costly points alone); the
    report reads the latest sweep of each part as one."""

    grid: str
    #: a count K (seeds 0..K-1) or explicit seeds, to add seeds to an earlier part
    seeds: int | tuple[int, ...] = 3
    only: tuple[str, ...] = ()
    #: what this sweep is for, or why part of the grid is left out
    note: str = ""
    #: shown only while the store has no finished sweep of the grid: what is known about running it
    why_not_run: str = ""

    @property
    def seed_values(self) -> list[int]:
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    def sweep_args(self) -> list[str]:
        """What identifies this part: sweeps/run.py's arguments less where it stores its results."""
        args = ["--grid", self.grid, "--scale", "cpu", "--seeds", self.seeds_arg]
        for only in self.only:
            args += ["--only", only]
        return args

    @property
    def seeds_arg(self) -> str:
        """The seeds as sweeps/run.py's --seeds takes them: a count K, or a list `1,2`."""
        return str(self.seeds) if isinstance(self.seeds, int) else ",".join(map(str, self.seeds))

    @property
    def seeds_name(self) -> str:
        """The seeds themselves (not the --seeds argument, where `1` is a count): `seed-0`, `seeds-0-2`,
        `seeds-1,3`."""
        seeds = self.seed_values
        if len(seeds) == 1:
            return f"seed-{seeds[0]}"
        if seeds == list(range(seeds[0], seeds[-1] + 1)):
            return f"seeds-{seeds[0]}-{seeds[-1]}"
        return "seeds-" + ",".join(map(str, seeds))

    @property
    def archive_name(self) -> str:
        """The file its latest sweep is archived in: grid, seeds and --only values, e.g.
        `mul_format__seed-0__data.max_digits=5.jsonl`."""
        return "__".join([self.grid, self.seeds_name, *self.only]) + ".jsonl"

    def command(self, uri: str, storage: str) -> list[str]:
        return ["sweeps/run.py", *self.sweep_args(), "--tracking-uri", uri, "--storage-path", storage]


def sweep_args_of(command: str) -> list[str]:
    """The `Planned.sweep_args` of a command a parent run was tagged with (the store's paths dropped)."""
    words = shlex.split(command)
    words = words[words.index("sweeps/run.py") + 1 :] if "sweeps/run.py" in words else words
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in ("--tracking-uri", "--storage-path"):
            skip = True
        else:
            out.append(word)
    return out


def load_plan(path: Path) -> tuple[Planned, ...]:
    """The plan's parts, in order, from its YAML file (docs/results/plan.yaml says what each field means)."""
    parts = yaml.safe_load(path.read_text())
    return tuple(
        Planned(
            grid=part["grid"],
            seeds=part.get("seeds", 3) if isinstance(part.get("seeds", 3), int) else tuple(part["seeds"]),
            only=tuple(part.get("only", ())),
            note=part.get("note", ""),
            why_not_run=part.get("why_not_run", ""),
        )
        for part in parts
    )


#: in order: the tuning sweeps that chose the preset, then the paper's grids cheapest first
PLAN: tuple[Planned, ...] = load_plan(TEXTS / "plan.yaml")


def machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{platform.processor() or platform.machine()}, {cpus} CPU cores, {platform.system()}"


def repo_relative(command: str) -> str:
    """A command with this machine's folders dropped from its store paths (sqlite:////x/y/runs/cpu/... ->
    sqlite:///runs/cpu/...), so that RESULTS.md reads the same on every clone."""
    command = re.sub(r"sqlite:////\S*?/(runs/\S+)", r"sqlite:///\1", command)
    return re.sub(r"(--storage-path )/\S*?/(runs/\S+)", r"\1\2", command)


def run_sweep(plan: Planned, uri: str, storage: str) -> None:
    """One sweep via sweeps/run.py; on success its parent run is tagged with command, machine, wall time."""
    cmd = plan.command(uri, storage)
    shown = repo_relative("python " + shlex.join(cmd))
    print(f"\n=== {plan.grid}: {shown}", flush=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, *cmd], cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    client = _client(uri)
    parent = find_parent(client, plan.grid)
    client.set_tag(parent.info.run_id, TAG_COMMAND, shown)
    client.set_tag(parent.info.run_id, TAG_MACHINE, machine())
    client.set_tag(parent.info.run_id, TAG_WALL, f"{wall:.0f}")
    archive = ARCHIVES / plan.archive_name
    export_sweep(client, parent.info.run_id, archive)
    print(f"=== {plan.grid}: archived in {archive.relative_to(ROOT)}", flush=True)


def archive_store(uri: str, folder: Path = ARCHIVES) -> list[str]:
    """Archive the store's latest sweep of every planned part (as run_sweep does after each sweep): for
    a store filled before the archives existed, or by hand. Returns the files written."""
    client = _client(uri)
    written = []
    for grid in grids():
        for plan, run in part_runs(client, grid):
            if run is not None:
                export_sweep(client, run.info.run_id, folder / plan.archive_name)
                written.append(plan.archive_name)
    print(f"archived {len(written)} sweep(s) in {folder}: {', '.join(written) or 'none'}", flush=True)
    return written


def restore_archives(uri: str, folder: Path = ARCHIVES) -> list[str]:
    """Import every archived sweep the store does not hold yet (arith/tracking/archive.py); returns their
    files."""
    imported = []
    for path in sorted(folder.glob("*.jsonl")):
        _run_id, new = import_sweep(uri, path)
        if new:
            imported.append(path.name)
    if imported:
        print(f"restored {len(imported)} archived sweep(s) from {folder}: {', '.join(imported)}", flush=True)
    return imported


def reproduced(client, grid: str) -> list:
    """The finished sweeps of `grid` this script ran (parent runs tagged with their command), latest first."""
    return [run for run in sweep_runs(client, grid) if TAG_COMMAND in run.data.tags]


def part_runs(client, grid: str) -> list[tuple[Planned, object | None]]:
    """Each planned part of `grid` with the latest sweep that ran exactly it (None when none has)."""
    sweeps = reproduced(client, grid)
    out = []
    for plan in (p for p in PLAN if p.grid == grid):
        runs = [r for r in sweeps if sweep_args_of(r.data.tags[TAG_COMMAND]) == plan.sweep_args()]
        out.append((plan, runs[0] if runs else None))
    return out


def grids() -> list[str]:
    return list(dict.fromkeys(plan.grid for plan in PLAN))


@dataclass(frozen=True)
class GridResult:
    """One grid of the plan: its parts with the sweep that ran each (None where none has), and the
    analysis of all its run parts read as one sweep (None when no part has run)."""

    grid: str
    parts: list[tuple[Planned, object | None]]
    analysis: Analysis | None


def grid_results(uri: str) -> list[GridResult]:
    """Every grid of the plan, analysed once (the summary and its section both read the analysis)."""
    client = _client(uri)
    out = []
    for grid in grids():
        parts = part_runs(client, grid)
        ids = [run.info.run_id for _, run in parts if run is not None]
        out.append(GridResult(grid, parts, analyse(load_sweep(grid, uri, ids)) if ids else None))
    # one report, one family: Holm's correction over every claim judged in it, sections and summary alike
    analysed = [r.analysis for r in out if r.analysis is not None]
    every = rejudge([f for a in analysed for f in a.findings])
    for a in analysed:
        a.findings, every = every[: len(a.findings)], every[len(a.findings) :]
    return out


def section(result: GridResult, curves: str = "") -> str:
    """The grid's part of RESULTS.md: how each part was run, its learning curves (`curves`, a link), then
    the analysis report of all parts read as one; or why it was not run."""
    grid, parts = result.grid, result.parts
    if result.analysis is None:
        why = "; ".join(n for plan, _ in parts for n in (plan.note, plan.why_not_run) if n)
        why = why + "; " if why else ""
        return f"## {grid}\n\n**Not yet run** at cpu scale ({why.removesuffix('; ') or 'planned'}).\n"
    body = repo_relative(render(result.analysis, "markdown"))
    for (
        _,
        run,
    ) in parts:  # a sweep restored from its archive: named by the id it ran under, the same each rebuild
        if run is not None and SOURCE_TAG in run.data.tags:
            body = body.replace(run.info.run_id, run.data.tags[SOURCE_TAG])
    # drop the report's title (the grid's heading replaces it) and put its headings one level down
    body = "\n".join("#" + line if line.startswith("#") else line for line in body.split("\n")[1:])
    ran = [run for _, run in parts if run is not None]
    lines = [f"## {grid}", ""]
    if len(parts) > 1:
        lines += [f"Read as one sweep from {len(ran)} part(s) of the plan, each run by its own command:", ""]
    for plan, run in parts:
        if run is None:
            lines.append(
                f"- **not yet run**: `{shlex.join(plan.sweep_args())}`"
                + (f" ({plan.note})" if plan.note else "")
            )
            continue
        tags = run.data.tags
        started = datetime.fromtimestamp(run.info.start_time / 1000, tz=timezone.utc)
        lines += [
            f"- command: `{repo_relative(tags[TAG_COMMAND])}`",
            f"  - wall time: {int(tags[TAG_WALL]) / 60:.1f} min on {tags[TAG_MACHINE]} "
            f"(two 1-CPU trials at a time), started {started:%Y-%m-%d %H:%M} UTC",
            f"  - seeds: {', '.join(map(str, plan.seed_values))}",
        ]
        if (ARCHIVES / plan.archive_name).exists():
            lines.append(f"  - archived runs: `{(ARCHIVES / plan.archive_name).relative_to(ROOT)}`")
        if plan.note:
            lines.append(f"  - note: {plan.note}")
    if curves:
        lines.append(
            f"\nLearning curves: each point's training loss by step, and each trial's mean accuracy over the "
            f"in-range cells at the end beside the competence threshold (the gate itself reads every gated "
            f"cell of every seed).\n\n![{grid}: learning curves]({curves})"
        )
    lines.append("\nEvery number below is the mean over the seeds each point has.")
    return "\n".join(lines) + "\n" + body


def summary(results: list[GridResult], carried: dict[str, str] | None = None) -> str:
    """One line per claim of the paper: its verdict on the grid's reported sweeps, "not re-judged" for a
    section carried over from the earlier report, or that it was not run."""
    carried = carried or {}
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
            measured = f"{seeds_of(ran)} | {minutes:.0f}"
            lines += [
                f"| {result.grid} | {f.claim} | **{f.status}** | {_numbers(f)} | {measured} |"
                for f in result.analysis.findings
            ]
        elif result.grid in carried:
            lines += [
                f"| {result.grid} | {claim} | {status} |{blank}| |"
                for claim, status in carried_claims(carried[result.grid])
            ]
        elif claims_for(result.grid):
            lines.append(f"| {result.grid} | all of its claims | not yet run |{blank}| |")
    return "\n".join(lines) + "\n"


def _numbers(finding: Finding) -> str:
    return " | ".join(finding.numbers.values())


def before_after(results: list[GridResult]) -> str:
    """Each claim's verdict in the report before these rules (docs/results/notes.yaml `verdicts_before`)
    beside its verdict now."""
    now = {
        (f.grid, f.claim.rsplit(" [", 1)[0]): f for r in results if r.analysis for f in r.analysis.findings
    }
    lines = [BEFORE_AFTER_NOTE, "", "| grid | claim | before | after | why, after |", "|---|---|---|---|---|"]
    for old in VERDICTS_BEFORE:
        finding: Finding | None = now.get((old["grid"], old["claim"]))
        after = f"**{finding.status}**" if finding else "not judged"
        why = _short_why(finding) if finding else ""
        lines.append(f"| {old['grid']} | {old['claim']} | {old['before']} | {after} | {why} |")
    return "### Verdicts before and after\n\n" + "\n".join(lines) + "\n"


def _short_why(finding: Finding) -> str:
    """The first clause of a verdict's reason (its full evidence is in the grid's section)."""
    first = finding.evidence.split("; ")[0]
    return first if len(first) <= 220 else first[:217] + "..."


def seeds_of(ran: list[tuple[Planned, object]]) -> str:
    """The seeds of a grid's run parts: "0, 1, 2", or per set of points where they differ ("0, 1, 2
    (data.max_digits=3); 0 (data.max_digits=5)")."""
    by_points: dict[str, set[int]] = {}
    for plan, _ in ran:
        by_points.setdefault(" ".join(plan.only), set()).update(plan.seed_values)
    shown = {only: ", ".join(map(str, sorted(seeds))) for only, seeds in by_points.items()}
    if len(set(shown.values())) == 1:
        return next(iter(shown.values()))
    return "; ".join(f"{seeds} ({only})" if only else seeds for only, seeds in shown.items())


def paper_trial_steps(grid: str) -> int:
    """Optimiser steps of the grid's longest trial at `paper` scale (sweeps.progress.trial_steps)."""
    return max(trial_steps(cfg.to_dict()) for cfg in points(grid, "paper"))


def untestable(results: list[GridResult], budgets: pd.DataFrame, curves: dict[str, str]) -> str:
    """Each claim judged not testable: why, its learning curves, the steps the pre-search extrapolates its
    models need, and how long a trial is at paper scale; empty when none is."""
    steps_to = next((c for c in budgets.columns if c.startswith("steps to ")), "")
    rows = []
    for result in results:
        findings = (
            [f for f in result.analysis.findings if f.status == NOT_TESTABLE] if result.analysis else []
        )
        if not findings:
            continue
        estimates = []
        for name in BUDGET_POINTS.get(result.grid, []):
            rows_of = budgets[budgets["grid"] + ": " + budgets["point"] == name] if len(budgets) else budgets
            if rows_of.empty:
                continue
            for estimate, seeds in rows_of.groupby(steps_to, sort=False)["seed"]:  # which seeds said what
                said = f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"
                label = "" if len(rows_of) == 1 else f" ({said})"
                estimates.append(f"{name}{label}: {estimate}")
        per_grid = {
            "learning curves": f"[figure]({curves[result.grid]})" if result.grid in curves else "",
            "steps to learn in range (pre-search, cpu model)": "; ".join(estimates) or "no budget series",
            "a trial at paper scale": f"{paper_trial_steps(result.grid):,} steps (GPT-2 small)",
        }
        rows += [{"grid": result.grid, "claim": f.claim, "why": f.evidence, **per_grid} for f in findings]
    if not rows:
        return ""
    table = markdown(pd.DataFrame(rows))
    return f"### Not testable: why, and what it would take\n\n{UNTESTABLE_NOTE}\n\n{table}\n"


#: the mark of a section carried over from an earlier report
NOT_REJUDGED = "not re-judged"
_STATUS_CELL = re.compile(r"\| \*\*(held|not held|not testable)\*\* \|")
_CARRIED_ROW = re.compile(r"^\| (.+?) \| (\*\*not re-judged\*\* \(earlier: [^)]*\)) \|")


def previous_sections(text: str, names: list[str]) -> dict[str, str]:
    """The `## grid` sections of an earlier report, for the grids in `names`."""
    sections: dict[str, str] = {}
    parts = re.split(r"(?m)^(?=## )", text)
    for part in parts:
        heading = part.split("\n", 1)[0].removeprefix("## ").strip()
        if heading in names:
            sections[heading] = part.rstrip() + "\n"
    return sections


def carried_section(grid: str, text: str) -> str | None:
    """An earlier section kept, marked not re-judged (None when it held no measurement)."""
    if "**Not yet run**" in text:
        return None
    text = repo_relative(text)
    if CARRIED_NOTE_BEFORE and CARRIED_NOTE_BEFORE in text:
        text = text.replace(CARRIED_NOTE_BEFORE, CARRIED_NOTE)
    if CARRIED_NOTE in text:
        return text
    heading, body = text.split("\n", 1)
    body = _STATUS_CELL.sub(lambda m: f"| **{NOT_REJUDGED}** (earlier: {m.group(1)}) |", body)
    note = CARRIED_NOTE + CARRIED_EXTRA.get(grid, "")
    if GRIDS[grid].scale_digits and "**difference**" in body:
        body = drop_blocks(body, ("**paper**", "**difference**"))
        note += UNLIKE_CELLS
    return f"{heading}\n\n{note}\n{body}"


def drop_blocks(body: str, names: tuple[str, ...]) -> str:
    """The markdown without the blocks (a bold name line, then its table) named in `names`."""
    out, skipping = [], False
    for line in body.split("\n"):
        if line.startswith(("**", "#")):
            skipping = line.strip() in names
        if not skipping:
            out.append(line)
    return "\n".join(out)


def carried_claims(section_text: str) -> list[tuple[str, str]]:
    """(claim, status) rows of a carried section's findings table."""
    return [(m.group(1), m.group(2)) for line in section_text.splitlines() if (m := _CARRIED_ROW.match(line))]


PRESEARCH = ROOT / "docs" / "presearch"


def presearch_records(folder: Path = PRESEARCH) -> dict[str, list[dict]]:
    """The pre-search's JSON-lines records, by file stem."""
    return {
        path.stem: [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for path in sorted(folder.glob("*.jsonl"))
    }


def presearch_tables(
    files: dict[str, list[dict]], budgets: pd.DataFrame | None = None, budget_curves: str = ""
) -> str:
    """The pre-search records as tables: one row per trial, its --set, overall accuracy and per test context
    (past the longest trained length, or on the longest factor, where the test goes there), the machine;
    then the extrapolated step budgets (default: of every record) and their figure (`budget_curves`, a
    link)."""
    parts = [PRESEARCH_INTRO]
    if budgets is None:
        budgets = budget_table([rec for records in files.values() for rec in records])
    for stem, records in files.items():
        rows = []
        order = sorted(records, key=lambda r: (json.dumps(r.get("set", {})), r["point"], r.get("seed", 0)))
        for rec in order:
            cells = pd.DataFrame(rec.get("cells", []))
            row = {"point": rec["point"], "seed": rec.get("seed", 0)}
            if any(r.get("set") for r in records):
                row["--set"] = " ".join(f"{k}={v}" for k, v in rec.get("set", {}).items())
            row.update(test_acc=rec.get("test_acc"), steps=rec.get("steps"))
            if not cells.empty:
                longest = rec["config"]["data.max_digits"]
                if cells["row_digits"].notna().any():  # multiplication: the cells of the longest factor
                    hard = cells[cells[["row_digits", "col_digits"]].max(axis=1) == longest]
                    label = f"with a {longest}-digit factor"
                elif (cells["col_digits"] > longest).any():  # length generalisation: past the longest
                    hard, label = cells[cells["col_digits"] > longest], f"beyond {longest} digits"
                else:  # tested within the trained lengths (nl_mix): every cell, then the longest
                    hard, label = cells, "all"
                for context, frame in hard.groupby("context"):
                    row[f"{context}: {label}"] = round(frame["accuracy"].mean(), 3)
                if label == "all":
                    top = int(cells["col_digits"].max())
                    for context, frame in cells[cells["col_digits"] == top].groupby("context"):
                        row[f"{context}: {top} digits"] = round(frame["accuracy"].mean(), 3)
            row["train s"] = rec.get("train_seconds")
            row["machine"] = rec.get("machine", "")
            rows.append(row)
        frame = pd.DataFrame(rows)
        last = ["train s", "machine"]
        parts.append(f"### {stem}\n\n{markdown(frame[[c for c in frame if c not in last] + last])}\n")
    if not budgets.empty:
        figure = f"\n\n![In-range accuracy by step budget]({budget_curves})" if budget_curves else ""
        parts.append(
            f"### Steps to competence (extrapolated)\n\n{BUDGET_NOTE}{figure}\n\n{markdown(budgets)}\n"
        )
    return "\n".join(parts)


def write_results(uri: str, out: Path, intro: str) -> None:
    results = grid_results(uri)
    earlier = previous_sections(out.read_text(), grids()) if out.exists() else {}
    carried = {
        r.grid: text
        for r in results
        if r.analysis is None and r.grid in earlier and (text := carried_section(r.grid, earlier[r.grid]))
    }
    figures = out.parent / FIGURES
    figures.mkdir(parents=True, exist_ok=True)
    curves = {}
    for r in results:
        if r.analysis is not None and (figure := learning_curves_figure(r.analysis.sweep)) is not None:
            save(figure, figures / f"{r.grid}.png")
            curves[r.grid] = (FIGURES / f"{r.grid}.png").as_posix()
    files = presearch_records()
    every = [rec for records in files.values() for rec in records]
    budgets = budget_table(every)
    budget_curves = ""
    if (figure := budget_figure(every)) is not None:
        save(figure, figures / "budget.png")
        budget_curves = (FIGURES / "budget.png").as_posix()
    sections = [carried.get(r.grid) or section(r, curves.get(r.grid, "")) for r in results]
    # the not-testable table also reads points pre-searched at one budget: whether it was reached
    head = [
        summary(results, carried),
        before_after(results),
        untestable(results, budget_table(every, single=True), curves),
    ]
    with tempfile.TemporaryDirectory() as tmp:  # a store of its own: gpu sweeps never mix with cpu ones
        gpu = gpu_section(GPU_BANK, GPU_PLAN, f"sqlite:///{tmp}/gpu.db")
    parts = [
        intro.rstrip() + "\n",
        *filter(None, head),
        presearch_tables(files, budgets, budget_curves),
        *sections,
        gpu,
    ]
    out.write_text("\n".join(parts))
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/reproduce_cpu.py", description=__doc__)
    parser.add_argument("--grids", default="", help="comma-separated grids to run (default: the whole plan)")
    parser.add_argument("--store", default="runs/cpu", help="folder of the MLflow store and Ray results")
    parser.add_argument("--out", default="docs/RESULTS.md")
    parser.add_argument("--report-only", action="store_true", help="do not run sweeps, only rewrite --out")
    parser.add_argument(
        "--rerun", action="store_true", help="run the chosen parts again even where the store has them"
    )
    parser.add_argument(
        "--archive",
        action="store_true",
        help="write the store's latest sweep of each part to docs/results/sweeps/ (no sweeps run)",
    )
    args = parser.parse_args(argv)
    store = (ROOT / args.store).resolve()
    store.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{store / 'mlflow.db'}"
    chosen = [g for g in args.grids.split(",") if g] or grids()
    unknown = [g for g in chosen if g not in grids()]
    if unknown:
        parser.error(f"unknown grid(s) {unknown}; choose from: {', '.join(grids())}")
    if args.archive:
        archive_store(uri)
        return 0
    restore_archives(uri)  # an archived part counts as run: only --rerun runs it again
    if not args.report_only:
        client = _client(uri)
        for grid in chosen:
            for plan, run in part_runs(client, grid):
                if run is not None and not args.rerun:
                    print(f"=== {grid}: `{shlex.join(plan.sweep_args())}` is in the store (--rerun: again)")
                    continue
                run_sweep(plan, uri, str(store / "ray_results"))
    write_results(uri, ROOT / args.out, INTRO)
    return 0


if __name__ == "__main__":
    sys.exit(main())
