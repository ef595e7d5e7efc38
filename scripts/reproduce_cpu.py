"""Run the `cpu` miniature of every grid in sequence, then regenerate docs/RESULTS.md from the MLflow store.

    python scripts/reproduce_cpu.py                       # every planned sweep, then the report
    python scripts/reproduce_cpu.py --grids nl_mix        # one sweep, then the report
    python scripts/reproduce_cpu.py --report-only         # only rewrite docs/RESULTS.md from the store

Each sweep is `sweeps/run.py --scale cpu` into one local store (default runs/cpu/mlflow.db). After a sweep
the script tags its parent run with the command, the machine and the wall time, so the report is rebuilt
from the store alone: a grid with no sweep in the store is listed as not yet run, with the reason, unless
the earlier report (--out) has its section: that is kept as it was, marked "not re-judged" (its store is
elsewhere, so the current analysis cannot read it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from analysis.findings import CLAIMS  # noqa: E402
from analysis.load import find_parent, load_sweep, sweep_runs  # noqa: E402
from analysis.report import Analysis, analyse, render  # noqa: E402
from arith.store import client as _client  # noqa: E402
from sweeps.grids import GRIDS  # noqa: E402

TAG_COMMAND, TAG_MACHINE, TAG_WALL = "reproduce.command", "reproduce.machine", "reproduce.wall_s"


@dataclass(frozen=True)
class Planned:
    """One cpu sweep of the reproduction: which grid, which of its points, which seeds, and why.

    A grid may have several: parts of its study run apart (seeds added later, costly points alone); the
    report reads the latest sweep of each part as one."""

    grid: str
    #: a count K (seeds 0..K-1) or explicit seeds, to add seeds to an earlier part
    seeds: int | tuple[int, ...] = 3
    only: tuple[str, ...] = ()
    #: what this sweep is for, or why part of the grid is left out
    note: str = ""
    #: shown only while the store has no finished sweep of the grid: what is known about running it
    why_not_run: str = ""

    @property
    def seed_values(self) -> list[int]:
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    def sweep_args(self) -> list[str]:
        """What identifies this part: sweeps/run.py's arguments less where it stores its results."""
        seeds = str(self.seeds) if isinstance(self.seeds, int) else ",".join(map(str, self.seeds))
        args = ["--grid", self.grid, "--scale", "cpu", "--seeds", seeds]
        for only in self.only:
            args += ["--only", only]
        return args

    def command(self, uri: str, storage: str) -> list[str]:
        return ["sweeps/run.py", *self.sweep_args(), "--tracking-uri", uri, "--storage-path", storage]


def sweep_args_of(command: str) -> list[str]:
    """The `Planned.sweep_args` of a command a parent run was tagged with (the store's paths dropped)."""
    words = shlex.split(command)
    words = words[words.index("sweeps/run.py") + 1 :] if "sweeps/run.py" in words else words
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in ("--tracking-uri", "--storage-path"):
            skip = True
        else:
            out.append(word)
    return out


NO_PRETRAINED = "model.init=random"
NO_PRETRAINED_NOTE = "pretrained GPT-2 weights are not available offline: random-init points only"
FIRST_PRESET = (
    "run with the first cpu preset (at most 10 epochs: 1,570 steps here), before the per-task step "
    "budget; its learning-rate and sample-count choices carried over"
)
#: grids whose trials cost more than the session that wrote RESULTS.md had left: 3,000 steps of scratchpad
#: or dialogue lines (60-100 tokens) take 12-23 min a trial at ~12k tokens/s on one core
SCRATCHPAD_COST = (
    "3,000 steps of scratchpad lines (~2,800 tokens a step) take about 12 min a trial on one core"
)
PRESEARCH_ADD = (
    "the H200 pre-search of this preset (below) gives, at 3,000 steps, held-out accuracy on 5/6 digits "
    "(5 is the longest trained) of learned 0.33/0.00, none 0.67/0.10, random_embed 0.00/0.00"
)
PRESEARCH_ADD_LENGTH = (
    "the H200 pre-search (3,000 steps, batch 32, random init) gives on 5/6 digits basic 0.77/0.00, "
    "random space 0.03/0.00, recursive scratchpad 0.60/0.00: nothing extrapolates from scratch at this size"
)
NL_MIX_COST = (
    "9 points of 3,000 steps of dialogue lines take about 12 min a trial (~54 min for 1 seed). An "
    "exploratory H200 run of five of its points at 3,000 steps (before scripts/presearch.py; records not "
    "kept) gave 0.00-0.07 in every cell: at this size and "
    "budget the dialogue task is not learned, so it would not test the paper's claims"
)

