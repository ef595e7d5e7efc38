"""The sweep's Ray Tune side: the trainable Tune calls per trial, the Tuner (new or restored for
`--resume`) and the end-of-sweep report from its results."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from analysis.report import report
from arith.tracking import store
from sweeps.progress import trial_steps, tune_output
from sweeps.storage import SweepStorage
from sweeps.trainable import tune_entrypoint

#: metrics shown in the end-of-sweep summary when the analysis package is not available
SUMMARY_METRICS = ("test_acc", "epoch", "time_total_s")


def trial_key(point: str, seed: int) -> str:
    return f"{point}|seed={seed}"


def run_trial(config: dict[str, Any], configs: dict[str, dict[str, Any]]) -> None:
    """The Tune trainable: look the trial's full config up by (point, seed) and hand it to the adapter.

    Tune's search space holds only `point` and `seed`, so its trial table stays readable."""
    from ray import tune

    cfg = configs[trial_key(config["point"], config["seed"])]
    if tune.get_checkpoint() is None:
        discard_lost_attempts(cfg)
    tune_entrypoint(cfg)


def discard_lost_attempts(cfg: dict[str, Any]) -> None:
    """Delete the unfinished MLflow runs an earlier attempt of this trial left behind.

    An attempt killed before its first checkpoint has nothing to resume, so the trial starts over with a
    new run; deleting the old one keeps exactly one run per trial (no orphans stuck in RUNNING)."""
    tracking = cfg["tracking"]
    if not tracking["enabled"] or not tracking["parent_run_id"]:
        return
    uri = tracking["tracking_uri"]
    runs = store.trial_runs(uri, [tracking["experiment"]], tracking["parent_run_id"], tracking["run_name"])
    for run in runs:
        if run.info.status != "FINISHED":
            store.client(uri).delete_run(run.info.run_id)


def trial_dirname(trial: Any) -> str:
    """Short trial folder names (the default spells the whole config, too long for some file systems)."""
    return trial.trial_id


def make_trainable(configs: dict[str, dict[str, Any]], res: dict[str, float]):
    from ray import tune

    return tune.with_resources(tune.with_parameters(run_trial, configs=configs), res)


def fit(
    args: argparse.Namespace,
    storage: SweepStorage,
    sweep_name: str,
    configs: dict[str, dict[str, Any]],
    res: dict[str, float],
):
    """Hand the trials to Tune (or restore the interrupted Tune experiment) and wait for them."""
    from ray import tune

    trainable = make_trainable(configs, res)
    if args.resume and tune.Tuner.can_restore(storage.uri(sweep_name)):
        tuner = tune.Tuner.restore(
            storage.uri(sweep_name), trainable=trainable, resume_unfinished=True, resume_errored=True
        )
        return tuner.fit()
    keys = list(configs)
    point_names = list(dict.fromkeys(k.partition("|")[0] for k in keys))
    seeds = list(dict.fromkeys(configs[k]["train"]["seed"] for k in keys))
    steps = {k: trial_steps(c) for k, c in configs.items()}
    tuner = tune.Tuner(
        trainable,
        param_space={"point": tune.grid_search(point_names), "seed": tune.grid_search(seeds)},
        tune_config=tune.TuneConfig(
            max_concurrent_trials=args.max_concurrent, trial_dirname_creator=trial_dirname
        ),
        run_config=tune.RunConfig(
            name=sweep_name,
            storage_path=storage.location,
            failure_config=tune.FailureConfig(max_failures=args.max_failures),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
            **tune_output(steps, lambda c: trial_key(c["point"], c["seed"]), args.quiet, args.verbose),
        ),
    )
    return tuner.fit()


def errored_trials(results: Any) -> set[str]:
    """The trial keys of the trials Tune reports errored."""
    return {trial_key(r.config["point"], r.config["seed"]) for r in results if r.error and r.config}


def summary(results: Any) -> pd.DataFrame:
    """Per-trial table from Tune's results: point, seed, status and the final metrics."""
    rows = []
    for result in results:
        cfg = result.config or {}
        metrics = result.metrics or {}
        status = "ERROR" if result.error else "DONE"
        if metrics.get("nonfinite_loss"):  # ended without an error, so that Tune does not retry it
            status = "FAILED (non-finite loss)"
        row = {"point": cfg.get("point"), "seed": cfg.get("seed"), "status": status}
        row.update({m: metrics.get(m) for m in SUMMARY_METRICS})
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["point", "seed"]).reset_index(drop=True)


def final_report(grid: str, uri: str, parent_run_id: str, results: Any) -> str:
    """The analysis comparison for this sweep, or the per-trial summary when it cannot be drawn."""
    try:
        return report(grid, uri, parent_run_id=parent_run_id, fmt="markdown")
    except Exception as err:  # the sweep's results stand even if the comparison cannot be drawn
        print(f"analysis.report failed ({err}); per-trial summary instead", file=sys.stderr)
    return summary(results).to_string(index=False)
