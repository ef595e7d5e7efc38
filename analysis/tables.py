"""Tables shaped like the paper's, each with the paper's numbers for the same cells and the difference.

A task's layout (`arith.data.tasks`) says the shape: multiplication a grid per point (rows: digits of b,
columns: digits of a, as tb:padding-5), dialogue a table per context and evaluation (as tb:acc_nldia_a-d),
every other task a table per context, rows the points and columns the digit count (as tb:acc_dataformat).
At a scale whose digit counts differ from the paper's, each is labelled with the paper's it stands for.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from analysis.sweep import RUN_IDS
from arith.data.tasks import get_task
from arith.tracking.schema import (
    ACCURACY_COLUMN,
    ACCURACY_SEEN_COLUMN,
    ACCURACY_UNSEEN_COLUMN,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    EPOCH_COLUMN,
    FINAL_EPOCH_COLUMN,
    PAPER_EPOCHS_TAG,
    PAPER_TABLE_TAG,
    ROW_DIGITS_COLUMN,
    SEEN_IN_TRAIN_COLUMN,
)

MISSING = "—"


@dataclass
class Table:
    """One panel: this sweep's accuracies (seed means), the paper's for the same cells, their difference."""

    title: str
    slug: str
    #: the paper table labels matched
    paper_sources: list[str]
    ours: pd.DataFrame
    paper: pd.DataFrame
    diff: pd.DataFrame
    #: standard deviation over seeds (NaN where a row has one seed)
    std: pd.DataFrame
    #: accuracy on the test problems that are not / are training problems too, and the seen fraction
    unseen: pd.DataFrame
    seen: pd.DataFrame
    seen_fraction: pd.DataFrame
    #: the fewest and the most seeds behind a cell (parts of a plan can hold more seeds of one point)
    min_seeds: int
    max_seeds: int
    row_name: str
    col_name: str
    #: the points shown: their config keys and the run ids of their trials (`RUN_IDS`), by which
    #: analysis.wrong_answers finds their wrong answers; and the contexts shown
    points: pd.DataFrame = field(default_factory=pd.DataFrame)
    contexts: tuple[str, ...] = ()

    @property
    def has_paper(self) -> bool:
        return bool(self.paper.notna().to_numpy().any())

    @property
    def has_split(self) -> bool:
        return bool(self.seen_fraction.notna().to_numpy().any())


def _label(frame: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Row labels from the point keys that vary inside this panel ("position=none, init=random")."""
    varying = [k for k in keys if frame[k].astype(str).nunique() > 1]
    if not varying:
        return frame[keys[0]].astype(str)
    return (
        frame[varying]
        .astype(str)
        .apply(lambda row: ", ".join(f"{k.split('.', 1)[1]}={v}" for k, v in row.items()), axis=1)
    )


def _pivot(frame: pd.DataFrame, index: str, columns: str | list[str], value: str) -> pd.DataFrame:
    columns = [columns] if isinstance(columns, str) else columns
    grid = frame.set_index([index, *columns])[value]
    return grid[~grid.index.duplicated()].unstack(columns).sort_index().sort_index(axis=1)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:120]


def stand_in_labels(frame: pd.DataFrame, axis: str) -> dict[int, str]:
    """{3: "3 (paper 5)"} where the sweep's digit counts stand for other paper digit counts; {} if none."""
    paper_axis = f"paper_{axis}"
    if paper_axis not in frame:
        return {}
    pairs = frame[[axis, paper_axis]].dropna().drop_duplicates()
    if (pairs[axis].astype(int) == pairs[paper_axis].astype(int)).all():
        return {}
    return {int(a): f"{int(a)} (paper {int(p)})" for a, p in pairs.itertuples(index=False)}


def _make(frame: pd.DataFrame, title: str, index: str, columns, row_name: str, col_name: str) -> Table:
    seeds = frame["seeds"].dropna()
    grids = {
        name: _pivot(frame, index, columns, value)
        for name, value in (
            ("ours", ACCURACY_COLUMN),
            ("paper", "paper_accuracy"),
            ("diff", "diff"),
            ("std", "accuracy_std"),
            ("unseen", ACCURACY_UNSEEN_COLUMN),
            ("seen", ACCURACY_SEEN_COLUMN),
            ("seen_fraction", SEEN_IN_TRAIN_COLUMN),
        )
    }
    rows, cols = stand_in_labels(frame, ROW_DIGITS_COLUMN), stand_in_labels(frame, COL_DIGITS_COLUMN)
    for name, grid in grids.items():
        if rows and index == ROW_DIGITS_COLUMN:
            grid = grid.rename(index=rows)
        if cols:
            nested = isinstance(grid.columns, pd.MultiIndex)
            grid = grid.rename(columns=cols, level=COL_DIGITS_COLUMN if nested else None)
        grids[name] = grid
    return Table(
        title=title,
        slug=slug(title),
        paper_sources=sorted(set(frame["paper_source"].dropna().astype(str))),
        **grids,
        min_seeds=int(seeds.min()) if len(seeds) else 0,
        max_seeds=int(seeds.max()) if len(seeds) else 0,
        row_name=row_name,
        col_name=col_name,
        points=_points(frame),
        contexts=tuple(sorted(frame[CONTEXT_COLUMN].astype(str).unique())),
    )


