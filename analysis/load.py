"""MLflow runs of one sweep -> its typed record, the `Sweep`, in one pass over the store: `read_sweep`.

A sweep is a parent run tagged ``sweep=1`` and ``grid=<name>``, its trials the runs nested under it
(docs/DESIGN.md, "MLflow schema"). What the sweep declared (its axes, its digit map) is read from the
parent run's tags, not from the `sweeps` package, which the analysis does not import; each trial's params
become typed columns through the config's own type hints; its cells and kept wrong answers come from its
``eval/cells.csv`` and ``eval/errors.csv``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.axes import axes_of, type_hints, typed_value
from analysis.sweep import (
    FINISHED,
    HISTORY_COLUMNS,
    HISTORY_METRICS,
    IDENTITY_KEYS,
    TAG_COLUMNS,
    Sweep,
    tag_columns,
)
from arith.tracking import schema, store
from arith.tracking.schema import CELLS_ARTIFACT, ERRORS_ARTIFACT

ERRORS_PER_CELL_PARAM = "train.errors_per_cell"


class AnalysisError(RuntimeError):
    """Input the analysis cannot turn into a result; the message says what is wrong and what to do."""


def require_store(tracking_uri: str, timeout_s: float = 5.0) -> None:
    """Fail fast, naming the URI, when the store is not there (as the AnalysisError callers catch)."""
    try:
        store.check_reachable(tracking_uri, timeout_s)
    except store.StoreError as err:
        raise AnalysisError(str(err)) from err


def find_parent(client, grid: str, parent_run_id: str | None = None):
    """The sweep's parent run: the given one (checked to be a sweep of `grid`) or the latest of `grid`."""
    from mlflow.exceptions import MlflowException

    if parent_run_id:
        try:
            run = client.get_run(parent_run_id)
        except MlflowException as err:
            raise AnalysisError(f"no run {parent_run_id!r} in this tracking store") from err
        tags = run.data.tags
        if tags.get(schema.SWEEP_TAG) != "1":
            raise AnalysisError(f"run {parent_run_id} is not a sweep parent run (it has no tag sweep=1)")
        if tags.get(schema.GRID_TAG) != grid:
            found = tags.get(schema.GRID_TAG)
            raise AnalysisError(f"run {parent_run_id} is a sweep of grid {found!r}, not {grid!r}")
        return run
    if not store.experiment_ids(client):
        raise AnalysisError(
            "the tracking store holds no experiments: run a sweep first (python sweeps/run.py)"
        )
    sweeps = store.sweep_runs(client)
    of_grid = [run for run in sweeps if run.data.tags.get(schema.GRID_TAG) == grid]
    if not of_grid:
        found = sorted({run.data.tags.get(schema.GRID_TAG, "?") for run in sweeps})
        have = f"sweeps found for grid(s): {', '.join(found)}" if found else "the store holds no sweeps"
        raise AnalysisError(f"no sweep of grid {grid!r} in this tracking store; {have}")
    return of_grid[0]


def declared_axes(parents: Sequence[Any]) -> list[str]:
    """The axes the sweep(s) declared, from the parent runs' `axes` tags."""
    axes: list[str] = []
    for parent in parents:
        tag = parent.data.tags.get(schema.AXES_TAG)
        try:
            keys = json.loads(tag) if tag else None
        except ValueError:
            keys = None
        if not isinstance(keys, list):
            raise AnalysisError(
                f"sweep parent run {parent.info.run_id} records no axes (tag {schema.AXES_TAG!r})"
            )
        axes += [str(k) for k in keys if str(k) not in axes]
    return axes


@dataclass(frozen=True)
class TrialRun:
    """What the analysis reads of one trial's MLflow run (params and tags are MLflow's strings)."""

    run_id: str
    run_name: str
    status: str
    params: dict[str, str]
    tags: dict[str, str]

    @classmethod
    def of(cls, run) -> TrialRun:
        info = run.info
        return cls(info.run_id, info.run_name or "", info.status, dict(run.data.params), dict(run.data.tags))


