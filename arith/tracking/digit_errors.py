"""Where in the answer a model errs, from the wrong answers an evaluation keeps (`eval/errors.csv`): the
paper's argument is that a model loses track of a digit's position. Answers and replies are read least
significant digit first (padding zeros count: the model writes them), and for sums and products each digit
gets the length of the carry chain into it (the schoolbook columns whose carries reach it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from arith.data.tasks import answer_digits, get_task
from arith.tracking.schema import (
    CELL_KEYS,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    ROW_DIGITS_COLUMN,
)


def carry_chains(task: str, a: int, b: int, width: int) -> list[int]:
    """For answer digits 0..width-1 (least significant first), the length of the carry chain into each (0 =
    no carry; a product's column sums may carry more than 1). Empty for a task without carries."""
    carries = get_task(task).carries  # "sum", "product" or "" (no carries)
    if not carries:
        return []
    da = [int(c) for c in str(a)[::-1]]
    db = [int(c) for c in str(b)[::-1]]
    chains, carry, chain = [], 0, 0
    for k in range(width):
        chain = chain + 1 if carry else 0
        chains.append(chain)
        if carries == "product":
            column = sum(da[i] * db[k - i] for i in range(len(da)) if 0 <= k - i < len(db))
        else:
            column = (da[k] if k < len(da) else 0) + (db[k] if k < len(db) else 0)
        carry = (column + carry) // 10
    return chains


def digit_rows(errors: pd.DataFrame, task: str, fmt: str) -> pd.DataFrame:
    """One row per kept wrong answer x expected digit: the cell, `answer` (its index in `errors`),
    `position` (0 = least significant), `chain` (-1 where the task has none) and `wrong` (the reply's
    digit differs or is missing). Answers whose expected text holds no number are left out."""
    rows = []
    for index, error in enumerate(errors.itertuples(index=False)):
        expected = answer_digits(task, fmt, error.expected)
        if not expected:
            continue
        reply = answer_digits(task, fmt, "" if pd.isna(error.reply) else error.reply) or ""
        chains: list[int] = []
        if not (pd.isna(error.a) or pd.isna(error.b)):
            chains = carry_chains(task, int(error.a), int(error.b), len(expected))
        cell = (error.context, error.row_digits, error.col_digits)
        for position, digit in enumerate(expected):
            wrong = position >= len(reply) or reply[position] != digit
            rows.append((*cell, index, position, chains[position] if chains else -1, wrong))
    frame = pd.DataFrame(rows, columns=[*CELL_KEYS, "answer", "position", "chain", "wrong"])
    return frame.astype({ROW_DIGITS_COLUMN: "Int64"})


def _rates(rows: pd.DataFrame, by: str, count: str, keys: list[str]) -> pd.DataFrame:
    """Per `keys` and `by`: `count` (digits), `wrong` (of those), `rate` = wrong / count."""
    if rows.empty:
        return pd.DataFrame(columns=[*keys, by, count, "wrong", "rate"])
    out = (
        rows.groupby([*keys, by], dropna=False)["wrong"].agg(**{count: "count", "wrong": "sum"}).reset_index()
    )
    out["rate"] = out["wrong"] / out[count]
    return out


def by_position(rows: pd.DataFrame, keys: list[str] = CELL_KEYS) -> pd.DataFrame:
    """Per `keys` (a cell) and answer digit: `answers` (wrong answers with that digit), `wrong`, `rate`."""
    return _rates(rows, "position", "answers", keys)


def by_carry_chain(rows: pd.DataFrame, keys: list[str] = CELL_KEYS) -> pd.DataFrame:
    """Per `keys` and carry-chain length: `digits`, `wrong`, `rate` (empty for a task without carries)."""
    return _rates(rows[rows["chain"] >= 0] if not rows.empty else rows, "chain", "digits", keys)


def cell_label(context: str, row_digits, col_digits) -> str:
    """`3x2` (digits of a x b) or the digit count, after the context unless it is `main`."""
    label = str(int(col_digits)) if pd.isna(row_digits) else f"{int(col_digits)}x{int(row_digits)}"
    return label if context == "main" else f"{context} {label}"


def figure(rows: pd.DataFrame, title: str = "") -> Figure | None:
    """The error rate among wrong answers by cell and answer digit, and by carry chain (None without any)."""
    if rows.empty:
        return None
    positions = by_position(rows)
    cells = positions[CELL_KEYS].drop_duplicates()
    cells = cells.assign(_r=cells[ROW_DIGITS_COLUMN].fillna(-1).astype(int)).sort_values(
        [CONTEXT_COLUMN, "_r", COL_DIGITS_COLUMN]
    )
    labels = [cell_label(*c) for c in cells[CELL_KEYS].itertuples(index=False)]
    width = int(positions["position"].max()) + 1
    grid = np.full((len(cells), width), np.nan)
    index = {tuple(c): i for i, c in enumerate(cells[CELL_KEYS].astype(object).itertuples(index=False))}
    for row in positions.astype({ROW_DIGITS_COLUMN: object}).itertuples(index=False):
        grid[index[(row.context, row.row_digits, row.col_digits)], int(row.position)] = row.rate
    chains = by_carry_chain(rows, keys=[])
    panels = 2 if not chains.empty else 1
    fig = Figure(
        figsize=(3.2 + 0.35 * width + 3.2 * (panels - 1), 1.4 + 0.22 * len(cells)), layout="constrained"
    )
    axes = fig.subplots(1, panels, squeeze=False, width_ratios=[1.2 + 0.35 * width, 3.0][:panels])[0]
    ax = axes[0]
    image = ax.imshow(grid, vmin=0.0, vmax=1.0, cmap="Reds", aspect="auto")
    ax.set_xticks(range(width), [str(p) for p in range(width)], fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xlabel("answer digit (0 = least significant)", fontsize=8)
    ax.set_ylabel(
        "cell (digits of a x b)" if cells[ROW_DIGITS_COLUMN].notna().any() else "cell (digits)", fontsize=8
    )
    ax.set_title("wrong digits among wrong answers", fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.05)
    if panels == 2:
        ax = axes[1]
        ax.bar(chains["chain"], chains["rate"], color="C3", alpha=0.8)
        for chain, rate, digits in chains[["chain", "rate", "digits"]].itertuples(index=False):
            ax.text(chain, rate + 0.02, str(int(digits)), ha="center", fontsize=6)
        ax.set_ylim(0, 1.1)
        ax.set_xticks(chains["chain"].astype(int).tolist())
        ax.set_xlabel("carry chain into the digit (columns)", fontsize=8)
        ax.set_ylabel("wrong digits / digits", fontsize=8)
        ax.set_title("by carry chain (n digits on bars)", fontsize=9)
        ax.tick_params(labelsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def cells_heatmap(frame: pd.DataFrame, context: str, title: str = "") -> Figure:
    """The accuracy grid of one context: digits of b x digits of a, or one row for one-dimensional tasks."""
    cells = frame[frame[CONTEXT_COLUMN] == context]
    if cells.empty:
        raise ValueError(
            f"no cells for context {context!r}; contexts: {sorted(frame[CONTEXT_COLUMN].unique())}"
        )
    two_d = cells[ROW_DIGITS_COLUMN].notna().any()
    cols = sorted(int(c) for c in cells[COL_DIGITS_COLUMN].unique())
    rows = sorted(int(r) for r in cells[ROW_DIGITS_COLUMN].dropna().unique()) if two_d else [None]
    grid = np.full((len(rows), len(cols)), np.nan)
    for cell in cells.itertuples():
        r = rows.index(int(cell.row_digits)) if two_d else 0
        grid[r, cols.index(int(cell.col_digits))] = cell.accuracy
    fig = Figure(figsize=(1.0 + 0.6 * len(cols), 1.2 + 0.5 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(grid, vmin=0.0, vmax=1.0, cmap="RdYlGn", aspect="auto")
    for (r, c), value in np.ndenumerate(grid):
        if not np.isnan(value):
            ax.text(c, r, f"{value:.2f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(cols)), [str(c) for c in cols])
    ax.set_xlabel("digits of a" if two_d else "digits")
    ax.set_yticks(range(len(rows)), [str(r) for r in rows] if two_d else [""])
    if two_d:
        ax.set_ylabel("digits of b")
    ax.set_title(title or f"accuracy: {context}")
    fig.colorbar(image, ax=ax, fraction=0.05)
    return fig
