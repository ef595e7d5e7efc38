"""The cpu reproduction's plan (docs/results/plan.yaml) and where each of its parts is in a store.

A part is one sweep of `python -m lab.sweep --scale cpu` (sweeps/run.py with the lab's grids): a grid, its
seeds and `--only` values (or a slice of a recipe search, `--search`, where the search outlasts a session).
After it ran, `python -m lab.reproduce` tagged its parent run with the command (`reproduce.command`), the
machine and the wall time, and archived it in docs/results/sweeps/ (`arith.tracking.archive`). Here each part
is found again in a store by its command (less the store's paths), and the archives are imported into a
store that lacks them, so that docs/RESULTS.md is rebuilt on any clone (`lab.results`).
"""

from __future__ import annotations

import itertools
import re
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import yaml

from analysis.load import AnalysisError
from arith.config import ConfigError
from arith.overrides import parse_only
from arith.tracking.archive import export_sweep, import_sweep
from arith.tracking.commands import seeds_argument, sweep_identity
from arith.tracking.schema import GRID_TAG
from arith.tracking.store import client as store_client
from arith.tracking.store import sweep_runs

ROOT = Path(__file__).resolve().parent.parent
#: the report's fixed prose and the plan, kept as markdown and YAML beside the report they make
TEXTS = ROOT / "docs" / "results"
#: each part's latest sweep as a portable file, restored into the store before the report is written
ARCHIVES = TEXTS / "sweeps"
TAG_COMMAND, TAG_MACHINE, TAG_WALL = "reproduce.command", "reproduce.machine", "reproduce.wall_s"
#: the commits a part's sessions ran under ("; "-separated, in order): the sweep's start, then each resume's
TAG_COMMITS = "reproduce.commits"
#: on a part the plan ended before all its trials ran (`Planned.ended_early`): why
TAG_ENDED_EARLY = "reproduce.ended_early"


@dataclass(frozen=True)
class Planned:
    """One cpu sweep of the reproduction: which grid, which of its points, which seeds, and why.

    A grid may have several: parts of its study run apart (seeds added later, costly points alone); the
    report reads the latest sweep of each part as one."""

    grid: str
    #: a count K (seeds 0..K-1) or explicit seeds, to add seeds to an earlier part
    seeds: int | tuple[int, ...] = 3
    only: tuple[str, ...] = ()
    #: the scale: `cpu`, or `cpu_recipe` (each task's pre-searched recipe, experiments/recipes.py)
    scale: str = "cpu"
    #: sweeps/run.py --set values (a pre-search's readings along the run, say)
    sets: tuple[str, ...] = ()
    #: what this sweep is for, or why part of the grid is left out
    note: str = ""
    #: shown only while the store has no finished sweep of the grid: what is known about running it
    why_not_run: str = ""
    #: the core-minutes it is expected to cost (its trials' minutes x CPUs a trial), declared before it
    #: runs; None where none was (the report says "not declared" rather than state one after the fact)
    estimate_core_min: float | None = None
    #: why the part's sweep was stopped for good before all its trials ran (what the rest could not change);
    #: its stopped sweep is then archived as it stands, never resumed (`lab.run_part.end_part`)
    ended_early: str = ""
    #: a pre-search's choice rule (`lab.choice`): its grid's recipe is chosen only if every in-range
    #: cell of every seed reads at least this at the last evaluation; None where the part chooses nothing
    choose_if_at_least: float | None = None
    #: a recipe search's choice rule (`lab.choice`): the recipe it tried is chosen only if every
    #: configuration the part ran passed the gate, on every seed, at or before this optimiser step
    choose_if_gate_by_step: int | None = None
    #: when the part's choice rule was written, where not before its sweep started (the report says so
    #: rather than "declared before it ran"), e.g. "6 min after it started, before any reading above 0.00"
    rule_declared: str = ""
    #: the part is a slice of the recipe search `grid` (`python -m lab.sweep --search`, the lab's SEARCHES):
    #: a search longer than a session runs as parts, each archived when it ends, so that a machine lost
    #: between sessions loses at most the part in flight
    search: bool = False

    @property
    def seed_values(self) -> list[int]:
        return list(range(self.seeds)) if isinstance(self.seeds, int) else list(self.seeds)

    def still_to_run(self, run: object | None) -> bool:
        """Whether this part is work left: its sweep not run (`run` None: nothing in the store) and the
        plan not ended without it."""
        return run is None and not self.ended_early

    def sweep_args(self) -> list[str]:
        """What identifies this part: sweeps/run.py's arguments less where it stores its results."""
        what = ["--search", self.grid] if self.search else ["--grid", self.grid]
        args = [*what, "--scale", self.scale, "--seeds", self.seeds_arg]
        for only in self.only:
            args += ["--only", only]
        for value in self.sets:
            args += ["--set", value]
        return args

    @property
    def seeds_arg(self) -> str:
        """The seeds as sweeps/run.py's --seeds takes them: a count K, or a list `1,2`."""
        return seeds_argument(self.seeds)

    @property
    def seeds_name(self) -> str:
        """The seeds themselves (not the --seeds argument, where `1` is a count): `seed-0`, `seeds-0-2`,
        `seeds-1,3`."""
        seeds = self.seed_values
        if len(seeds) == 1:
            return f"seed-{seeds[0]}"
        if seeds == list(range(seeds[0], seeds[-1] + 1)):
            return f"seeds-{seeds[0]}-{seeds[-1]}"
        return "seeds-" + ",".join(map(str, seeds))

    @property
    def archive_name(self) -> str:
        """The file its latest sweep is archived in: grid, seeds and --only values, e.g.
        `mul_format__seed-0__data.max_digits=5.jsonl`."""
        scale = [] if self.scale == "cpu" else [self.scale]
        sets = [value.replace("[", "").replace("]", "").replace(",", "-") for value in self.sets]
        return "__".join([self.grid, *scale, self.seeds_name, *self.only, *sets]) + ".jsonl"

    def command(self, uri: str, storage: str) -> list[str]:
        """The part's sweep as Python's arguments: `python -m lab.sweep` (sweeps/run.py with the lab's
        grids and searches)."""
        return ["-m", SWEEP_MODULE, *self.sweep_args(), "--tracking-uri", uri, "--storage-path", storage]


