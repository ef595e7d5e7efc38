"""What the reproduction's sweeps cost in core-minutes, beside what their plan parts declared before they
ran.

A trial's cost is the wall time it held its CPUs (MLflow's start and end times, which the archives keep,
less the stops between sessions: `held_minutes`) times the CPUs Tune gave it (the `train.num_threads` param:
sweeps/trainable.py sets it to them). A part's spend is the sum over its finished trials; what it planned is
`Planned.estimate_core_min`, "not declared" where the plan gave none before it ran. Beside it, the trials'
own CPU time (`cpu_seconds`, where their trainer logged it): what an estimate of a trial's cost predicts,
which other work on the same cores stretches the wall minutes past.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import pandas as pd

from analysis.findings import seed_span
from arith.tracking import store
from arith.tracking.schema import CPU_SECONDS, LOSS_METRIC, POINT_TAG, SEED_TAG, SESSIONS_TAG
from arith.training.sessions import NOT_RECORDED, Session
from lab.analysis_output import markdown_table
from lab.plan import TAG_MACHINE, Planned, points_named
from lab.training_records import read_sessions


@dataclass(frozen=True)
class TrialCost:
    """One finished trial: its point, seed, wall minutes, the CPUs it held and its step budget; its task,
    model preset and batch (what a rate measured elsewhere must match)."""

    point: str
    seed: int
    minutes: float
    cpus: float
    steps: int
    task: str = ""
    preset: str = ""
    batch: int = 0
    #: False for a trial stopped before its end (a part ended early leaves them): its minutes were spent
    finished: bool = True
    #: the trial's own CPU time, where its trainer logged it (`cpu_seconds`): trials sharing cores do not
    #: inflate it as they do the wall minutes it held
    cpu_minutes: float | None = None
    #: the machine its sweep ran on (`reproduce.machine` on the parent run; "" where not tagged): a rate
    #: compares only on one
    machine: str = ""
    #: each process that trained it (`arith.training.sessions`; none for a trial from before the record)
    sessions: tuple[Session, ...] = ()

    @property
    def core_minutes(self) -> float:
        return self.minutes * self.cpus

    def by_machine(self, clocked: bool) -> dict[str, tuple[float, int]]:
        """Machine -> (minutes, steps) the trial spent on it: from its sessions where it recorded each
        one's machine and CPU time (a trial resumed on another processor counts each one's steps there),
        else its whole minutes (CPU time where `clocked`, else wall time held) and step budget on its
        sweep's machine."""
        if clocked and self.sessions and all(s["machine"] != NOT_RECORDED for s in self.sessions):
            out: dict[str, tuple[float, int]] = {}
            for s in self.sessions:
                minutes, steps = out.get(s["machine"], (0.0, 0))
                out[s["machine"]] = (minutes + s["cpu_seconds"] / 60, steps + s["to_step"] - s["from_step"])
            return out
        return {self.machine: ((self.cpu_minutes or 0.0) if clocked else self.minutes, self.steps)}


#: a silence this long in a trial's loss log (written every `train.log_every_steps` steps, seconds apart on
#: these models) is a stop: its sweep interrupted and resumed in a later session, not time it computed
STOP_MINUTES = 10.0


def held_minutes(client, run) -> float:
    """The minutes a finished trial held its CPUs: its run's start to end, less every stop in its loss log
    longer than STOP_MINUTES (a trial resumed in a later session keeps its run, so its end time also counts
    the hours between the sessions). The work a stop lost after the last checkpoint is redone and counted.
    Only a run whose wall time exceeds its training time by more than STOP_MINUTES has its log read."""
    start, end = run.info.start_time, run.info.end_time
    wall = (end - start) / 60000
    trained = run.data.metrics.get("train_seconds", 0.0) / 60
    if wall - trained <= STOP_MINUTES:
        return wall
    stamps = sorted(m.timestamp for m in client.get_metric_history(run.info.run_id, LOSS_METRIC))
    edges = [start, *(t for t in stamps if start <= t <= end), end]
    stops = sum(gap for gap in (b - a for a, b in pairwise(edges)) if gap > STOP_MINUTES * 60000)
    return wall - stops / 60000


