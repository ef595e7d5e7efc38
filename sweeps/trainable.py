"""The sweep's one Ray Tune trainable, `run_trial`: a plain function, as in Ray Tune's own examples.

Tune's param space gives a trial its `point`, `seed` and the grid's axes (flat keys such as `data.format`:
what Tune's table and `ResultGrid.get_dataframe()` show); its full config is looked up by (point, seed) in
the sweep's configs, which `tune.with_parameters` hands over. The trainer knows nothing of Ray. Here a trial
gets:
- one MLflow run: an attempt that starts without a checkpoint deletes the unfinished runs of the lost ones;
- its threads: `train.num_threads` = the CPUs Tune assigned to it (when the config leaves it at 0);
- its placement: `ray_node_id`, `hostname`, `ray_gpus` and `ray_worker_pid` tags on its MLflow run (set
  again when it moves node; trials reuse their worker processes, `sweeps.tuner`);
- checkpoints through Tune: restored from `tune.get_checkpoint()`, every new one handed to `tune.report`
  with the epoch's metrics (the trainer has sent its metrics buffer before saving it);
- no retry of a NaN loss: the same checkpoint and seed would diverge again, so the trial reports
  `nonfinite_loss` and ends (its MLflow run FAILED, tagged `failure=nonfinite_loss`) instead of raising;
- no retry of a setting the worker refuses (a `ConfigError`: a device its node lacks, what the checks
  before launch could not see): the trial reports `config_error` and ends, its MLflow run FAILED with why.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arith.config import ConfigError, ExperimentConfig
from arith.tracking import store
from arith.tracking.runs import start_tracker
from arith.tracking.schema import GATE_METRIC, LENGTH_SCORE_METRIC, POINT_TAG, SEED_TAG
from arith.training.checkpoints import load_checkpoint, save_checkpoint
from arith.training.step import NonFiniteLossError
from arith.training.train import train


class TuneCheckpoints:
    """Checkpoints kept by Tune: each is written to a temporary folder and persisted by `tune.report`."""

    def load(self) -> dict[str, Any] | None:
        from ray import tune

        checkpoint = tune.get_checkpoint()
        if checkpoint is None:
            return None
        with checkpoint.as_directory() as directory:
            return load_checkpoint(directory)

    def save(self, state: dict[str, Any]) -> Path:
        return save_checkpoint(tempfile.mkdtemp(prefix="arith-ckpt-"), state)


def report_to_tune(metrics: dict[str, Any], checkpoint: Path | None) -> None:
    """`tune.report`, with the checkpoint folder when one was saved (Tune copies it to storage before
    returning, so the temporary folder is removed afterwards)."""
    from ray import tune

    if checkpoint is None:
        tune.report(metrics)
        return
    try:
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(str(checkpoint)))
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)


def placement_tags() -> dict[str, str]:
    """Where the trial runs: host, Ray node, the GPU share Ray assigned it (the trainer's `device` tag says
    whether torch could use one) and the worker process (the pid in Ray's log prefix, `(run_trial pid=N)`;
    trials run one after another in a worker, `sweeps.tuner`)."""
    import ray

    context = ray.get_runtime_context()
    gpus = context.get_assigned_resources().get("GPU", 0.0)
    return {
        "hostname": socket.gethostname(),
        "ray_node_id": context.get_node_id(),
        "ray_gpus": f"{gpus:g}",
        "ray_worker_pid": str(os.getpid()),
    }


def config_on_ray(cfg: ExperimentConfig) -> ExperimentConfig:
    """A Tune trial's config with its CPU threads and placement tags filled in from Ray (what only the
    worker knows; the config itself is `sweeps.space.trial_config`'s)."""
    import ray

    overrides: dict[str, Any] = {"tracking.tags": {**cfg.tracking.tags, **placement_tags()}}
    if cfg.train.num_threads <= 0:
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
        overrides["train.num_threads"] = max(1, int(cpus or 1))
    return cfg.with_overrides(overrides)


def trial_key(point: str, seed: int) -> str:
    """How the sweep's configs are keyed (and its trials named in its progress line)."""
    return f"{point}|seed={seed}"


def discard_lost_attempts(cfg: ExperimentConfig) -> None:
    """Delete the unfinished MLflow runs an earlier attempt of this trial left behind.

    An attempt killed before its first checkpoint has nothing to resume, so the trial starts over with a
    new run; deleting the old one keeps exactly one run per trial (no orphans stuck in RUNNING)."""
    tracking = cfg.tracking
    if not tracking.enabled or not tracking.parent_run_id:
        return
    uri = tracking.tracking_uri
    runs = store.trial_runs(uri, [tracking.experiment], tracking.parent_run_id, tracking.run_name)
    for run in runs:
        if run.info.status != "FINISHED":
            store.client(uri).delete_run(run.info.run_id)


def run_trial(config: dict[str, Any], configs: Mapping[str, ExperimentConfig]) -> None:
    """The Tune trainable: train the trial whose `point` and `seed` Tune's `config` names (its other keys
    are the grid's axes, for show), its `ExperimentConfig` looked up in `configs`. Metrics and
    checkpoints go to Tune through `report_to_tune`, so nothing is returned."""
    from ray import tune

    cfg = configs[trial_key(config[POINT_TAG], config[SEED_TAG])]
    if tune.get_checkpoint() is None:
        discard_lost_attempts(cfg)
    try:
        train(config_on_ray(cfg), reporter=report_to_tune, checkpoints=TuneCheckpoints())
    except (NonFiniteLossError, ConfigError) as err:
        print(f"not retried: {err}", file=sys.stderr, flush=True)
        refused = isinstance(err, ConfigError)
        if refused:
            record_refusal(cfg, err)
        # a search's scheduler reads its gate in every report and Tune ends the whole sweep on a report
        # without it: a model whose loss became NaN passes no cell (without the clock, `schema.CPU_SECONDS`,
        # ASHA records nothing of it at any rung)
        gate = {GATE_METRIC: 0.0, LENGTH_SCORE_METRIC: 0.0} if cfg.train.gate_cells else {}
        tune.report({"config_error" if refused else "nonfinite_loss": 1, "error": str(err), **gate})


def record_refusal(cfg: ExperimentConfig, err: ConfigError) -> None:
    """A trial whose settings were refused before its trainer opened a run gets a FAILED run saying why,
    so that the sweep counts it failed (a trial's run is how it is counted); one already FAILED is kept."""
    tracking = cfg.tracking
    if not tracking.enabled:
        return
    uri, parent = tracking.tracking_uri, tracking.parent_run_id
    held = store.trial_runs(uri, [tracking.experiment], parent, tracking.run_name)
    if any(run.info.status == "FAILED" for run in held):
        return
    tracker = start_tracker(cfg)
    tracker.set_tags({"failure": "config_error", "failure_message": str(err)})
    tracker.finish("FAILED")
