"""The sweep's Ray Tune side: the param space (point, seed and the grid's axes) and the Tuner (new or
restored for `--resume`) over the one trainable `sweeps.trainable.run_trial`."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arith.config import ExperimentConfig
from arith.tracking.schema import POINT_TAG, SEED_TAG
from arith.training.optim import run_steps
from sweeps.options import SweepOptions
from sweeps.progress import SweepProgress, tune_output
from sweeps.storage import SweepStorage
from sweeps.trainable import run_trial, trial_key


class AxisValue:
    """The value one axis takes at the trial's point (a class: Tune's saved state pickles it by reference)."""

    def __init__(self, axis: str, by_point: dict[str, Any]) -> None:
        self.axis, self.by_point = axis, by_point

    def __call__(self, config: dict[str, Any]) -> Any:
        return self.by_point[config[POINT_TAG]]


def param_space(configs: Mapping[str, ExperimentConfig], axes: list[str]) -> dict[str, Any]:
    """Tune's param space: a grid search over the points and the seeds, and each axis of the grid (e.g.
    `data.format`) resolved from the point, so that Tune's table and dataframe show what a trial varies."""
    from ray import tune

    by_point: dict[str, dict[str, Any]] = {}
    seeds: list[int] = []
    for key, cfg in configs.items():
        flat = cfg.flat()
        by_point.setdefault(key.partition("|")[0], {axis: flat[axis] for axis in axes if axis in flat})
        seeds.append(flat["train.seed"])
    space: dict[str, Any] = {
        POINT_TAG: tune.grid_search(list(by_point)),
        SEED_TAG: tune.grid_search(list(dict.fromkeys(seeds))),
    }
    for axis in axes:
        values = {point: value[axis] for point, value in by_point.items() if axis in value}
        space[axis] = tune.sample_from(AxisValue(axis, values))
    return space


def trial_dirname(trial: Any) -> str:
    """Short trial folder names (the default spells the whole config, too long for some file systems)."""
    return trial.trial_id


def make_trainable(configs: Mapping[str, ExperimentConfig], res: dict[str, float]):
    from ray import tune

    return tune.with_resources(tune.with_parameters(run_trial, configs=configs), res)


class NeverStartedTrials(logging.Filter):
    """Drops Tune's warning, at the end of a stopped sweep, that it found no results of the trials that
    never started (one line each): the sweep's own line says how many are unfinished."""

    NO_RESULTS = "both result.json and progress.csv were not found"

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not message.startswith("Failed to fetch metrics for"):
            return True
        return not all(self.NO_RESULTS in line for line in message.splitlines()[1:])


logging.getLogger("ray.tune.analysis.experiment_analysis").addFilter(NeverStartedTrials())


class DeletedCheckpoint(logging.Filter):
    """Says in one line, for a traceback, that a resumed trial's oldest checkpoint was gone: a driver killed
    between Tune deleting a checkpoint and snapshotting its state leaves a state naming it. Tune goes on;
    nothing of the trial is lost."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, FileNotFoundError) and "Error handling checkpoint" in str(record.msg):
            gone = Path(str(error).rstrip(")").rpartition(", ")[2]).name
            trial = record.args[0] if isinstance(record.args, tuple) and record.args else "a trial"
            record.msg = (
                "%s: %s, deleted by Tune before the sweep stopped, is gone (the newer ones are intact)"
            )
            record.args = (trial, gone)
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


logging.getLogger("ray.tune.execution.tune_controller").addFilter(DeletedCheckpoint())


def fit(
    storage: SweepStorage,
    sweep_name: str,
    configs: Mapping[str, ExperimentConfig],
    res: dict[str, float],
    axes: list[str] | tuple[str, ...],
    options: SweepOptions,
    scheduler: Any = None,
    callbacks: Sequence[Any] = (),
):
    """Hand the trials to Tune, or with `--resume` restore the interrupted experiment (its param space,
    scheduler and callbacks with it), and wait for them; returns Tune's `ResultGrid`. `scheduler`: a sweep
    extension's (else every trial runs to its end), as is the progress line's class where it names one."""
    from ray import tune
    from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback

    trainable = make_trainable(configs, res)
    if options.resume and tune.Tuner.can_restore(storage.uri(sweep_name)):
        tuner = tune.Tuner.restore(
            storage.uri(sweep_name), trainable=trainable, resume_unfinished=True, resume_errored=True
        )
        return tuner.fit()
    steps = {k: run_steps(c) for k, c in configs.items()}  # a trial that reaches its target stops early
    key_of = lambda c: trial_key(c[POINT_TAG], c[SEED_TAG])  # noqa: E731
    line = getattr(options.extension, "progress", SweepProgress)
    output = tune_output(steps, key_of, options.quiet, options.verbose, line)
    # Tune's result files as explicit callbacks, its automatic loggers off: they add a TensorBoard logger,
    # whose hint to run `tensorboard` (not installed) every sweep printed
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"
    callbacks = [*callbacks, CSVLoggerCallback(), JsonLoggerCallback()]
    tuner = tune.Tuner(
        trainable,
        param_space=param_space(configs, list(axes)),
        tune_config=tune.TuneConfig(
            max_concurrent_trials=options.max_concurrent,
            trial_dirname_creator=trial_dirname,
            scheduler=scheduler,
            # a trial starts in the worker the last one ended in: a sweep of short trials pays Ray's worker
            # start and the trainer's imports once per slot, and computes the same (a trial seeds all)
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(
            name=sweep_name,
            storage_path=storage.location,
            failure_config=tune.FailureConfig(max_failures=options.max_failures),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
            **{**output, "callbacks": [*output["callbacks"], *callbacks]},
        ),
    )
    return tuner.fit()


def errored_trials(results: Any) -> set[str]:
    """The trial keys of the trials Tune reports errored."""
    return {trial_key(r.config[POINT_TAG], r.config[SEED_TAG]) for r in results if r.error and r.config}
