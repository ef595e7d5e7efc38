"""Sweeps made by hand for the tests: a grid's trials with the cells a function of their config gives them
(`synthetic_sweep`: the paper's own numbers, or any others), and a real SQLite store written with the MLflow
client following the schema (`write_store`)."""

from __future__ import annotations

import hashlib
import json
import shutil
from math import nan
from pathlib import Path

import pandas as pd

from analysis.load import (
    FINISHED,
    Sweep,
    TrialRun,
    tidy_cells,
    trials_frame,
)
from analysis.sweep import tag_columns
from arith.config import ExperimentConfig
from arith.tracking.schema import CELLS_CSV_COLUMNS
from experiments.paper import (
    paper_cells,
    paper_reading,
    paper_tables,
)
from sweeps.grids import GRIDS, points, select
from sweeps.scales import get_scale
from sweeps.storage import digit_map

REPO = Path(__file__).resolve().parent.parent


def protocol_cells(cfg: ExperimentConfig) -> list[tuple[str, int | None, int]]:
    """The test cells of a trial, as the evaluator writes them (docs/DESIGN.md, Cells)."""
    d = cfg.data
    digits = d.test_digits or list(range(d.min_digits, d.max_digits + 1))
    if d.task == "mul":
        digits = d.test_digits or list(range(1, d.max_digits + 1))
        return [("main", b, a) for b in digits for a in digits]
    contexts = {"reverse": ("regular", "repetitive"), "dialogue": ("dialogue", "pure_addition")}
    return [(c, None, n) for c in contexts.get(d.task, ("main",)) for n in digits]


def params_of(cfg: ExperimentConfig) -> dict[str, str]:
    """Params as the tracker logs them: strings, lists as JSON."""
    return {k: json.dumps(v) if isinstance(v, (list, dict)) else str(v) for k, v in cfg.flat().items()}


def paper_or(default: float):
    """Accuracy: the paper's number for the cell where it has one, else `default`."""

    cache: dict[tuple[str, int], dict] = {}

    def accuracy(cfg: ExperimentConfig, epoch: int, epochs: list[int], cell) -> float:
        key = (cfg.tracking.run_name, epoch)
        if key not in cache:
            point = {**cfg.flat(), **tag_columns(cfg.tracking.tags)}
            reading = paper_reading(epoch, epochs, cfg.tracking.tags.get("paper_epochs", ""))
            theirs = paper_cells(point, reading, final=epoch == max(epochs))
            cache[key] = {
                (c, None if pd.isna(r) else int(r), int(n)): float(acc)
                for c, r, n, acc in theirs[["context", "row_digits", "col_digits", "accuracy"]].itertuples(
                    index=False
                )
            }
        return cache[key].get(cell, default)

    return accuracy


def synthetic_sweep(
    grid: str,
    accuracy,
    scale: str = "paper",
    seeds: int | tuple[int, ...] = 1,
    failed: int = 0,
    jitter: bool = False,
) -> Sweep:
    """A Sweep of `grid` whose trials are the grid's configs and whose cells come from `accuracy`.
    `jitter`: 0-2 more problems right in the cells below 100, fixed by trial and cell, so that
    seeds of the same numbers differ a little, as real seeds do (numbers with no spread at all get the
    exact tests, `experiments.intervals`)."""
    configs = points(grid, scale, seeds)
    runs, cells_by_run = [], {}
    for i, cfg in enumerate(configs):
        status = "FAILED" if i < failed else FINISHED
        run = TrialRun(f"run{i}", cfg.tracking.run_name, status, params_of(cfg), dict(cfg.tracking.tags))
        runs.append(run)
        epochs = sorted({*cfg.train.eval_epochs, cfg.train.epochs})
        rows = []
        for epoch in epochs:
            for cell in protocol_cells(cfg):
                correct = round(100 * accuracy(cfg, epoch, epochs, cell))
                if jitter:
                    key = f"{cfg.tracking.run_name}{cell}".encode()
                    correct = min(100, correct + hashlib.sha256(key).digest()[0] % 3)
                rows.append(
                    dict(
                        zip(
                            CELLS_CSV_COLUMNS,
                            [epoch, *cell, 100, correct, correct / 100, 0.0, nan, nan, nan],
                            strict=True,
                        )
                    )
                )
        if status == FINISHED:
            cells_by_run[run.run_id] = pd.DataFrame(rows)
    trials, axes = trials_frame(runs, GRIDS[grid].declared_axes())
    cells = tidy_cells(trials, cells_by_run, axes)
    digits = json.dumps(scale_digit_map(grid, scale))  # the parent run's tag, as a sweep writes it
    return Sweep(grid, "parent", "sqlite:///unused.db", scale, trials, cells, axes, digit_map_tag=digits)