def trials_frame(children: list[TrialRun], declared: Sequence[str] = ()) -> tuple[pd.DataFrame, list[str]]:
    """One row per trial run with typed param columns, and the axes: the `declared` ones (the parent
    run's) and every other param the trials vary in."""
    hints = type_hints()
    raw = pd.DataFrame([run.params for run in children])
    declared = list(declared)
    axes = axes_of(raw, declared)

    required = list(dict.fromkeys([*IDENTITY_KEYS, *declared]))
    lacking = {run.run_name or run.run_id: [k for k in required if k not in run.params] for run in children}
    lacking = {name: keys for name, keys in lacking.items() if keys}
    if lacking:
        listed = "; ".join(f"{name}: {', '.join(keys)}" for name, keys in sorted(lacking.items())[:5])
        raise AnalysisError(
            f"{len(lacking)} of {len(children)} trial runs lack params this analysis needs ({listed}); "
            "they were not logged by this trainer: re-run the sweep with the current code"
        )

    rows = []
    for run in children:
        params, tags = run.params, run.tags
        row: dict[str, Any] = {
            schema.RUN_ID_COLUMN: run.run_id,
            "run_name": run.run_name,
            "status": run.status,
            schema.SEED_TAG: tags.get(schema.SEED_TAG, params.get("data.seed", params.get("train.seed"))),
            **tag_columns(tags),
            schema.POINT_TAG: tags.get(schema.POINT_TAG, ""),
            schema.COLOUR_COLUMN: tags.get(schema.RUN_COLOR_TAG, ""),
        }
        for key in dict.fromkeys([*IDENTITY_KEYS, *axes]):
            row[key] = typed_value(key, params.get(key), hints)
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame[schema.SEED_COLUMN] = pd.to_numeric(frame[schema.SEED_COLUMN], errors="coerce")
    return frame, axes


def _artifact_csv(client, run_id: str, artifact: str, into: Path, **read) -> pd.DataFrame | None:
    """A run's CSV artifact as a frame, or None when the run has none."""
    from mlflow.exceptions import MlflowException

    try:
        path = client.download_artifacts(run_id, artifact, str(into))
    except (MlflowException, OSError):
        return None
    try:
        return pd.read_csv(path, **read)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as err:
        raise AnalysisError(f"run {run_id}: {artifact} cannot be read as a table ({err})") from err


def read_cells(client, run_id: str, into: Path) -> pd.DataFrame | None:
    """The run's eval/cells.csv, or None when it has none (stopped before its first evaluation)."""
    cells = _artifact_csv(client, run_id, CELLS_ARTIFACT, into)
    missing = [] if cells is None else [c for c in schema.CELLS_CSV_COLUMNS if c not in cells.columns]
    if missing:
        raise AnalysisError(
            f"run {run_id}: eval/cells.csv lacks column(s) {', '.join(missing)} "
            f"(expected {', '.join(schema.CELLS_CSV_COLUMNS)})"
        )
    return cells


def _joined(
    trials: pd.DataFrame, by_run: dict[str, pd.DataFrame], keep: list[str], columns: list[str]
) -> pd.DataFrame:
    """Each run's frame with its trial's `keep` columns, as one frame (without any: `keep` and `columns`)."""
    frames = []
    for run_id, frame in by_run.items():
        trial = trials.loc[trials[schema.RUN_ID_COLUMN] == run_id, keep].iloc[0]
        frames.append(frame.assign(**{k: [trial[k]] * len(frame) for k in keep}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*keep, *columns])


def tidy_cells(trials: pd.DataFrame, cells_by_run: dict[str, pd.DataFrame], axes: list[str]) -> pd.DataFrame:
    """Trial columns joined onto each of its cells, plus `final_epoch` (the run's last evaluation)."""
    keep = [schema.RUN_ID_COLUMN, schema.SEED_COLUMN, *TAG_COLUMNS, *dict.fromkeys([*IDENTITY_KEYS, *axes])]
    columns = [schema.EPOCH_COLUMN, *schema.CELL_COLUMNS, schema.FINAL_EPOCH_COLUMN]
    tidy = _joined(trials, cells_by_run, keep, columns)
    if cells_by_run:
        epochs = tidy.groupby(schema.RUN_ID_COLUMN)[schema.EPOCH_COLUMN]
        tidy[schema.FINAL_EPOCH_COLUMN] = epochs.transform("max")
        for column in (schema.ROW_DIGITS_COLUMN, schema.COL_DIGITS_COLUMN):
            tidy[column] = tidy[column].astype("Int64")
    return tidy


