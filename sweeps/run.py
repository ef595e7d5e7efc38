"""Run one grid of the paper as a Ray Tune sweep: `python sweeps/run.py --grid nl_mix --scale cpu`.

The driver resolves and validates every trial config first (a bad point fails here, not hours in),
checks the MLflow tracking server and the cluster's GPUs, opens one parent MLflow run for the sweep and
hands the trials to Ray Tune: one trial per (point, seed), `tune.with_resources` per trial, retries
from the trainer's checkpoints (`FailureConfig`). Each trial owns its MLflow run (the trainer nests it
under the parent and keeps its id in its checkpoint), so a retried or resumed trial continues its run.

The sweep's configs and parent run id are saved in the experiment folder (`sweep.json`), so `--resume`
restores exactly the interrupted sweep and runs only what was unfinished.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python sweeps/run.py`: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd

from arith import store
from arith.config import ConfigError, ExperimentConfig, parse_set
from arith.store import absolute_uri
from sweeps.grids import GRIDS, get_grid, parse_seeds, points
from sweeps.packing import check_packing, default_gpus_per_trial
from sweeps.scales import SCALES, get_scale

SWEEP_FILE = "sweep.json"
#: metrics shown in the end-of-sweep summary when the analysis package is not available
SUMMARY_METRICS = ("test_acc", "epoch", "time_total_s")


class SweepError(RuntimeError):
    """A sweep that cannot start; the message says why and what to do instead."""


# ---------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------


def seeds_arg(text: str) -> int | tuple[int, ...]:
    """argparse type of --seeds (see sweeps.grids.parse_seeds)."""
    try:
        return parse_seeds(text)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python sweeps/run.py",
        description="Run one experiment grid of 'Positional Description Matters' as a Ray Tune sweep.",
    )
    p.add_argument("--grid", help=f"one of: {', '.join(GRIDS)}")
    p.add_argument("--scale", default="paper", help=f"one of: {', '.join(SCALES)} (default: paper)")
    p.add_argument(
        "--seeds",
        type=seeds_arg,
        default=1,
        help="repeat every point with K seeds (default 1), or give the seeds: --seeds 1,2 adds two seeds "
        "to an earlier sweep's seed 0",
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
        help="run only the grid's points whose config has this value, e.g. --only model.init=random "
        "(repeatable)",
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
    output = p.add_mutually_exclusive_group()
    output.add_argument("--quiet", action="store_true", help="no progress line, only the final report")
    output.add_argument(
        "--verbose", action="store_true", help="Tune's per-trial table and the trials' own output too"
    )
    p.add_argument("--list", action="store_true", help="print the grids with their axes and paper tables")
    return p.parse_args(argv)


def list_grids() -> str:
    """The `--list` text: every grid with its axes, size and the paper tables it reproduces."""
    lines = []
    for grid in GRIDS.values():
        lines.append(f"{grid.name}  ({len(grid.points())} points)  {grid.description}")
        lines += [f"    axes: {line}" for line in grid.axis_summary()]
        lines.append(f"    paper: {', '.join(grid.paper_tables) or 'none (beyond the paper)'}")
    lines.append("")
    lines += [f"scale {s.name}: {s.description}" for s in SCALES.values()]
    return "\n".join(lines)


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


def trial_key(point: str, seed: int) -> str:
    return f"{point}|seed={seed}"


def build_configs(args: argparse.Namespace, tracking_uri: str) -> dict[str, dict[str, Any]]:
    """trial key -> config dict, every one validated; fails at once on a bad grid, scale or key."""
    overrides = absolute_paths(parse_set(args.sets))
    overrides["tracking.tracking_uri"] = tracking_uri
    configs = points(get_grid(args.grid), get_scale(args.scale), args.seeds, overrides)
    configs = select(configs, parse_set(args.only))
    return {trial_key(c.tracking.tags["point"], c.train.seed): c.to_dict() for c in configs}


def select(configs: list[ExperimentConfig], only: dict[str, str]) -> list[ExperimentConfig]:
    """The points whose config has every `--only key=value` (e.g. model.init=random); fails when none do."""
    if not only:
        return configs
    unknown = set(only) - set(ExperimentConfig.keys())
    if unknown:
        raise ConfigError(
            f"--only: unknown key(s) {sorted(unknown)}; valid keys: {', '.join(ExperimentConfig.keys())}"
        )
    kept = [c for c in configs if all(str(c.flat()[k]) == v for k, v in only.items())]
    if not kept:
        raise SweepError(f"--only {only} matches none of the grid's {len(configs)} trials")
    return kept


def resources(args: argparse.Namespace) -> dict[str, float]:
    gpus = args.gpus_per_trial
    if gpus is None:  # GPU scales: the packing measured by scripts/gpu_bench.sh, else one trial a GPU
        gpus = default_gpus_per_trial() if get_scale(args.scale).needs_gpu else 0.0
    if args.cpus_per_trial <= 0 or gpus < 0:
        raise SweepError("--cpus-per-trial must be > 0 and --gpus-per-trial >= 0")
    try:
        check_packing(gpus)  # several trials a GPU: only as many as the measured memory allows
    except ValueError as err:
        raise SweepError(str(err)) from err
    return {"cpu": args.cpus_per_trial, "gpu": gpus}


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
                "point": tags["point"],
                "seed": f["train.seed"],
                "paper_table": tags["paper_table"],
                **{k.partition(".")[2]: f[k] for k in keys},
                "cpus": res["cpu"],
                "gpus": res["gpu"],
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------------
# MLflow
# ---------------------------------------------------------------------------------------------------------


def check_tracking(uri: str) -> None:
    """Fail before any trial starts when the tracking store cannot be reached (and create a SQLite store
    here, once, rather than from two trials at the same moment)."""
    try:
        store.check_usable(uri)
    except store.StoreError as err:
        raise SweepError(str(err)) from err


def check_pretrained(configs: dict[str, dict[str, Any]]) -> None:
    """Fail before any trial starts when a pretrained point's model cannot be loaded (no hub access, a
    wrong path), rather than in every one of its trials."""
    names = sorted({c["model"]["pretrained"] for c in configs.values() if c["model"]["init"] == "pretrained"})
    for name in names:
        from transformers import AutoConfig

        try:
            AutoConfig.from_pretrained(name)
        except Exception as err:
            raise SweepError(
                f"model.pretrained={name!r} cannot be loaded here ({type(err).__name__}: "
                f"{str(err).splitlines()[0][:200]}). Give a local copy: --set model.pretrained=/path/to/gpt2 "
                "(a save_pretrained directory), or set HF_HUB_OFFLINE=1 with the model in the HF cache."
            ) from err


def git_commit() -> str:
    """The project's commit (with `-dirty` when the tree has changes), for the runs' `git_commit` tag."""
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


def digit_map(grid: str, scale: str) -> dict[int, int]:
    """Paper digit count -> the sweep's: the scale's map, or the identity for a grid that keeps the
    paper's digit counts (scale_digits=False, e.g. nl_mix)."""
    keep = not get_grid(grid).scale_digits
    return {n: n if keep else get_scale(scale).digits(n) for n in range(1, 41)}