NL_MIX_NOTE = (
    "one seed: 3,000 steps take ~14 min a trial on the dialogues alone, ~6 min mixed 1:9 with arithmetic"
)

#: in order: the tuning sweeps that chose the preset, then the paper's grids cheapest first
PLAN: tuple[Planned, ...] = (
    Planned("cpu_tune_reverse", seeds=1, note="chose the learning rate and sample count; " + FIRST_PRESET),
    Planned("cpu_tune_mul", seeds=1, note="the learning rate on multiplication; " + FIRST_PRESET),
    Planned("reverse_posembed", only=(NO_PRETRAINED,), note=NO_PRETRAINED_NOTE),
    Planned("mul_format", only=("data.max_digits=3",), note="the paper's 5-digit runs (3 digits at cpu)"),
    Planned(
        "mul_format",
        seeds=1,
        only=("data.max_digits=5",),
        note="the paper's 10-digit runs (5 at cpu scale), one seed: 6-7 min a trial; its 15- and 20-digit "
        "padding+reverse runs (7 and 8 at cpu) are left out: no claim compares them, 8-9 min a trial",
    ),
    Planned("mul_one_digit_weight", seeds=1, note="seed 0: the grid's 5-digit trials take ~6 min each"),
    Planned("mul_one_digit_weight", seeds=(1, 2), note="seeds 1 and 2, run after seed 0"),
    Planned("mul_simple_case", seeds=1, note="seed 0"),
    Planned("mul_simple_case", seeds=(1, 2), note="seeds 1 and 2, run after seed 0"),
    Planned(
        "add_posembed",
        seeds=1,
        note="seed 0: " + SCRATCHPAD_COST,
        why_not_run=SCRATCHPAD_COST + "; " + PRESEARCH_ADD,
    ),
    Planned("add_posembed", seeds=(1, 2), note="seeds 1 and 2: " + SCRATCHPAD_COST),
    Planned(
        "add_length",
        seeds=1,
        only=(NO_PRETRAINED,),
        note=NO_PRETRAINED_NOTE + "; seed 0: scratchpad lines make 10-15 min trials",
        why_not_run="4 random-init points of 10-15 min a trial; " + PRESEARCH_ADD_LENGTH,
    ),
    Planned(
        "add_length",
        seeds=(1, 2),
        only=(NO_PRETRAINED,),
        note=NO_PRETRAINED_NOTE + "; seeds 1 and 2, run after seed 0",
    ),
    Planned(
        "position_schemes",
        seeds=1,
        note="one seed: a new experiment, no claim of the paper",
        why_not_run="10 points of 3-5 min a trial, about 21 min for one seed",
    ),
    Planned("nl_mix", seeds=1, note=NL_MIX_NOTE, why_not_run=NL_MIX_COST),
    Planned(
        "nl_mix",
        seeds=(1, 2),
        only=("model.position=learned",),
        note="seeds 1 and 2 of the learned-position points, whose gaps the first two claims are about",
    ),
)


def machine() -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{platform.processor() or platform.machine()}, {cpus} CPU cores, {platform.system()}"


def repo_relative(command: str) -> str:
    """A command with this machine's folders dropped from its store paths (sqlite:////x/y/runs/cpu/... ->
    sqlite:///runs/cpu/...), so that RESULTS.md reads the same on every clone."""
    command = re.sub(r"sqlite:////\S*?/(runs/\S+)", r"sqlite:///\1", command)
    return re.sub(r"(--storage-path )/\S*?/(runs/\S+)", r"\1\2", command)


def run_sweep(plan: Planned, uri: str, storage: str) -> None:
    """One sweep via sweeps/run.py; on success its parent run is tagged with command, machine, wall time."""
    cmd = plan.command(uri, storage)
    shown = repo_relative("python " + shlex.join(cmd))
    print(f"\n=== {plan.grid}: {shown}", flush=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, *cmd], cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    client = _client(uri)
    parent = find_parent(client, plan.grid)
    client.set_tag(parent.info.run_id, TAG_COMMAND, shown)
    client.set_tag(parent.info.run_id, TAG_MACHINE, machine())
    client.set_tag(parent.info.run_id, TAG_WALL, f"{wall:.0f}")


