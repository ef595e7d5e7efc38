"""A pre-search's choice rule, declared in the plan before it ran, read off its finished trials.

A plan part that pre-searches a budget may declare `choose_if_at_least: X` (docs/results/plan.yaml): the
recipe its grid trains at (`Experiment.recipe(scale)`, experiments/recipes.py) is to be chosen only if,
every planned trial finished, each seed of each point the part ran reads at least X on every cell in
range (the digit counts trained on; multiplication's small products: `experiments.cells.in_range`) at
its last evaluation. The report states the rule, each seed's weakest such cell and whether the recipe's
`chosen` flag follows it; a test holds the repository's recipes to their archived pre-searches, so that a
budget is chosen by the rule written before its numbers were read, not by a person reading them.

A recipe search's part may declare `choose_if_gate_by_step: N` instead: its trials end at the gate, so
the rule reads when they got there. The recipe the search tried (the `Recipe` whose `lab.recipes.EVIDENCE`
names the search) is to be chosen only if every configuration the part ran passed the gate, on every
seed, at or before optimiser step N (`lab.search.costs`'s evaluations, one every epoch), leaving the rest
of the run's steps as a margin for a judged seed that learns later.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.load import read_sweep
from arith.tracking import store
from arith.tracking.schema import (
    ACCURACY_COLUMN,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    EPOCH_COLUMN,
    POINT_COLUMN,
    ROW_DIGITS_COLUMN,
    RUN_ID_COLUMN,
    SEED_COLUMN,
)
from experiments.cells import cell_name, in_range
from experiments.recipes import Recipe
from experiments.registry import EXPERIMENTS
from experiments.verdicts import LEARNED, TOLERANCE
from lab.plan import Planned
from lab.recipes import EVIDENCE
from lab.search.costs import search_evaluations


def at_least(value: float, threshold: float) -> bool:
    """Whether an accuracy met a threshold, within float rounding (a mean stored 0.8999999999 met 0.9)."""
    return value >= threshold - TOLERANCE


@dataclass(frozen=True)
class ChoiceReading:
    """What a part's trials say of its rule: `met` (None until every planned trial has finished) and, per
    trial (point, seed), its weakest in-range cell at its last evaluation."""

    threshold: float
    met: bool | None
    weakest: tuple[tuple[str, int, str, float], ...]  # (point, seed, cell, accuracy)

    def said(self) -> str:
        read = "; ".join(
            f"{point} seed {seed} {acc:.2f} on {cell}" for point, seed, cell, acc in self.weakest
        )
        verdict = {None: "not read yet: not every planned trial has finished", True: "met", False: "not met"}
        rule = f"every cell in range at least {self.threshold:g} on every seed at the last evaluation"
        return f"{rule}: {verdict[self.met]}" + (f" (weakest: {read})" if read else "")


@dataclass(frozen=True)
class GateByStepReading:
    """What a search part's trials say of its rule: `met` (None until every trial of the part has ended)
    and, per trial (configuration, seed), the step of its first evaluation at the gate (None: never) and
    the best its weakest gated cell read."""

    by_step: int
    met: bool | None
    trials: tuple[tuple[str, int, int | None, float], ...]  # (configuration, seed, steps, best)

    def said(self) -> str:
        def one(point: str, seed: int, steps: int | None, best: float) -> str:
            when = f"at the gate at step {steps:,}" if steps is not None else f"never (best {best:.2f})"
            return f"{point} seed {seed} {when}"

        read = "; ".join(one(*trial) for trial in self.trials)
        verdict = {None: "not read yet: the part has not ended", True: "met", False: "not met"}
        rule = f"every configuration at the gate on every seed by step {self.by_step:,}"
        return f"{rule}: {verdict[self.met]}" + (f" ({read})" if read else "")


def read_gate_by_step(plan: Planned, evaluations: pd.DataFrame, ended: bool) -> GateByStepReading:
    """The part's rule read off its search sweep's `evaluations` (`lab.search.costs.search_evaluations`:
    trial x evaluation, with its steps and gate value), narrowed to the part's seeds; read only once the
    sweep has `ended` (a trial ASHA cut at a rung ends before it). `plan.choose_if_gate_by_step` must be
    set."""
    by_step = int(plan.choose_if_gate_by_step or 0)
    mine = evaluations[evaluations[SEED_COLUMN].isin(plan.seed_values)]
    trials = []
    for (point, seed), trial in mine.groupby([POINT_COLUMN, SEED_COLUMN], sort=True):
        reached = trial[[at_least(g, LEARNED) for g in trial["gate"]]]
        steps = int(reached["steps"].min()) if len(reached) else None
        trials.append((str(point), int(seed), steps, float(trial["gate"].max())))
    met = all(s is not None and s <= by_step for _, _, s, _ in trials) if ended and trials else None
    return GateByStepReading(by_step, met, tuple(trials))


def search_recipe(name: str) -> Recipe | None:
    """The recipe that the search `name` tried, declared on an experiment (None: none is)."""
    tried = [r for e in EXPERIMENTS.values() for r in e.recipes if EVIDENCE[r.name].search == name]
    return tried[0] if tried else None


def search_part_choice(plan: Planned, tracking_uri: str, parent_run_id: str) -> str:
    """The line of a search part that declared `choose_if_gate_by_step`, read off its own sweep."""
    ended = store.client(tracking_uri).get_run(parent_run_id).info.status == "FINISHED"
    reading = read_gate_by_step(plan, search_evaluations(tracking_uri, parent_run_id), ended)
    recipe = search_recipe(plan.grid)
    return choice_line(reading, None if recipe is None else recipe.chosen, plan.rule_declared)


def read_choice(plan: Planned, trials: pd.DataFrame, cells: pd.DataFrame) -> ChoiceReading:
    """The part's rule read off a sweep's `trials` (one row each, with status) and `cells` (finished
    trials x evaluation x cell), both narrowed to the part's seeds. `plan.choose_if_at_least` must be set."""
    threshold = float(plan.choose_if_at_least or 0.0)
    seeds = set(plan.seed_values)
    mine = trials[trials[SEED_COLUMN].isin(seeds)]
    weakest = []
    point_of = dict(zip(trials[RUN_ID_COLUMN], trials[POINT_COLUMN], strict=True))
    for run_id, trial in cells[cells[SEED_COLUMN].isin(seeds)].groupby(RUN_ID_COLUMN):
        last = in_range(trial[trial[EPOCH_COLUMN] == trial[EPOCH_COLUMN].max()])
        if last.empty:
            continue
        worst = last.loc[last[ACCURACY_COLUMN].idxmin()]
        cell = cell_name(worst[ROW_DIGITS_COLUMN], worst[COL_DIGITS_COLUMN], worst.get(CONTEXT_COLUMN, ""))
        weakest.append((str(point_of[run_id]), int(worst[SEED_COLUMN]), cell, float(worst[ACCURACY_COLUMN])))
    finished = len(mine) > 0 and (mine["status"] == "FINISHED").all() and len(weakest) == len(mine)
    met = all(at_least(acc, threshold) for *_, acc in weakest) if finished and weakest else None
    return ChoiceReading(threshold, met, tuple(sorted(weakest)))


