"""Run one grid of the paper as a Ray Tune sweep: `python sweeps/run.py --grid nl_mix --scale cpu`.

The driver resolves and validates every trial config first (a bad point fails here, not hours in),
checks the MLflow tracking server and the cluster's GPUs, opens one parent MLflow run for the sweep and
hands the trials to Ray Tune: one trial per (point, seed), `tune.with_resources` per trial, retries
from the trainer's checkpoints (`FailureConfig`). Each trial owns its MLflow run (the trainer nests it
under the parent and keeps its id in its checkpoint), so a retried or resumed trial continues its run.

The sweep's configs and parent run id are saved in the experiment folder (`sweep.json`), so `--resume`
restores exactly the interrupted sweep and runs only what was unfinished.

This file is the command line and the sweep's steps in order; each concern has its own module:
`sweeps/cluster.py` (Ray and the autoscaler), `sweeps/storage.py` (the sweep folder and the parent run),
`sweeps/tuner.py` (Tune: the param space, new or restored Tuner, the report), `sweeps/trainable.py` (the
one trainable, `arith.training.train.train` as a trial). `python sweeps/run.py` imports the installed
packages (`pip install -e .`, which `make install` does); the file edits no sys.path.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from arith.config import ConfigError, ExperimentConfig, parse_only, parse_set
from arith.tracking import schema, store
from arith.tracking.commands import resuming, sweep_identity
from arith.tracking.store import absolute_uri
from experiments.grid import Grid
from experiments.registry import PluginError
from sweeps.cluster import check_cluster, emulated_bf16_note, forget_local_ray, start_ray
from sweeps.errors import SweepError
from sweeps.grids import GRIDS, get_grid, list_grids, points
from sweeps.packing import check_packing, default_gpus_per_trial
from sweeps.prelaunch import check_before_launch
from sweeps.scales import SCALES, Scale, get_scale
from sweeps.search import SearchRun
from sweeps.space import SweepLink, parse_seeds, scale_note
from sweeps.storage import (
    SweepStorage,
    check_tracking,
    open_sweep,
    resume_tracking_uri,
    sweep_state,
    trial_outcomes,
)
from sweeps.summary import log_sweep_params, register_best, sweep_params
from sweeps.tuner import TuneSettings, errored_trials, final_report, fit, trial_key

# ---------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------


def seeds_arg(text: str) -> int | tuple[int, ...]:
    """argparse type of --seeds (see sweeps.grids.parse_seeds)."""
    try:
        return parse_seeds(text)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def grid_names() -> str:
    """The grids, for --help: which must work even when a plugin of experiments is broken."""
    try:
        return ", ".join(GRIDS)
    except PluginError as err:
        return f"(none listed: {err})"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python sweeps/run.py",
        description="Run one experiment grid of 'Positional Description Matters' as a Ray Tune sweep.",
    )
    p.add_argument("--grid", help=f"one of: {grid_names()}")
    p.add_argument("--scale", help=f"one of: {', '.join(SCALES)} (default: paper, or the search's)")
    p.add_argument(
        "--search",
        metavar="NAME",
        help="run the recipe search NAME (experiments' SEARCHES) under ASHA on pre-search seeds (100 up): "
        "its experiment's compared points x what a recipe may change; --grid is then optional",
    )
    p.add_argument(
        "--seeds",
        type=seeds_arg,
        default=1,
        help="repeat every point with K seeds (default 1; below 100), or give the seeds: --seeds 1,2 adds "
        "two seeds to an earlier sweep's seed 0, --seeds 20-29 ten, --seeds 100, one",
    )
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any config field, e.g. --set train.epochs=3 (repeatable)",
    )
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="run only the grid's points whose config has this value at the scale, before any --set, e.g. "
        "--only model.init=random (repeatable: settings apart must all match, one setting named twice "
        "keeps either value); an axis of named bundles by name, e.g. a search's --only model=tiny",
    )
    p.add_argument(
        "--address",
        default=None,
        help="Ray cluster: 'auto' or HOST:PORT (default: $RAY_ADDRESS, else a local Ray for the run)",
    )
    p.add_argument(
        "--gpus-per-trial",
        type=float,
        default=None,
        help="GPUs per trial; fractions pack trials (0.25 = four on a GPU). Default at scale paper: "
        "the packing measured by scripts/gpu_bench.sh (sweeps/packing.py), else 1; 0 at other scales",
    )
    p.add_argument(
        "--cpus-per-trial",
        type=float,
        default=1.0,
        help="CPUs per trial; torch uses this many threads (default 1: on 2 cores two 1-CPU trials "
        "measured faster than one 2-thread trial)",
    )
    p.add_argument(
        "--max-concurrent",
        type=int,
        default=None,
        help="at most N trials at once (default: as many as the resources allow)",
    )
    p.add_argument(
        "--max-failures",
        type=int,
        default=2,
        help="retries of a failed trial from its last checkpoint (default 2)",
    )
    p.add_argument(
        "--tracking-uri",
        default=None,
        help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)",
    )
    p.add_argument(
        "--storage-path",
        default=os.environ.get("POSDESC_STORAGE_PATH", "ray_results"),
        help="Ray Tune results: a folder or a URI such as s3://bucket/sweeps; on a cluster, storage all "
        "nodes share (default: $POSDESC_STORAGE_PATH, else ./ray_results)",
    )
    p.add_argument(
        "--gpu-wait-min",
        type=float,
        default=20.0,
        help="on a cluster (--address) whose GPU workers scale from zero: ask the autoscaler for GPUs and "
        "wait this many minutes for them before giving up (default 20; 0 = do not wait)",
    )
    p.add_argument(
        "--ray-temp-dir",
        default=None,
        help="temporary folder of a local Ray (default: Ray's own, /tmp/ray); keep it short",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the latest interrupted sweep of this grid and scale under --storage-path",
    )
    p.add_argument("--dry-run", action="store_true", help="print the trial table and exit")
    p.add_argument(
        "--register",
        metavar="NAME",
        default=None,
        help="register the best trial's model (highest test_acc) in MLflow's Model Registry as NAME",
    )
    output = p.add_mutually_exclusive_group()
    output.add_argument("--quiet", action="store_true", help="no progress line, only the final report")
    output.add_argument(
        "--verbose", action="store_true", help="Tune's per-trial table and the trials' own output too"
    )
    p.add_argument("--list", action="store_true", help="print the grids with their axes and paper tables")
    return p.parse_args(argv)


@dataclass(frozen=True)
class SweepOptions:
    """The command line's values, read from argv by `main` alone: the functions below take these, so that
    a sweep can be started (and tested) without an argparse Namespace."""

    seeds: int | tuple[int, ...] = 1
    sets: tuple[str, ...] = ()
    only: tuple[str, ...] = ()
    address: str | None = None
    gpus_per_trial: float | None = None
    cpus_per_trial: float = 1.0
    tracking_uri: str | None = None
    storage_path: str = "ray_results"
    gpu_wait_min: float = 20.0
    ray_temp_dir: str | None = None
    resume: bool = False
    dry_run: bool = False
    tune: TuneSettings = field(default_factory=TuneSettings)
    #: a recipe search (`--search`): its grid and scale are the sweep's
    search: SearchRun | None = None
    #: the command line it was started with, less where it runs (`sweep_identity`), kept in sweep.json
    args: tuple[str, ...] = ()
    #: `--register NAME`: the registered model name of the sweep's best trial's model
    register: str | None = None


#: the flags naming the part of a grid a sweep runs (flag, attribute, default): with --resume, they pick it
PART_FLAGS = (
    ("--set", "sets", ()),
    ("--seeds", "seeds", 1),
    ("--only", "only", ()),
    ("--gpus-per-trial", "gpus_per_trial", None),
    ("--cpus-per-trial", "cpus_per_trial", 1.0),
)


def names_its_part(options: SweepOptions) -> bool:
    """Whether the command gives any of `PART_FLAGS`: then --resume takes the sweep started as it was, not
    a later part's (a bare --grid/--scale --resume takes the latest)."""
    return any(getattr(options, attr) != default for _, attr, default in PART_FLAGS)