def trial_costs(client, parent) -> list[TrialCost]:
    """The ended trials of the sweep whose parent run is `parent`, finished or stopped for good (a trial
    without an end time is still running or was lost: it has no measured duration and is left out)."""
    runs = store.search_runs(client, [parent.info.experiment_id], store.trials_filter(parent.info.run_id))
    return [
        TrialCost(
            point=run.data.tags.get(POINT_TAG, ""),
            seed=int(run.data.tags.get(SEED_TAG, run.data.params.get("data.seed", 0))),
            minutes=held_minutes(client, run),
            cpus=float(run.data.params.get("train.num_threads", 1) or 1),
            steps=int(float(run.data.params.get("train.max_steps", 0) or 0)),
            task=run.data.params.get("data.task", ""),
            preset=run.data.params.get("model.preset", ""),
            batch=int(float(run.data.params.get("train.batch_size", 0) or 0)),
            finished=run.info.status == "FINISHED",
            cpu_minutes=run.data.metrics[CPU_SECONDS] / 60 if CPU_SECONDS in run.data.metrics else None,
            machine=parent.data.tags.get(TAG_MACHINE, ""),
            sessions=tuple(read_sessions(run.data.tags.get(SESSIONS_TAG))),
        )
        for run in runs
        if run.info.end_time and run.info.start_time
    ]


def planned_text(plan: Planned) -> str:
    """The part's declared estimate, or that it declared none."""
    return "not declared" if plan.estimate_core_min is None else f"{plan.estimate_core_min:,.0f}"


def cpu_text(costs: list[TrialCost]) -> str:
    """The trials' own CPU minutes summed, or "—" where a trial's trainer did not log its clock (the
    earliest archived trials)."""
    if not costs or any(c.cpu_minutes is None for c in costs):
        return "—"
    return f"{sum(c.cpu_minutes or 0.0 for c in costs):,.0f}"


def spent_line(plan: Planned, costs: list[TrialCost]) -> str:
    """One line of a run part in its grid's section: core-minutes planned and spent."""
    cpus = ", ".join(dict.fromkeys(f"{c.cpus:g}" for c in costs)) or "-"
    spent = sum(c.core_minutes for c in costs)
    finished = sum(c.finished for c in costs)
    word = "trial" if len(costs) == 1 else "trials"
    ended = f"{finished} finished {word}"
    if finished < len(costs):  # a part ended early: its stopped trials' minutes were spent too
        ended = f"{len(costs)} {word}, {finished} finished"
    cpu = cpu_text(costs)
    clock = "" if cpu == "—" else f"; {cpu} of the trials' own CPU time"
    return (
        f"  - core-minutes: planned {planned_text(plan)}, spent {spent:,.0f} ({ended} x {cpus} CPU each, "
        f"from their runs' start and end times less the stops between sessions{clock})"
    )


#: a part that spent more than this many times the core-minutes it declared is flagged under the table
OVERRUN = 1.5


def part_label(plan: Planned) -> str:
    """The part's points and settings ("only / set"): what tells apart the parts of one grid."""
    return " ".join((", ".join(points_named(plan.only)), *plan.sets)).strip()


def seeds_named(seeds: list[int]) -> str:
    """ "seeds 20-29", "seed 100": with the points and settings, what names one part of a grid whose parts
    differ only in their seeds."""
    return ("seed " if len(seeds) == 1 else "seeds ") + seed_span(seeds)


def spent_minutes(costs: list[TrialCost]) -> int:
    """A run part's core-minutes as its row shows them, rounded: the totals sum these, so that they add
    up to the column they sum."""
    return round(sum(c.core_minutes for c in costs))


def _parts(n: int) -> str:
    return f"{n} part" if n == 1 else f"{n} parts"