def reproduced(client, grid: str) -> list:
    """The finished sweeps of `grid` this script ran (parent runs tagged with their command), latest first."""
    return [run for run in sweep_runs(client, grid) if TAG_COMMAND in run.data.tags]


def part_runs(client, grid: str) -> list[tuple[Planned, object | None]]:
    """Each planned part of `grid` with the latest sweep that ran exactly it (None when none has)."""
    sweeps = reproduced(client, grid)
    out = []
    for plan in (p for p in PLAN if p.grid == grid):
        runs = [r for r in sweeps if sweep_args_of(r.data.tags[TAG_COMMAND]) == plan.sweep_args()]
        out.append((plan, runs[0] if runs else None))
    return out


def grids() -> list[str]:
    return list(dict.fromkeys(plan.grid for plan in PLAN))


@dataclass(frozen=True)
class GridResult:
    """One grid of the plan: its parts with the sweep that ran each (None where none has), and the
    analysis of all its run parts read as one sweep (None when no part has run)."""

    grid: str
    parts: list[tuple[Planned, object | None]]
    analysis: Analysis | None


def grid_results(uri: str) -> list[GridResult]:
    """Every grid of the plan, analysed once (the summary and its section both read the analysis)."""
    client = _client(uri)
    out = []
    for grid in grids():
        parts = part_runs(client, grid)
        ids = [run.info.run_id for _, run in parts if run is not None]
        out.append(GridResult(grid, parts, analyse(load_sweep(grid, uri, ids)) if ids else None))
    return out


def section(result: GridResult) -> str:
    """The grid's part of RESULTS.md: how each part was run, then the analysis report of all parts read as
    one; or why it was not run."""
    grid, parts = result.grid, result.parts
    if result.analysis is None:
        why = "; ".join(n for plan, _ in parts for n in (plan.note, plan.why_not_run) if n)
        why = why + "; " if why else ""
        return (
            f"## {grid}\n\n**Not yet run** at cpu scale ({why}the CPU time of the sessions that "
            "wrote this file went to the sweeps above).\n"
        )
    body = render(result.analysis, "markdown")
    # drop the report's title (the grid's heading replaces it) and put its headings one level down
    body = "\n".join("#" + line if line.startswith("#") else line for line in body.split("\n")[1:])
    ran = [run for _, run in parts if run is not None]
    lines = [f"## {grid}", ""]
    if len(parts) > 1:
        lines += [f"Read as one sweep from {len(ran)} part(s) of the plan, each run by its own command:", ""]
    for plan, run in parts:
        if run is None:
            lines.append(
                f"- **not yet run**: `{shlex.join(plan.sweep_args())}`"
                + (f" ({plan.note})" if plan.note else "")
            )
            continue
        tags = run.data.tags
        started = datetime.fromtimestamp(run.info.start_time / 1000, tz=timezone.utc)
        lines += [
            f"- command: `{repo_relative(tags[TAG_COMMAND])}`",
            f"  - wall time: {int(tags[TAG_WALL]) / 60:.1f} min on {tags[TAG_MACHINE]} "
            f"(two 1-CPU trials at a time), started {started:%Y-%m-%d %H:%M} UTC",
            f"  - seeds: {', '.join(map(str, plan.seed_values))}",
        ]
        if plan.note:
            lines.append(f"  - note: {plan.note}")
    lines.append("\nEvery number below is the mean over the seeds each point has.")
    return "\n".join(lines) + "\n" + body


def summary(results: list[GridResult], carried: dict[str, str] | None = None) -> str:
    """One line per claim of the paper: its verdict on the grid's reported sweeps, "not re-judged" for a
    section carried over from the earlier report, or that it was not run."""
    carried = carried or {}
    lines = ["## Findings at a glance", "", VERDICT_RULES, "", "| grid | claim | status |", "|---|---|---|"]
    for result in results:
        if result.analysis is not None:
            lines += [f"| {result.grid} | {f.claim} | **{f.status}** |" for f in result.analysis.findings]
        elif result.grid in carried:
            lines += [
                f"| {result.grid} | {claim} | {status} |"
                for claim, status in carried_claims(carried[result.grid])
            ]
        elif any(claim.grid == result.grid for claim in CLAIMS):
            lines.append(f"| {result.grid} | all of its claims | not yet run |")
    return "\n".join(lines) + "\n"