# ---------------------------------------------------------------------------------------------------------
# Building the sweep
# ---------------------------------------------------------------------------------------------------------


def absolute_paths(overrides: dict[str, str]) -> dict[str, str]:
    """Local files named in --set (a dialogue file, a pretrained model folder) as absolute paths."""
    out = dict(overrides)
    for key in ("data.dialogue_file", "model.pretrained"):
        value = out.get(key)
        if value and Path(value).exists():
            out[key] = str(Path(value).resolve())
    return out


def build_configs(
    grid: Grid, scale: Scale, options: SweepOptions, tracking_uri: str, link: SweepLink | None = None
) -> dict[str, dict[str, Any]]:
    """trial key -> config dict, every one validated; fails at once on a bad point or key. With `link`
    (once the parent run is open) each config is written nested under the sweep, as it is kept."""
    overrides = absolute_paths(parse_set(list(options.sets)))
    overrides["tracking.tracking_uri"] = tracking_uri
    configs = points(grid, scale, options.seeds, overrides, parse_only(options.only), link)
    out = {trial_key(c.tracking.tags[schema.POINT_TAG], c.train.seed): c.to_dict() for c in configs}
    return options.search.prepare(out) if options.search else out


def resources(scale: Scale, gpus_per_trial: float | None, cpus_per_trial: float) -> dict[str, float]:
    """A trial's Ray resources: the flags', else what the scale or the measured GPU packing says."""
    gpus = gpus_per_trial
    if gpus is None and scale.trials_per_gpu:  # a scale of small trials says how many share a GPU
        gpus = 1.0 / scale.trials_per_gpu
    if gpus is None:  # GPU scales: the packing measured by scripts/gpu_bench.sh, else one trial a GPU
        gpus = default_gpus_per_trial() if scale.needs_gpu else 0.0
    if cpus_per_trial <= 0 or gpus < 0:
        raise SweepError("--cpus-per-trial must be > 0 and --gpus-per-trial >= 0")
    try:
        check_packing(gpus)  # several trials a GPU: only as many as the measured memory allows
    except ValueError as err:
        raise SweepError(str(err)) from err
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