# ---------------------------------------------------------------------------------------------------------
# Ray Tune
# ---------------------------------------------------------------------------------------------------------


def run_trial(config: dict[str, Any], configs: dict[str, dict[str, Any]]) -> None:
    """The Tune trainable: look the trial's full config up by (point, seed) and hand it to the adapter.

    Tune's search space holds only `point` and `seed`, so its trial table stays readable."""
    from ray import tune

    from sweeps.trainable import tune_entrypoint

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


def start_ray(address: str | None, temp_dir: str | None, log_to_driver: bool = True) -> bool:
    """Connect to the cluster at `address` / $RAY_ADDRESS, else start a local Ray; True if started here."""
    import ray

    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        try:
            ray.init(address=address, log_to_driver=log_to_driver)
        except Exception as err:
            raise SweepError(
                f"cannot connect to the Ray cluster at {address}: {err}. With token authentication, the "
                "cluster's token must be in $RAY_AUTH_TOKEN or ~/.ray/auth_token on this machine."
            ) from err
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": log_to_driver}
    if temp_dir:
        kwargs["_temp_dir"] = str(Path(temp_dir).resolve())
    for attempt in range(3):  # on a loaded machine the raylet can miss Ray's fixed 30 s start-up wait
        try:
            ray.init(**kwargs)
            return True
        except Exception as err:
            if "timed out during startup" not in str(err) or attempt == 2:
                raise
            print(f"local Ray did not start in time ({err}); trying again", file=sys.stderr, flush=True)
            ray.shutdown()
    return True