def part_choice(plan: Planned, tracking_uri: str, parent_run_id: str) -> str:
    """The line of a part that declared a choice rule, read off its own sweep (the part's parent run: other
    parts of its grid may run other points on the same seeds)."""
    experiment = EXPERIMENTS.get(plan.grid)
    recipe = experiment.recipe(plan.scale) if experiment is not None else None
    sweep = read_sweep(plan.grid, tracking_uri, [parent_run_id])
    reading = read_choice(plan, sweep.trials, sweep.cells)
    return choice_line(reading, None if recipe is None else recipe.chosen, plan.rule_declared)


def choice_line(
    reading: ChoiceReading | GateByStepReading, recipe_chosen: bool | None, declared: str = ""
) -> str:
    """The part's line in its section: the rule, when it was declared (before it ran, unless the plan says
    when: `Planned.rule_declared`), what it read, and whether the recipe's flag follows it."""
    line = f"  - choice rule, declared {declared or 'before it ran'}: {reading.said()}"
    if recipe_chosen is None or reading.met is None:
        return line
    if recipe_chosen == reading.met:
        return line + f"; its recipe is {'chosen' if recipe_chosen else 'not chosen'}, as the rule says"
    return line + f"; **its recipe is marked {'chosen' if recipe_chosen else 'not chosen'} against the rule**"
