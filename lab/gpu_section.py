"""The `gpu` scale's results section: the archives banked from lent GPUs, read by the same analysis.

Each batch of docs/results/gpu_plan.yaml that ran on a lent GPU left one sweep archive per part under
docs/results/gpu/<batch>/ (written by `sweeps.offline`). Here every archive is imported into a store like
any sweep (`arith.tracking.archive`) and analysed with `analysis.report.analyse`, so a GPU batch is judged by
the code that judges a Ray Tune sweep. The section gives, per batch, its device, precision, minutes and
command; per point, each seed's final accuracy and whether every seed learned the cells the paper's own
model learned (the competence rule of `experiments.verdicts`); and the claims' verdicts, where a pre-search's
seeds never judge the budget they chose.

A claim compares points that a batch may run as separate parts (one archive per format, say): the parts of
one grid at one setting (the same scale and `--set` values, differing only in which points they `--only`)
are analysed as one sweep, so both sides of a comparison are read together and parts at different settings
are never mixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.findings import Finding
from analysis.load import read_sweep
from analysis.report import Analysis, analyse
from analysis.sweep import FINISHED
from analysis.tables import render_tables
from arith.tracking.archive import import_sweep, read_archive
from arith.tracking.schema import (
    COMMIT_TAG,
    GRID_TAG,
    POINT_COLUMN,
    POINT_TAG,
    RUN_ID_COLUMN,
    SEED_TAG,
    TEST_ACC_METRIC,
)
from experiments.cells import in_range, measured
from experiments.paper import stand_in, training_range_map
from experiments.verdicts import competence
from lab.analysis_output import markdown_table
from lab.gpu_plan import PlannedBatch, PlannedPart


@dataclass
class PartResult:
    """One banked part: its archive's records, its parent run in the store, and the final cells of the
    imported sweep (with each trial's point)."""

    batch: str
    name: str
    parent: dict[str, Any]
    trials: list[dict[str, Any]]
    cells: pd.DataFrame
    digit_map: dict[int, int] | None
    parent_id: str = ""
    #: what the part ran with: its grid, scale and `--set` values (`setting_key`)
    setting: tuple = ()


@dataclass
class BatchResult:
    """One banked batch: its parts, and the claims judged on them (parts of one setting read together)."""

    batch: PlannedBatch
    parts: list[PartResult]
    findings: list[Finding]
    #: one analysis per group of parts at one setting
    analyses: list[Analysis] = field(default_factory=list)

    @property
    def minutes(self) -> float:
        """Wall minutes from the first trial's start to the last one's end."""
        start = min(t["start_time"] for p in self.parts for t in p.trials)
        end = max(t["end_time"] or 0 for p in self.parts for t in p.trials)
        return (end - start) / 60000

    @property
    def seeds(self) -> list[int]:
        """The seeds of its finished trials."""
        return sorted(
            {int(t["tags"][SEED_TAG]) for p in self.parts for t in p.trials if t["status"] == FINISHED}
        )


def setting_key(part: PlannedPart) -> tuple:
    """Parts with equal keys ran one grid at one setting: they differ only in the points they picked."""
    return (part.grid, part.scale, tuple(sorted(part.sets.items())))


def read_part(uri: str, batch: str, path: Path, setting: tuple = ()) -> PartResult:
    """Import one archive into the store at `uri` (once) and read its final cells."""
    _, records = read_archive(path)
    parent_id, _ = import_sweep(uri, path)
    sweep = read_sweep(records[0]["tags"][GRID_TAG], uri, parent_id)
    cells = measured(sweep.cells).merge(sweep.trials[[RUN_ID_COLUMN, POINT_COLUMN]], on=RUN_ID_COLUMN)
    return PartResult(batch, path.stem, records[0], records[1:], cells, sweep.digit_map, parent_id, setting)


def read_batch(bank: Path, batch: PlannedBatch, uri: str) -> BatchResult:
    """A banked batch's archives imported into the store at `uri`, and its claims judged: each group of
    parts at one setting analysed as one sweep (a part the plan no longer names is read on its own)."""
    settings = {part.label: setting_key(part) for part in batch.parts}
    parts = [
        read_part(uri, batch.name, path, settings.get(path.stem, (path.stem,)))
        for path in sorted((bank / batch.name).glob("*.jsonl"))
    ]
    groups: dict[tuple, list[PartResult]] = {}
    for part in parts:
        groups.setdefault(part.setting, []).append(part)
    analyses = [
        analyse(read_sweep(group[0].parent["tags"][GRID_TAG], uri, [p.parent_id for p in group]))
        for group in groups.values()
    ]
    return BatchResult(batch, parts, [f for a in analyses for f in a.findings], analyses)


def gpu_results(bank: Path, plan: Sequence[PlannedBatch], uri: str) -> list[BatchResult]:
    """Every batch of the plan with an archive in `bank`, read into the store at `uri`."""
    return [read_batch(bank, b, uri) for b in plan if any((bank / b.name).glob("*.jsonl"))]


def judged_findings(result: BatchResult) -> list[Finding]:
    """The batch's findings that carry a verdict (held, not held, or the seeds cannot tell)."""
    return [f for f in result.findings if f.judged]


def _setting(trial: dict[str, Any]) -> str:
    """The trial's model and budget, as the reader compares parts: layers x width, batch, steps."""
    p = trial["params"]
    layers = p.get("model.n_layer") if p.get("model.n_layer") not in (None, "None") else ""
    width = p.get("model.n_embd") if p.get("model.n_embd") not in (None, "None") else ""
    model = p.get("model.preset", "")
    if layers or width:
        model += f" ({layers or '-'} layers, width {width or '-'})"
    return f"{model}, batch {p.get('train.batch_size')}, {p.get('train.max_steps')} steps"


def competence_rows(part: PartResult) -> list[dict[str, Any]]:
    """Per point of the part: the seeds' final test accuracy and the competence gate's reading."""
    rows = []
    by_point: dict[str, list[dict[str, Any]]] = {}
    for trial in part.trials:
        by_point.setdefault(trial["tags"].get(POINT_TAG, ""), []).append(trial)
    for point, trials in by_point.items():
        cells = part.cells[part.cells[POINT_TAG] == point] if not part.cells.empty else part.cells
        seeds = sorted(int(t["tags"][SEED_TAG]) for t in trials)
        accs = []
        for t in sorted(trials, key=lambda t: int(t["tags"][SEED_TAG])):
            history = t["metrics"].get(TEST_ACC_METRIC, [])
            accs.append(f"{history[-1][2]:.2f}" if history else "-")
        digits = trials[0]["params"].get("data.max_digits")
        # a pre-search may move a point's digits (`--set data.max_digits=3` on a 5-digit point): say so
        moved = "max_digits=" in point and f"max_digits={digits}" not in point.split(",")
        label = f"{point}, run at max_digits={digits}" if moved else point
        if cells.empty:
            learned = "no finished evaluation"
        else:
            why, _ = competence({"it": cells}, part.digit_map, in_range, "the training range's cells")
            learned = "yes, every seed" if not why else why.removeprefix("it not learned: ")
        minutes = [((t["end_time"] or 0) - (t["start_time"] or 0)) / 60000 for t in trials]
        rows.append(
            {
                "part": part.name,
                POINT_COLUMN: label,
                "setting": _setting(trials[0]),
                "seeds": ", ".join(map(str, seeds)),
                "test_acc by seed": " / ".join(accs),
                "learned the paper's competent cells": learned,
                "minutes a trial": " - ".join(dict.fromkeys(f"{m:.1f}" for m in sorted(minutes))),
            }
        )
    return rows


def judged_tables(result: BatchResult) -> list[str]:
    """The cell tables (each point beside the paper's; seen and unseen problems apart) of each group of the
    batch that judged a claim: what its verdict reads."""
    lines = []
    for analysis in result.analyses:
        if any(f.judged for f in analysis.findings):
            tables = render_tables(analysis.tables, "markdown")
            lines += [
                f"Its cells, every seed's mean (`{analysis.sweep.grid}`, the parts read as one sweep):",
                "",
                "\n".join("#" + line if line.startswith("#") else line for line in tables.split("\n")),
                "",
            ]
    return lines


def summary_rows(results: Sequence[BatchResult]) -> list[str]:
    """The findings-at-a-glance rows of the claims judged on banked `gpu` batches: grid (and batch), claim,
    verdict, its numbers, the batch's finished seeds and wall minutes."""
    return [
        f"| {f.grid} (gpu: {r.batch.name}) | {f.claim} | **{f.status}** | "
        f"{' | '.join(f.numbers.values())} | {', '.join(map(str, r.seeds))} | {r.minutes:.0f} |"
        for r in results
        for f in judged_findings(r)
    ]


def fewer_digits_note(trained: int = 3, paper: int = 5) -> str:
    """How a part trained on fewer digits than the paper's model (3-digit factors beside its 5) is read,
    from the map the analysis reads it through (`experiments.paper.training_range_map`, `stand_in`), so the
    section says what its tables show: the part's training maximum stands for the paper's."""
    digit_map = training_range_map(None, trained, paper)
    ours = range(1, trained + 1)
    theirs = [stand_in(n, list(range(1, paper + 1)), digit_map, paper) for n in ours]
    return (
        f"a part run on {trained}-digit factors is read through the training-range digit map "
        f"(`experiments.paper.training_range_map`): its {', '.join(map(str, ours))} digits stand for the "
        f"paper's {', '.join(map(str, theirs))}, so the tables label its {trained} "
        f'"{trained} (paper {theirs[-1]})" and read its {trained} x {trained} cell beside the paper\'s '
        f"{paper}-digit model's {theirs[-1]} x {theirs[-1]}"
    )


def verdicts_text(n: int) -> str:
    """How many verdicts the gpu scale reached: Holm's family counts verdicts, a claim once per grid."""
    return f"{n} verdict" + ("" if n == 1 else "s")


def gpu_section(results: Sequence[BatchResult]) -> str:
    """The markdown section of docs/RESULTS.md for the `gpu` scale, from the banked batches read by
    `gpu_results` (their findings Holm-corrected with the rest of the report's by the caller)."""
    lines = [
        "## The `gpu` scale: banked from lent GPUs",
        "",
        "What one lent GPU (an H100 or H200, about 15 minutes of device time, no Ray or MLflow there) runs "
        "in one prepared command, `python -m lab.bank next --out DIR`: the next batch of "
        "docs/results/gpu_plan.yaml, each part one sweep archive from `sweeps.offline`, imported and "
        "analysed here like any sweep. The scale keeps the paper's digit and sample counts; its model is "
        "gpt2-mini (6 layers, 8 heads, width 256) and its budget is chosen by pre-searches on seeds from "
        "100 up, so the seeds that judge a claim never chose its budget. A model has learned when every "
        "seed reaches 0.9 on each cell where the paper's own model did (`experiments.verdicts.competence`); "
        f"{fewer_digits_note()}, a question of whether the lease pays for fewer digits. Parts of one "
        "grid at one setting are judged together (both formats of a comparison, say).",
        "",
    ]
    if not results:
        return "\n".join([*lines, "No batch is banked yet.", ""])
    judged: list[tuple[BatchResult, Finding]] = []
    for result in results:
        parts, batch = result.parts, result.batch
        tags = parts[0].parent["tags"]
        n = sum(len(p.trials) for p in parts)
        lines += [
            f"### {batch.name}",
            "",
            batch.what,
            "",
            f"Ran on one {tags.get('machine', '?')} ({tags.get('precision', '?')}), {n} trials, "
            f"{batch.procs} at a time, {result.minutes:.1f} min from the first trial's start "
            f"to the last one's end; commit {tags.get(COMMIT_TAG, '?')[:12]}; command "
            f"`python -m lab.bank next --out DIR` (each part's own command is its parent run's "
            "`command` tag).",
            "",
            markdown_table(pd.DataFrame([row for p in parts for row in competence_rows(p)])),
            "",
        ]
        lines += judged_tables(result)
        judged += [(result, f) for f in judged_findings(result)]
    lines += ["### Claims at the `gpu` scale", ""]
    if not judged:
        lines += [
            "None judged yet: every banked batch is a pre-search, whose seeds chose the budget and so never "
            "judge it (analysis.findings), or a compared model did not learn. The judged batch runs on "
            "fresh seeds once a pre-search finds a model and budget at which every compared model learns "
            "the paper's competent cells.",
            "",
        ]
        return "\n".join(lines)
    rows = [
        {
            "batch": r.batch.name,
            "claim": f.claim,
            "status": f"**{f.status}**",
            **f.numbers,
            "evidence": f.evidence,
        }
        for r, f in judged
    ]
    lines += [
        f"{verdicts_text(len(judged))} reached, each on the fresh seeds of one batch (Holm's correction "
        "over every verdict of this page, a claim judged in several grids once in each):",
        "",
        markdown_table(pd.DataFrame(rows)),
        "",
    ]
    return "\n".join(lines)
