"""Run a grid's trials without Ray or MLflow, several at once on one machine, into one sweep archive.

    python -m sweeps.offline --grid mul_format --scale gpu --seeds 100,101 --only data.max_digits=5 \\
        --procs 12 --deadline-min 8 --out runs/offline/mul_format.jsonl
    python -m arith.tracking.archive import runs/offline/mul_format.jsonl --tracking-uri sqlite:///mlflow.db
    python -m analysis --grid mul_format

The lent GPU machines have PyTorch and transformers but neither Ray nor MLflow, and one small trial
leaves most of a GPU idle. This executor resolves a grid exactly as `sweeps/run.py` does (the same
points, scale, `--only`, `--set` and seeds), runs each trial in its own process (`--procs` at a time, one
CPU thread each, all sharing the GPU) and records each trial with `arith.tracking.recorder`. It then writes
the sweep archive that `python -m arith.tracking.archive export` writes for a Ray Tune sweep: a parent run
with the tags the analysis reads, and one run per trial with its params, tags, metric histories and
`eval/cells.csv`. Imported into any store, the analysis cannot tell the two apart; the parent's tags say
which executor, machine and precision made it.

A deadline (`--deadline-min`) bounds a lease: trials still running then are stopped and recorded KILLED
with what they had logged (their intermediate evaluations), trials not started are left out, and the
archive is written all the same. The archive's work folder (`<name>.trials` beside it) belongs to its plan
(`sweeps.workdir`): the same command run again resumes it, keeping the trials that ended and continuing
the others from their last checkpoint (each trial's metric history whole: no step twice, none missing),
and rewrites the archive further on, which an import then brings the store up to; another plan into the
same folder is refused, and so is an `--out` file this plan did not write (`sweeps.offline_archive`).
Every check that needs only the configs and their data (lengths against positions included) runs before
anything is written. `--keep-weights` keeps each finished trial's trained model beside the archive
(`<name>.weights/<run name>`, which `python -m arith.ask` reads). A trial that raises is FAILED with its
error's last line, and the executor then exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arith.config import ConfigError, ExperimentConfig
from arith.overrides import parse_only, parse_set
from arith.tracking.commands import seeds_argument
from arith.tracking.recorder import new_run_id, now_ms, run_record, write_json
from arith.tracking.schema import TEST_ACC_METRIC
from arith.training.hardware import machine
from experiments.grid import PRESEARCH_FIRST_SEED, Grid
from sweeps.errors import SweepError
from sweeps.grids import get_grid, points
from sweeps.offline_archive import (
    archive_work,
    check_outputs,
    failed_trials,
    read_record,
    weights_folder,
    write_part,
)
from sweeps.offline_trial import checkpoint_dir, fail_record, record_trial
from sweeps.prelaunch import check_before_launch
from sweeps.scales import Scale, get_scale
from sweeps.space import SweepLink, parse_seeds
from sweeps.storage import git_commit, sweep_link, sweep_name, sweep_tags
from sweeps.workdir import claim, config_key, held_plan, lock, plan_of, stop_stale

#: seconds between looks at the running trials
POLL_S = 1.0


@dataclass(frozen=True)
class SweepPart:
    """One sweep of a batch: a grid at a scale, with `--only` / `--set` values and its seeds."""

    grid: str
    scale: str
    seeds: int | tuple[int, ...]
    only: dict[str, tuple[str, ...]] = field(default_factory=dict)
    sets: dict[str, str] = field(default_factory=dict)
    #: the seeds of the pre-search that chose this part's budget (for a pre-search: its own seeds)
    presearch_seeds: tuple[int, ...] = ()
    #: a name for the archive file (default: the grid)
    label: str = ""

    def resolved(self) -> tuple[Grid, Scale]:
        """The grid and scale the part names (a plan and a command line name them; the code takes them)."""
        return get_grid(self.grid), get_scale(self.scale)

    def configs(self, link: SweepLink | None = None) -> list[ExperimentConfig]:
        """The part's trials, resolved and validated as sweeps/run.py resolves them: `only` picks the
        grid's points by their values before `sets` apply, so a pre-search can move a picked point (its
        digits, its model) without the `--only` value ceasing to match. `link`: their sweep's parent."""
        overrides = {**self.sets, "train.num_threads": 1}
        grid, scale = self.resolved()
        return points(grid, scale, self.seeds, overrides, self.only, link)

    @property
    def name(self) -> str:
        return self.label or self.grid

    def command(self) -> str:
        """The equivalent command line, for the record."""
        words = [
            "python -m sweeps.offline",
            f"--grid {self.grid}",
            f"--scale {self.scale}",
            f"--seeds {seeds_argument(self.seeds)}",
        ]
        words += [f"--only {shlex.quote(f'{k}={v}')}" for k, values in self.only.items() for v in values]
        words += [f"--set {shlex.quote(f'{k}={v}')}" for k, v in self.sets.items()]
        if self.presearch_seeds:
            words.append(f"--presearch-seeds {','.join(map(str, self.presearch_seeds))}")
        return " ".join(words)


