"""docs/RESULTS.md's table of how far each position scheme adds beyond its training: per grid of the
length-generalisation experiment, every scheme it ran, its weakest in-range cell, the longest operand
length each seed holds, the verdict of its "holds one digit longer" claim, and the compute.

The claims table gives a verdict a row; this table gives the reading the field compares schemes by (the
longest length held, as a multiple of the training length), the schemes that could not be judged
included, with what they read.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.findings import Finding
from arith.tracking.schema import ACCURACY_COLUMN, HELD_ACCURACY, SEED_COLUMN
from experiments.catalog.length_gen import (
    LENGTH_GEN,
    SCHEMES,
    first_longer,
    longest_held,
    of_scheme,
    trained_lengths,
)
from experiments.cells import measured
from experiments.registry import EXPERIMENTS
from lab.results.grids import GridResult

#: seeds from here up are pre-search seeds: they chose a budget and never judge it
PRESEARCH_FROM = 100

TITLE = "How far each position scheme adds beyond its training"
INTRO = (
    f"Per grid of the length-generalisation experiment, per scheme: the weakest equal-length cell of the "
    f"training range on the lowest seed (the competence gate needs 0.9 on every seed), the longest operand "
    f"length up to which every length holds {HELD_ACCURACY:g} on each seed and on every seed (and as a "
    "multiple of the training length: McLeish et al. report 5x for Abacus, Cho et al. 6.67x for coupling), "
    'the mean accuracy one digit beyond, and the verdict of the scheme\'s "holds one digit longer" claim. '
    "Judged seeds only (below 100)."
)
HEADER = (
    "| grid | scheme | seeds | in range, weakest (seed) | longest held per seed | every seed | one beyond "
    "| verdict, one beyond | grid's compute |",
    "|---|---|---|---|---|---|---|---|---|",
)


def is_length_grid(grid: str) -> bool:
    """A grid judged by length_gen's claims (length_gen and its variants)."""
    experiment = EXPERIMENTS.get(grid)
    return experiment is not None and experiment.claims == LENGTH_GEN.claims


def scheme_row(grid: str, scheme: str, cells: pd.DataFrame, verdict: str, compute: str) -> str:
    """One scheme's reading in `grid` (its judged seeds' final cells)."""
    seeds = sorted(int(s) for s in cells[SEED_COLUMN].unique())
    in_range = trained_lengths(cells).groupby(SEED_COLUMN)[ACCURACY_COLUMN].min()
    weakest = f"{in_range.min():.2f} (seed {int(in_range.idxmin())})"
    held = longest_held(cells)
    trained = int(cells["data.max_digits"].iloc[0])
    every = int(held.min())
    beyond = first_longer(cells)[ACCURACY_COLUMN].mean()
    return (
        f"| {grid} | {scheme} | {', '.join(map(str, seeds))} | {weakest} | "
        f"{', '.join(str(int(held[s])) for s in seeds)} | {every} ({every / trained:.1f}x) | {beyond:.2f} | "
        f"{verdict} | {compute} |"
    )


def verdict_of(findings: Sequence[Finding], grid: str, scheme: str) -> str:
    """The status of the grid's "`scheme` holds one digit longer" finding ('' where it has none)."""
    texts = {c.text for c in EXPERIMENTS[grid].claims if c.id == f"{scheme}_holds_one_longer"}
    status = next((f.status for f in findings if f.claim_text in texts), "")
    return f"**{status}**" if status and status != "not testable" else status


def lengths_table(results: Sequence[GridResult]) -> str:
    """The table over every length grid of `results` that has run ('' where none has)."""
    rows = []
    for result in results:
        if result.analysis is None or not is_length_grid(result.grid):
            continue
        cells = measured(result.analysis.sweep.cells)
        cells = cells[cells[SEED_COLUMN].astype(int) < PRESEARCH_FROM]
        spent = sum(c.core_minutes for part in result.costs if part for c in part)
        for variant in SCHEMES:
            mine = of_scheme(cells, variant.overrides["model.position"])
            if mine.empty:
                continue
            verdict = verdict_of(result.analysis.findings, result.grid, variant.name)
            rows.append(scheme_row(result.grid, variant.name, mine, verdict, f"{spent:,.0f} core-min"))
    if not rows:
        return ""
    return "\n".join([f"## {TITLE}", "", INTRO, "", *HEADER, *rows]) + "\n"
