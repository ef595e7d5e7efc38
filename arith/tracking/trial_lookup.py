"""A trial found by what a researcher calls it: the grid, the point and the seed (`--grid demo --point
padding_reverse --seed 0`), in the grid's latest sweep or a named one, rather than by a run id dug out of
a table. The sweep's experiment is the grid's; its parent run carries the `sweep` tag, its trials the
`point` and `seed` tags (`sweeps.space`)."""

from __future__ import annotations

from typing import Any

from arith.tracking import store
from arith.tracking.schema import POINT_TAG, SEED_TAG, SWEEP_TAG, point_label


class TrialNotFound(LookupError):
    """No trial matches; the message is one line saying what there is instead."""


def latest_sweep(mlflow_client: Any, grid: str) -> Any:
    """The grid's most recently started sweep's parent run."""
    experiment = mlflow_client.get_experiment_by_name(grid)
    if experiment is None:
        raise TrialNotFound(f"no experiment {grid!r} in this store: run `python sweeps/run.py --grid {grid}`")
    found = mlflow_client.search_runs(
        [experiment.experiment_id], f"tags.{SWEEP_TAG} = '1'", order_by=["attributes.start_time DESC"]
    )
    if not found:
        raise TrialNotFound(f"no sweep of grid {grid!r} in this store")
    return found[0]


def matches(point: str, wanted: str) -> bool:
    """A point named in full (`format=padding_reverse`) or by its label (`padding_reverse`)."""
    return wanted in (point, point_label(point))


def trial_run_id(tracking_uri: str, grid: str, point: str, seed: int, sweep: str = "") -> str:
    """The run id of the trial (`point`, `seed`) of the grid's sweep `sweep` (a parent run id; default its
    latest)."""
    from mlflow.exceptions import MlflowException

    mlflow_client = store.client(tracking_uri)
    try:
        parent = mlflow_client.get_run(sweep) if sweep else latest_sweep(mlflow_client, grid)
    except MlflowException as err:
        raise TrialNotFound(f"no sweep {sweep!r} in this store: {str(err).splitlines()[0]}") from None
    trials = mlflow_client.search_runs([parent.info.experiment_id], store.trials_filter(parent.info.run_id))
    points = sorted({t.data.tags.get(POINT_TAG, "") for t in trials})
    chosen = [t for t in trials if matches(t.data.tags.get(POINT_TAG, ""), point)]
    if not chosen:
        names = ", ".join(point_label(p) for p in points) or "none"
        raise TrialNotFound(f"no point {point!r} in sweep {parent.info.run_name}; its points: {names}")
    seeded = [t for t in chosen if t.data.tags.get(SEED_TAG) == str(seed)]
    if not seeded:
        seeds = ", ".join(sorted({t.data.tags.get(SEED_TAG, "?") for t in chosen}))
        raise TrialNotFound(f"no seed {seed} of {point!r} in sweep {parent.info.run_name}; seeds: {seeds}")
    finished = [t for t in seeded if t.info.status == "FINISHED"] or seeded
    return finished[0].info.run_id
