"""What a sweep read back is: the `Sweep`, the columns of its frames, and the seed aggregate every table is
drawn from; apart from the reading of MLflow runs (`analysis.load`), so that tests need no store.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from arith.tracking.schema import (
    ACCURACY_COLUMN,
    ACCURACY_SEEN_COLUMN,
    ACCURACY_UNSEEN_COLUMN,
    BEYOND_METRIC,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    EPOCH_COLUMN,
    FINAL_EPOCH_COLUMN,
    IN_RANGE_METRIC,
    LOSS_METRIC,
    N_COLUMN,
    N_SEEN_COLUMN,
    PAPER_EPOCHS_TAG,
    PAPER_TABLE_TAG,
    ROW_DIGITS_COLUMN,
    RUN_ID_COLUMN,
    SEED_COLUMN,
    SEEN_IN_TRAIN_COLUMN,
    SPLIT_COLUMNS,
    TEST_ACC_METRIC,
    paper_labels,
    paper_table_tag,
)
from experiments.paper import digit_map_of

#: params that say what a trial is, whether or not the sweep varies them (a run without one is refused)
IDENTITY_KEYS: tuple[str, ...] = (
    "data.task",
    "data.format",
    "data.max_digits",
    "data.one_digit_weight",
    "data.augment",
    "data.reverse_addends",
    "data.mix_format",
    "model.position",
    "model.init",
    "train.epochs",
)
#: a trial's tags that say which paper numbers it stands beside: table labels, and epoch -> paper epoch
TAG_COLUMNS: tuple[str, ...] = (PAPER_TABLE_TAG, PAPER_EPOCHS_TAG)
#: the seed aggregate's column of the run ids behind each row: what joins a table's points to their trials
RUN_IDS = "run_ids"
#: metrics plotted by epoch, when the trials logged them
EPOCH_METRICS: tuple[str, ...] = (IN_RANGE_METRIC, BEYOND_METRIC, TEST_ACC_METRIC)
HISTORY_METRICS: tuple[str, ...] = (LOSS_METRIC, *EPOCH_METRICS)
HISTORY_COLUMNS: tuple[str, ...] = (RUN_ID_COLUMN, "metric", "step", "value")
FINISHED = "FINISHED"


def tag_columns(tags: dict[str, str]) -> dict[str, object]:
    """A trial's `TAG_COLUMNS` as the frames hold them: the table labels a tuple, the epochs map its JSON."""
    return {
        PAPER_TABLE_TAG: paper_labels(tags.get(PAPER_TABLE_TAG, "")),
        PAPER_EPOCHS_TAG: tags.get(PAPER_EPOCHS_TAG, ""),
    }


def as_stored(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with its paper table labels written back as the tag (a CSV of the frame holds text)."""
    if PAPER_TABLE_TAG not in frame:
        return frame
    labels = [paper_table_tag(t) if isinstance(t, tuple) else "" for t in frame[PAPER_TABLE_TAG]]
    return frame.assign(**{PAPER_TABLE_TAG: labels})


@dataclass
class Sweep:
    """One sweep read back: its parent run, its trials (one row each) and the tidy cells frame."""

    grid: str
    parent_run_id: str
    tracking_uri: str
    scale: str
    #: one row per trial: run_id, run_name, status, seed, point, the `TAG_COLUMNS` and the axes
    trials: pd.DataFrame
    #: one row per finished trial x evaluation x cell, with the axes as typed columns
    cells: pd.DataFrame
    #: dotted config keys the trials differ in (besides the seed), in a stable order
    axes: list[str]
    #: notes on how it was read (runs left out, parts combined)
    notes: list[str] = field(default_factory=list)
    #: every sweep read (the first is `parent_run_id`, where the analysis is logged)
    parent_run_ids: tuple[str, ...] = ()
    #: the parent run's `digit_map` tag (JSON, paper digit count -> this scale's)
    digit_map_tag: str = ""
    #: the grid's axes as the sweep recorded them (parent run tag `axes`)
    declared_axes: tuple[str, ...] = ()
    #: the seeds of the pre-search that chose the sweep's budget (parent run tag `presearch_seeds`, JSON)
    presearch_seeds_tag: str = ""
    #: the grid this sweep's grid is a variant of (parent run tag `variant_of`); '' for a grid of its own
    variant_of: str = ""
    #: the kept wrong answers of each finished trial's last evaluation (eval/errors.csv), with its columns
    errors: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: the trials that kept wrong answers: one without a row in `errors` answered every problem right
    errors_kept_by: frozenset[str] = frozenset()
    #: the `HISTORY_METRICS` each finished trial logged (`HISTORY_COLUMNS`)
    history: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=HISTORY_COLUMNS))

    def history_of(self, metrics: tuple[str, ...]) -> pd.DataFrame:
        return self.history[self.history["metric"].isin(metrics)].reset_index(drop=True)

    @property
    def digit_map(self) -> dict[int, int]:
        """paper digit count -> this sweep's (its parent run's `digit_map` tag)."""
        return digit_map_of(self.digit_map_tag)

    @property
    def status_counts(self) -> dict[str, int]:
        return self.trials["status"].value_counts().to_dict()

    @property
    def unfinished(self) -> pd.DataFrame:
        """The trials that did not finish: their names, status, axes and seeds."""
        columns = [c for c in ["run_name", "status", *self.axes, SEED_COLUMN] if c in self.trials.columns]
        return self.trials.loc[self.trials["status"] != FINISHED, columns]


def aggregate_seeds(cells: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """Mean, standard deviation and count of accuracy over the seeds of each point x evaluation x cell,
    and the run ids behind each (`RUN_IDS`); `final` marks each run's last evaluation."""
    keys = [
        *dict.fromkeys([*IDENTITY_KEYS, *axes]),
        *TAG_COLUMNS,
        EPOCH_COLUMN,
        FINAL_EPOCH_COLUMN,
        CONTEXT_COLUMN,
        ROW_DIGITS_COLUMN,
        COL_DIGITS_COLUMN,
    ]
    frame = cells.copy()
    frame[ROW_DIGITS_COLUMN] = frame[ROW_DIGITS_COLUMN].astype("Int64")
    for column in SPLIT_COLUMNS:
        if column not in frame:
            frame[column] = float("nan")
    grouped = frame.groupby(keys, dropna=False, sort=True)
    out = grouped.agg(  # the seed means keep the cells' column names
        **{
            ACCURACY_COLUMN: (ACCURACY_COLUMN, "mean"),
            "accuracy_std": (ACCURACY_COLUMN, "std"),
            "seeds": (ACCURACY_COLUMN, "count"),
            N_COLUMN: (N_COLUMN, "sum"),
            SEEN_IN_TRAIN_COLUMN: (SEEN_IN_TRAIN_COLUMN, "mean"),
            N_SEEN_COLUMN: (N_SEEN_COLUMN, lambda n: n.sum(min_count=1)),
            ACCURACY_SEEN_COLUMN: (ACCURACY_SEEN_COLUMN, "mean"),
            ACCURACY_UNSEEN_COLUMN: (ACCURACY_UNSEEN_COLUMN, "mean"),
            RUN_IDS: (RUN_ID_COLUMN, lambda ids: tuple(sorted(set(ids)))),
        }
    ).reset_index()
    out["final"] = out[EPOCH_COLUMN] == out[FINAL_EPOCH_COLUMN]
    return out
