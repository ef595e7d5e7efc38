"""The `gpu` scale's plan, banked batch by batch from lent GPUs.

    python -m lab.bank status                 # the plan, and which batches are banked
    python -m lab.bank next --out DIR         # run the next batch not banked (on the lent GPU)
    python -m lab.bank next --out DIR --tiny  # the same path on a CPU at a tiny budget (CI does this)
    python -m lab.bank next --out DIR --minutes 4  # a shorter deadline: what a lease has left

A GPU is lent to this project now and then, for about 15 minutes, with PyTorch but without Ray or MLflow.
docs/results/gpu_plan.yaml says what each lease should run, in order: a batch is a few sweep parts run
together by `sweeps.offline` (one pool, one deadline), each part one sweep archive. A batch is banked when
the archives of all its parts are committed under docs/results/gpu/<batch>/; `next` runs the first batch
that is not (passing over one whose parts are not written yet), so one prepared command serves every
lease and the device minutes go to results.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from arith.config import ConfigError
from arith.tracking.schema import LOSS_METRIC, TEST_ACC_METRIC
from lab.gpu_plan import GPU_PLAN, PlannedPart, load_gpu_plan
from sweeps.errors import SweepError
from sweeps.offline import SweepPart, run_parts

BANK = GPU_PLAN.parent / "gpu"
#: what `--tiny` sets on every part: the batch's path end to end in a minute on a CPU, not its results
TINY = {
    "model.preset": "nano",
    "train.max_steps": 6,
    "train.batch_size": 16,
    "data.train_samples": 64,
    "data.test_per_cell": 1,
    "train.eval_batch_size": 64,
    "train.eval_epochs": "[1]",
}


@dataclass(frozen=True)
class Batch:
    """What one lease runs: sweep parts in one pool of `procs` processes, stopped after `minutes`."""

    name: str
    what: str
    minutes: float
    procs: int
    parts: tuple[SweepPart, ...]
    chosen_by: str = ""

    def archive(self, part: SweepPart, bank: Path = BANK) -> Path:
        return bank / self.name / f"{part.name}.jsonl"

    def banked(self, bank: Path = BANK) -> bool:
        return bool(self.parts) and all(self.archive(part, bank).exists() for part in self.parts)


def runnable(part: PlannedPart) -> SweepPart:
    """The plan's part as the executor runs it."""
    return SweepPart(
        grid=part.grid,
        scale=part.scale,
        seeds=part.seeds,
        only={key: (value,) for key, value in part.only.items()},
        sets=dict(part.sets),
        presearch_seeds=part.presearch_seeds,
        label=part.label,
    )


def load_batches(path: Path = GPU_PLAN) -> list[Batch]:
    """The plan's batches, in order, their parts ready to run (`lab.gpu_plan` reads and checks it)."""
    return [
        Batch(b.name, b.what, b.minutes, b.procs, tuple(runnable(p) for p in b.parts), b.chosen_by)
        for b in load_gpu_plan(path)
    ]


def next_batch(batches: list[Batch], bank: Path = BANK) -> Batch | None:
    """The first batch not banked whose parts are written; None when there is none. A batch whose parts
    wait on an earlier batch's results (b's budget on a's pre-search) is passed over, so a lease lent
    before a session has written them still runs the next independent batch."""
    for batch in batches:
        if batch.parts and not batch.banked(bank):
            return batch
    return None


def status(batches: list[Batch], bank: Path = BANK) -> str:
    lines = []
    for batch in batches:
        state = "banked" if batch.banked(bank) else ("parts to write" if not batch.parts else "to run")
        lines.append(f"{batch.name}: {state} ({len(batch.parts)} parts, {batch.minutes:g} min)")
        lines.append(f"    {batch.what}")
        for part in batch.parts:
            mark = "x" if batch.archive(part, bank).exists() else " "
            lines.append(f"    [{mark}] {part.name}: {part.command()}")
    return "\n".join(lines)


def run_next(
    out: Path, tiny: bool = False, bank: Path = BANK, plan: Path = GPU_PLAN, minutes: float | None = None
) -> list[Path]:
    """Run the next batch into `out` (its archives) and print a summary of each trial. `minutes` replaces
    the batch's deadline: a lease with less time left than the batch asks for stops its trials in time to
    write their archives, and a second call on the same warm machine resumes them from the work folder
    beside `out` (a fresh machine starts them again)."""
    batch = next_batch(load_batches(plan), bank)
    if batch is None:
        raise SweepError(f"no batch to run: every batch of {plan} is banked or has no parts yet")
    parts = batch.parts
    if tiny:
        parts = tuple(
            replace(part, sets={**part.sets, **{k: str(v) for k, v in TINY.items()}}) for part in parts
        )
    print(f"batch {batch.name}: {batch.what}")
    minutes = minutes or (None if tiny else batch.minutes)
    paths = run_parts(
        parts, out, batch.procs, minutes * 60 if minutes else None, work=out.parent / "bank-work" / batch.name
    )
    for path in paths:
        print(archive_summary(path))
    return paths


def archive_summary(path: Path) -> str:
    """One line a trial of an archive: point, seed, status, steps and test accuracy at each evaluation."""
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    runs = [json.loads(line) for line in lines[2:]]
    out = [f"{path.name}:"]
    for run in runs:
        history = run["metrics"].get(TEST_ACC_METRIC, [])
        # a trial the deadline stopped has no epochs_done: its last logged training step says how far it got
        done = run["metrics"].get("epochs_done") or run["metrics"].get(LOSS_METRIC) or [[0, 0, 0]]
        steps = done[-1][0]
        accs = " ".join(f"{v:.3f}@{s}" for s, _, v in history)
        out.append(f"  {run['run_name']}: {run['status']}, {steps} steps, test_acc by epoch {accs or '-'}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.bank", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="the plan and what is banked")
    nxt = sub.add_parser("next", help="run the next batch that is not banked")
    nxt.add_argument("--out", required=True, type=Path, help="folder for the batch's archives")
    nxt.add_argument("--tiny", action="store_true", help="a tiny budget: the path, not the results")
    nxt.add_argument(
        "--minutes", type=float, default=None, help="deadline in place of the batch's (a lease's time left)"
    )
    args = p.parse_args(argv)
    try:
        if args.command == "status":
            print(status(load_batches()))
        else:
            run_next(args.out, args.tiny, minutes=args.minutes)
    except (ConfigError, SweepError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