def _points(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per point of a panel: its dotted config keys and the run ids of its trials."""
    keys = [c for c in frame.columns if "." in str(c)]
    runs = frame.groupby(keys, dropna=False, sort=False)[RUN_IDS].agg(
        lambda column: tuple(sorted({r for ids in column.dropna() for r in ids}))
    )
    return runs.reset_index()


def build_tables(frame: pd.DataFrame, axes: list[str]) -> list[Table]:
    """All panels of a sweep from the paper-attached frame (`experiments.paper.attach_paper`)."""
    tables: list[Table] = []
    axes = [a for a in axes if a in frame.columns]
    for task, by_task in frame.groupby("data.task", sort=True):
        layout = get_task(str(task)).layout  # the task says how its cells are laid out
        final, keys = by_task[by_task["final"]], list(dict.fromkeys(["data.format", *axes]))
        if layout == "grid":
            tables += _mul_tables(final, keys)
        elif layout == "contexts":
            tables += _dialogue_tables(by_task, axes)
        else:
            tables += _length_tables(final, keys, str(task))
    return tables


def _mul_tables(final: pd.DataFrame, keys: list[str]) -> list[Table]:
    varying = [k for k in keys if final[k].astype(str).nunique() > 1] or ["data.format"]
    shown = [k for k in varying if k != "data.task"]
    out = []
    for values, panel in final.groupby(keys, sort=True, dropna=False):
        point = dict(zip(keys, values, strict=True))
        title = "mul: " + ", ".join(f"{k.split('.', 1)[1]}={point[k]}" for k in shown)
        out.append(_make(panel, title, ROW_DIGITS_COLUMN, COL_DIGITS_COLUMN, "digits of b", "digits of a"))
    return out


def _length_tables(final: pd.DataFrame, keys: list[str], task: str) -> list[Table]:
    out = []
    for context, panel in final.groupby(CONTEXT_COLUMN, sort=True):
        panel = panel.assign(row=_label(panel, keys))
        title = f"{task}: {context}" if context != "main" else f"{task}"
        out.append(_make(panel, title, "row", COL_DIGITS_COLUMN, "", "digits"))
    return out


def _dialogue_tables(frame: pd.DataFrame, axes: list[str]) -> list[Table]:
    keys = [k for k in dict.fromkeys(["model.position", *axes]) if k != "data.mix_format"]
    data = zip(frame["data.task"], frame["data.format"], frame["data.mix_format"], strict=True)
    # one table per reading of the paper (its epoch 50 or 100): at a step budget the points read it at
    # different epochs of their own (a smaller data set has more, shorter epochs)
    frame = frame.assign(
        data=[get_task(task).paper_format(fmt, mix) or mix for task, fmt, mix in data],
        reading=frame[PAPER_EPOCHS_TAG].fillna(frame[EPOCH_COLUMN]),
    )
    out = []
    for (context, reading), panel in frame.groupby([CONTEXT_COLUMN, "reading"], sort=True):
        panel = panel.assign(row=_label(panel, keys))
        runs = panel[[EPOCH_COLUMN, FINAL_EPOCH_COLUMN]].drop_duplicates().sort_values(EPOCH_COLUMN)
        at = " / ".join(f"{int(e)} of {int(f)}" for e, f in runs.itertuples(index=False))
        paper_note = f", paper's {int(reading)} of 100" if panel[PAPER_EPOCHS_TAG].notna().any() else ""
        title = f"nl_mix: {context}, epoch {at}{paper_note}"
        out.append(_make(panel, title, "row", ["data", COL_DIGITS_COLUMN], "", "data, digits"))
    return out


def column_labels(grid: pd.DataFrame) -> list[str]:
    return [" ".join(str(p) for p in c) if isinstance(c, tuple) else str(c) for c in grid.columns]


def _text_grid(grid: pd.DataFrame, signed: bool = False) -> pd.DataFrame:
    sign = "+" if signed else ""
    shown = grid.map(lambda v: MISSING if pd.isna(v) else f"{v:{sign}.2f}")
    shown.columns = column_labels(grid)
    shown.index = [str(i) for i in grid.index]
    return shown


def markdown_rows(header: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """A GitHub table, each cell as `str` writes it."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(map(str, row)) + " |" for row in rows)])


def _markdown_grid(grid: pd.DataFrame, corner: str, signed: bool = False) -> str:
    shown = _text_grid(grid, signed)
    rows = [[index, *row] for index, row in zip(shown.index, shown.to_numpy().tolist(), strict=True)]
    return markdown_rows([corner or " ", *shown.columns], rows)


def _caption(table: Table) -> str:
    sources = ", ".join(table.paper_sources) if table.paper_sources else "no paper table for these cells"
    split = (
        "; the paper's numbers, like 'this sweep', mix test problems seen in training with unseen ones"
        if table.has_split and table.has_paper
        else ""
    )
    seeds = seeds_caption(table)
    return f"paper: {sources}; this sweep: {seeds}; {MISSING} = cell only the other side has{split}"


def seeds_caption(table: Table) -> str:
    """How many seeds a number of 'this sweep' is the mean of: one count, or the range where rows differ."""
    low, high = table.min_seeds, table.max_seeds
    if high <= 1:
        return "one seed"
    if low == high:
        return f"mean of {high} seeds"
    one = f" (std over seeds: {MISSING} where a row has one)" if low == 1 else ""
    return f"mean of {low}-{high} seeds by row{one}"


def _blocks(table: Table) -> list[tuple[str, pd.DataFrame, bool]]:
    blocks = [("this sweep", table.ours, False)]
    if table.has_split:  # what a model generalised to, beside what it may have memorised
        blocks += [
            ("unseen problems only (not in the training set)", table.unseen, False),
            ("seen problems only (also in the training set)", table.seen, False),
            ("fraction of the cell's test problems seen in training", table.seen_fraction, False),
        ]
    if table.has_paper:
        blocks += [("paper", table.paper, False), ("difference", table.diff, True)]
    if table.max_seeds > 1:
        blocks.append(("std over seeds", table.std, False))
    return blocks


def render_tables(tables: list[Table], fmt: str) -> str:
    """All tables in one format: markdown, csv (long: one row per table x cell), latex or html."""
    if fmt == "csv":
        return long_frame(tables).to_csv(index=False)
    parts = []
    for table in tables:
        corner = f"{table.row_name} \\ {table.col_name}" if table.row_name else table.col_name
        if fmt == "markdown":
            parts.append(f"### {table.title}\n\n_{_caption(table)}_\n")
            for name, grid, signed in _blocks(table):
                parts.append(f"**{name}**\n\n{_markdown_grid(grid, corner, signed)}\n")
        elif fmt == "latex":
            for name, grid, signed in _blocks(table):
                shown = _text_grid(grid, signed)
                shown.index.name = corner
                caption = f"{table.title} ({name}). {_caption(table)}".translate(LATEX_ESCAPES)
                label = f"tab:{table.slug}_{name[:4]}"
                parts.append(shown.to_latex(caption=caption, label=label, escape=True))
        elif fmt == "html":
            parts.append(
                f"<h3>{html.escape(table.title)}</h3>\n<p><em>{html.escape(_caption(table))}</em></p>"
            )
            for name, grid, signed in _blocks(table):
                shown = _text_grid(grid, signed)
                # the corner in the header row's first cell (an index name would add a row of its own)
                shown.index.name, shown.columns.name = None, corner
                parts.append(f"<h4>{name}</h4>\n{shown.to_html()}")
        else:
            raise ValueError(f"format {fmt!r} is not one of: markdown, csv, latex, html")
    return "\n".join(parts)


#: LaTeX's special characters in a caption, escaped
LATEX_ESCAPES = str.maketrans({"\\": r"\textbackslash{}", "_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#"})


def long_frame(tables: list[Table]) -> pd.DataFrame:
    """Every table cell as a row: table, row, column, ours, std, the unseen / seen split, paper, diff."""
    rows = []
    for table in tables:
        for row in table.ours.index:
            for col in table.ours.columns:
                rows.append(
                    {
                        "table": table.title,
                        PAPER_TABLE_TAG: ";".join(table.paper_sources),
                        "row": row,
                        "column": " ".join(map(str, col)) if isinstance(col, tuple) else col,
                        ACCURACY_COLUMN: table.ours.loc[row, col],
                        "accuracy_std": table.std.loc[row, col],
                        ACCURACY_UNSEEN_COLUMN: table.unseen.loc[row, col],
                        ACCURACY_SEEN_COLUMN: table.seen.loc[row, col],
                        "seen_fraction": table.seen_fraction.loc[row, col],
                        "paper_accuracy": table.paper.loc[row, col],
                        "diff": table.diff.loc[row, col],
                    }
                )
    return pd.DataFrame(rows)
