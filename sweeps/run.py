"""Run one grid of the paper as a Ray Tune sweep: `python sweeps/run.py --grid nl_mix --scale cpu`.

Every trial config is validated first (a bad point fails here, not hours in); then one parent MLflow run
is opened and Ray Tune runs one trial per (point, seed), retried from its checkpoints, each continuing its
own MLflow run; `--resume` runs only what an interrupted sweep left unfinished. This file is the sweep's
steps in order; the other `sweeps` modules hold the rest.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from arith.config import ConfigError, ExperimentConfig
from arith.overrides import parse_only, parse_set
from arith.tracking import schema, store
from arith.tracking.commands import resuming
from arith.tracking.store import absolute_uri
from experiments.grid import Grid
from sweeps.cluster import check_cluster, emulated_bf16_note, forget_local_ray, start_ray
from sweeps.end_table import final_report, register_best
from sweeps.errors import SweepError
from sweeps.grids import GRIDS, get_grid, list_grids, points
from sweeps.options import SweepOptions, names_its_part, read_options
from sweeps.packing import check_packing, default_gpus_per_trial
from sweeps.prelaunch import check_before_launch
from sweeps.scales import Scale, get_scale
from sweeps.space import SOURCES, SweepLink, scale_note, setting_sources
from sweeps.storage import (
    SweepStorage,
    check_tracking,
    log_sweep_params,
    open_sweep,
    resumed_state,
    state_configs,
    sweep_params,
    sweep_state,
    trial_outcomes,
)
from sweeps.tuner import errored_trials, fit, trial_key


def trial_overrides(options: SweepOptions, tracking_uri: str) -> dict[str, Any]:
    """The --set values every trial takes (local files made absolute) and the store it logs to."""
    out: dict[str, Any] = {**parse_set(list(options.sets)), "tracking.tracking_uri": tracking_uri}
    for key in ("data.dialogue_file", "model.pretrained"):
        if out.get(key) and Path(out[key]).exists():
            out[key] = str(Path(out[key]).resolve())
    return out


def build_configs(
    grid: Grid, scale: Scale, options: SweepOptions, tracking_uri: str, link: SweepLink | None = None
) -> dict[str, ExperimentConfig]:
    """trial key -> validated config; with `link` (the open parent run) nested under the sweep."""
    overrides = trial_overrides(options, tracking_uri)
    configs = points(grid, scale, options.seeds, overrides, parse_only(options.only), link)
    out = {trial_key(c.tracking.tags[schema.POINT_TAG], c.train.seed): c for c in configs}
    return options.extension.prepare(out) if options.extension else out


def resources(scale: Scale, gpus_per_trial: float | None, cpus_per_trial: float) -> dict[str, float]:
    """A trial's Ray resources: the flags', else what the scale or the measured GPU packing says."""
    gpus = gpus_per_trial
    if gpus is None and scale.trials_per_gpu:  # a scale of small trials says how many share a GPU
        gpus = 1.0 / scale.trials_per_gpu
    if gpus is None:  # GPU scales: the packing measured by scripts/gpu_bench.sh, else one trial a GPU
        gpus = default_gpus_per_trial() if scale.needs_gpu else 0.0
    if cpus_per_trial <= 0 or gpus < 0:
        raise SweepError("--cpus-per-trial must be > 0 and --gpus-per-trial >= 0")
    check_packing(gpus)  # several trials a GPU: only as many as the measured memory allows
    return {"cpu": cpus_per_trial, "gpu": gpus}


HEADLINE_KEYS = (
    "data.task",
    "data.format",
    "data.min_digits",
    "data.max_digits",
    "data.train_samples",
    "model.preset",
    "model.position",
    "model.init",
    "train.epochs",
    "train.lr",
)


def trial_table(configs: dict[str, ExperimentConfig], res: dict[str, float]) -> pd.DataFrame:
    """One row a trial: its point, seed, paper table, headline settings, every varying key and resources."""
    flat = [c.flat() for c in configs.values()]
    varying = [k for k in flat[0] if not k.startswith("tracking.") and len({repr(f[k]) for f in flat}) > 1]
    keys = list(HEADLINE_KEYS) + [k for k in varying if k not in HEADLINE_KEYS and k != "data.seed"]
    rows = [
        {
            schema.POINT_TAG: f["tracking.tags"][schema.POINT_TAG],
            schema.SEED_TAG: f["train.seed"],
            schema.PAPER_TABLE_TAG: f["tracking.tags"][schema.PAPER_TABLE_TAG],
            **{k.partition(".")[2]: f[k] for k in keys},
            "cpus": res["cpu"],
            "gpus": res["gpu"],
        }
        for f in flat
    ]
    return pd.DataFrame(rows)


def tune_sweep(grid: Grid, scale: Scale, options: SweepOptions) -> int:
    """The sweep; returns the exit status (0 all trials done, 1 some failed, 130 interrupted)."""
    storage, extension = SweepStorage(options.storage_path), options.extension
    set_uri = parse_set(list(options.sets)).get("tracking.tracking_uri")
    tracking_uri = absolute_uri(options.tracking_uri or set_uri or ExperimentConfig().tracking.resolved_uri())
    res = resources(scale, options.gpus_per_trial, options.cpus_per_trial)
    started_as = list(options.args)
    if options.resume:
        sweep_name = storage.latest(grid.name, scale.name, started_as if names_its_part(options) else None)
        state = resumed_state(storage, sweep_name, options.tracking_uri)
        configs, res, tracking_uri = state_configs(state), state["resources"], state["tracking_uri"]
        started_as, resumed_as = state.get("args", started_as), started_as
        print(resuming(sweep_name, started_as, resumed_as), file=sys.stderr)
    else:
        configs = build_configs(grid, scale, options, tracking_uri)  # validated before anything starts
    for note in (scale_note(grid, scale.name), emulated_bf16_note(configs, res["gpu"], options.address)):
        if note:
            print(note, file=sys.stderr)
    if options.dry_run:
        print(trial_table(configs, res).to_string(index=False))
        print(f"\n{len(configs)} trials; tracking {tracking_uri}; results under {storage.location}")
        if extension:
            print(extension.describe(c.tracking.tags[schema.POINT_TAG] for c in configs.values()))
        if not options.resume:  # where each setting came from, in the order of precedence
            sources = setting_sources(grid, scale, configs.values(), trial_overrides(options, tracking_uri))
            print(f"\nEvery setting's source ({' < '.join(SOURCES)}):")
            print(pd.DataFrame(sources).to_string(index=False))
        return 0

    # what needs only the configs and their data, before MLflow or Ray is touched
    check_before_launch(configs.values(), lengths=not options.resume)
    check_tracking(tracking_uri)
    started_ray = start_ray(options.address, options.ray_temp_dir, log_to_driver=options.verbose)
    parent_run_id = ""
    try:
        check_cluster(scale, res, 0.0 if started_ray else options.gpu_wait_min)
        if options.resume:
            parent_run_id = state["parent_run_id"]
            store.set_run_status(tracking_uri, parent_run_id, "RUNNING")
        else:
            sweep_name, link = open_sweep(grid, scale, tracking_uri, len(configs), options.args)
            parent_run_id = link.parent_run_id
            params = sweep_params(grid.name, scale.name, grid.declared_axes(), configs, options.args)
            log_sweep_params(tracking_uri, parent_run_id, params)
            # the configs as kept: each trial's written once, nested under the parent run just opened
            configs = build_configs(grid, scale, options, tracking_uri, link)
            storage.create(
                sweep_name,
                sweep_state(grid, scale, tracking_uri, parent_run_id, res, configs, list(options.args)),
            )
        print(
            f"sweep {sweep_name}: {len(configs)} trials, MLflow parent run {parent_run_id} at {tracking_uri}"
        )
        sweep_uri = storage.uri(sweep_name)  # extras: the extension's scheduler and callbacks
        extras = extension.session(sweep_uri, tracking_uri, parent_run_id, configs) if extension else ()
        results = fit(storage, sweep_name, configs, res, grid.declared_axes(), options, *extras)
    except BaseException:
        if parent_run_id:
            store.set_run_status(tracking_uri, parent_run_id, "KILLED")
        raise
    finally:
        if started_ray:
            import ray

            ray.shutdown()
            forget_local_ray(options.ray_temp_dir)

    # the trials the extension's scheduler stopped: KILLED runs, done
    stopped = extension.record(results, configs, tracking_uri, parent_run_id) if extension else 0
    done, errors = results.num_terminated, results.num_errors
    if all(c.tracking.enabled for c in configs.values()):  # else Tune's count is all there is
        done, errors = trial_outcomes(tracking_uri, parent_run_id, configs, errored_trials(results))
        done += stopped
    unfinished = len(configs) - done - errors
    if unfinished:
        store.set_run_status(tracking_uri, parent_run_id, "KILLED")
        store.end_stopped_trials(store.client(tracking_uri), parent_run_id)  # none left RUNNING in the UI
        if extension:  # what it found so far: printed, and logged on its parent run for the MLflow UI
            print("\nSo far:\n" + extension.report(tracking_uri, parent_run_id))
        print(
            f"\nInterrupted with {unfinished} trial(s) unfinished. Continue with:\n  python sweeps/run.py "
            f"{shlex.join(started_as)} --storage-path {storage.location} --resume"
        )
        return 130
    store.set_run_status(tracking_uri, parent_run_id, "FAILED" if errors else "FINISHED")
    print()
    report = extension.report if extension else lambda uri, run: final_report(grid.name, uri, run, results)
    print(report(tracking_uri, parent_run_id))
    if options.register:
        print(register_best(tracking_uri, parent_run_id, options.register))
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    """The command line: the one place argv is read; the grid, scale and options are values from here on."""
    options, args = read_options(argv)
    try:
        if args.list:
            print(list_grids())
            return 0
        if not args.grid:
            raise ConfigError(f"--grid is required; choose one of: {', '.join(GRIDS)}")
        # an unknown scale or grid fails here, before anything starts
        grid, scale = get_grid(args.grid), get_scale(args.scale or "paper")
        return tune_sweep(grid, scale, options)
    except (ConfigError, SweepError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    # Re-enter through the package, so that this file's names are the `sweeps.run` ones the other modules
    # and Ray's pickles refer to (not a second copy under `__main__`).
    from sweeps.run import main as _main

    sys.exit(_main())