def scale_digit_map(grid: str, scale: str) -> dict[int, int]:
    """paper digit count -> the grid's at `scale`, as its sweep records it (`sweeps.storage.digit_map`)."""
    return digit_map(GRIDS[grid], get_scale(scale))


def paper_shape(label: str, task: str) -> tuple[int, int]:
    """The shape of a paper table as printed: mul (b digits x a digits), add (format x digits), nl_mix
    (position x data-and-digits)."""
    cells = paper_tables()[paper_tables()["table"] == label]
    if task == "mul":
        return cells["row_digits"].nunique(), cells["col_digits"].nunique()
    if task == "add_scratchpad":
        return cells["format"].nunique(), cells["col_digits"].nunique()
    return cells["position"].nunique(), cells[["format", "col_digits"]].drop_duplicates().shape[0]


def present_block(grid: pd.DataFrame) -> pd.DataFrame:
    return grid.dropna(how="all").dropna(axis=1, how="all")


def write_store(
    tmp_path: Path,
    empty_store: Path,
    grid: str = "add_posembed",
    drop_param: str = "",
    drop_cell_column: str = "",
    fail_first: bool = True,
    seeds: int | tuple[int, ...] = 1,
    accuracy: float | None = None,
    recorded: bool = True,
    only: dict[str, str] | None = None,
) -> str:
    """A store with one smoke-scale sweep of `grid`: parent run + trial runs (the first FAILED); a store
    already in tmp_path gets one more sweep. Every cell's accuracy is `accuracy`, else 0.5 for position
    none and 0.25 for the others. The parent run is the one `sweeps/run.py` opens
    (`sweeps.storage.open_sweep`, recording the grid's axes and digit map), or without `recorded` one that
    records neither (a sweep the analysis refuses).
    `only` keeps the points whose config has those values (`--only`)."""
    from mlflow import MlflowClient
    from mlflow.entities import Param

    from sweeps.scales import SCALES
    from sweeps.storage import open_sweep

    if not (tmp_path / "mlflow.db").exists():
        shutil.copy(empty_store, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    existing = client.get_experiment_by_name(grid)
    experiment = (
        existing.experiment_id
        if existing
        else client.create_experiment(grid, artifact_location=(tmp_path / "mlartifacts").as_uri())
    )
    configs = points(grid, "smoke", seeds)
    kept = {c.tracking.run_name for c in select(configs, only or {})}
    if recorded:
        _name, link = open_sweep(GRIDS[grid], SCALES["smoke"], uri, len(kept))
        parent = client.get_run(link.parent_run_id)
    else:
        parent = client.create_run(
            experiment, tags={"sweep": "1", "grid": grid, "scale": "smoke"}, run_name="sweep"
        )
    sweep = synthetic_sweep(
        grid,
        lambda cfg, *_: (
            accuracy if accuracy is not None else 0.25 * (1 + ["learned", "none"].count(cfg.model.position))
        ),
        "smoke",
        seeds,
    )
    for i, cfg in enumerate(configs):
        if cfg.tracking.run_name not in kept:
            continue
        tags = {**cfg.tracking.tags, "mlflow.parentRunId": parent.info.run_id}
        run = client.create_run(experiment, tags=tags, run_name=cfg.tracking.run_name)
        params = {k: v for k, v in params_of(cfg).items() if k != drop_param}
        items = [Param(k, v) for k, v in params.items()]
        for j in range(0, len(items), 100):
            client.log_batch(run.info.run_id, params=items[j : j + 100])
        if fail_first and i == 0:
            client.set_terminated(run.info.run_id, "FAILED")
            continue
        cells = sweep.cells[sweep.cells["run_id"] == f"run{i}"][list(CELLS_CSV_COLUMNS)]
        client.log_text(
            run.info.run_id, cells.drop(columns=drop_cell_column or []).to_csv(index=False), "eval/cells.csv"
        )
        client.set_terminated(run.info.run_id, "FINISHED")
    client.set_terminated(parent.info.run_id, "FINISHED")
    return uri
