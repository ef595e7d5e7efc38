"""The paper's published numbers (paper_tables.csv, shipped as package data) matched to a sweep's cells.

A trial reproduces the paper tables its `paper_table` tag names; within one, its params pick the cells.
Nothing is interpolated: a cell only one side has stays missing on the other. At a scale whose digit counts
differ from the paper's (`cpu`: 5 -> 3) each sweep cell stands for one paper cell (`stand_in`), and only
that one is put beside it: never a difference between unlike cells.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

import numpy as np
import pandas as pd

from arith.data.tasks import get_task
from arith.tracking.schema import (
    ACCURACY_COLUMN,
    CELL_KEYS,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    EPOCH_COLUMN,
    FINAL_EPOCH_COLUMN,
    PAPER_EPOCHS_TAG,
    PAPER_TABLE_TAG,
    ROW_DIGITS_COLUMN,
)

#: the paper's augment spelling -> data.augment
PAPER_AUGMENTS = {"n_times_1_every_3": "n_times_1", "first_step_every_3": "first_step"}
#: the paper reads its nl_mix runs (100 epochs) at 50 and at 100 epochs
PAPER_NL_EPOCHS = 100
#: paper digit counts a digit map covers
MAP_DIGITS = range(1, 41)


def _json_map(tag: str | None, value: type) -> dict | None:
    """A run tag's JSON {int: value} mapping; None without a tag or where it does not parse."""
    try:
        return {int(k): value(v) for k, v in json.loads(tag).items()} if tag else None
    except (ValueError, AttributeError, TypeError):
        return None


def digit_map_of(tag: str | None) -> dict[int, int]:
    """paper digit count -> the sweep's, from the parent run's `digit_map` tag (JSON); else the identity."""
    mapping = _json_map(tag, int)
    return {n: n for n in MAP_DIGITS} if mapping is None else mapping


#: digit counts up to this stand for themselves at every scale (no scale's digit_knee is above it)
SHARED_DIGITS = 2