#: what runs a part's sweep (`python -m lab.sweep`), and what ran the parts archived before it existed
SWEEP_MODULE, SWEEP_SCRIPT = "lab.sweep", "sweeps/run.py"


def store_uri(folder: str) -> str:
    """The reproduction's MLflow store in `folder` (relative to the checkout; made if missing)."""
    path = (ROOT / folder).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path / 'mlflow.db'}"


def sweep_args_of(command: str) -> list[str]:
    """The `Planned.sweep_args` of a command a parent run was tagged with: its sweep's arguments less
    where it ran (`sweep_identity`, the rule by which a stopped sweep's folder is found again)."""
    words = shlex.split(command)
    program = next((w for w in (SWEEP_MODULE, SWEEP_SCRIPT) if w in words), None)
    return sweep_identity(words[words.index(program) + 1 :] if program else words)


#: the fields of a part of docs/results/plan.yaml (the file's header says what each means); only `grid` is
#: required
PLAN_FIELDS = (
    "grid",
    "seeds",
    "only",
    "scale",
    "set",
    "note",
    "why_not_run",
    "estimate_core_min",
    "ended_early",
    "choose_if_at_least",
    "choose_if_gate_by_step",
    "rule_declared",
    "search",
)


def load_plan(path: Path) -> tuple[Planned, ...]:
    """The plan's parts, in order, from its YAML file; a part missing `grid` or with a field the plan does
    not know (a misspelt `estimate_core_min` would be read as "not declared") raises `ConfigError`, one
    line naming the part and field."""
    parts = yaml.safe_load(path.read_text()) or []
    for i, part in enumerate(parts):
        where = f"{path}: part {i + 1}"
        if not isinstance(part, dict) or "grid" not in part:
            raise ConfigError(f"{where}: missing field grid")
        if unknown := [k for k in part if k not in PLAN_FIELDS]:
            raise ConfigError(
                f"{where} ({part['grid']}): unknown field {', '.join(map(str, unknown))}; "
                f"known: {', '.join(PLAN_FIELDS)}"
            )
    return tuple(
        Planned(
            grid=part["grid"],
            seeds=part.get("seeds", 3) if isinstance(part.get("seeds", 3), int) else tuple(part["seeds"]),
            only=tuple(part.get("only", ())),
            scale=part.get("scale", "cpu"),
            sets=tuple(part.get("set", ())),
            note=part.get("note", ""),
            why_not_run=part.get("why_not_run", ""),
            estimate_core_min=part.get("estimate_core_min"),
            ended_early=part.get("ended_early", ""),
            choose_if_at_least=part.get("choose_if_at_least"),
            choose_if_gate_by_step=part.get("choose_if_gate_by_step"),
            rule_declared=part.get("rule_declared", ""),
            search=bool(part.get("search", False)),
        )
        for part in parts
    )


