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
archive is written all the same. There are no retries or checkpoints here: a lease is shorter than the
failures they guard against; Ray Tune does that on a cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arith.config import ConfigError, ExperimentConfig, parse_set
from arith.tracking.archive import FORMAT, VERSION
from arith.tracking.recorder import RunRecorder, new_run_id, now_ms, run_record
from arith.training.train import train
from experiments.grid import Grid
from sweeps.errors import SweepError
from sweeps.grids import get_grid, points
from sweeps.scales import Scale, get_scale
from sweeps.space import SweepLink, parse_seeds
from sweeps.storage import git_commit, machine, sweep_link, sweep_name, sweep_tags

#: pre-searches draw their seeds from here up, so the judged seeds (0 up) never chose their own budget
PRESEARCH_FIRST_SEED = 100
#: seconds between looks at the running trials
POLL_S = 1.0


@dataclass(frozen=True)
class SweepPart:
    """One sweep of a batch: a grid at a scale, with `--only` / `--set` values and its seeds."""

    grid: str
    scale: str
    seeds: int | tuple[int, ...]
    only: dict[str, str] = field(default_factory=dict)
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
        seeds = self.seeds if isinstance(self.seeds, int) else ",".join(map(str, self.seeds))
        words = [
            "python -m sweeps.offline",
            f"--grid {self.grid}",
            f"--scale {self.scale}",
            f"--seeds {seeds}",
        ]
        words += [f"--only {shlex.quote(f'{k}={v}')}" for k, v in self.only.items()]
        words += [f"--set {shlex.quote(f'{k}={v}')}" for k, v in self.sets.items()]
        if self.presearch_seeds:
            words.append(f"--presearch-seeds {','.join(map(str, self.presearch_seeds))}")
        return " ".join(words)


@dataclass
class Trial:
    """One trial of a part: its config file, its record file, its log and its process once started."""

    part: int
    cfg: ExperimentConfig
    folder: Path
    process: subprocess.Popen | None = None
    started: float = 0.0

    @property
    def stem(self) -> str:
        return f"{self.part:02d}-" + self.cfg.tracking.run_name.replace("=", "-").replace(",", "_")

    @property
    def record_path(self) -> Path:
        return self.folder / f"{self.stem}.run.json"

    def start(self) -> None:
        config_path = self.folder / f"{self.stem}.config.json"
        config_path.write_text(self.cfg.to_json())
        log = (self.folder / f"{self.stem}.log").open("w")
        command = [sys.executable, "-m", "sweeps.offline", "trial", str(config_path), str(self.record_path)]
        # its own process group: stopping it at the deadline stops whatever it started too
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.started = time.monotonic()

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
) -> list[Path]:
    """Run every trial of `parts` in one pool of `procs` processes and write one archive per part into
    `out_dir` (`<part name>.jsonl`); returns their paths. Stops what still runs after `deadline_s`. The
    trials' configs, records and logs go to `work` (default: `out_dir/trials`)."""
    start = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    work = work or out_dir / "trials"
    work.mkdir(parents=True, exist_ok=True)
    device, precision = machine()
    commit = commit or git_commit()
    parents, trials = [], []
    for index, part in enumerate(parts):
        grid, scale = part.resolved()
        parent_run_id = new_run_id()  # the executor names its runs: each trial is built nested under it
        configs = part.configs(sweep_link(grid, scale, parent_run_id, commit, part.presearch_seeds))
        _check_presearch(part, configs)
        tags = sweep_tags(grid, scale, len(configs), commit, part.presearch_seeds)
        tags |= {"executor": "sweeps.offline", "machine": device, "precision": precision}
        tags["command"] = part.command()
        parents.append(run_record(parent_run_id, sweep_name(grid.name, scale.name), None, {}, tags))
        trials += [Trial(index, cfg, work) for cfg in configs]
    print(f"{len(trials)} trials in {len(parts)} sweep(s), {procs} at a time on {device} ({precision})")
    waiting, running = list(trials), []
    try:
        while waiting or running:
            if deadline_s is not None and time.monotonic() - start > deadline_s:
                print(
                    f"deadline of {deadline_s / 60:.1f} min: stopping {len(running)} trial(s), "
                    f"{len(waiting)} not started",
                    flush=True,
                )
                break
            while waiting and len(running) < procs:
                trial = waiting.pop(0)
                trial.start()
                running.append(trial)
            for trial in [t for t in running if t.process.poll() is not None]:
                running.remove(trial)
                print(_trial_line(trial), flush=True)
            time.sleep(POLL_S)
    finally:
        for trial in running:
            trial.stop()
    paths = []
    for index, (part, parent) in enumerate(zip(parts, parents, strict=True)):
        records = [_read_record(t) for t in trials if t.part == index and t.record_path.exists()]
        path = out_dir / f"{part.name}.jsonl"
        write_archive(path, part.grid, parent, records)
        paths.append(path)
        print(f"wrote {path}: {len(records)} of {sum(t.part == index for t in trials)} trials recorded")
    return paths