def wait_for_gpus(needed: float, minutes: float, poll_s: float = 1.0, say_every_s: float = 15.0) -> float:
    """Ask the autoscaler for GPU workers (cluster.yaml scales them from zero) and wait for them to join.

    The request is withdrawn once they are up: from then on the pending trials' own demands keep the
    autoscaler going, and idle workers leave after `idle_timeout_minutes`. Polled every `poll_s` (a node
    joins in seconds once its instance boots), the wait is printed every `say_every_s`."""
    import math

    import ray
    from ray.autoscaler.sdk import request_resources

    request_resources(bundles=[{"GPU": 1}] * max(1, math.ceil(needed)))
    start = time.time()
    deadline, said = start + minutes * 60, -math.inf
    try:
        while (gpus := ray.cluster_resources().get("GPU", 0.0)) < needed and time.time() < deadline:
            if time.time() - said >= say_every_s:
                print(f"waiting for GPU workers to join: {gpus:g}/{needed:g} GPUs", flush=True)
                said = time.time()
            time.sleep(poll_s)
    finally:
        request_resources(bundles=[])
    gpus = ray.cluster_resources().get("GPU", 0.0)
    joined = "GPU workers joined" if gpus >= needed else f"only {gpus:g}/{needed:g} GPUs joined"
    print(f"{joined}: {gpus:g} GPUs after {time.time() - start:.0f} s", flush=True)
    return gpus


def check_cluster(scale_name: str, res: dict[str, float], gpu_wait_min: float) -> None:
    """Stop before starting anything when the cluster cannot run a single trial of this sweep."""
    import ray

    total = ray.cluster_resources()
    needs_gpu = get_scale(scale_name).needs_gpu or res["gpu"] > 0
    if needs_gpu and total.get("GPU", 0.0) < max(res["gpu"], 1e-9) and gpu_wait_min > 0:
        wait_for_gpus(max(res["gpu"], 1.0), gpu_wait_min)
        total = ray.cluster_resources()  # the GPU workers bring their CPUs (the head offers none)
    gpus, cpus = total.get("GPU", 0.0), total.get("CPU", 0.0)
    if get_scale(scale_name).needs_gpu and gpus == 0:
        raise SweepError(
            f"--scale {scale_name} trains the paper's GPT2-small for hundreds of epochs and needs GPUs, but "
            "this Ray cluster has none"
            + (f" (none joined within {gpu_wait_min:g} min)" if gpu_wait_min > 0 else "")
            + ". Run the CPU miniature instead: --scale cpu (or --address a GPU cluster)."
        )
    if res["gpu"] > gpus:
        raise SweepError(
            f"--gpus-per-trial {res['gpu']:g} but the cluster has {gpus:g} GPUs; use 0 or a GPU cluster"
        )
    if res["cpu"] > cpus:
        raise SweepError(f"--cpus-per-trial {res['cpu']:g} but the cluster has {cpus:g} CPUs")


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
        with self.fs.open_output_stream(f"{self.root}/{name}/{SWEEP_FILE}") as out:
            out.write(json.dumps(state, indent=1).encode())

    def state(self, name: str) -> dict[str, Any]:
        with self.fs.open_input_stream(f"{self.root}/{name}/{SWEEP_FILE}") as src:
            return json.loads(src.read().decode())

    def latest(self, grid: str, scale: str) -> str:
        """The most recent sweep of this grid and scale (names sort by start time)."""
        import pyarrow.fs

        selector = pyarrow.fs.FileSelector(self.root, allow_not_found=True, recursive=False)
        names = sorted(
            info.base_name
            for info in self.fs.get_file_info(selector)
            if info.type == pyarrow.fs.FileType.Directory and info.base_name.startswith(f"{grid}-{scale}-")
        )
        names = [n for n in names if self.fs.get_file_info(f"{self.root}/{n}/{SWEEP_FILE}").is_file]
        if not names:
            raise SweepError(f"no sweep of grid {grid!r} at scale {scale!r} to resume under {self.location}")
        return names[-1]


