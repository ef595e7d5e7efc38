"""What a sweep read back is: the `Sweep` (its parent run, its trials, the tidy cells frame), the columns
of its frames, and the seed aggregate every table is drawn from. Apart from the reading of MLflow runs
(`analysis.load`) so that the report, the tables and the tests hold a sweep without a store.
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

#: params that say what a trial is, whether or not the sweep varies them: tables and the paper match
#: read them, and a trial run without one of them is refused.
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
#: params a run cannot be read without
REQUIRED_KEYS: tuple[str, ...] = ("data.task", "data.format", "model.position")
#: tags a sweep sets on each trial that say which paper numbers it stands beside: the table label(s), and
#: a JSON map from each evaluated epoch to the paper's epoch count it stands for
TAG_COLUMNS: tuple[str, ...] = (PAPER_TABLE_TAG, PAPER_EPOCHS_TAG)
#: the seed aggregate's column of the trials behind each row (a sorted tuple of run ids): what joins a
#: table's points back to their trials' cells and wrong answers, whatever type the config values took
RUN_IDS = "run_ids"
#: metrics plotted by epoch, when the trials logged them (arith.training.metrics.summary_metrics)
EPOCH_METRICS: tuple[str, ...] = (IN_RANGE_METRIC, BEYOND_METRIC, TEST_ACC_METRIC)
#: the metric histories a sweep is read with: what the report's curves draw
HISTORY_METRICS: tuple[str, ...] = (LOSS_METRIC, *EPOCH_METRICS)
#: the columns of `Sweep.history`
HISTORY_COLUMNS: tuple[str, ...] = (RUN_ID_COLUMN, "metric", "step", "value")
FINISHED = "FINISHED"


def tag_columns(tags: dict[str, str]) -> dict[str, object]:
    """A trial's `TAG_COLUMNS` as the frames hold them: its paper table labels as a tuple of values
    (`schema.paper_labels`: None without the tag), its paper epochs map as the JSON the tag holds."""
    return {
        PAPER_TABLE_TAG: paper_labels(tags.get(PAPER_TABLE_TAG, "")),
        PAPER_EPOCHS_TAG: tags.get(PAPER_EPOCHS_TAG, ""),
    }


def as_stored(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with its paper table labels written back as the tag (a CSV of the frame holds text)."""
    if PAPER_TABLE_TAG not in frame:
        return frame
    labels = frame[PAPER_TABLE_TAG]
    return frame.assign(
        **{PAPER_TABLE_TAG: [paper_table_tag(t) if isinstance(t, tuple) else "" for t in labels]}
    )


@dataclass
class Sweep:
    """One sweep read back: its parent run, its trials (one row each) and the tidy cells frame."""

    grid: str
    parent_run_id: str
    tracking_uri: str
    scale: str
    #: one row per trial: run_id, run_name, status, seed, point, the `TAG_COLUMNS` (`tag_columns`: the paper
    #: table labels as a tuple) and the axes
    trials: pd.DataFrame
    #: one row per finished trial x evaluation x cell, with the axes as typed columns
    cells: pd.DataFrame
    #: dotted config keys the trials differ in (besides the seed), in a stable order
    axes: list[str]
    #: human-readable notes on what was read with a fallback (older configs)
    notes: list[str] = field(default_factory=list)
    #: every sweep read (the first is `parent_run_id`, where the analysis is logged)
    parent_run_ids: tuple[str, ...] = ()
    #: the parent run's `digit_map` tag (JSON, paper digit count -> this scale's)
    digit_map_tag: str = ""
    #: the grid's axes as the sweep recorded them (parent run tag `axes`)
    declared_axes: tuple[str, ...] = ()
    #: the seeds of the pre-search that chose the sweep's budget (parent run tag `presearch_seeds`, JSON
    #: list; of several parts, every part's); '' when no part recorded one
    presearch_seeds_tag: str = ""
    #: the grid this sweep's grid is a variant of (parent run tag `variant_of`); '' for a grid of its own
    variant_of: str = ""
    #: the kept wrong answers of each finished trial's last evaluation (eval/errors.csv) with the trial's
    #: columns (run_id, seed, point keys); empty for trials from before eval/errors.csv
    errors: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: the finished trials that wrote an eval/errors.csv, by run id: one of them without a row in `errors`
    #: answered every test problem right, where a trial not here is from before the file existed
    errors_kept_by: frozenset[str] = frozenset()
    #: the `HISTORY_METRICS` each finished trial logged (`HISTORY_COLUMNS`: run_id, metric, step, value);
    #: empty for a sweep read from elsewhere than its store
    history: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=HISTORY_COLUMNS))

    def history_of(self, metrics: tuple[str, ...]) -> pd.DataFrame:
        """The logged history of `metrics` (run_id, metric, step, value)."""
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
    and the run ids behind each (`RUN_IDS`).

    Evaluations are aligned by their place in the run: `final` marks each run's last one.
    """
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
