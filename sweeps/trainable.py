"""The sweep's one Ray Tune trainable, `run_trial`: a plain function, as in Ray Tune's own examples; the
trainer knows nothing of Ray. A NaN loss or a setting the worker refuses (a device its node lacks) is not
retried: the same checkpoint and seed would fail again, so the trial reports why and ends, its run FAILED.
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
    """`tune.report`, with the checkpoint folder when one was saved (Tune has copied it when it returns)."""
    from ray import tune

    if checkpoint is None:
        tune.report(metrics)
        return
    try:
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(str(checkpoint)))
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)


def config_on_ray(cfg: ExperimentConfig) -> ExperimentConfig:
    """A Tune trial's config with what only the worker knows: its CPU threads, and where it runs (host, Ray
    node, the GPU share Ray assigned it, and the worker process: the pid in Ray's log prefix)."""
    import ray

    context = ray.get_runtime_context()
    assigned = context.get_assigned_resources()
    placement = {
        "hostname": socket.gethostname(),
        "ray_node_id": context.get_node_id(),
        "ray_gpus": f"{assigned.get('GPU', 0.0):g}",
        "ray_worker_pid": str(os.getpid()),
    }
    overrides: dict[str, Any] = {"tracking.tags": {**cfg.tracking.tags, **placement}}
    if cfg.train.num_threads <= 0:
        overrides["train.num_threads"] = max(1, int(assigned.get("CPU") or 1))
    return cfg.with_overrides(overrides)


def trial_key(point: str, seed: int) -> str:
    """How the sweep's configs are keyed (and its trials named in its progress line)."""
    return f"{point}|seed={seed}"


def discard_lost_attempts(cfg: ExperimentConfig) -> None:
    """Delete the unfinished MLflow runs an earlier attempt of this trial left behind: one killed before its
    first checkpoint has nothing to resume, and a trial keeps exactly one run."""
    tracking = cfg.tracking
    if not tracking.enabled or not tracking.parent_run_id:
        return
    uri = tracking.tracking_uri
    runs = store.trial_runs(uri, [tracking.experiment], tracking.parent_run_id, tracking.run_name)
    for run in runs:
        if run.info.status != "FINISHED":
            store.client(uri).delete_run(run.info.run_id)


def run_trial(config: dict[str, Any], configs: Mapping[str, ExperimentConfig]) -> None:
    """The Tune trainable: train the trial Tune's `config` names by point and seed (its axes for show)."""
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
        # a search's scheduler reads its gate in every report, and Tune ends the whole sweep on a report
        # without it
        gate = {GATE_METRIC: 0.0, LENGTH_SCORE_METRIC: 0.0} if cfg.train.gate_cells else {}
        tune.report({"config_error" if refused else "nonfinite_loss": 1, "error": str(err), **gate})


def record_refusal(cfg: ExperimentConfig, err: ConfigError) -> None:
    """Give a refused trial without a run a FAILED one saying why, so that the sweep counts it failed."""
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