PLAN_FILE = TEXTS / "plan.yaml"
#: in order: the tuning sweeps that chose the preset, then the paper's grids cheapest first; none where the
#: package runs without its checkout's docs/ (a `pip install .`), which only --plan and the reproduction read
PLAN: tuple[Planned, ...] = load_plan(PLAN_FILE) if PLAN_FILE.is_file() else ()


def grids(plan: tuple[Planned, ...] = PLAN) -> list[str]:
    """The plan's grids, each once, in order."""
    return list(dict.fromkeys(part.grid for part in plan))


def seeds_of(ran: list[tuple[Planned, object]], finished: set[int] | None = None) -> str:
    """The seeds of a grid's run parts: "0, 1, 2", or per set of points where they differ ("0, 1, 2
    (data.max_digits=3); 0 (data.max_digits=5)"), the sets that ran the same seeds together; of a part
    ended early, only those of its `finished` trials."""
    by_points: dict[str, set[int]] = {}
    for plan, _ in ran:
        seeds = set(plan.seed_values)
        if plan.ended_early and finished is not None:
            seeds &= finished
        for point in points_named(plan.only):
            by_points.setdefault(point, set()).update(seeds)
    shown = {only: ", ".join(map(str, sorted(seeds))) for only, seeds in by_points.items()}
    if len(set(shown.values())) == 1:
        return next(iter(shown.values()))
    groups: dict[str, list[str]] = {}  # the sets of points that ran the same seeds, named once
    for only, seeds in shown.items():
        groups.setdefault(seeds, []).append(only or "every point")
    return "; ".join(
        seeds if onlys == ["every point"] else f"{seeds} ({', '.join(onlys)})"
        for seeds, onlys in groups.items()
    )


def points_named(only: tuple[str, ...]) -> list[str]:
    """The sets of points an `--only` list keeps, one label each: a setting named twice keeps either value
    (`arith.config.parse_only`), so ("model.position=none", "model.position=learned") is two labels, not one
    that reads as both at once; no `--only` is one empty label (every point)."""
    values = parse_only(only)
    pairs = [[f"{key}={value}" for value in vals] for key, vals in values.items()]
    return [" ".join(combo) for combo in itertools.product(*pairs)]


def repo_relative(command: str) -> str:
    """A command with this machine's folders dropped from its store paths (sqlite:////x/y/runs/cpu/... ->
    sqlite:///runs/cpu/...), so that RESULTS.md reads the same on every clone; a store outside any runs/
    folder names one machine only, so its flag goes (the sweep's identity is the rest of the line)."""
    command = re.sub(r"sqlite:////\S*?/(runs/\S+)", r"sqlite:///\1", command)
    command = re.sub(r"(--storage-path )/\S*?/(runs/\S+)", r"\1\2", command)
    return re.sub(r" --(?:tracking-uri|storage-path)[ =](?:sqlite:///)?/\S*", "", command)


def reproduced(client, grid: str) -> list:
    """The finished sweeps of `grid` the reproduction ran (parent runs tagged with their command), latest
    first."""
    return [run for run in sweep_runs(client, grid) if TAG_COMMAND in run.data.tags]


def unended_grids(client) -> set[str]:
    """The grids with a sweep in the store that has not ended: its parent run not FINISHED and not yet
    recorded as a part (no command tag): running now, or stopped to be resumed next session."""
    return {
        run.data.tags.get(GRID_TAG, "")
        for run in sweep_runs(client)
        if run.info.status != "FINISHED" and TAG_COMMAND not in run.data.tags
    }


def part_runs(client, grid: str, plan: tuple[Planned, ...] = PLAN) -> list[tuple[Planned, object | None]]:
    """Each planned part of `grid` with the latest sweep that ran exactly it (None when none has)."""
    sweeps = reproduced(client, grid)
    out = []
    for part in (p for p in plan if p.grid == grid):
        runs = [r for r in sweeps if sweep_args_of(r.data.tags[TAG_COMMAND]) == part.sweep_args()]
        out.append((part, runs[0] if runs else None))
    return out


def waiting_parts(parts: list[tuple[Planned, object | None]]) -> int:
    """How many of a grid's parts (`part_runs`) are work left: not run, and not ended without it."""
    return sum(plan.still_to_run(run) for plan, run in parts)