def trial_table(configs: dict[str, dict[str, Any]], res: dict[str, float]) -> pd.DataFrame:
    """One row a trial: its point, seed, paper table, headline settings, every varying key and resources."""
    flat = [ExperimentConfig.from_dict(c).flat() for c in configs.values()]
    varying = [k for k in flat[0] if not k.startswith("tracking.") and len({repr(f[k]) for f in flat}) > 1]
    keys = list(HEADLINE_KEYS) + [k for k in varying if k not in HEADLINE_KEYS and k != "data.seed"]
    rows = []
    for f in flat:
        tags = f["tracking.tags"]
        rows.append(
            {
                schema.POINT_TAG: tags[schema.POINT_TAG],
                schema.SEED_TAG: f["train.seed"],
                schema.PAPER_TABLE_TAG: tags[schema.PAPER_TABLE_TAG],
                **{k.partition(".")[2]: f[k] for k in keys},
                "cpus": res["cpu"],
                "gpus": res["gpu"],
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------------------------------


def tune_sweep(grid: Grid, scale: Scale, options: SweepOptions) -> int:
    """The sweep; returns the exit status (0 all trials done, 1 some failed, 130 interrupted)."""
    storage = SweepStorage(options.storage_path)
    set_uri = parse_set(list(options.sets)).get("tracking.tracking_uri")
    tracking_uri = absolute_uri(options.tracking_uri or set_uri or ExperimentConfig().tracking.resolved_uri())
    res = resources(scale, options.gpus_per_trial, options.cpus_per_trial)
    started_as = list(options.args)
    if options.resume:
        sweep_name = storage.latest(grid.name, scale.name, started_as if names_its_part(options) else None)
        state = storage.state(sweep_name)
        configs, res = state["configs"], state["resources"]
        started_as, resumed_as = state.get("args", started_as), started_as
        tracking_uri = resume_tracking_uri(options.tracking_uri, state, configs)
        if tracking_uri != state["tracking_uri"]:
            storage.save(sweep_name, {**state, "tracking_uri": tracking_uri, "configs": configs})
        print(resuming(sweep_name, started_as, resumed_as), file=sys.stderr)
    else:
        configs = build_configs(grid, scale, options, tracking_uri)  # validated before anything starts
    for note in (scale_note(grid, scale), emulated_bf16_note(configs, res["gpu"], options.address)):
        if note:
            print(note, file=sys.stderr)
    if options.dry_run:
        print(trial_table(configs, res).to_string(index=False))
        print(f"\n{len(configs)} trials; tracking {tracking_uri}; results under {storage.location}")
        if options.search:
            print(options.search.describe(c["tracking"]["tags"][schema.POINT_TAG] for c in configs.values()))
        return 0

    # what needs only the configs and their data, before MLflow or Ray is touched
    check_before_launch(map(ExperimentConfig.from_dict, configs.values()), lengths=not options.resume)
    check_tracking(tracking_uri)
    started_ray = start_ray(options.address, options.ray_temp_dir, log_to_driver=options.tune.verbose)
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
        search, sweep_uri = options.search, storage.uri(sweep_name)
        extras = search.session(sweep_uri, tracking_uri, parent_run_id, configs) if search else ()
        axes = grid.declared_axes()  # extras: a search's scheduler and callbacks
        results = fit(storage, sweep_name, configs, res, axes, options.tune, options.resume, *extras)
    except BaseException:
        if parent_run_id:
            store.set_run_status(tracking_uri, parent_run_id, "KILLED")
        raise
    finally:
        if started_ray:
            import ray

            ray.shutdown()
            forget_local_ray(options.ray_temp_dir)

    search = options.search  # a search's trials its scheduler stopped: KILLED runs, done
    stopped = search.record(results, configs, tracking_uri, parent_run_id) if search else 0
    done, errors = results.num_terminated, results.num_errors
    if all(c["tracking"]["enabled"] for c in configs.values()):  # else Tune's count is all there is
        done, errors = trial_outcomes(tracking_uri, parent_run_id, configs, errored_trials(results))
        done += stopped
    unfinished = len(configs) - done - errors
    if unfinished:
        store.set_run_status(tracking_uri, parent_run_id, "KILLED")
        store.end_stopped_trials(store.client(tracking_uri), parent_run_id)  # none left RUNNING in the UI
        if search:  # what it found so far: printed, and logged on its parent run for the MLflow UI
            print("\nSo far:\n" + search.report(tracking_uri, parent_run_id))
        print(
            f"\nInterrupted with {unfinished} trial(s) unfinished. Continue with:\n  python sweeps/run.py "
            f"{shlex.join(started_as)} --storage-path {storage.location} --resume"
        )
        return 130
    store.set_run_status(tracking_uri, parent_run_id, "FAILED" if errors else "FINISHED")
    print()
    report = search.report if search else lambda uri, run: final_report(grid.name, uri, run, results)
    print(report(tracking_uri, parent_run_id))
    if options.register:
        print(register_best(tracking_uri, parent_run_id, options.register))
    return 1 if errors else 0


def main(argv: list[str] | None = None) -> int:
    """The command line: the one place argv is read; the grid, scale and options are values from here on."""
    args = parse_args(argv)
    try:
        if args.list:
            print(list_grids())
            return 0
        search = SearchRun.of(args.search, args.scale, args.seeds, args.grid) if args.search else None
        if not args.grid and not search:
            raise ConfigError(f"--grid is required; choose one of: {', '.join(GRIDS)}")
        options = SweepOptions(
            seeds=search.seeds if search and not args.resume else args.seeds,
            sets=tuple(args.sets),
            only=tuple(args.only),
            address=args.address,
            gpus_per_trial=args.gpus_per_trial,
            cpus_per_trial=args.cpus_per_trial,
            tracking_uri=args.tracking_uri,
            storage_path=args.storage_path,
            gpu_wait_min=args.gpu_wait_min,
            ray_temp_dir=args.ray_temp_dir,
            resume=args.resume,
            dry_run=args.dry_run,
            tune=TuneSettings(args.max_concurrent, args.max_failures, args.quiet, args.verbose),
            search=search,
            register=args.register,
            args=tuple(sweep_identity(sys.argv[1:] if argv is None else argv)),
        )
        # an unknown scale or grid fails here, before anything starts
        if search:
            return tune_sweep(search.grid, search.scale, options)
        return tune_sweep(get_grid(args.grid), get_scale(args.scale or "paper"), options)
    except (ConfigError, SweepError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    # Re-enter through the package, so that this file's names are the `sweeps.run` ones the other modules
    # and Ray's pickles refer to (not a second copy under `__main__`).
    from sweeps.run import main as _main

    sys.exit(_main())
