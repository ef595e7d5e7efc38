"""What it would take to judge a claim still not testable: a judged sweep's cost on one core and on a GPU.

A judged sweep is 5 fresh seeds x the claim's points. On one core it runs at the steps the pre-search says
its models need to pass the gate (`lab.budget.steps_needed`), at the seconds a step the grid's own
finished trials measured on one CPU (`lab.spend.TrialCost`: their CPU time where the trainer logged
it, else the wall time they held, which trials sharing cores inflate); on a GPU, at what the batches
banked from lent GPUs (docs/results/gpu/) measured, else at the seconds a step that the pre-search's
trials of the same task and model measured on lent GPUs (docs/presearch/). All are extrapolations from
measured rates, and say so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arith.config import ExperimentConfig
from arith.overrides import parse_only
from arith.tracking.archive import read_archive
from arith.tracking.schema import GRID_TAG
from experiments.registry import EXPERIMENTS
from lab.gpu_plan import PlannedBatch, PlannedPart
from lab.plan import Planned
from lab.spend import TrialCost

#: seeds a judged sweep runs (outside every pre-search)
JUDGED_SEEDS = 5


def compared_points(grid: str, parts: list[Planned], claim: str) -> list[str]:
    """The grid's declared points that stand for the claim's paper table(s) (its text ends with `[label]`
    or `[label vs label]`, `tb:x_5-6a-d` naming a-d; all of them where none is tagged so), among those some
    part of the plan runs (its `--only` values, where they are the points' own)."""
    experiment = EXPERIMENTS.get(grid)
    if experiment is None:
        return []
    kept = []
    wanted = [parse_only(part.only) for part in parts] or [{}]
    for point in experiment.grid.points():
        if any(_kept(point.overrides, only) for only in wanted):
            tables = experiment.grid.table_of(ExperimentConfig().with_overrides(point.overrides))
            kept.append((point.name, tables))
    found = re.search(r"\[([^\]]+)\]$", claim)
    labels = (
        [re.sub(r"[a-z]-[a-z]$", "", lab.strip()) for lab in found.group(1).split(" vs ")] if found else []
    )
    hit = [name for name, tables in kept if any(t.startswith(lab) for t in tables for lab in labels)]
    return hit or [name for name, _ in kept]


def _kept(overrides: dict[str, object], only: dict[str, tuple[str, ...]]) -> bool:
    """Whether a point (its overrides) is one that `--only` keeps, its values compared as they are written."""
    shown = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in overrides.items()}
    return all(k not in shown or shown[k] in values for k, values in only.items())


def one_core_cost(costs: list[TrialCost], points: int, steps: list[float | None], what: str) -> str:
    """5 fresh seeds x `points` points at each of `steps` (an extrapolated or measured budget, `what` says
    which), at the seconds a step the sweep's own finished trials measured on one core: their CPU time
    where every one logged it, else the wall time they held (which trials sharing cores inflate). Trials
    from different machines (their sweeps' `reproduce.machine`: a CPU with bf16 hardware runs these bf16
    trials ~3x faster than one without) give a rate each, and the cost spans them; a trial resumed on
    another machine counts each session's steps and CPU time on its own (`TrialCost.by_machine`)."""
    one = [c for c in costs if c.steps and c.cpus == 1 and c.finished]
    if not one:
        return "no one-core measurement"
    clocked = all(c.cpu_minutes is not None for c in one)
    clock = "CPU time" if clocked else "wall time held (slower where trials shared cores)"
    spent: dict[str, list[float]] = {}  # machine -> [minutes, steps, trials]
    for cost in one:
        for machine, (minutes, trained) in cost.by_machine(clocked).items():
            total = spent.setdefault(machine, [0.0, 0.0, 0.0])
            total[0], total[1], total[2] = total[0] + minutes, total[1] + trained, total[2] + 1
    per_step = sorted((minutes / n, machine) for machine, (minutes, n, _) in spent.items() if n)
    if len(per_step) == 1:
        rate = f"{per_step[0][0] * 60:.2f} s a step of {clock}, measured over its sweep's {len(one)} one-CPU"
        rate += " trials"
    else:
        each = [(minutes, machine, int(spent[machine][2])) for minutes, machine in per_step]
        rate = (
            f"the seconds a step of {clock} its sweep's one-CPU trials measured on each machine: "
            + "; ".join(
                f"{minutes * 60:.2f} s on {machine or 'an untagged one'} ({n} trial{'s' * (n > 1)})"
                for minutes, machine, n in each
            )
        )
    usable = sorted(s for s in steps if s is not None and math.isfinite(s))
    if not usable:
        return f"no estimate: the pre-search gives no budget that passes the gate ({rate})"
    least, most = usable[0] * per_step[0][0], usable[-1] * per_step[-1][0]  # fastest machine to slowest
    hours = [f"{JUDGED_SEEDS * points * minutes / 60:,.1f}" for minutes in (least, most)]
    span = "-".join(dict.fromkeys(hours))
    # an extrapolated budget to two significant figures, as "Steps to competence" shows it
    budget = ", ".join(dict.fromkeys(f"{float(f'{s:.2g}'):,.0f}" for s in usable))
    return (
        f"{span} core-hours: {JUDGED_SEEDS} seeds x {points} points x {budget} steps ({what}) at {rate}; "
        "an extrapolation"
    )