VERDICT_RULES = (
    "Verdicts (analysis/findings.py): **not testable** unless every compared model learned the task in "
    "range (mean accuracy >= 0.9 on the in-range cells each claim names) and, with >= 3 seeds, the "
    "difference is clear of two standard errors over trials; **held** / **not held** when the claim's "
    "difference is more than 2 SE above zero / at most zero even 2 SE up, with >= 3 seeds on every "
    "compared point; **suggests held** / **suggests not held** with fewer seeds (the sign only); "
    "**not re-judged**: a section measured earlier whose store is not on this machine, its earlier "
    "status shown for reference only."
)
#: the mark of a section carried over from an earlier report
NOT_REJUDGED = "not re-judged"
CARRIED_NOTE = (
    "**Measured at stop 11 under the previous rules; not re-judged: its store was not carried to this "
    "machine.** The tables are as measured then. Its findings were judged by the rules of that time (a "
    "claim held or not on the seed means alone, whether or not the models had learned the task, with no "
    "spread over seeds), so each reads **not re-judged** here, the earlier status kept for reference."
)
#: what else a carried section must say, by grid
CARRIED_EXTRA = {
    "nl_mix": " Its dialogue-context accuracies were scored before the evaluation decoded the whole reply "
    "(issue 13): replies were cut off at the reference reply's length + 4 tokens, before most templates "
    "reach the sum, so they understate what the models wrote.",
}
_STATUS_CELL = re.compile(r"\| \*\*(held|not held|not testable)\*\* \|")
_CARRIED_ROW = re.compile(r"^\| (.+?) \| (\*\*not re-judged\*\* \(earlier: [^)]*\)) \|")


def previous_sections(text: str, names: list[str]) -> dict[str, str]:
    """The `## grid` sections of an earlier report, for the grids in `names`."""
    sections: dict[str, str] = {}
    parts = re.split(r"(?m)^(?=## )", text)
    for part in parts:
        heading = part.split("\n", 1)[0].removeprefix("## ").strip()
        if heading in names:
            sections[heading] = part.rstrip() + "\n"
    return sections


def carried_section(grid: str, text: str) -> str | None:
    """An earlier section kept, marked not re-judged (None when it held no measurement)."""
    if "**Not yet run**" in text:
        return None
    text = repo_relative(text)
    if CARRIED_NOTE in text:
        return text
    heading, body = text.split("\n", 1)
    body = _STATUS_CELL.sub(lambda m: f"| **{NOT_REJUDGED}** (earlier: {m.group(1)}) |", body)
    note = CARRIED_NOTE + CARRIED_EXTRA.get(grid, "")
    if GRIDS[grid].scale_digits and "**difference**" in body:
        body = drop_blocks(body, ("**paper**", "**difference**"))
        note += UNLIKE_CELLS
    return f"{heading}\n\n{note}\n{body}"


UNLIKE_CELLS = (
    " The paper's numbers and the differences printed with these tables then put each cell beside the "
    "paper cell of the same digit count, though at this scale it stands for another (3 digits for the "
    "paper's 5): they are left out here."
)


def drop_blocks(body: str, names: tuple[str, ...]) -> str:
    """The markdown without the blocks (a bold name line, then its table) named in `names`."""
    out, skipping = [], False
    for line in body.split("\n"):
        if line.startswith(("**", "#")):
            skipping = line.strip() in names
        if not skipping:
            out.append(line)
    return "\n".join(out)


def carried_claims(section_text: str) -> list[tuple[str, str]]:
    """(claim, status) rows of a carried section's findings table."""
    return [(m.group(1), m.group(2)) for line in section_text.splitlines() if (m := _CARRIED_ROW.match(line))]