def _check_presearch(part: SweepPart, configs: list[ExperimentConfig]) -> None:
    """A pre-search (its own seeds chose the budget) draws its seeds from PRESEARCH_FIRST_SEED up."""
    own = {cfg.train.seed for cfg in configs}
    if own & set(part.presearch_seeds) and min(own) < PRESEARCH_FIRST_SEED:
        raise SweepError(
            f"{part.name}: a pre-search uses seeds from {PRESEARCH_FIRST_SEED} up (got {sorted(own)}), so "
            "that the seeds judged later never chose their own budget"
        )


def _read_record(trial: Trial) -> dict[str, Any]:
    """A trial's record; one that was stopped (or died) before it ended is KILLED as of now."""
    record = json.loads(trial.record_path.read_text())
    if record["status"] == "RUNNING":
        record["status"], record["end_time"] = "KILLED", now_ms()
    return record


def _trial_line(trial: Trial) -> str:
    minutes = (time.monotonic() - trial.started) / 60
    status, accuracy = "no record", ""
    if trial.record_path.exists():
        record = json.loads(trial.record_path.read_text())
        status = record["status"]
        history = record["metrics"].get("test_acc")
        accuracy = f"  test_acc {history[-1][2]:.3f}" if history else ""
    code = trial.process.returncode if trial.process is not None else None
    failed = f"  (exit {code}: see {trial.folder / (trial.stem + '.log')})" if code else ""
    return f"{trial.cfg.tracking.run_name}: {status} in {minutes:.1f} min{accuracy}{failed}"


def write_archive(path: Path, experiment: str, parent: dict[str, Any], trials: list[dict[str, Any]]) -> None:
    """The sweep archive of `arith.tracking.archive`: a header, the parent run, then its trial runs by
    start."""
    trials = sorted(trials, key=lambda r: (r["start_time"] or 0, r["run_name"]))
    statuses = {r["status"] for r in trials}
    started = int(parent["tags"].get("trials", len(trials)))
    if "FAILED" in statuses:
        status = "FAILED"
    elif statuses <= {"FINISHED"} and len(trials) == started:
        status = "FINISHED"
    else:
        status = "KILLED"
    parent = {**parent, "status": status, "end_time": now_ms()}
    header = {"format": FORMAT, "version": VERSION, "experiment": experiment, "trials": len(trials)}
    with path.open("w", encoding="utf-8") as out:
        for line in (header, parent, *trials):
            out.write(json.dumps(line) + "\n")


def record_trial(config_path: Path, record_path: Path) -> int:
    """One trial in this process, recorded to `record_path` (what `run_parts` starts per trial)."""
    cfg = ExperimentConfig.from_dict(json.loads(config_path.read_text()))
    train(cfg, tracker=RunRecorder(cfg, record_path))
    return 0


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m sweeps.offline", description=__doc__.splitlines()[0])
    p.add_argument("--grid", required=True)
    p.add_argument("--scale", default="gpu")
    p.add_argument("--seeds", default="1", help="a count K, or the seeds: 100,101")
    p.add_argument("--only", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--presearch-seeds", default="", help="seeds of the pre-search that chose the budget")
    p.add_argument("--procs", type=int, default=4, help="trials at a time (default 4)")
    p.add_argument("--deadline-min", type=float, default=None, help="stop what still runs after this")
    p.add_argument("--out", required=True, type=Path, help="the archive to write (a .jsonl file)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["trial"]:
        return record_trial(Path(argv[1]), Path(argv[2]))
    args = parse_args(argv)
    try:
        presearch = tuple(int(s) for s in args.presearch_seeds.split(",") if s.strip())
        part = SweepPart(
            args.grid,
            args.scale,
            parse_seeds(args.seeds),
            parse_set(args.only),
            parse_set(args.sets),
            presearch,
            args.out.name.removesuffix(".jsonl"),
        )
        deadline = args.deadline_min * 60 if args.deadline_min else None
        run_parts([part], args.out.parent, args.procs, deadline)
    except (ConfigError, SweepError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
