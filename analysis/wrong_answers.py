"""What the trials wrote when they were wrong, beside each table: per point, the error rate by answer digit
(and by carry chain, `arith.tracking.digit_errors`) over its seeds' kept wrong answers (each finished
trial's `eval/errors.csv`), and a few wrong answers for each cell, next to the cell's accuracy.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from analysis.load import Sweep
from analysis.sweep import RUN_IDS
from analysis.tables import Table, slug
from arith.tracking import digit_errors
from arith.tracking.schema import (
    CONTEXT_COLUMN,
    EPOCH_COLUMN,
    FINAL_EPOCH_COLUMN,
    POINT_COLUMN,
    ROW_DIGITS_COLUMN,
    RUN_ID_COLUMN,
)

#: wrong answers listed per cell
SHOWN_PER_CELL = 3


@dataclass
class PointErrors:
    """One point of a table: its kept wrong answers and its cells at the last evaluation, all seeds."""

    label: str
    task: str
    fmt: str
    errors: pd.DataFrame
    cells: pd.DataFrame

    def figure(self) -> Figure | None:
        rows = digit_errors.digit_rows(self.errors, self.task, self.fmt)
        return digit_errors.figure(rows, f"{self.label}: where the wrong answers err")


def points_of(sweep: Sweep, table: Table) -> tuple[list[PointErrors], list[str]]:
    """The points of `table` whose trials kept wrong answers, and the labels of those whose trials kept
    none (every answer right). Joined by run id, never by config values (3, 3.0 or "3" in a frame)."""
    errors = sweep.errors
    if not sweep.errors_kept_by or table.points.empty:
        return [], []
    errors = errors[errors[CONTEXT_COLUMN].astype(str).isin(table.contexts)]
    cells = sweep.cells[sweep.cells[CONTEXT_COLUMN].astype(str).isin(table.contexts)]
    cells = cells[cells[EPOCH_COLUMN] == cells[FINAL_EPOCH_COLUMN]]
    erring, clean = [], []
    for point in table.points.to_dict("records"):
        runs = set(point.pop(RUN_IDS))
        trials = sweep.trials[sweep.trials[RUN_ID_COLUMN].isin(runs)]
        named = str(trials[POINT_COLUMN].iloc[0]) if len(trials) else ""
        label = named or ", ".join(f"{k}={v}" for k, v in point.items())
        kept = errors[errors[RUN_ID_COLUMN].isin(runs)]
        if kept.empty:
            if runs & sweep.errors_kept_by:  # else its trials are from before eval/errors.csv
                clean.append(label)
            continue
        erring.append(
            PointErrors(
                label=label,
                task=str(kept["data.task"].iloc[0]),
                fmt=str(kept["data.format"].iloc[0]),
                errors=kept.reset_index(drop=True),
                cells=cells[cells[RUN_ID_COLUMN].isin(runs)],
            )
        )
    return erring, clean


def _cell_key(row) -> tuple:
    return (str(row.context), -1 if pd.isna(row.row_digits) else int(row.row_digits), int(row.col_digits))


def wrong_answers_html(point: PointErrors, per_cell: int = SHOWN_PER_CELL) -> str:
    """Each cell of the point: its accuracy over the seeds, its wrong answers and the first few of them."""
    accuracy = {}
    for row in point.cells.itertuples(index=False):
        accuracy.setdefault(_cell_key(row), []).append((row.accuracy, row.n, row.correct))
    shown = {}
    for row in point.errors.itertuples(index=False):
        shown.setdefault(_cell_key(row), []).append(row)
    lines = []
    for key in sorted(set(accuracy) | set(shown)):
        context, rows, cols = key
        label = digit_errors.cell_label(context, None if rows < 0 else rows, cols)
        scores = accuracy.get(key, [])
        acc = f"{sum(a for a, _, _ in scores) / len(scores):.2f}" if scores else "–"
        wrong = sum(n - c for _, n, c in scores)
        examples = shown.get(key, [])
        items = "".join(
            f"<li><code>{html.escape(str(e.prompt))}</code> → <code>{html.escape(str(e.reply))}</code>"
            f' <span class="expected">(expected <code>{html.escape(str(e.expected))}</code>)</span></li>'
            for e in examples[:per_cell]
        )
        body = f"<ul>{items}</ul>" if items else "<em>no wrong answer</em>"
        lines.append(
            f"<tr><td>{html.escape(label)}</td><td>{acc}</td><td>{wrong}</td>"
            f'<td class="wrong">{body}</td></tr>'
        )
    cell = "cell (a x b)" if point.errors[ROW_DIGITS_COLUMN].notna().any() else "cell (digits)"
    head = (
        f"<tr><th>{cell}</th><th>accuracy (mean)</th><th>wrong (all seeds)</th>"
        "<th>a few wrong answers: prompt → reply</th></tr>"
    )
    return f'<table class="wrong-answers">{head}{"".join(lines)}</table>'


def write_figures(sweep: Sweep, tables: list[Table], out_dir: Path) -> list[Path]:
    """One PNG per point of each table under out_dir/digit_errors/, and every kept wrong answer as
    out_dir/errors.csv; returns the paths."""
    paths = []
    folder = Path(out_dir) / "digit_errors"
    for table in tables:
        for point in points_of(sweep, table)[0]:
            figure = point.figure()
            if figure is None:
                continue
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{table.slug}__{slug(point.label)}.png"
            figure.savefig(path, dpi=110)
            paths.append(path)
    if not sweep.errors.empty:
        path = Path(out_dir) / "errors.csv"
        sweep.errors.to_csv(path, index=False)
        paths.append(path)
    return paths
