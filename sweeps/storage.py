"""Where a sweep keeps its state: its folder under --storage-path (Tune's experiment and `sweep.json`)
and its MLflow parent run (opened here, with the tags analysis reads; the trials' outcomes read back).

The tracking store itself (clients, URIs, runs) is `arith.tracking.store`; this module holds what a sweep
adds."""

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
from sweeps.errors import SweepError
from sweeps.scales import Scale
from sweeps.space import SweepLink

SWEEP_FILE = "sweep.json"
#: a sweep's sessions (wall time, machine, commit), beside its folder (`SweepStorage.session_entries`)
SESSIONS_SUFFIX = ".sessions.json"
#: the commit of a tree copied without its .git, given by whoever copied it
COMMIT_ENV = "POSDESC_GIT_COMMIT"


class SweepStorage:
    """Where sweeps are kept: a local folder, or a URI Ray reads (s3://, gs://) through pyarrow.fs.

    On a cluster this must be storage every node shares, so that checkpoints follow a trial to whichever
    node retries it. Each sweep is a folder `<grid>-<scale>-<time>` holding Tune's experiment and
    `sweep.json` (the configs and the parent run id, for `--resume`)."""

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
        """Write a JSON file whole or not at all (a new file moved over the old): a machine shut down
        mid-write must not leave half a file that no later session can resume from."""
        with self.fs.open_output_stream(f"{path}.part") as out:
            out.write(json.dumps(content, indent=1).encode())
        self.fs.move(f"{path}.part", path)

    def state(self, name: str) -> dict[str, Any]:
        with self.fs.open_input_stream(f"{self.root}/{name}/{SWEEP_FILE}") as src:
            return json.loads(src.read().decode())

    def latest(self, grid: str, scale: str, args: list[str] | None = None) -> str:
        """The most recent sweep of this grid and scale (names sort by start time); with `args`, the most
        recent one started with them (`sweep_identity`, whatever either says of how Tune runs the trials:
        `same_sweep`): a grid run in parts (seeds, --only slices) has several sweeps, and a later part must
        not be taken for an earlier one that stopped."""
        names = self._sweeps(grid, scale)
        if args is None:
            if not names:
                raise SweepError(
                    f"no sweep of grid {grid!r} at scale {scale!r} to resume under {self.location}"
                )
            return names[-1]
        started = {name: self.state(name).get("args") for name in names}
        matching = [name for name, was in started.items() if was is not None and same_sweep(was, args)]
        if not matching:
            seen = "; ".join(f"{n}: {shlex.join(a) if a else '(not recorded)'}" for n, a in started.items())
            raise SweepError(
                f"no sweep of grid {grid!r} at scale {scale!r} started as `{shlex.join(args)}` under "
                f"{self.location}" + (f"; those there were started as: {seen}" if seen else "")
            )
        return matching[-1]

    def _sweeps(self, grid: str, scale: str) -> list[str]:
        """This grid's sweep folders at this scale that hold a sweep record, oldest first."""
        import pyarrow.fs

        selector = pyarrow.fs.FileSelector(self.root, allow_not_found=True, recursive=False)
        names = sorted(
            info.base_name
            for info in self.fs.get_file_info(selector)
            if info.type == pyarrow.fs.FileType.Directory and info.base_name.startswith(f"{grid}-{scale}-")
        )
        return [n for n in names if self.fs.get_file_info(f"{self.root}/{n}/{SWEEP_FILE}").is_file]

    def stopped(self, grid: str, scale: str, args: list[str]) -> str | None:
        """The latest sweep of `grid` at `scale` started with `args` (`sweep_identity`), even where a sweep
        of another part started after it: one a stopped session left, for `--resume` to finish; None when
        there is none. Whether it finished is the tracking store's to say (its parent run), not the
        folder's."""
        try:
            return self.latest(grid, scale, args)
        except SweepError:
            return None

    def add_session(
        self, name: str, wall_s: float, machine: str, commit: str = "", session: str = ""
    ) -> tuple[float, str, str]:
        """Note one session's wall time, machine and commit of the sweep (`session_entries`); returns
        every session's wall time together, their machines and their commits (each once, in order; a
        session noted before commits were kept names none), for the sweep's record. `session` names a
        session noted more than once as it runs (its entry's wall time replaced each time), so that one
        whose machine stops without warning keeps the time it had run until its last note."""
        entry = {
            "wall_s": round(wall_s, 1),
            "machine": machine,
            **({"commit": commit} if commit else {}),
            **({"session": session} if session else {}),
        }
        noted = self._noted_sessions(name)
        others = [s for s in noted if not session or s.get("session") != session]
        self._write(self._sessions_path(name), [*others, entry])
        return self.sessions(name)

    def session_entries(self, name: str) -> list[dict[str, Any]]:
        """The sessions noted of a sweep, in order: those its sweep.json holds (where sweeps noted them
        first), then those in its sessions file, `<name>.sessions.json` beside its folder. Not in the
        folder: Tune, resuming a sweep, copies the folder to a staging place and uploads that copy over it
        as it runs, which undid a note made in sweep.json meanwhile."""
        return [*self.state(name).get("sessions", []), *self._noted_sessions(name)]

    def sessions(self, name: str) -> tuple[float, str, str]:
        """Every session's wall time together, their machines and their commits, as `add_session` returns."""
        sessions = self.session_entries(name)
        machines = dict.fromkeys(s["machine"] for s in sessions)
        commits = dict.fromkeys(s["commit"] for s in sessions if s.get("commit"))
        return sum(s["wall_s"] for s in sessions), "; ".join(machines), "; ".join(commits)

    def _sessions_path(self, name: str) -> str:
        return f"{self.root}/{name}{SESSIONS_SUFFIX}"

    def _noted_sessions(self, name: str) -> list[dict[str, Any]]:
        path = self._sessions_path(name)
        if not self.fs.get_file_info(path).is_file:
            return []
        with self.fs.open_input_stream(path) as src:
            return json.loads(src.read().decode())


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
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")