def training_range_map(
    digit_map: dict[int, int] | None, trained_max: float, paper_max: float
) -> dict[int, int]:
    """Paper digit count -> the run's, the paper's training maximum M standing for the run's own m whatever
    the scale: the sweep's map where it sends M to m; else counts up to SHARED_DIGITS stay, those up to M
    are stretched linearly onto the run's range, and those beyond go on at that stride."""
    base = digit_map or {n: n for n in MAP_DIGITS}
    if pd.isna(trained_max) or pd.isna(paper_max):
        return base
    m, top = int(trained_max), int(paper_max)
    if base.get(top, top) == m:
        return base
    k = min(SHARED_DIGITS, m, top)
    if top == k:
        return {n: n if n <= k else m + (n - top) for n in MAP_DIGITS}

    def scaled(steps: int) -> int:  # ceil(steps * (m - k) / (top - k)) in integers
        return -(-steps * (m - k) // (top - k))

    return {n: n if n <= k else (k + scaled(n - k) if n <= top else m + scaled(n - top)) for n in MAP_DIGITS}


def stand_in(n: int, paper_digits: list[int], digit_map: dict[int, int], paper_max: float) -> int | None:
    """The paper digit count the sweep's `n` stands for among `paper_digits` mapped to it (cpu: 3, 4, 5 ->
    3): in the training range the largest, beyond it the smallest; without a known maximum the largest."""
    candidates = sorted(p for p in paper_digits if digit_map.get(p, p) == n)
    if not candidates:
        return None
    if np.isnan(paper_max):
        return candidates[-1]
    inside = [p for p in candidates if p <= paper_max]
    return inside[-1] if inside else candidates[0]


@functools.cache
def paper_tables() -> pd.DataFrame:
    """The paper's cells, one a row, with the `setting` string parsed into typed columns."""
    with resources.files("experiments").joinpath("paper_tables.csv").open() as f:
        frame = pd.read_csv(f)
    parts = frame["setting"].fillna("").str.split(";")
    settings = parts.map(lambda ps: dict(p.split("=", 1) for p in ps if "=" in p))
    frame["max_digits"] = settings.map(lambda s: int(s["max_digits"]) if "max_digits" in s else np.nan)
    frame["augment"] = settings.map(lambda s: PAPER_AUGMENTS.get(s.get("augment", ""), "none"))
    frame["one_digit_weight"] = settings.map(lambda s: float(s.get("one_digit_weight", 1.0)))
    frame["init"] = settings.map(lambda s: s.get("init", ""))
    frame["epochs"] = settings.map(lambda s: int(s["epochs"]) if "epochs" in s else np.nan)
    # the largest digit count the paper's model was trained on (max_digits, or train_digits=2-10)
    frame["train_max"] = settings.map(
        lambda s: float(s.get("max_digits") or s.get("train_digits", "").split("-")[-1] or np.nan)
    )
    frame[CONTEXT_COLUMN] = frame[CONTEXT_COLUMN].fillna("main")
    frame[ROW_DIGITS_COLUMN] = frame[ROW_DIGITS_COLUMN].astype("Int64")
    frame[COL_DIGITS_COLUMN] = frame[COL_DIGITS_COLUMN].astype("Int64")
    return frame


def paper_format(point: dict) -> str | None:
    """The paper's format name for a trial (None when the paper has no such data)."""
    return get_task(point["data.task"]).paper_format(
        point["data.format"], point.get("data.mix_format", "none")
    )


def paper_cells(
    point: dict, paper_epochs: float | None, final: bool, digit_map: dict[int, int] | None = None
) -> pd.DataFrame:
    """The paper's cells for one evaluation of a trial point (config keys and its `paper_table` labels),
    at the sweep's digit counts beside the paper cell each stands for. `paper_epochs`: the paper's epoch
    count this evaluation stands for (None = unknown); other tables match only a trial's `final` one."""
    columns = ["table", *CELL_KEYS, ACCURACY_COLUMN]
    empty = pd.DataFrame(columns=[*columns, "paper_row_digits", "paper_col_digits"])
    spec = get_task(point["data.task"])
    task = spec.paper_name
    fmt = paper_format(point)
    if task is None or fmt is None or (paper_epochs is None if spec.paper_reads_epochs else not final):
        return empty
    if fmt == "recursive_scratchpad" and str(point.get("data.reverse_addends")).lower() not in ("true", "1"):
        return empty  # the paper's recursive scratchpad reverses the addends (appendix B, tab:fail)
    paper = paper_tables()
    keep = (paper["task"] == task) & (paper["format"] == fmt) & (paper["position"] == point["model.position"])
    tables = point.get(PAPER_TABLE_TAG)
    if isinstance(tables, tuple):  # the trial's labels (`schema.paper_labels`); () stands for no table
        keep &= paper["table"].isin(tables)
    elif spec.paper_by_max_digits:
        keep &= paper["max_digits"] == point["data.max_digits"]
    keep &= paper["augment"] == point["data.augment"]
    keep &= np.isclose(paper["one_digit_weight"], float(point["data.one_digit_weight"]))
    keep &= (paper["init"] == "") | (paper["init"] == point["model.init"])
    if spec.paper_reads_epochs:
        keep &= paper["epochs"] == paper_epochs
    cells = paper.loc[keep, [*columns, "train_max"]].drop_duplicates(CELL_KEYS)
    cells = cells.assign(paper_row_digits=cells[ROW_DIGITS_COLUMN], paper_col_digits=cells[COL_DIGITS_COLUMN])
    paper_max = float(cells["train_max"].max()) if cells["train_max"].notna().any() else np.nan
    trained_max = pd.to_numeric(point.get("data.max_digits", np.nan), errors="coerce")
    digit_map = training_range_map(digit_map, trained_max, paper_max)
    if any(k != v for k, v in digit_map.items()):
        cells = _stand_ins(cells, digit_map, paper_max)
    return cells[empty.columns].reset_index(drop=True)


def _stand_ins(cells: pd.DataFrame, digit_map: dict[int, int], paper_max: float) -> pd.DataFrame:
    """For each of the sweep's digit counts (per axis) the one paper cell it stands for, relabelled."""
    out = cells.copy()
    for axis in (ROW_DIGITS_COLUMN, COL_DIGITS_COLUMN):
        digits = sorted(int(d) for d in cells[axis].dropna().unique())
        scaled = {d: digit_map.get(d, d) for d in digits}
        chosen = {stand_in(n, digits, digit_map, paper_max) for n in set(scaled.values())}
        present = out[axis].notna()
        out = out[~present | out[axis].isin(list(chosen))].copy()
        out[axis] = pd.array([pd.NA if pd.isna(d) else scaled[int(d)] for d in out[axis]], dtype="Int64")
    return out


def paper_reading(epoch: int, epochs: list[int], tag: str = "") -> float | None:
    """The paper's epoch count an evaluation stands for: the sweep's `paper_epochs` tag (JSON), else the last
    is the paper's 100 and the one nearest the middle its 50 (how it reads nl_mix); others none."""
    if mapping := _json_map(tag, float):
        return mapping.get(int(epoch))
    final = max(epochs)
    if epoch == final:
        return float(PAPER_NL_EPOCHS)
    earlier = [e for e in epochs if e < final]
    if earlier and epoch == min(earlier, key=lambda e: (abs(e - final / 2), e)):
        return float(PAPER_NL_EPOCHS // 2)
    return None


def attach_paper(
    agg: pd.DataFrame, point_keys: list[str], digit_map: dict[int, int] | None = None
) -> pd.DataFrame:
    """Outer-join the paper's numbers (`paper_accuracy`, `paper_source`, the paper cell each stands for,
    `diff` = ours - paper) onto the seed-aggregated frame, whose trial points `point_keys` identify."""
    out = []
    for point_values, point_frame in agg.groupby(point_keys, dropna=False, sort=False):
        point = dict(zip(point_keys, point_values, strict=True))
        epochs = sorted(int(e) for e in point_frame[EPOCH_COLUMN].unique())
        final_epoch = int(point_frame[FINAL_EPOCH_COLUMN].max())
        for epoch, ours in point_frame.groupby(EPOCH_COLUMN, sort=True):
            reading = paper_reading(int(epoch), epochs, str(point.get(PAPER_EPOCHS_TAG) or ""))
            theirs = paper_cells(point, reading, final=int(epoch) == final_epoch, digit_map=digit_map).rename(
                columns={"table": "paper_source", ACCURACY_COLUMN: "paper_accuracy"}
            )
            merged = ours.drop(columns=PAPER_EPOCHS_TAG, errors="ignore").merge(
                theirs, on=CELL_KEYS, how="outer"
            )
            for key, value in point.items():
                merged[key] = [value] * len(merged)
            merged["paper_epochs_tag"] = point.get(PAPER_EPOCHS_TAG, "")
            merged[EPOCH_COLUMN] = epoch
            merged[FINAL_EPOCH_COLUMN] = final_epoch
            merged["final"] = merged[EPOCH_COLUMN] == final_epoch
            merged[PAPER_EPOCHS_TAG] = reading
            out.append(merged)
    frame = pd.concat(out, ignore_index=True)
    frame["paper_accuracy"] = frame["paper_accuracy"].astype(float)
    frame["diff"] = frame[ACCURACY_COLUMN] - frame["paper_accuracy"]
    return frame