PRESEARCH = ROOT / "docs" / "presearch"
PRESEARCH_INTRO = """## Pre-search of the preset

`python scripts/presearch.py --grid GRID --scale cpu --set ... --procs N --out docs/presearch/GRID.jsonl`
runs a grid's trials in a process pool with tracking off (the lent GPU machines have no Ray or MLflow),
one JSON line a trial; the records below are committed in docs/presearch/, seed 0.

- `cpu_tune_steps`, `cpu_tune_hash` (a lent H200, 12 trials at a time, bf16 autocast): the first preset
  (at most 10 epochs, 1,570 steps on these grids) left random tags, scratchpad addition and
  multiplication barely trained. 3,000 steps is where they learn something and a trial still takes 2.5-6
  min on one CPU core (scratchpad addition ~12); 8-dim tags learned where 32 (the default quarter of the
  width) barely did; 4 and 8 are within one seed's noise of each other and 8 (two dimensions a head) was
  kept.
- `nl_mix` (this 2-core CPU, two trials at a time, learned positions only): at 1/30 of the paper's data
  (442 dialogues) five points learned nothing (0.00-0.07; an exploratory H200 run, records not kept); with
  all 13,240 dialogues and 10,000, then the paper's 120,000, arithmetic lines mixed in, the model writes a
  well-formed teacher's reply but no right sum, not even on 2-digit pure addition: plain (most significant
  digit first) addition is not learned by this model in 3,000 steps. The preset keeps the dialogue data
  whole; the grid's sweep below is at that preset.
- `cpu_tune_plain_add` (this CPU, one trial at a time beside a two-trial sweep): nl_mix's arithmetic alone
  (its 120,000 lines of 1-5-digit plain sums, no dialogue). After 3,000 steps 2-digit sums are at 0.06,
  0.16 with a digit curriculum over the first half of the steps (`train.curriculum=0.5`); after 9,000,
  0.74/0.12/0.00/0.00 on 2/3/4/5 digits, the curriculum no better. nl_mix's claims are about 4-5-digit
  sums, which this model has not begun to learn at three times the budget: a 9,000-step nl_mix trial
  (dialogue lines are longer) takes ~20 min on a core, 9 trials ~1.7 h a seed, and would still not
  test them. At `cpu` scale nl_mix stays measured at 3,000 steps and reported as not held; its claims
  need a GPU run (the `paper` scale, or `--set train.max_steps=...` on a lent machine).
"""