def trial_outcomes(
    uri: str, parent_run_id: str, configs: dict[str, dict[str, Any]], errored: Iterable[str] = ()
) -> tuple[int, int]:
    """(finished, failed) trials, from their MLflow runs under the parent and the trial keys Tune saw
    error (`errored`: retries exhausted); a trial is counted once.

    Tune stops the running trials of an interrupted sweep and reports them TERMINATED like finished
    ones; the trial's own run, which the trainer ends only after its last epoch, tells them apart. A trial
    ended by a NaN loss is not retried and reports normally to Tune; its run is FAILED. A trial that errored
    has a FAILED run too, or a RUNNING one when its worker died with its last attempt."""
    names = {c["tracking"]["run_name"] for c in configs.values()}
    experiments = sorted({c["tracking"]["experiment"] for c in configs.values()})
    runs = store.trial_runs(uri, experiments, parent_run_id)
    finished = {r.info.run_name for r in runs if r.info.status == "FINISHED"} & names
    failed = {r.info.run_name for r in runs if r.info.status == "FAILED"} & names
    failed |= {configs[key]["tracking"]["run_name"] for key in errored}
    return len(finished), len(failed - finished)


def errored_trials(results: Any) -> set[str]:
    """The trial keys of the trials Tune reports errored."""
    return {trial_key(r.config["point"], r.config["seed"]) for r in results if r.error and r.config}


def make_trainable(configs: dict[str, dict[str, Any]], res: dict[str, float]):
    from ray import tune

    return tune.with_resources(tune.with_parameters(run_trial, configs=configs), res)


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
    """The analysis comparison for this sweep, or the per-trial summary until the analysis exists."""
    try:
        from analysis import report
    except ImportError:
        report = None
    if report is not None:
        try:
            return report(grid, uri, parent_run_id=parent_run_id, fmt="markdown")
        except Exception as err:  # the sweep's results stand even if the comparison cannot be drawn
            print(f"analysis.report failed ({err}); per-trial summary instead", file=sys.stderr)
    return summary(results).to_string(index=False)


#: flags whose value a resumed sweep takes from the interrupted one (flag, attribute, default)
RESUME_IGNORES = (
    ("--set", "sets", []),
    ("--seeds", "seeds", 1),
    ("--only", "only", []),
    ("--gpus-per-trial", "gpus_per_trial", None),
    ("--cpus-per-trial", "cpus_per_trial", 1.0),
)


def ignored_on_resume(args: argparse.Namespace) -> list[str]:
    """The flags given with --resume that it does not use (the interrupted sweep's values hold)."""
    return [flag for flag, attr, default in RESUME_IGNORES if getattr(args, attr) != default]


def resume_tracking_uri(args: argparse.Namespace, state: dict[str, Any], configs: dict[str, Any]) -> str:
    """The store a resumed sweep logs to: the interrupted sweep's, or `--tracking-uri` when the store has
    moved (a new head, a database restored elsewhere); the trials' configs follow it."""
    uri = state["tracking_uri"]
    if args.tracking_uri and absolute_uri(args.tracking_uri) != uri:
        uri = absolute_uri(args.tracking_uri)
        moved_from = store.display(state["tracking_uri"])
        print(f"--resume: the sweep's store moved from {moved_from} to {store.display(uri)}")
        for cfg in configs.values():
            cfg["tracking"]["tracking_uri"] = uri
    return uri


def new_sweep(
    args: argparse.Namespace,
    storage: SweepStorage,
    uri: str,
    configs: dict[str, dict[str, Any]],
    res: dict[str, float],
) -> tuple[str, str]:
    """Open the parent MLflow run, nest every trial under it and save the sweep for `--resume`."""
    name = f"{args.grid}-{args.scale}-{time.strftime('%Y%m%d-%H%M%S')}"
    commit = git_commit()
    tags = {
        "sweep": "1",
        "grid": args.grid,
        "scale": args.scale,
        "git_commit": commit,
        "trials": str(len(configs)),
        # paper digit count -> this sweep's (analysis pairs each cell with the paper cell it stands for)
        "digit_map": json.dumps(digit_map(args.grid, args.scale)),
    }
    parent_run_id = store.open_parent_run(uri, args.grid, name, tags)
    for cfg in configs.values():
        cfg["tracking"]["parent_run_id"] = parent_run_id
        cfg["tracking"]["tags"]["git_commit"] = commit
    state = {
        "grid": args.grid,
        "scale": args.scale,
        "tracking_uri": uri,
        "parent_run_id": parent_run_id,
        "resources": res,
        "configs": configs,
    }
    storage.create(name, state)
    return name, parent_run_id