@dataclass
class Trial:
    """One trial of a part, its files named by its key (`sweeps.workdir`): config, record, log and
    checkpoint folder; its process once started."""

    part: int
    cfg: ExperimentConfig
    folder: Path
    key: str
    #: where its trained model is kept (`--keep-weights`), else None
    weights: Path | None = None
    process: subprocess.Popen | None = None
    started: float = 0.0

    @property
    def record_path(self) -> Path:
        return self.folder / f"{self.key}.run.json"

    @property
    def log_path(self) -> Path:
        return self.folder / f"{self.key}.log"

    def record(self) -> dict[str, Any] | None:
        return json.loads(self.record_path.read_text()) if self.record_path.exists() else None

    def done(self) -> bool:
        """Finished or failed: a rerun keeps it as it is."""
        record = self.record()
        return record is not None and record["status"] in ("FINISHED", "FAILED")

    def start(self) -> None:
        config_path = self.folder / f"{self.key}.config.json"
        pid_file = self.folder / f"{self.key}.pid"
        stop_stale(pid_file, str(config_path))
        config_path.write_text(self.cfg.to_json())
        command = [sys.executable, "-m", "sweeps.offline", "trial", str(config_path), str(self.record_path)]
        command += [str(self.weights)] if self.weights else []
        # a resumed trial's log continues its earlier attempts'; the child keeps its own copy of the file
        with self.log_path.open("a") as log:
            # its own process group: stopping it at the deadline stops whatever it started too
            self.process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        pid_file.write_text(str(self.process.pid))
        self.started = time.monotonic()

    def ended(self) -> None:
        """After its process exited: a trial that died without saying so (killed by the system, a crash
        outside Python) is FAILED with its log's last line. An ended trial's checkpoint is removed (a
        paper-scale one is GBs, and nothing resumes it)."""
        code = self.process.returncode if self.process is not None else 0
        record = self.record()
        if code and record is not None and record["status"] == "RUNNING":
            fail_record(record, f"exit code {code}: {_last_line(self.log_path)}")
            write_json(self.record_path, record)
        if self.done():
            shutil.rmtree(checkpoint_dir(self.record_path), ignore_errors=True)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def run_parts(
    parts: Sequence[SweepPart],
    out_dir: Path,
    procs: int,
    deadline_s: float | None = None,
    commit: str | None = None,
    work: Path | None = None,
    keep_weights: bool = False,
) -> list[Path]:
    """Run every trial of `parts` in one pool of `procs` processes and write one archive per part into
    `out_dir` (`<part name>.jsonl`); returns their paths. Stops what still runs after `deadline_s`. The
    trials' configs, records, logs and checkpoints go to `work` (default: one part's archive's own,
    `archive_work`; several parts' `out_dir/trials`), which this plan owns: run again, the same plan
    resumes there, and another plan is refused (`sweeps.workdir`).
    Nothing is written before every check passed: the configs, their lines against their positions, the
    work folder's plan and the archives at their paths. `keep_weights`: keep each trial's trained model."""
    deadline = time.monotonic() + deadline_s if deadline_s is not None else None
    paths = [out_dir / f"{part.name}.jsonl" for part in parts]
    work = work or (archive_work(paths[0]) if len(parts) == 1 else out_dir / "trials")
    keys = []
    for part in parts:  # each trial's key is its config as the plan resolves it, before the sweep's link
        configs = part.configs()
        _check_presearch(part, configs)
        check_before_launch(configs)
        keys.append([config_key(cfg) for cfg in configs])
    plan = plan_of([(part.name, k) for part, k in zip(parts, keys, strict=True)])
    held = held_plan(work, plan)
    check_outputs(paths, held["parents"] if held else None, work)
    new = {
        "commit": commit or git_commit(),
        "parents": [new_run_id() for _ in parts],  # the executor names its runs: its trials nest under them
        "names": [sweep_name(part.grid, part.scale) for part in parts],
        "start_time": now_ms(),
    }
    with lock(work):
        state = claim(work, plan, new)
        out_dir.mkdir(parents=True, exist_ok=True)
        device, precision = machine()
        parents, trials = [], []
        for index, part in enumerate(parts):
            grid, scale = part.resolved()
            parent_run_id = state["parents"][index]
            link = sweep_link(grid, scale, parent_run_id, state["commit"], part.presearch_seeds)
            configs = part.configs(link)
            tags = sweep_tags(grid, scale, len(configs), state["commit"], part.presearch_seeds)
            tags |= {"executor": "sweeps.offline", "machine": device, "precision": precision}
            tags["command"] = part.command()
            parents.append(
                run_record(parent_run_id, state["names"][index], None, {}, tags, state["start_time"])
            )
            trials += [
                Trial(
                    index,
                    cfg,
                    work,
                    key,
                    weights_folder(paths[index], cfg.tracking.run_name) if keep_weights else None,
                )
                for cfg, key in zip(configs, keys[index], strict=True)
            ]
        print(f"{len(trials)} trials in {len(parts)} sweep(s), {procs} at a time on {device} ({precision})")
        _run_pool(trials, procs, deadline, work)
        return [
            _write_part(part, parent, trials, index, paths[index])
            for index, (part, parent) in enumerate(zip(parts, parents, strict=True))
        ]