@dataclass(frozen=True)
class GpuBatch:
    """One banked batch's trials of a grid on a lent GPU: how many, how many at once, in what wall time."""

    batch: str
    machine: str
    trials: int
    procs: int
    minutes: float
    setting: str


def gpu_batches(bank: Path, plan: Sequence[PlannedBatch]) -> dict[str, list[GpuBatch]]:
    """The banked gpu archives (docs/results/gpu/<batch>/*.jsonl) by grid: per batch, its trials of the grid
    and their wall time from the first start to the last end, and how many ran at once (the plan's `procs`,
    0 for a folder the plan does not name)."""
    procs = {batch.name: batch.procs for batch in plan}
    out: dict[str, list[GpuBatch]] = {}
    for folder in sorted(p for p in bank.iterdir() if p.is_dir()) if bank.is_dir() else []:
        by_grid: dict[str, list[dict]] = {}
        machine = ""
        for path in sorted(folder.glob("*.jsonl")):
            _, records = read_archive(path)
            machine = records[0]["tags"].get("machine", machine)
            by_grid.setdefault(records[0]["tags"][GRID_TAG], []).extend(records[1:])
        for grid, trials in by_grid.items():
            ended = [t for t in trials if t.get("end_time")]
            if not ended:
                continue
            wall = (max(t["end_time"] for t in ended) - min(t["start_time"] for t in ended)) / 60000
            settings = sorted({_gpu_setting(t["params"]) for t in ended})
            batch = GpuBatch(
                folder.name, machine, len(ended), procs.get(folder.name, 0), wall, "; ".join(settings)
            )
            out.setdefault(grid, []).append(batch)
    return out


def _gpu_setting(params: dict[str, str]) -> str:
    batch, steps = params.get("train.batch_size"), params.get("train.max_steps")
    return f"{params.get('model.preset', '')}, batch {batch}, {steps} steps"


def gpu_cost(batches: list[GpuBatch], points: int) -> str:
    """What the banked GPU batches of a grid measured, and a judged sweep at that rate (an extrapolation):
    as many waves of `procs` trials at once as its trials need, each as long as the batch's."""
    if not batches:
        return "no GPU measurement"
    said = []
    for b in batches:
        said.append(
            f"{b.batch}: {b.trials} trials ({b.setting}) in {b.minutes:.1f} min on one {b.machine}, "
            f"{b.procs} at a time (measured)"
        )
        if b.procs:
            waves = math.ceil(JUDGED_SEEDS * points / b.procs)
            said[-1] += (
                f"; {JUDGED_SEEDS} seeds x {points} points at that setting: about {waves * b.minutes:.0f} "
                f"min ({waves} such wave(s), an extrapolation)"
            )
    return "; ".join(said)


@dataclass(frozen=True)
class PlannedGpuSweep:
    """A judged batch the GPU plan holds for a grid, not banked yet, and the banked batch that measured its
    setting (the same task, scale, factor digits, batch size and steps) on a lent GPU."""

    batch: str
    trials: int
    procs: int
    measured: GpuBatch


