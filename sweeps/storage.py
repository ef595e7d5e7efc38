"""Where a sweep keeps its state: its folder under --storage-path (Tune's experiment and `sweep.json`)
and its MLflow parent run (opened here, with the tags analysis reads and the params that tell sweeps apart
in the runs table; the trials' outcomes read back)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arith.config import ExperimentConfig
from arith.tracking import schema, store
from arith.tracking.commands import same_sweep
from arith.tracking.store import absolute_uri
from experiments.grid import Grid
from experiments.intervals import seed_list
from sweeps.errors import SweepError
from sweeps.scales import Scale
from sweeps.space import SweepLink

SWEEP_FILE = "sweep.json"
#: the commit of a tree copied without its .git, given by whoever copied it
COMMIT_ENV = "POSDESC_GIT_COMMIT"


class SweepStorage:
    """Where sweeps are kept: a local folder, or a URI (s3://, gs://) every node of a cluster shares, so that
    checkpoints follow a trial to whichever node retries it. Each sweep is a folder `<grid>-<scale>-<time>`
    holding Tune's experiment and `sweep.json` (the configs and the parent run id, for `--resume`)."""

    def __init__(self, location: str) -> None:
        import pyarrow.fs

        self.location = location.rstrip("/") if "://" in location else str(Path(location).resolve())
        self.fs, self.root = pyarrow.fs.FileSystem.from_uri(self.location)

    def uri(self, name: str) -> str:
        return f"{self.location}/{name}"

    def create(self, name: str, state: dict[str, Any]) -> None:
        import pyarrow.fs

        folder = f"{self.root}/{name}"
        if self.fs.get_file_info(folder).type != pyarrow.fs.FileType.NotFound:
            raise SweepError(f"sweep folder {self.uri(name)} already exists")
        self.fs.create_dir(folder, recursive=True)
        self.save(name, state)

    def save(self, name: str, state: dict[str, Any]) -> None:
        self._write(f"{self.root}/{name}/{SWEEP_FILE}", state)

    def _write(self, path: str, content: Any) -> None:
        """Write a JSON file whole or not at all: a machine shut down mid-write must not leave half a file
        that no later session can resume from."""
        with self.fs.open_output_stream(f"{path}.part") as out:
            out.write(json.dumps(content, indent=1).encode())
        self.fs.move(f"{path}.part", path)

    def state(self, name: str) -> dict[str, Any]:
        with self.fs.open_input_stream(f"{self.root}/{name}/{SWEEP_FILE}") as src:
            return json.loads(src.read().decode())

    def latest(self, grid: str, scale: str, args: list[str] | None = None) -> str:
        """The most recent sweep of this grid and scale that holds a sweep record; with `args`, the most
        recent one started with them (`same_sweep`): a grid run in parts has several sweeps, and a later part
        must not be taken for an earlier one that stopped."""
        import pyarrow.fs

        selector = pyarrow.fs.FileSelector(self.root, allow_not_found=True, recursive=False)
        names = sorted(
            info.base_name
            for info in self.fs.get_file_info(selector)
            if info.type == pyarrow.fs.FileType.Directory and info.base_name.startswith(f"{grid}-{scale}-")
        )
        names = [n for n in names if self.fs.get_file_info(f"{self.root}/{n}/{SWEEP_FILE}").is_file]
        started = {name: self.state(name).get("args") for name in names} if args is not None else {}
        if args is not None:
            names = [name for name, was in started.items() if was is not None and same_sweep(was, args)]
        if not names:
            how = f" started as `{shlex.join(args)}`" if args is not None else ""
            seen = "; ".join(f"{n}: {shlex.join(a) if a else '(not recorded)'}" for n, a in started.items())
            raise SweepError(
                f"no sweep of grid {grid!r} at scale {scale!r}{how} to resume under {self.location}"
                + (f"; those there were started as: {seen}" if seen else "")
            )
        return names[-1]


def check_tracking(uri: str) -> None:
    """Fail before any trial starts when the tracking store cannot be reached (and create a SQLite store
    here, once, rather than from two trials at the same moment)."""
    try:
        store.check_usable(uri)
    except store.StoreError as err:
        raise SweepError(str(err)) from err


def git_commit() -> str:
    """The project's commit (with `-dirty` when the tree has changes), for the runs' `git_commit` tag."""
    if os.environ.get(COMMIT_ENV):  # a copy of the tree without its .git (a lent GPU machine)
        return os.environ[COMMIT_ENV]
    command = ["git", "describe", "--always", "--dirty", "--abbrev=40", "--exclude=*"]  # no tag names
    root = Path(__file__).resolve().parent.parent
    try:
        return subprocess.run(
            command, cwd=root, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def digit_map(grid: Grid, scale: Scale) -> dict[int, int]:
    """Paper digit count -> the sweep's (the identity for a grid that keeps the paper's digits)."""
    keep = not grid.scale_digits
    return {n: n if keep else scale.digits(n) for n in range(1, 41)}


def sweep_name(grid: str, scale: str) -> str:
    """A sweep's name (its folder, its parent run's name): grid, scale and start time, sorting by time."""
    return f"{grid}-{scale}-{time.strftime('%Y%m%d-%H%M%S')}"


def sweep_tags(
    grid: Grid, scale: Scale, trials: int, commit: str, presearch_seeds: Sequence[int] = ()
) -> dict[str, str]:
    """The tags of a sweep's parent run, which the analysis reads. `presearch_seeds`: the seeds whose
    pre-search chose the sweep's budget (default: the grid's and the scale's); the analysis judges others."""
    tags = {
        schema.SWEEP_TAG: "1",
        schema.GRID_TAG: grid.name,
        schema.SCALE_TAG: scale.name,
        schema.COMMIT_TAG: commit,
        "trials": str(trials),
        # paper digit count -> this sweep's (analysis pairs each cell with the paper cell it stands for)
        schema.DIGIT_MAP_TAG: json.dumps(digit_map(grid, scale)),
        # the grid's declared axes (analysis makes them table axes even where a sweep holds one value)
        schema.AXES_TAG: json.dumps(grid.declared_axes()),
    }
    if grid.parent:  # the analysis judges a variant by its parent's claims
        tags[schema.VARIANT_OF_TAG] = grid.parent
    chose = tuple(presearch_seeds) or (*grid.presearch_seeds, *scale.presearch_seeds)
    if chose:
        tags[schema.PRESEARCH_SEEDS_TAG] = json.dumps(sorted(set(chose)))
    return tags


def sweep_link(
    grid: Grid, scale: Scale, parent_run_id: str, commit: str, presearch_seeds: Sequence[int] = ()
) -> SweepLink:
    """What each trial records of its sweep: its parent run and the sweep's commit and pre-search seeds."""
    tags = sweep_tags(grid, scale, 0, commit, presearch_seeds)
    return SweepLink(
        parent_run_id, {k: tags[k] for k in (schema.COMMIT_TAG, schema.PRESEARCH_SEEDS_TAG) if k in tags}
    )


def open_sweep(
    grid: Grid, scale: Scale, uri: str, trials: int, args: Sequence[str] = ()
) -> tuple[str, SweepLink]:
    """Open the sweep's parent run (described by `args`); its name and the link its trials are built with."""
    name = sweep_name(grid.name, scale.name)
    commit = git_commit()
    tags = sweep_tags(grid, scale, trials, commit)
    if args:
        tags[schema.RUN_DESCRIPTION_TAG] = f"`python sweeps/run.py {shlex.join(args)}`"
    parent_run_id = store.open_parent_run(uri, grid.name, name, tags)
    return name, sweep_link(grid, scale, parent_run_id, commit)


def sweep_params(
    grid: str, scale: str, axes: Sequence[str], configs: Mapping[str, ExperimentConfig], args: Sequence[str]
) -> dict[str, str]:
    """The parent run's params: grid, scale, the grid's axes, the seeds its trials run and its command."""
    return {
        schema.GRID_TAG: grid,
        schema.SCALE_TAG: scale,
        schema.AXES_TAG: ", ".join(axes),
        schema.SEEDS_PARAM: seed_list(sorted({c.train.seed for c in configs.values()})),
        schema.COMMAND_PARAM: f"python sweeps/run.py {shlex.join(args)}".strip(),
    }


def log_sweep_params(uri: str, parent_run_id: str, params: Mapping[str, str]) -> None:
    """Set the sweep's params on its parent run (once: a resumed sweep keeps those it was started with)."""
    from mlflow.entities import Param

    store.client(uri).log_batch(parent_run_id, params=[Param(k, v[:6000]) for k, v in params.items()])


def sweep_state(
    grid: Grid,
    scale: Scale,
    uri: str,
    parent_run_id: str,
    res: dict[str, float],
    configs: Mapping[str, ExperimentConfig],
    args: list[str] | None = None,
) -> dict[str, Any]:
    """What `sweep.json` keeps for `--resume`, with the `args` by which a later session finds it."""
    return {
        "args": list(args or ()),
        "grid": grid.name,
        "scale": scale.name,
        "tracking_uri": uri,
        "parent_run_id": parent_run_id,
        "resources": res,
        "configs": {key: cfg.to_dict() for key, cfg in configs.items()},
    }


def state_configs(state: Mapping[str, Any]) -> dict[str, ExperimentConfig]:
    """The trials' configs a `sweep.json` keeps (`sweep_state`), typed again."""
    return {key: ExperimentConfig.from_dict(cfg) for key, cfg in state["configs"].items()}


def resumed_state(storage: SweepStorage, name: str, tracking_uri: str | None) -> dict[str, Any]:
    """An interrupted sweep's `sweep.json`; where `tracking_uri` (`--tracking-uri`) names another store (a
    new head, a database restored elsewhere), its trials' configs are moved to it, and kept so."""
    state = storage.state(name)
    uri = absolute_uri(tracking_uri) if tracking_uri else state["tracking_uri"]
    if uri != state["tracking_uri"]:
        moved_from = store.display(state["tracking_uri"])
        print(f"--resume: the sweep's store moved from {moved_from} to {store.display(uri)}")
        configs = state_configs(state).items()
        kept = {key: cfg.with_overrides({"tracking.tracking_uri": uri}).to_dict() for key, cfg in configs}
        state = {**state, "tracking_uri": uri, "configs": kept}
        storage.save(name, state)
    return state


def trial_outcomes(
    uri: str, parent_run_id: str, configs: Mapping[str, ExperimentConfig], errored: Iterable[str] = ()
) -> tuple[int, int]:
    """(finished, failed) trials, from their MLflow runs under the parent and the trial keys Tune saw
    error (`errored`); a trial is counted once. Tune reports an interrupted sweep's running trials
    TERMINATED like finished ones; their runs, which the trainer ends only after the last epoch, tell them
    apart, and a trial whose worker died with its last attempt may have left its run RUNNING."""
    names = {c.tracking.run_name for c in configs.values()}
    experiments = sorted({c.tracking.experiment for c in configs.values()})
    runs = store.trial_runs(uri, experiments, parent_run_id)
    finished = {r.info.run_name for r in runs if r.info.status == "FINISHED"} & names
    failed = {r.info.run_name for r in runs if r.info.status == "FAILED"} & names
    failed |= {configs[key].tracking.run_name for key in errored}
    return len(finished), len(failed - finished)