def markdown(frame: pd.DataFrame) -> str:
    """A frame as a GitHub table (blank for missing values), without pandas' optional tabulate."""
    shown = frame.astype(object).where(frame.notna(), "")
    lines = ["| " + " | ".join(map(str, shown.columns)) + " |", "|" + "---|" * len(shown.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in shown.itertuples(index=False)]
    return "\n".join(lines)


def presearch_tables(folder: Path = PRESEARCH) -> str:
    """The pre-search records as tables: one row per trial, its --set, overall accuracy and per test context
    (past the longest trained length, or on the longest factor, where the test goes there), the machine."""
    parts = [PRESEARCH_INTRO]
    for path in sorted(folder.glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        rows = []
        order = sorted(records, key=lambda r: (json.dumps(r.get("set", {})), r["point"], r.get("seed", 0)))
        for rec in order:
            cells = pd.DataFrame(rec.get("cells", []))
            row = {"point": rec["point"]}
            if any(r.get("set") for r in records):
                row["--set"] = " ".join(f"{k}={v}" for k, v in rec.get("set", {}).items())
            row.update(test_acc=rec.get("test_acc"), steps=rec.get("steps"))
            if not cells.empty:
                longest = rec["config"]["data.max_digits"]
                if cells["row_digits"].notna().any():  # multiplication: the cells of the longest factor
                    hard = cells[cells[["row_digits", "col_digits"]].max(axis=1) == longest]
                    label = f"with a {longest}-digit factor"
                elif (cells["col_digits"] > longest).any():  # length generalisation: past the longest
                    hard, label = cells[cells["col_digits"] > longest], f"beyond {longest} digits"
                else:  # tested within the trained lengths (nl_mix): every cell, then the longest
                    hard, label = cells, "all"
                for context, frame in hard.groupby("context"):
                    row[f"{context}: {label}"] = round(frame["accuracy"].mean(), 3)
                if label == "all":
                    top = int(cells["col_digits"].max())
                    for context, frame in cells[cells["col_digits"] == top].groupby("context"):
                        row[f"{context}: {top} digits"] = round(frame["accuracy"].mean(), 3)
            row["train s"] = rec.get("train_seconds")
            row["machine"] = rec.get("machine", "")
            rows.append(row)
        frame = pd.DataFrame(rows)
        last = ["train s", "machine"]
        parts.append(f"### {path.stem}\n\n{markdown(frame[[c for c in frame if c not in last] + last])}\n")
    return "\n".join(parts)


def write_results(uri: str, out: Path, intro: str) -> None:
    results = grid_results(uri)
    earlier = previous_sections(out.read_text(), grids()) if out.exists() else {}
    carried = {
        r.grid: text
        for r in results
        if r.analysis is None and r.grid in earlier and (text := carried_section(r.grid, earlier[r.grid]))
    }
    sections = [carried.get(r.grid) or section(r) for r in results]
    parts = [intro.rstrip() + "\n", summary(results, carried), presearch_tables(), *sections]
    out.write_text("\n".join(parts))
    print(f"wrote {out}")


INTRO = """# Results at `cpu` scale

Generated by `python scripts/reproduce_cpu.py --report-only` from the MLflow store that
`python scripts/reproduce_cpu.py` fills (runs/cpu/mlflow.db): every number below is from this project's
own sweeps at the `cpu` scale of `sweeps/scales.py`, with the command, machine, wall time and seeds of
each. Tables put the sweep's seed-mean accuracies beside the paper's where the paper has a table (figures
have none), and the paper's claims are checked by the `analysis` package. Grids without a sweep in the
store are listed as not yet run, or, where the earlier report measured them, kept and marked not re-judged.

## Judged by the rules of issue 13

Issue 13 changed what a verdict means and how replies are read. The evaluation now decodes each reply
whole (to end of text or end of line, capped at the longest reply the data can produce); before, a
dialogue reply was cut off at the reference reply's length + 4 tokens, usually before the sum. A claim is
now **not testable** unless every model it compares learned the task in range and the seeds can tell the
difference (rules at "Findings at a glance", in full in analysis/findings.py); tables at this scale pair
each cell with the paper cell it stands for ("3 (paper 5)") and subtract only that one. The store the
earlier sections were measured into (runs/cpu/mlflow.db of stop 11) is not on the machine that applied
these rules, so only the sweeps re-run here are re-judged; every other section is kept as it was measured
and marked **not re-judged**. The cheapest testable grid, reverse_posembed (28.9 min for its 15 trials on
a quiet 2-core machine at stop 11), was started again there and stopped unfinished: shared by five
sessions (load average 11-23 on 2 cores), its first two trials had reached step 945 of 3,000 after 31 min.
`python scripts/reproduce_cpu.py --grids reverse_posembed --rerun` re-judges it on a quiet machine.

## The `cpu` preset

A 4-layer, 4-head, 128-wide GPT-2 trained from scratch with the loss on the answer tokens only; batch 64, 5%
warmup then linear decay; the paper's learning rate x 50; 1/30 of the paper's samples (at most 10,000; nl_mix
keeps the paper's 13,240 dialogues and 120,000 mixed-in lines whole); digit counts above 2 count a third (5 ->
3, 10 -> 5, 20 -> 8); random tags of 8 dimensions; and a budget of 3,000 optimiser steps a trial for every
task, in place of the paper's epochs (the epochs are whatever the budget needs over the scaled training set;
nl_mix is still read at half and at the end). The tuning sweeps `cpu_tune_reverse` and `cpu_tune_mul` below
chose the learning rate and sample count with the first preset (at most 10 epochs); the pre-search below chose
the step budget and the tag width. The loss on the answer only replaced the first guess's whole-line loss
because it learned in fewer steps (configs/add3_padding_reverse.yaml, benchmarks/bench_train.py).

## Learning check (CI)

`pytest tests/test_learning.py` (marked slow) trains the tiny GPT-2 on up to 3-digit addition with the
padded, reversed answer until a held-out probe reaches 98% (at most 800 steps), then the plain answer for
the same number of steps, and checks padded >= 95% and basic < 0.5 < padded. Its thresholds and timing are
stated in the test.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/reproduce_cpu.py", description=__doc__)
    parser.add_argument("--grids", default="", help="comma-separated grids to run (default: the whole plan)")
    parser.add_argument("--store", default="runs/cpu", help="folder of the MLflow store and Ray results")
    parser.add_argument("--out", default="docs/RESULTS.md")
    parser.add_argument("--report-only", action="store_true", help="do not run sweeps, only rewrite --out")
    parser.add_argument(
        "--rerun", action="store_true", help="run the chosen parts again even where the store has them"
    )
    args = parser.parse_args(argv)
    store = (ROOT / args.store).resolve()
    store.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{store / 'mlflow.db'}"
    chosen = [g for g in args.grids.split(",") if g] or grids()
    unknown = [g for g in chosen if g not in grids()]
    if unknown:
        parser.error(f"unknown grid(s) {unknown}; choose from: {', '.join(grids())}")
    if not args.report_only:
        client = _client(uri)
        for grid in chosen:
            for plan, run in part_runs(client, grid):
                if run is not None and not args.rerun:
                    print(f"=== {grid}: `{shlex.join(plan.sweep_args())}` is in the store (--rerun: again)")
                    continue
                run_sweep(plan, uri, str(store / "ray_results"))
    write_results(uri, ROOT / args.out, INTRO)
    return 0


if __name__ == "__main__":
    sys.exit(main())
