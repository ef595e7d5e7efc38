"""Run the `cpu` miniature of every grid in sequence, then regenerate docs/RESULTS.md from the MLflow store.

    python scripts/reproduce_cpu.py                       # every planned sweep, then the report
    python scripts/reproduce_cpu.py --grids nl_mix        # one sweep, then the report
    python scripts/reproduce_cpu.py --report-only         # only rewrite docs/RESULTS.md from the store

Each sweep is `sweeps/run.py --scale cpu` into one local store (default runs/cpu/mlflow.db). After a sweep
the script tags its parent run with the command, the machine and the wall time, so the report is rebuilt
from the store alone: a grid with no sweep in the store is listed as not yet run, with the reason.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from analysis.load import AnalysisError, _client, find_parent  # noqa: E402
from analysis.report import report  # noqa: E402

TAG_COMMAND, TAG_MACHINE, TAG_WALL = "reproduce.command", "reproduce.machine", "reproduce.wall_s"


@dataclass(frozen=True)
class Planned:
    """One cpu sweep of the reproduction: which grid, which of its points, how many seeds, and why."""

    grid: str
    seeds: int = 3
    only: tuple[str, ...] = ()
    #: what this sweep is for, or why part of the grid is left out
    note: str = ""

    def command(self, uri: str, storage: str) -> list[str]:
        cmd = ["sweeps/run.py", "--grid", self.grid, "--scale", "cpu", "--seeds", str(self.seeds)]
        for only in self.only:
            cmd += ["--only", only]
        return [*cmd, "--tracking-uri", uri, "--storage-path", storage]


NO_PRETRAINED = "model.init=random"
NO_PRETRAINED_NOTE = "pretrained GPT-2 weights are not available offline: random-init points only"

#: in order: the tuning sweeps that chose the preset, then the paper's grids cheapest first
PLAN: tuple[Planned, ...] = (
    Planned("cpu_tune_reverse", seeds=1, note="chose the cpu preset's learning rate and sample count"),
    Planned("reverse_posembed", only=(NO_PRETRAINED,), note=NO_PRETRAINED_NOTE),
    Planned("add_posembed"),
    Planned("nl_mix"),
    Planned(
        "cpu_tune_mul", seeds=1, note="the learning rate on multiplication, the hardest task at this size"
    ),
    Planned("mul_simple_case"),
    Planned("mul_format"),
    Planned("mul_one_digit_weight"),
    Planned("add_length", only=(NO_PRETRAINED,), note=NO_PRETRAINED_NOTE),
    Planned("position_schemes"),
)


def machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{platform.processor() or platform.machine()}, {cpus} CPU cores, {platform.system()}"


def run_sweep(plan: Planned, uri: str, storage: str) -> None:
    """One sweep via sweeps/run.py; on success its parent run is tagged with command, machine, wall time."""
    cmd = plan.command(uri, storage)
    shown = "python " + shlex.join(cmd)
    print(f"\n=== {plan.grid}: {shown}", flush=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, *cmd], cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    client = _client(uri)
    parent = find_parent(client, plan.grid)
    client.set_tag(parent.info.run_id, TAG_COMMAND, shown)
    client.set_tag(parent.info.run_id, TAG_MACHINE, machine())
    client.set_tag(parent.info.run_id, TAG_WALL, f"{wall:.0f}")


def section(plan: Planned, uri: str) -> str:
    """The grid's part of RESULTS.md: how it was run, then the analysis report; or why it was not run."""
    try:
        parent = find_parent(_client(uri), plan.grid)
    except AnalysisError:
        parent = None
    if parent is None or TAG_COMMAND not in parent.data.tags:
        why = plan.note + "; " if plan.note else ""
        return f"## {plan.grid}\n\n**Not yet run** at cpu scale ({why}no time left in this session).\n"
    tags = parent.data.tags
    started = datetime.fromtimestamp(parent.info.start_time / 1000, tz=timezone.utc)
    body = report(plan.grid, uri, parent.info.run_id, log_artifacts=False)
    body = body.split("\n", 1)[1].replace("\n## ", "\n### ")  # our own heading; its sections one level down
    seeds = ", ".join(str(s) for s in range(plan.seeds))
    lines = [
        f"## {plan.grid}",
        "",
        f"- command: `{tags[TAG_COMMAND]}`",
        f"- wall time: {int(tags[TAG_WALL]) / 60:.1f} min on {tags[TAG_MACHINE]} "
        f"(two 1-CPU trials at a time), started {started:%Y-%m-%d %H:%M} UTC",
        f"- seeds: {seeds} (every number below is the mean over these seeds)",
    ]
    if plan.note:
        lines.append(f"- note: {plan.note}")
    return "\n".join(lines) + "\n" + body


def write_results(uri: str, out: Path, intro: str) -> None:
    parts = [intro.rstrip() + "\n", *(section(plan, uri) for plan in PLAN)]
    out.write_text("\n".join(parts))
    print(f"wrote {out}")


INTRO = """# Results at `cpu` scale

Measured by `python scripts/reproduce_cpu.py` (which regenerates this file from its MLflow store); every
number is from this project's own sweeps at the `cpu` scale of `sweeps/scales.py`. Each grid's tables put
the sweep's accuracies beside the paper's where the paper has a table, and the findings are checked by the
`analysis` package. Grids not yet run are listed as such. See "Learning check" in the README of the tests
(`tests/test_learning.py`) for the CI-sized direction test.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/reproduce_cpu.py", description=__doc__)
    parser.add_argument("--grids", default="", help="comma-separated grids to run (default: the whole plan)")
    parser.add_argument("--store", default="runs/cpu", help="folder of the MLflow store and Ray results")
    parser.add_argument("--out", default="docs/RESULTS.md")
    parser.add_argument("--report-only", action="store_true", help="do not run sweeps, only rewrite --out")
    args = parser.parse_args(argv)
    store = (ROOT / args.store).resolve()
    store.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{store / 'mlflow.db'}"
    known = {plan.grid: plan for plan in PLAN}
    chosen = [g for g in args.grids.split(",") if g] or list(known)
    unknown = [g for g in chosen if g not in known]
    if unknown:
        parser.error(f"unknown grid(s) {unknown}; choose from: {', '.join(known)}")
    if not args.report_only:
        for grid in chosen:
            run_sweep(known[grid], uri, str(store / "ray_results"))
    write_results(uri, ROOT / args.out, INTRO)
    return 0


if __name__ == "__main__":
    sys.exit(main())