def _trials(part: PlannedPart) -> int:
    """A plan part's trials: its seeds x the grid's points its `--only` keeps."""
    experiment = EXPERIMENTS.get(part.grid)
    if experiment is None:
        return 0
    only = {k: (str(v),) for k, v in part.only.items()}
    kept = sum(_kept(point.overrides, only) for point in experiment.grid.points())
    return kept * len(part.seed_values)


def _setting(part: PlannedPart) -> tuple[str, ...]:
    """What sets a trial's pace on a GPU: its task, scale, factor digits, batch and steps."""
    experiment = EXPERIMENTS.get(part.grid)
    task = ExperimentConfig().with_overrides(experiment.grid.base).data.task if experiment else part.grid
    keys = ("data.max_digits", "train.batch_size", "train.max_steps")
    return (task, part.scale, *(str(part.sets.get(k, "")) for k in keys))


def planned_gpu_sweeps(
    plan: Sequence[PlannedBatch], banked: dict[str, list[GpuBatch]]
) -> dict[str, list[PlannedGpuSweep]]:
    """By grid: the plan's judged batches not banked yet whose setting a banked batch measured (of those,
    the one nearest the batch's load), so that a claim waiting on a lease is costed at the setting the
    lease will run, not at an earlier pre-search's."""
    measured = {(b.batch, grid): b for grid, batches in banked.items() for b in batches}
    by_setting: dict[tuple[str, ...], list[GpuBatch]] = {}
    for batch in plan:
        for part in batch.parts:
            if (batch.name, part.grid) in measured:
                by_setting.setdefault(_setting(part), []).append(measured[batch.name, part.grid])
    done = {name for name, _ in measured}
    out: dict[str, list[PlannedGpuSweep]] = {}
    for batch in plan:
        if batch.name in done:
            continue
        for grid in dict.fromkeys(p.grid for p in batch.parts if not p.presearch):
            parts = [p for p in batch.parts if p.grid == grid and not p.presearch]
            paces = [b for p in parts for b in by_setting.get(_setting(p), [])]
            if paces:
                # the measurement nearest this batch's load: as many trials at once, then the most trials
                pace = min(paces, key=lambda b: (abs(b.procs - batch.procs), -b.trials))
                trials = sum(_trials(p) for p in parts)
                out.setdefault(grid, []).append(PlannedGpuSweep(batch.name, trials, batch.procs, pace))
    return out


def planned_gpu_cost(planned: list[PlannedGpuSweep]) -> str:
    """The plan's judged batches of a grid at the pace their setting was measured at: as many waves of
    `procs` trials as the batch holds, each as long as a wave of the measuring batch (an extrapolation)."""
    said = []
    for p in planned:
        m = p.measured
        per_wave = m.minutes / max(1, math.ceil(m.trials / max(1, m.procs)))
        minutes = math.ceil(p.trials / max(1, p.procs)) * per_wave
        said.append(
            f"planned: {p.batch}, {p.trials} trials at {m.setting}, the setting {m.batch} measured: about "
            f"{minutes:.0f} min on one {m.machine} ({m.trials} trials took {m.minutes:.1f} min there, "
            f"{m.procs} at a time; an extrapolation)"
        )
    return "; ".join(said)


@dataclass(frozen=True)
class GpuRate:
    """The seconds a training step took in the pre-search's trials of one task, model preset and batch on
    lent GPUs (each trial's own training time; several shared a GPU)."""

    task: str
    preset: str
    batch: int
    machines: tuple[str, ...]
    trials: int
    seconds_per_step: float


def gpu_rates(records: Sequence[dict]) -> dict[tuple[str, str], list[GpuRate]]:
    """The pre-search records (docs/presearch/) run on a GPU, as rates by (task, preset), one per batch."""
    groups: dict[tuple[str, str, int], list[dict]] = {}
    for rec in records:
        cfg = rec.get("config", {})
        if str(rec.get("machine", "")).startswith("NVIDIA") and rec.get("steps") and rec.get("train_seconds"):
            key = (
                str(cfg.get("data.task")),
                str(cfg.get("model.preset")),
                int(cfg.get("train.batch_size", 0)),
            )
            groups.setdefault(key, []).append(rec)
    out: dict[tuple[str, str], list[GpuRate]] = {}
    for (task, preset, batch), recs in sorted(groups.items()):
        seconds = sum(float(r["train_seconds"]) for r in recs) / sum(int(r["steps"]) for r in recs)
        machines = tuple(sorted({str(r["machine"]) for r in recs}))
        out.setdefault((task, preset), []).append(GpuRate(task, preset, batch, machines, len(recs), seconds))
    return out


