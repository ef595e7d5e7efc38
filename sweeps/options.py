"""`sweeps/run.py`'s command line: its flags and the sweep's options read from them (`SweepOptions`), so that
a sweep can be started, and tested, without an argparse Namespace; and what a sweep may be extended with
(`SweepExtension`: a scheduler, callbacks, its own report), which its own command line builds on these
flags, so the runner knows no extension by name."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

from arith.config import ConfigError, ExperimentConfig
from arith.tracking.commands import sweep_identity
from experiments.registry import PluginError
from sweeps.grids import GRIDS
from sweeps.scales import SCALES
from sweeps.space import parse_seeds

#: trial key -> the trial's config (`sweeps.run.build_configs`)
Configs = dict[str, ExperimentConfig]


class SweepExtension(Protocol):
    """The steps an extension adds to a sweep of its grid, scale and seeds (`sweeps.run.tune_sweep`); it may
    name its progress line's class as `progress` (called as `sweeps.progress.SweepProgress` is)."""

    def prepare(self, configs: Configs) -> Configs:
        """The trials' configs as the extension runs them (validated), before anything starts."""

    def describe(self, points: Iterable[str]) -> str:
        """A line under the dry run's trial table, given the trials' point names."""

    def session(
        self, sweep_uri: str, tracking_uri: str, parent_run_id: str, configs: Configs
    ) -> tuple[Any, Sequence[Any]]:
        """This session's Tune scheduler and callbacks (`sweeps.tuner.fit`)."""

    def record(self, results: Any, configs: Configs, uri: str, parent_run_id: str) -> int:
        """Write what the extension did into the store once Tune is done; returns how many trials it ended
        KILLED on purpose (counted as done)."""

    def report(self, uri: str, parent_run_id: str) -> str:
        """The sweep's report, in place of the analysis's."""


def seeds_arg(text: str) -> int | tuple[int, ...]:
    """argparse type of --seeds (`sweeps.space.parse_seeds`)."""
    try:
        return parse_seeds(text)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def sweep_parser(prog: str = "python sweeps/run.py") -> argparse.ArgumentParser:
    """The command line's flags (a command that runs sweeps with an extension adds its own to them)."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Run one experiment grid of 'Positional Description Matters' as a Ray Tune sweep.",
    )
    try:
        grids = ", ".join(GRIDS)
    except PluginError as err:  # --help must work even when a plugin of experiments is broken
        grids = f"(none listed: {err})"
    p.add_argument("--grid", help=f"one of: {grids}")
    p.add_argument("--scale", help=f"one of: {', '.join(SCALES)} (default: paper)")
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
        help="Ray cluster: 'auto' or HOST:PORT (default: $RAY_ADDRESS, else a local Ray for the run)",
    )
    p.add_argument(
        "--gpus-per-trial",
        type=float,
        help="GPUs per trial; fractions pack trials (0.25 = four on a GPU). Default at scale paper: "
        "the packing measured by scripts/gpu_bench.sh (sweeps/packing.py), else 1; 0 at other scales",
    )
    p.add_argument(
        "--cpus-per-trial",
        type=float,
        default=1.0,
        help="CPUs per trial; torch uses this many threads (default 1)",
    )
    p.add_argument(
        "--max-concurrent",
        type=int,
        help="at most N trials at once (default: as many as the resources allow)",
    )
    p.add_argument(
        "--max-failures",
        type=int,
        default=2,
        help="retries of a failed trial from its last checkpoint (default 2)",
    )
    p.add_argument(
        "--tracking-uri", help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)"
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
        "--ray-temp-dir", help="temporary folder of a local Ray (default: Ray's own, /tmp/ray); keep it short"
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
        help="register the best trial's model (highest test_acc) in MLflow's Model Registry as NAME",
    )
    output = p.add_mutually_exclusive_group()
    output.add_argument("--quiet", action="store_true", help="no progress line, only the final report")
    output.add_argument(
        "--verbose", action="store_true", help="Tune's per-trial table and the trials' own output too"
    )
    p.add_argument("--list", action="store_true", help="print the grids with their axes and paper tables")
    return p


@dataclass(frozen=True)
class SweepOptions:
    """The command line's values, read from argv by `main` alone."""

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
    #: how Tune runs the trials and what it prints
    max_concurrent: int | None = None
    max_failures: int = 2
    quiet: bool = False
    verbose: bool = False
    #: what the sweep is extended with
    extension: SweepExtension | None = None
    #: the command line it was started with, less where it runs (`sweep_identity`), kept in sweep.json
    args: tuple[str, ...] = ()
    #: `--register NAME`: the registered model name of the sweep's best trial's model
    register: str | None = None


#: the options naming the part of a grid a sweep runs: with --resume, they pick it
PART = ("sets", "seeds", "only", "gpus_per_trial", "cpus_per_trial")


def names_its_part(options: SweepOptions) -> bool:
    """Whether the command gives any of `PART`: then --resume takes the sweep started as it was, not a later
    part's (a bare --grid/--scale --resume takes the latest)."""
    return any(getattr(options, name) != getattr(SweepOptions(), name) for name in PART)


def read_options(
    argv: list[str] | None, parser: argparse.ArgumentParser | None = None
) -> tuple[SweepOptions, argparse.Namespace]:
    """The sweep's options from argv read by `parser` (`sweep_parser()` or an extension's), and every flag."""
    args = (parser or sweep_parser()).parse_args(argv)
    flags = {f.name: getattr(args, f.name) for f in fields(SweepOptions) if f.name in vars(args)}
    options = SweepOptions(
        **{**flags, "sets": tuple(args.sets), "only": tuple(args.only)},
        args=tuple(sweep_identity(sys.argv[1:] if argv is None else argv)),
    )
    return options, args
