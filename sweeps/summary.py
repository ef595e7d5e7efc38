"""A sweep's parent run's params (so the runs table tells sweeps apart by grid, scale, axes, seeds and
command), and `--register NAME`: its best trial's logged model registered in the Model Registry."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from arith.config import ExperimentConfig
from arith.tracking import store
from arith.tracking.schema import (
    AXES_TAG,
    COMMAND_PARAM,
    GRID_TAG,
    HEADLINE_METRICS,
    SCALE_TAG,
    SEEDS_PARAM,
)
from experiments.intervals import seed_list
from sweeps.errors import SweepError


def sweep_params(
    grid: str, scale: str, axes: Sequence[str], configs: Mapping[str, ExperimentConfig], args: Sequence[str]
) -> dict[str, str]:
    """The parent run's params: grid, scale, the grid's axes, the seeds its trials run and its command."""
    seeds = sorted({c.train.seed for c in configs.values()})
    return {
        GRID_TAG: grid,
        SCALE_TAG: scale,
        AXES_TAG: ", ".join(axes),
        SEEDS_PARAM: seed_list(seeds),
        COMMAND_PARAM: f"python sweeps/run.py {shlex.join(args)}".strip(),
    }


def log_sweep_params(uri: str, parent_run_id: str, params: Mapping[str, str]) -> None:
    """Set the sweep's params on its parent run (once: a resumed sweep keeps those it was started with)."""
    from mlflow.entities import Param

    store.client(uri).log_batch(parent_run_id, params=[Param(k, v[:6000]) for k, v in params.items()])


def best_model(uri: str, parent_run_id: str) -> tuple[str, str, float]:
    """(model id, model name, test_acc) of the sweep's finished trial with the highest final test_acc."""
    client = store.client(uri)
    parent = client.get_run(parent_run_id)
    trials = client.search_runs([parent.info.experiment_id], store.trials_filter(parent_run_id))
    scored = [
        (t.data.metrics[HEADLINE_METRICS[0]], t) for t in trials if t.info.status == "FINISHED"
        if HEADLINE_METRICS[0] in t.data.metrics
    ]  # fmt: skip
    if not scored:
        raise SweepError(
            f"--register: sweep {parent_run_id} has no finished trial with {HEADLINE_METRICS[0]}"
        )
    accuracy, trial = max(scored, key=lambda pair: pair[0])
    models = client.search_logged_models(
        [parent.info.experiment_id], filter_string=f"source_run_id = '{trial.info.run_id}'", max_results=5
    )
    if not models:
        raise SweepError(
            f"--register: trial {trial.info.run_name} logged no model (tracking.log_model=none?)"
        )
    return models[0].model_id, models[0].name, accuracy


def register_best(uri: str, parent_run_id: str, name: str) -> str:
    """Register the sweep's best trial's logged model as a new version of `name`; the line to print."""
    import mlflow
    from mlflow.tracking._tracking_service.utils import _use_tracking_uri

    model_id, logged_name, accuracy = best_model(uri, parent_run_id)
    store.client(uri)  # MLflow's HTTP settings, as for every client
    with _use_tracking_uri(uri):
        version = mlflow.register_model(f"models:/{model_id}", name)
    return (
        f"registered {logged_name} ({HEADLINE_METRICS[0]} {accuracy:.2f}) as model {name!r}, version "
        f"{version.version}"
    )