def run(args: argparse.Namespace) -> int:
    """The sweep; returns the exit status (0 all trials done, 1 some failed, 130 interrupted)."""
    storage = SweepStorage(args.storage_path)
    set_uri = parse_set(args.sets).get("tracking.tracking_uri")
    tracking_uri = absolute_uri(args.tracking_uri or set_uri or ExperimentConfig().tracking.resolved_uri())
    res = resources(args)
    get_grid(args.grid)  # an unknown grid or scale fails here, before anything starts
    scale = get_scale(args.scale)

    if args.resume:
        sweep_name = storage.latest(args.grid, scale.name)
        state = storage.state(sweep_name)
        configs, res = state["configs"], state["resources"]
        tracking_uri = resume_tracking_uri(args, state, configs)
        if tracking_uri != state["tracking_uri"]:
            storage.save(sweep_name, {**state, "tracking_uri": tracking_uri, "configs": configs})
        ignored = ignored_on_resume(args)
        if ignored:
            print(f"--resume ignores {', '.join(ignored)}: taken from the interrupted sweep", file=sys.stderr)
    else:
        configs = build_configs(args, tracking_uri)
    if args.dry_run:
        print(trial_table(configs, res).to_string(index=False))
        print(f"\n{len(configs)} trials; tracking {tracking_uri}; results under {storage.location}")
        return 0

    check_tracking(tracking_uri)
    check_pretrained(configs)
    started_ray = start_ray(args.address, args.ray_temp_dir, log_to_driver=args.verbose)
    parent_run_id = ""
    try:
        check_cluster(scale.name, res, 0.0 if started_ray else args.gpu_wait_min)
        if args.resume:
            parent_run_id = state["parent_run_id"]
            store.set_run_status(tracking_uri, parent_run_id, "RUNNING")
        else:
            sweep_name, parent_run_id = new_sweep(args, storage, tracking_uri, configs, res)
        print(
            f"sweep {sweep_name}: {len(configs)} trials, MLflow parent run {parent_run_id} at {tracking_uri}"
        )
        results = fit(args, storage, sweep_name, configs, res)
    except BaseException:
        if parent_run_id:
            store.set_run_status(tracking_uri, parent_run_id, "KILLED")
        raise
    finally:
        if started_ray:
            import ray

            ray.shutdown()

    done, errors = results.num_terminated, results.num_errors
    if all(c["tracking"]["enabled"] for c in configs.values()):  # else Tune's count is all there is
        done, errors = trial_outcomes(tracking_uri, parent_run_id, configs, errored_trials(results))
    unfinished = len(configs) - done - errors
    if unfinished:
        store.set_run_status(tracking_uri, parent_run_id, "KILLED")
        print(
            f"\nInterrupted with {unfinished} trial(s) unfinished. Continue with:\n  python sweeps/run.py "
            f"--grid {args.grid} --scale {scale.name} --storage-path {storage.location} --resume"
        )
        return 130
    store.set_run_status(tracking_uri, parent_run_id, "FAILED" if errors else "FINISHED")
    print()
    print(final_report(args.grid, tracking_uri, parent_run_id, results))
    return 1 if errors else 0


def fit(
    args: argparse.Namespace,
    storage: SweepStorage,
    sweep_name: str,
    configs: dict[str, dict[str, Any]],
    res: dict[str, float],
):
    """Hand the trials to Tune (or restore the interrupted Tune experiment) and wait for them."""
    from ray import tune

    from sweeps.progress import trial_steps, tune_output

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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print(list_grids())
        return 0
    try:
        if not args.grid:
            raise ConfigError(f"--grid is required; choose one of: {', '.join(GRIDS)}")
        return run(args)
    except (ConfigError, SweepError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    # Re-enter through the package so that Ray pickles `sweeps.run.run_trial` by reference.
    from sweeps.run import main as _main

    sys.exit(_main())