def digit_map(grid: Grid, scale: Scale) -> dict[int, int]:
    """Paper digit count -> the sweep's: the scale's map, or the identity for a grid that keeps the
    paper's digit counts (scale_digits=False, e.g. nl_mix)."""
    keep = not grid.scale_digits
    return {n: n if keep else scale.digits(n) for n in range(1, 41)}


def sweep_name(grid: str, scale: str) -> str:
    """A sweep's name (its folder, its parent run's name): grid, scale and start time, sorting by time."""
    return f"{grid}-{scale}-{time.strftime('%Y%m%d-%H%M%S')}"


def _presearch_seeds(grid: Grid, scale: Scale, presearch_seeds: Sequence[int]) -> str | None:
    """The `presearch_seeds` tag's value: the seeds given, else the grid's and the scale's (None: none)."""
    chose = tuple(presearch_seeds) or (*grid.presearch_seeds, *scale.presearch_seeds)
    return json.dumps(sorted(set(chose))) if chose else None


def sweep_tags(
    grid: Grid, scale: Scale, trials: int, commit: str, presearch_seeds: Sequence[int] = ()
) -> dict[str, str]:
    """The tags of a sweep's parent run, which the analysis reads (a Tune sweep's and an offline one's).
    `presearch_seeds`: the seeds whose pre-search chose the sweep's budget (default: the grid's own
    declaration); the analysis judges only other seeds."""
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
    chose = _presearch_seeds(grid, scale, presearch_seeds)
    if chose:
        tags[schema.PRESEARCH_SEEDS_TAG] = chose
    return tags


def sweep_link(
    grid: Grid, scale: Scale, parent_run_id: str, commit: str, presearch_seeds: Sequence[int] = ()
) -> SweepLink:
    """What each trial of the sweep records of it: its parent run, the commit and the pre-search seeds
    (the sweep's tags a trial's run carries too)."""
    tags = {schema.COMMIT_TAG: commit}
    chose = _presearch_seeds(grid, scale, presearch_seeds)
    if chose:
        tags[schema.PRESEARCH_SEEDS_TAG] = chose
    return SweepLink(parent_run_id, tags)


def open_sweep(
    grid: Grid, scale: Scale, uri: str, trials: int, args: Sequence[str] = ()
) -> tuple[str, SweepLink]:
    """Open the sweep's parent MLflow run, described in the MLflow UI by the command that started it (its
    `args`, `sweep_identity`, where given); returns the sweep's name and the link its trials' configs are
    built with (`sweeps.space.trial_config`), so that each is written once, nested under the parent."""
    name = sweep_name(grid.name, scale.name)
    commit = git_commit()
    tags = sweep_tags(grid, scale, trials, commit)
    if args:
        tags[schema.RUN_DESCRIPTION_TAG] = f"`python sweeps/run.py {shlex.join(args)}`"
    parent_run_id = store.open_parent_run(uri, grid.name, name, tags)
    return name, sweep_link(grid, scale, parent_run_id, commit)


def sweep_state(
    grid: Grid,
    scale: Scale,
    uri: str,
    parent_run_id: str,
    res: dict[str, float],
    configs: Mapping[str, ExperimentConfig],
    args: list[str] | None = None,
) -> dict[str, Any]:
    """What `sweep.json` keeps for `--resume`: the grid, scale, store, parent run, resources and configs,
    and the command line's `args` it was started with (`sweep_identity`), by which a later session finds it.
    """
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


def resume_tracking_uri(tracking_uri: str | None, state: Mapping[str, Any]) -> str:
    """The store a resumed sweep logs to: the interrupted sweep's, or `tracking_uri` (`--tracking-uri`)
    when the store has moved (a new head, a database restored elsewhere); the trials' configs follow it
    (`moved_to`)."""
    uri = state["tracking_uri"]
    if tracking_uri and absolute_uri(tracking_uri) != uri:
        uri = absolute_uri(tracking_uri)
        moved_from = store.display(state["tracking_uri"])
        print(f"--resume: the sweep's store moved from {moved_from} to {store.display(uri)}")
    return uri


def moved_to(configs: Mapping[str, ExperimentConfig], uri: str) -> dict[str, ExperimentConfig]:
    """The trials' configs logging to the store at `uri`."""
    return {key: cfg.with_overrides({"tracking.tracking_uri": uri}) for key, cfg in configs.items()}


def trial_outcomes(
    uri: str, parent_run_id: str, configs: Mapping[str, ExperimentConfig], errored: Iterable[str] = ()
) -> tuple[int, int]:
    """(finished, failed) trials, from their MLflow runs under the parent and the trial keys Tune saw
    error (`errored`: retries exhausted); a trial is counted once.

    Tune stops the running trials of an interrupted sweep and reports them TERMINATED like finished
    ones; the trial's own run, which the trainer ends only after its last epoch, tells them apart. A trial
    ended by a NaN loss is not retried and reports normally to Tune; its run is FAILED. A trial that errored
    has a FAILED run too, or a RUNNING one when its worker died with its last attempt."""
    names = {c.tracking.run_name for c in configs.values()}
    experiments = sorted({c.tracking.experiment for c in configs.values()})
    runs = store.trial_runs(uri, experiments, parent_run_id)
    finished = {r.info.run_name for r in runs if r.info.status == "FINISHED"} & names
    failed = {r.info.run_name for r in runs if r.info.status == "FAILED"} & names
    failed |= {configs[key].tracking.run_name for key in errored}
    return len(finished), len(failed - finished)