def _run_pool(trials: list[Trial], procs: int, deadline: float | None, work: Path) -> None:
    """Run the trials not done before, `procs` at a time, until they end or the deadline passes."""
    kept = [t for t in trials if t.done()]
    if kept:
        print(f"resuming in {work}: {len(kept)} trial(s) that ended before are kept", flush=True)
    waiting, running = [t for t in trials if t not in kept], []
    try:
        while waiting or running:
            if deadline is not None and time.monotonic() > deadline:
                print(
                    f"deadline: stopping {len(running)} trial(s), {len(waiting)} not started; "
                    "run the same command again to resume them",
                    flush=True,
                )
                break
            while waiting and len(running) < procs:
                trial = waiting.pop(0)
                trial.start()
                running.append(trial)
            for trial in [t for t in running if t.process.poll() is not None]:
                running.remove(trial)
                trial.ended()
                print(_trial_line(trial), flush=True)
            time.sleep(POLL_S)
    finally:
        for trial in running:
            trial.stop()


def _write_part(part: SweepPart, parent: dict[str, Any], trials: list[Trial], index: int, path: Path) -> Path:
    """The part's archive: its trials that have a record (not started: left out)."""
    records = [read_record(t.record_path) for t in trials if t.part == index and t.record_path.exists()]
    write_part(path, part.grid, parent, records)
    failed = sum(r["status"] == "FAILED" for r in records)
    print(
        f"wrote {path}: {len(records)} of {sum(t.part == index for t in trials)} trials recorded"
        + (f", {failed} FAILED" if failed else "")
    )
    return path


def _check_presearch(part: SweepPart, configs: list[ExperimentConfig]) -> None:
    """A pre-search (its own seeds chose the budget) draws its seeds from PRESEARCH_FIRST_SEED up."""
    own = {cfg.train.seed for cfg in configs}
    if own & set(part.presearch_seeds) and min(own) < PRESEARCH_FIRST_SEED:
        raise SweepError(
            f"{part.name}: a pre-search uses seeds from {PRESEARCH_FIRST_SEED} up (got {sorted(own)}), so "
            "that the seeds judged later never chose their own budget"
        )


def _last_line(path: Path) -> str:
    """The last line of a log: the error's own line, where a traceback ends."""
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def _trial_line(trial: Trial) -> str:
    minutes = (time.monotonic() - trial.started) / 60
    status, accuracy = "no record", ""
    record = trial.record()
    if record is not None:
        status = record["status"]
        history = record["metrics"].get(TEST_ACC_METRIC)
        accuracy = f"  test_acc {history[-1][2]:.3f}" if history else ""
        if status == "FAILED":
            accuracy += f"  {record['tags'].get('failure_message', '')}"
    code = trial.process.returncode if trial.process is not None else None
    failed = f"  (exit {code}: see {trial.log_path})" if code else ""
    return f"{trial.cfg.tracking.run_name}: {status} in {minutes:.1f} min{accuracy}{failed}"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sweeps.offline", description=__doc__.splitlines()[0])
    p.add_argument("--grid", required=True)
    p.add_argument("--scale", default="gpu")
    p.add_argument("--seeds", default="1", help="a count K, or the seeds: 100,101")
    p.add_argument(
        "--only", action="append", default=[], metavar="KEY=VALUE", help="as sweeps/run.py's --only"
    )
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--presearch-seeds", default="", help="seeds of the pre-search that chose the budget")
    p.add_argument("--procs", type=int, default=4, help="trials at a time (default 4)")
    p.add_argument("--deadline-min", type=float, default=None, help="stop what still runs after this")
    p.add_argument("--out", required=True, type=Path, help="the archive to write (a .jsonl file)")
    p.add_argument(
        "--keep-weights", action="store_true", help="keep each trial's trained model beside the archive"
    )
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["trial"]:
        return record_trial(Path(argv[1]), Path(argv[2]), Path(argv[3]) if len(argv) > 3 else None)
    args = parse_args(argv)
    # a driver stopped with SIGTERM stops its trials on the way out (SIGKILL: the rerun stops them)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        presearch = tuple(int(s) for s in args.presearch_seeds.split(",") if s.strip())
        part = SweepPart(
            args.grid,
            args.scale,
            parse_seeds(args.seeds),
            parse_only(args.only),
            parse_set(args.sets),
            presearch,
            args.out.name.removesuffix(".jsonl"),
        )
        deadline = args.deadline_min * 60 if args.deadline_min else None
        paths = run_parts([part], args.out.parent, args.procs, deadline, keep_weights=args.keep_weights)
    except (ConfigError, SweepError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    failed = failed_trials(paths)
    if failed:
        print(f"error: {failed} trial(s) FAILED (their logs in {archive_work(args.out)})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