def read_errors(client, run_id: str, into: Path) -> pd.DataFrame | None:
    """The run's eval/errors.csv (its last evaluation's kept wrong answers), or None without one."""
    texts = (schema.PROMPT_COLUMN, schema.EXPECTED_COLUMN, schema.REPLY_COLUMN)
    operands = (schema.A_COLUMN, schema.B_COLUMN)
    as_text = dict.fromkeys((*texts, *operands), str)
    errors = _artifact_csv(client, run_id, ERRORS_ARTIFACT, into, dtype=as_text)
    if errors is None:
        return None
    for column in texts:  # an empty reply is read as NaN
        errors[column] = errors[column].fillna("")
    numbers = (schema.EPOCH_COLUMN, schema.ROW_DIGITS_COLUMN, schema.COL_DIGITS_COLUMN)
    for column in numbers:
        errors[column] = pd.to_numeric(errors[column], errors="coerce").astype("Int64")
    for column in operands:  # read as text: a number of 20 digits and more is exact only as a Python int
        values = errors[column].map(_operand)
        errors[column] = values.astype(schema.operand_dtype(values))
    return errors


def _operand(text: object) -> int | None:
    """An operand read from its text ('123'); None where empty."""
    return int(text) if isinstance(text, str) and text.strip() else None


def tidy_errors(
    trials: pd.DataFrame, errors_by_run: dict[str, pd.DataFrame], axes: list[str]
) -> pd.DataFrame:
    """Trial columns joined onto each kept wrong answer."""
    point = dict.fromkeys([*IDENTITY_KEYS, *axes])
    keep = [schema.RUN_ID_COLUMN, schema.SEED_COLUMN, schema.POINT_COLUMN, *point]
    columns = [schema.EPOCH_COLUMN, *schema.CELL_KEYS, schema.PROMPT_COLUMN]
    return _joined(trials, errors_by_run, keep, columns)