def presearch_gpu_cost(rates: list[GpuRate], batch: int, points: int, steps: list[float | None]) -> str:
    """5 fresh seeds x `points` points at `steps` at the seconds a step the pre-search's GPU trials of the
    same task and model measured (the batch nearest the trials'); "" without a rate or a budget."""
    usable = sorted(s for s in steps if s is not None and math.isfinite(s))
    if not rates or not usable:
        return ""
    rate = min(rates, key=lambda r: abs(r.batch - batch))
    minutes = [JUDGED_SEEDS * points * s * rate.seconds_per_step / 60 for s in (usable[0], usable[-1])]
    budget = ", ".join(dict.fromkeys(f"{float(f'{s:.2g}'):,.0f}" for s in usable))
    other = "" if rate.batch == batch else f"; the trials judged train at batch {batch}"
    return (
        f"{'-'.join(dict.fromkeys(f'{m:,.0f}' for m in minutes))} GPU-minutes of trials: {JUDGED_SEEDS} "
        f"seeds x {points} points x {budget} steps at {rate.seconds_per_step:.3f} s a step, measured over "
        f"{rate.trials} pre-search trials of the same model ({rate.preset}, {rate.task}, batch {rate.batch}) "
        f"on {' and '.join(rate.machines)}{other} (an extrapolation; those trials shared a GPU, so a judged "
        "sweep run several at a time takes less wall time)"
    )


def judged_cost(
    grid: str,
    parts: list[Planned],
    claim: str,
    costs: list[TrialCost],
    steps: dict[str, list[float | None]],
    gpu: dict[str, list[GpuBatch]],
    budget_points: dict[str, list[str]],
    instead: str = "",
    gpu_instead: str = "",
    rates: dict[tuple[str, str], list[GpuRate]] | None = None,
    planned: dict[str, list[PlannedGpuSweep]] | None = None,
) -> dict[str, str]:
    """A judged sweep of a claim (5 fresh seeds x its points): on one core at the steps its pre-search
    points (`budget_points`, "grid: point" keys of `steps`) need, else at the grid's own budget, at the rate
    its own trials measured (`instead` where the cpu model gives no cost); on a GPU, as its grid or its
    parent's was banked, else at those steps at the GPU `rates` of its trials' task and model, else
    `gpu_instead` (a GPU measurement made otherwise, at the paper's scale); first, where the GPU plan holds
    a judged batch of the grid whose setting a banked batch measured (`planned`), that batch at that pace."""
    points = len(compared_points(grid, parts, claim))
    named = [name for name in budget_points.get(grid, []) if name in steps]
    if named:
        needed = [s for name in named for s in steps[name]]
        what = "the pre-search's steps to pass the gate"
    else:
        needed = [float(max((c.steps for c in costs), default=0)) or None]
        what = "its own budget: no pre-search extrapolation"
    experiment = EXPERIMENTS.get(grid)
    parent = experiment.grid.parent if experiment is not None else ""
    banked = gpu.get(grid) or gpu.get(parent or "", [])
    on_gpu = gpu_cost(banked, points) if banked else ""
    model = next(((c.task, c.preset, c.batch) for c in costs if c.task), None)
    if not on_gpu and model and not instead:
        on_gpu = presearch_gpu_cost((rates or {}).get(model[:2], []), model[2], points, needed)
    queued = planned_gpu_cost((planned or {}).get(grid, []))
    on_gpu = "; ".join(filter(None, [queued, on_gpu])) or gpu_instead or gpu_cost([], points)
    return {
        "a judged sweep on one core": instead or one_core_cost(costs, points, needed, what),
        "on a GPU": on_gpu,
    }