@dataclass(frozen=True)
class PlanSweeps:
    """A grid's parts of the plan as one store holds them: the parent runs of those that ran (each part's
    latest sweep, in the plan's order) and how many parts are still work left."""

    grid: str
    ran: tuple[str, ...]
    waiting: int
    parts: int
    #: the parts are a recipe search's (`search: true`), which `python -m lab.search` reads whole
    search: bool = False

    def to_read(self, uri: str) -> list[str]:
        """The parent runs to read as one sweep: every part the store holds (an AnalysisError saying why
        where there is none)."""
        if not PLAN_FILE.is_file():
            raise AnalysisError(f"--plan reads the plan of a checkout, {PLAN_FILE}, which is not here")
        if not self.parts:
            raise AnalysisError(f"--plan: docs/results/plan.yaml has no part of grid {self.grid!r}")
        if self.search:
            raise AnalysisError(
                f"--plan: {self.grid!r} is a recipe search, read whole (every part) by "
                f"`python -m lab.search --grid {self.grid} --tracking-uri {uri}`"
            )
        if not self.ran:
            raise AnalysisError(
                f"--plan: none of the {self.parts} parts of {self.grid!r} in docs/results/plan.yaml is in "
                f"{uri}. Import their archives: `python -m arith.tracking.archive import "
                f"docs/results/sweeps/{self.grid}__*.jsonl --tracking-uri {uri}` (or run them: "
                f"`python -m lab.reproduce --grids {self.grid}`)"
            )
        return list(self.ran)


def plan_sweeps(client, grid: str, plan: tuple[Planned, ...] = PLAN) -> PlanSweeps:
    """Where `grid`'s parts of the plan stand in the store: what `python -m lab.report --plan` reads as one
    sweep, as docs/RESULTS.md does (`lab.results.grids.grid_results`)."""
    parts = part_runs(client, grid, plan)
    ran = tuple(run.info.run_id for _, run in parts if run is not None)
    search = any(part.search for part, _ in parts)
    return PlanSweeps(grid, ran, waiting_parts(parts), len(parts), search)


def archive_store(uri: str, folder: Path = ARCHIVES) -> list[str]:
    """Archive the store's latest sweep of every planned part (as the reproduction does after each sweep):
    for a store filled before the archives existed, or by hand. Returns the files written."""
    client = store_client(uri)
    written = []
    for grid in grids():
        for part, run in part_runs(client, grid):
            if run is not None:
                export_sweep(client, run.info.run_id, folder / part.archive_name)
                written.append(part.archive_name)
    print(f"archived {len(written)} sweep(s) in {folder}: {', '.join(written) or 'none'}", flush=True)
    return written


def restore_archives(uri: str, folder: Path = ARCHIVES) -> list[str]:
    """Import every archived sweep the store does not hold yet (arith/tracking/archive.py); returns their
    files."""
    imported = []
    for path in sorted(folder.glob("*.jsonl")):
        _run_id, new = import_sweep(uri, path)
        if new:
            imported.append(path.name)
    if imported:
        print(f"restored {len(imported)} archived sweep(s) from {folder}: {', '.join(imported)}", flush=True)
    return imported


def ran_lines(plan: Planned, tags: dict[str, str], start_ms: int) -> list[str]:
    """How a part ran, from its parent run's tags: the command, wall time and machine, the seeds, and the
    commits where a session resumed it under other code (a reader may check what changed between them)."""
    started = datetime.fromtimestamp(start_ms / 1000, tz=timezone.utc)
    lines = [
        f"- command: `{repo_relative(tags[TAG_COMMAND])}`",
        f"  - wall time: {int(tags[TAG_WALL]) / 60:.1f} min on {tags[TAG_MACHINE]} "
        f"(two 1-CPU trials at a time), started {started:%Y-%m-%d %H:%M} UTC",
        f"  - seeds: {', '.join(map(str, plan.seed_values))}{' planned' if plan.ended_early else ''}",
    ]
    if why := tags.get(TAG_ENDED_EARLY):
        lines.append(f"  - **ended early**, its other trials not run: {why}")
    commits = tags.get(TAG_COMMITS, "").split("; ")
    if len(commits) > 1:
        lines.append(
            f"  - commits: started under {commits[0][:12]}, resumed under "
            f"{', '.join(c[:12] for c in commits[1:])} (a trial resumed trained on under that code)"
        )
    return lines