def one_run_per_trial(trials: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """One run a (point, seed), and how many were left out (a seed counted twice would weigh double): a
    finished run before one that is not, then the first listed (the store lists the latest first)."""
    keys = [schema.POINT_COLUMN, schema.SEED_COLUMN]
    unfinished = (trials["status"] != FINISHED).to_numpy()
    order = trials.iloc[unfinished.argsort(kind="stable")]
    kept = order[~order.duplicated(keys)].sort_index()
    return kept.reset_index(drop=True), len(trials) - len(kept)


def keeping_no_errors(children: list) -> frozenset[str]:
    """The runs told to keep no wrong answers (`train.errors_per_cell` 0): their empty eval/errors.csv
    says nothing of whether they erred."""
    return frozenset(r.info.run_id for r in children if r.data.params.get("train.errors_per_cell") == "0")


def read_sweep(grid: str, tracking_uri: str, parent_run_id: str | Sequence[str] | None = None) -> Sweep:
    """The typed record of one sweep (the latest of `grid` unless `parent_run_id` is given): its trials,
    their cells, wrong answers and metric histories. Several parent run ids read as one sweep: the parts
    of a study run apart (seeds added later, costly points run on their own)."""
    require_store(tracking_uri)
    from mlflow.exceptions import MlflowException

    client = store.client(tracking_uri)
    ids = [parent_run_id] if parent_run_id is None or isinstance(parent_run_id, str) else list(parent_run_id)
    if not ids:
        raise AnalysisError("no sweep parent run ids given")
    try:
        parents = [find_parent(client, grid, run_id) for run_id in ids]
        children = [run for parent in parents for run in _trial_runs(client, parent, grid)]
        parent = parents[0]
        scales = sorted({p.data.tags.get(schema.SCALE_TAG, "") for p in parents})
        if len(scales) > 1:
            raise AnalysisError(f"the sweeps {', '.join(ids)} are of different scales ({', '.join(scales)})")
        lacking = [p.info.run_id for p in parents if not p.data.tags.get(schema.DIGIT_MAP_TAG)]
        if lacking:
            raise AnalysisError(
                f"sweep parent run(s) {', '.join(lacking)} record no digit map (tag {schema.DIGIT_MAP_TAG!r})"
            )
        declared = declared_axes(parents)
        trials, axes = trials_frame([TrialRun.of(run) for run in children], declared)
        trials, repeated = one_run_per_trial(trials)
        notes = []
        if repeated:
            notes.append(
                f"{repeated} run(s) of a (point, seed) that another run holds were left out (a finished run "
                "is kept before one that did not finish, then the first listed)"
            )
        if len(parents) > 1:
            notes.append(f"combines {len(parents)} sweeps: {', '.join(p.info.run_id for p in parents)}")
        finished = list(trials.loc[trials["status"] == FINISHED, schema.RUN_ID_COLUMN])
        cells_by_run, errors_by_run = _artifacts(client, finished)
        history = _histories(client, finished, HISTORY_METRICS)
    except MlflowException as err:
        raise AnalysisError(f"cannot read the tracking store at {tracking_uri}: {err.message}") from err
    if not cells_by_run and finished:
        raise AnalysisError(
            f"none of the {len(finished)} finished trials of sweep {parent.info.run_id} has an "
            "eval/cells.csv artifact: were the artifacts moved or deleted? (MLflow keeps them apart from "
            "the store)"
        )
    if not cells_by_run:
        counts = ", ".join(f"{n} {status}" for status, n in trials["status"].value_counts().items())
        raise AnalysisError(
            f"the sweep {parent.info.run_id} of grid {grid!r} has no finished trial with evaluation cells "
            f"yet ({counts}); wait for it to finish or pass --run for an earlier sweep"
        )
    if len(finished) > len(cells_by_run):
        notes.append(f"{len(finished) - len(cells_by_run)} finished trial(s) have no eval/cells.csv artifact")
    return Sweep(
        grid=grid,
        parent_run_id=parent.info.run_id,
        parent_run_ids=tuple(p.info.run_id for p in parents),
        tracking_uri=tracking_uri,
        scale=parent.data.tags.get(schema.SCALE_TAG, ""),
        trials=trials,
        cells=tidy_cells(trials, cells_by_run, axes),
        axes=axes,
        notes=notes,
        digit_map_tag=parent.data.tags.get(schema.DIGIT_MAP_TAG, ""),
        presearch_seeds_tag=presearch_seeds_tag(parents),
        variant_of=parent.data.tags.get(schema.VARIANT_OF_TAG, ""),
        declared_axes=tuple(declared),
        errors=tidy_errors(trials, errors_by_run, axes),
        errors_kept_by=frozenset(errors_by_run) - keeping_no_errors(children),
        history=history,
    )


def _trial_runs(client, parent, grid: str) -> list:
    runs = store.search_runs(client, [parent.info.experiment_id], store.trials_filter(parent.info.run_id))
    if not runs:
        raise AnalysisError(
            f"the sweep {parent.info.run_id} of grid {grid!r} has no trial runs (none started, "
            "or its trials logged elsewhere)"
        )
    return runs


def _artifacts(client, run_ids: list[str]) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """Each run's eval/cells.csv and eval/errors.csv (those it has), by run id."""
    cells_by_run: dict[str, pd.DataFrame] = {}
    errors_by_run: dict[str, pd.DataFrame] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, run_id in enumerate(run_ids):
            cells = read_cells(client, run_id, Path(tmp) / str(i))
            if cells is not None:
                cells_by_run[run_id] = cells
                errors = read_errors(client, run_id, Path(tmp) / str(i))
                if errors is not None:
                    errors_by_run[run_id] = errors
    return cells_by_run, errors_by_run


def _histories(client, run_ids: list[str], metrics: Sequence[str]) -> pd.DataFrame:
    """run_id, metric, step, value of each run's logged history of `metrics`."""
    rows = [
        (run_id, metric, m.step, m.value)
        for run_id in run_ids
        for metric in metrics
        for m in client.get_metric_history(run_id, metric)
    ]
    return pd.DataFrame(rows, columns=list(HISTORY_COLUMNS))


def presearch_seeds_tag(parents: list) -> str:
    """The parts' `presearch_seeds` tags as one JSON list (their union); '' when none has the tag."""
    seeds: set[int] = set()
    tagged = False
    for parent in parents:
        tag = parent.data.tags.get(schema.PRESEARCH_SEEDS_TAG, "")
        if tag:
            try:
                seeds |= {int(s) for s in json.loads(tag)}
                tagged = True
            except (ValueError, TypeError) as err:
                raise AnalysisError(
                    f"run {parent.info.run_id}: tag presearch_seeds={tag!r} is not a JSON list of seeds"
                ) from err
    return json.dumps(sorted(seeds)) if tagged else ""
