"""Which cells a rule reads: selectors of the per-seed frame (each trial's cells at each evaluation), and
the paper's counterpart of a point's cells through the scale's digit map. Apart from the rules
(`experiments.verdicts`) so that a plot picks the cells the verdicts gate on without the statistics.
"""

from __future__ import annotations

import pandas as pd

from arith.tracking.schema import (
    ACCURACY_COLUMN,
    CELL_KEYS,
    COL_DIGITS_COLUMN,
    EPOCH_COLUMN,
    FINAL_EPOCH_COLUMN,
    PAPER_EPOCHS_TAG,
    PAPER_TABLE_TAG,
    ROW_DIGITS_COLUMN,
)
from experiments.paper import paper_cells, paper_reading


def measured(frame: pd.DataFrame) -> pd.DataFrame:
    """Each trial's cells at its last evaluation (leaving out cells only the paper has)."""
    if frame.empty:
        return frame
    final = frame["final"] if "final" in frame else frame[EPOCH_COLUMN] == frame[FINAL_EPOCH_COLUMN]
    return frame[final.astype(bool) & frame[ACCURACY_COLUMN].notna()]


def beyond_training(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells whose operands are longer than the trial was trained on."""
    return frame[frame[COL_DIGITS_COLUMN].astype(float) > frame["data.max_digits"].astype(float)]


def within_training(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells whose operands have a digit count the trial was trained on."""
    digits = frame[COL_DIGITS_COLUMN].astype(float)
    lowest = frame["data.min_digits"].astype(float) if "data.min_digits" in frame else 1.0
    return frame[(digits >= lowest) & (digits <= frame["data.max_digits"].astype(float))]


def small_products(frame: pd.DataFrame) -> pd.DataFrame:
    """Multiplication cells with at most max_digits digits in both factors together (the easy half)."""
    total = frame[ROW_DIGITS_COLUMN].astype(float) + frame[COL_DIGITS_COLUMN].astype(float)
    return frame[total <= frame["data.max_digits"].astype(float)]


def in_range(frame: pd.DataFrame) -> pd.DataFrame:
    """The cells a model must have learned: multiplication's small products, else the trained lengths."""
    if frame.empty:
        return frame
    return small_products(frame) if frame[ROW_DIGITS_COLUMN].notna().any() else within_training(frame)


def large_products(frame: pd.DataFrame) -> pd.DataFrame:
    total = frame[ROW_DIGITS_COLUMN].astype(float) + frame[COL_DIGITS_COLUMN].astype(float)
    return frame[total > frame["data.max_digits"].astype(float)]


def _digit_half(frame: pd.DataFrame, upper: bool) -> pd.DataFrame:
    """The upper half (the larger when odd) or the rest (at least the smallest count)."""
    digits = sorted(frame[COL_DIGITS_COLUMN].dropna().astype(int).unique())
    split = len(digits) - max(1, len(digits) // 2)
    chosen = digits[split:] if upper else digits[: split or 1]
    return frame[frame[COL_DIGITS_COLUMN].isin(chosen)] if digits else frame


def largest_digits(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells in the larger half of the digit counts tested (4-5 of the paper's 2-5)."""
    return _digit_half(frame, upper=True)


def smaller_digits(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells in the smaller half of the digit counts tested (2-3 of the paper's 2-5)."""
    return _digit_half(frame, upper=False)


def digit_range(frame: pd.DataFrame) -> str:
    """The digit counts of the cells as a verdict writes them: "2-5", "3", or "no"."""
    digits = sorted(frame[COL_DIGITS_COLUMN].dropna().astype(int).unique())
    if not digits:
        return "no"
    return f"{digits[0]}-{digits[-1]}" if len(digits) > 1 else str(digits[0])


#: a trial's config keys among a frame's columns
CONFIG_PREFIXES = ("data.", "model.", "train.")
#: the paper's counterpart of a cell (`CELL_KEYS`): its own digit counts and accuracy
PAPER_COLUMNS = [*CELL_KEYS, "paper_row_digits", "paper_col_digits", "paper_accuracy"]


def cell_name(row_digits, col_digits, context: str = "") -> str:
    """A cell as a reason writes it: `3x4` (a grid), `5 digits`, after its context unless the main one."""
    cell = f"{col_digits} digits" if pd.isna(row_digits) else f"{row_digits}x{col_digits}"
    return cell if context in ("", "main") else f"{context} {cell}"


def paper_of(cells: pd.DataFrame, digit_map: dict[int, int] | None) -> pd.DataFrame:
    """The paper's cells for the one point `cells` are of, relabelled with the sweep's digit counts; empty
    where the paper has no table for it."""
    if cells.empty:
        return pd.DataFrame(columns=PAPER_COLUMNS)
    row = cells.iloc[0]
    point = {k: row[k] for k in cells.columns if k.startswith(CONFIG_PREFIXES) or k == PAPER_TABLE_TAG}
    final = int(cells[FINAL_EPOCH_COLUMN].max()) if FINAL_EPOCH_COLUMN in cells else 0
    reading = paper_reading(final, [final], str(row.get(PAPER_EPOCHS_TAG) or ""))
    paper = paper_cells(point, reading, final=True, digit_map=digit_map)
    return paper.rename(columns={ACCURACY_COLUMN: "paper_accuracy"})[PAPER_COLUMNS]


def cells_on(cells: pd.DataFrame, chosen: pd.DataFrame) -> pd.DataFrame:
    """The rows of `cells` at the cells `chosen` names, with the paper's columns `chosen` carries."""
    keys = chosen[[k for k in PAPER_COLUMNS if k in chosen]].drop_duplicates(CELL_KEYS)
    return cells.merge(keys, on=CELL_KEYS, how="inner")


def cell_list(cells: pd.DataFrame) -> str:
    """The cells named in order for a verdict's reason, each with its paper cell where the map moved it."""
    unique = cells.drop_duplicates(CELL_KEYS).sort_values(CELL_KEYS)
    names, paper = [], "paper_col_digits" in unique
    for r in unique.itertuples(index=False):
        name = cell_name(r.row_digits, r.col_digits, r.context)
        if paper and (r.paper_row_digits, r.paper_col_digits) != (r.row_digits, r.col_digits):
            name += f" (paper {cell_name(r.paper_row_digits, r.paper_col_digits)})"
        names.append(name)
    return ", ".join(names)