def spend_totals(parts: list[tuple[Planned, list[TrialCost] | None]]) -> str:
    """The totals: planned beside spent over the parts that declared an estimate and ran (the only parts
    for which the two compare), then apart what the parts without an estimate spent, what the parts ended
    unrun had declared (they spent nothing) and what the parts still to run declare. Each sums the
    rounded minutes of the table's rows."""
    ran = [(p, c) for p, c in parts if c is not None]
    declared = [(p, c) for p, c in ran if p.estimate_core_min is not None]
    undeclared = [c for p, c in ran if p.estimate_core_min is None]
    ended = [p for p, c in parts if c is None and p.ended_early and p.estimate_core_min is not None]
    todo = [p for p, c in parts if p.still_to_run(c) and p.estimate_core_min is not None]
    planned = sum(round(p.estimate_core_min or 0.0) for p, _ in declared)
    spent = sum(spent_minutes(c) for _, c in declared)
    lines = [
        f"Over the {_parts(len(declared))} that declared an estimate and then ran: "
        f"{planned:,} core-minutes planned, {spent:,} spent."
    ]
    if undeclared:
        lines.append(
            f"The {_parts(len(undeclared))} run before the plan declared estimates spent "
            f"{sum(spent_minutes(c) for c in undeclared):,} more."
        )
    if ended:
        lines.append(
            f"The {_parts(len(ended))} ended unrun had declared "
            f"{sum(round(p.estimate_core_min or 0.0) for p in ended):,} and spent nothing."
        )
    if todo:
        lines.append(
            f"The {_parts(len(todo))} not yet run or not ended {'declares' if len(todo) == 1 else 'declare'} "
            f"{sum(round(p.estimate_core_min or 0.0) for p in todo):,}."
        )
    trials = sum(len(c) for _, c in ran)
    lines.append(
        f"Spent in all: {sum(spent_minutes(c) for _, c in ran):,} core-minutes over {trials} trials "
        "(the sum of the spent column, each part's minutes rounded)."
    )
    return " ".join(lines)


def overruns(parts: list[tuple[Planned, list[TrialCost] | None]]) -> str:
    """The line under the table naming each run part that spent more than OVERRUN times its estimate:
    what a later estimate of the same kind should allow for. '' when none did."""
    over = [
        (plan, spent_minutes(costs))
        for plan, costs in parts
        if costs is not None
        and plan.estimate_core_min
        and sum(c.core_minutes for c in costs) > OVERRUN * plan.estimate_core_min
    ]
    if not over:
        return ""
    named = "; ".join(
        f"{plan.grid} ({'; '.join(filter(None, [seeds_named(plan.seed_values), part_label(plan)]))}): "
        f"{plan.estimate_core_min:,.0f} -> {spent:,} ({spent / (plan.estimate_core_min or 1):.1f}x)"
        for plan, spent in over
    )
    return f"Over {OVERRUN:g}x their estimate: {named}.\n"


#: a part with no ended sweep whose grid has one in the store not ended (`lab.plan.unended_grids`)
NOT_ENDED = "not ended: its sweep is in the store, running or stopped to be resumed; counted when it ends"


def spend_table(
    parts: list[tuple[Planned, list[TrialCost] | None]],
    unarchived: set[str] = frozenset(),
    unended: set[str] = frozenset(),
) -> str:
    """Every part of the plan: core-minutes declared before it ran and spent, with totals; `unended`: the
    grids with a sweep in the store that has not ended (a part of one, not run, reads as not ended)."""
    rows = []
    for plan, costs in parts:
        if costs is None:
            spent = "before the archives" if plan.grid in unarchived else "not yet run"
            spent = NOT_ENDED if plan.grid in unended else spent
            spent = f"ended unrun: {plan.ended_early}" if plan.ended_early else spent
        else:
            spent = f"{spent_minutes(costs):,}"
        cpu = "" if costs is None else cpu_text(costs)
        rows.append(
            {
                "grid": plan.grid,
                "scale": plan.scale,
                "seeds": ", ".join(map(str, plan.seed_values)),
                "only / set": part_label(plan),
                "trials": "" if costs is None else len(costs),
                "core-minutes planned": planned_text(plan),
                "core-minutes spent": spent,
                "of which CPU time": cpu,
            }
        )
    over = overruns(parts)
    return (
        "### Core-minutes: planned and spent\n\n"
        "Each part of docs/results/plan.yaml: the core-minutes it declared before it ran "
        '(`estimate_core_min`; "not declared" for the parts run before the plan declared them, rather than '
        "an estimate made after the fact) and what it spent (its finished trials' wall minutes x the CPUs "
        "each held, from the runs' start and end times in the store and its archive, less the stops between "
        "sessions), and of it the trials' own CPU time where their trainer logged it (`cpu_seconds`, from "
        "29 Nov 2026 21:30 UTC; — before): other work on the same cores (a test suite beside a sweep) "
        "stretches the wall minutes, not the CPU time, which is what an estimate of a trial's cost "
        f"predicts. {spend_totals(parts)}\n\n{markdown_table(pd.DataFrame(rows))}\n"
        + (f"\n{over}" if over else "")
    )
