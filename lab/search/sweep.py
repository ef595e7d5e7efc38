"""A recipe search (`lab.search.declared.Search`) as a Ray Tune sweep: `python -m lab.sweep --search NAME`.

The search is an ordinary sweep of a derived grid (the experiment's compared points x the recipe axes) run
by the one trainable, `sweeps.trainable.run_trial`, with three additions:

- each trial is evaluated after every epoch (a search cuts a pass over the lines into several with
  `train.epochs_per_pass`, so that the rungs are read within minutes of where they fall) and reports
  `gate/weakest_unseen`: the weakest of the cells the competence gate reads for its point
  (`experiments.verdicts.gated_cells`: the paper's learned cells through the digit map, else the search's
  fallback), on the test problems it was not trained on where a cell has at least
  `arith.training.metrics.MIN_UNSEEN` of them, else on all (`train.gate_cells`, `weakest_unseen`);
- Tune's ASHA scheduler (`ray.tune.schedulers.ASHAScheduler`) reads that metric against the trial's clock,
  the CPU time of its process (`schema.CPU_SECONDS`: setup, steps and evaluations, every thread, kept in
  its checkpoints across restores): core-seconds, which a machine busy with other work does not inflate
  as it would Tune's wall clock (`time_total_s`), so that configurations run side by side with a test
  suite or another sweep are compared fairly. A CPU clock: a search is a CPU scale's;
- ASHA runs once per compared point (`lab.search.asha.SearchAsha`): a configuration is measured against
  the configurations of its own format only (an easy format would otherwise fill every rung and stop the
  hard one, which decides the recipe, at its first); a trial whose weakest gated cell reached the gate
  ends there (its cost to the gate is known); the rungs are kept in the sweep's folder, so that a search
  stopped and resumed (`--resume`) prunes as one run straight through would;
- when Tune is done, each trial's MLflow run gets `search/core_minutes` at each evaluated epoch (from
  Tune's results) and a trial the scheduler ended before its last epoch is ended with the tag
  `search_stopped`: `passed` (it reached the gate) or `budget` (it spent the core-minutes a trial may),
  FINISHED, or `rung` (ASHA cut it), KILLED; so that the store alone holds what `lab.search.costs` builds
  the cost-to-gate table from, and the MLflow UI draws only the cut trials as stopped.

At a recipe scale (cpu_recipe) the configurations stand in for the task's recipe: a candidate that no
claim's seeds may run (`sweeps.space` refuses them), and the search's seeds are from 100 up.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
from ray.tune import Callback

from arith.config import ConfigError, ExperimentConfig
from arith.data.datasets import test_examples
from arith.tracking import schema, store
from arith.training.hardware import machine
from arith.training.metrics import gate_cell_name
from arith.validation import validate
from experiments.cells import CELL_KEYS
from experiments.grid import Grid
from experiments.recipes import Recipe
from experiments.verdicts import LEARNED, TOLERANCE, gated_cells
from lab.search.asha import ASHA_STATE_FILE, SearchAsha
from lab.search.costs import cost_report
from lab.search.declared import (
    BUDGET,
    CORE_MINUTES,
    MACHINES_TAG,
    RUNG,
    STOPPED_TAG,
    Search,
    check_presearch_seeds,
)
from lab.searches import SEARCHES
from lab.sweep_progress import BudgetProgress
from sweeps.grids import get_grid
from sweeps.options import Configs
from sweeps.scales import Scale, get_scale
from sweeps.storage import digit_map
from sweeps.trainable import trial_key

#: the gate's weakest cell at which a search's trial has passed (and its scheduler ends it)
PASSED = LEARNED - TOLERANCE


def get_search(name: str) -> Search:
    """The search called `name`; an unknown name fails listing the declared ones."""
    if name not in SEARCHES:
        raise ConfigError(f"unknown search {name!r}; choose one of: {', '.join(SEARCHES) or 'none declared'}")
    return SEARCHES[name]


def search_seeds(search: Search, seeds: int | tuple[int, ...]) -> tuple[int, ...]:
    """`--seeds` for a search: a count K takes K seeds from the search's first; explicit seeds must be
    pre-search seeds (from 100 up)."""
    chosen = tuple(range(search.seeds[0], search.seeds[0] + seeds)) if isinstance(seeds, int) else seeds
    if isinstance(seeds, int) and seeds == 1:
        chosen = search.seeds
    check_presearch_seeds(chosen, f"search {search.name!r}")
    return chosen


def candidate_scale(scale: Scale, grid: Grid, search: Search, seeds: tuple[int, ...]) -> Scale:
    """`scale` with the search's configurations standing in for the task's recipe where the scale needs
    one: a candidate not chosen, which only the search's seeds run. Other scales as they are."""
    if not scale.needs_recipe:
        return scale
    points = grid.points()
    steps = max(int(p.overrides.get("train.max_steps", 0)) for p in points)
    if not steps:
        raise ConfigError(f"search {search.name!r} at a recipe scale must set train.max_steps")
    task = ExperimentConfig().with_overrides(points[0].overrides).data.task
    candidate = Recipe(
        f"a configuration of search {search.name}",
        scale.name,
        {"train.max_steps": steps},
        sample_fraction=search.sample_fraction,
        chosen=False,
    )
    return replace(scale.with_recipe(task, candidate), presearch_seeds=seeds)


def gate_cells(cfg: ExperimentConfig, digits: dict[int, int], search: Search) -> list[str]:
    """The cells the competence gate reads for this trial's point (`train.gate_cells` labels)."""
    cells = sorted({example.cell for example in test_examples(cfg.data)}, key=str)
    frame = pd.DataFrame([(c, r, d) for c, r, d in cells], columns=CELL_KEYS)
    point = {k: v for k, v in cfg.flat().items() if k.startswith(("data.", "model.", "train."))}
    # the labels as the analysis frames hold them (a tuple): the tag's string would leave the paper's table
    # to be found by the point's scaled settings (3-digit factors where the paper's table is of 5), which
    # finds none and gates on the fallback's cells
    labels = schema.paper_labels(cfg.tracking.tags.get(schema.PAPER_TABLE_TAG, ""))
    paper = {schema.PAPER_TABLE_TAG: labels, schema.PAPER_EPOCHS_TAG: ""}
    for key, value in {**point, **paper}.items():
        frame[key] = [value] * len(frame)
    frame[schema.FINAL_EPOCH_COLUMN] = cfg.train.epochs
    gated, _ = gated_cells(frame, digits, search.fallback)
    return [gate_cell_name(r.context, r.row_digits, r.col_digits) for r in gated.itertuples(index=False)]


def stopped_why(last: Mapping[str, Any], epochs: int, budget_s: float, stop_at_gate: bool = True) -> str:
    """Why the scheduler ended a trial, read from the trial's last result: `passed` (it reached the gate),
    `budget` (its CPU time spent) or `rung` (ASHA cut it); "" for a trial that was not cut. A stopped
    trial's last result is marked done; one cut short by an interrupted sweep is not, and a NaN loss ends
    a trial with its own flag. At its last epoch a trial is never cut at a rung, yet the scheduler may still
    stop it there (at the gate, or at the budget's last rung) before its trainer ends its run: the reason
    is returned then too, so that its run is ended FINISHED rather than left running (which would mark
    the whole search KILLED); a trial that simply ran to its end reads ""."""
    failed = last.get("nonfinite_loss") or last.get("config_error")
    if not last.get("done") or failed:
        return ""
    if stop_at_gate and float(last.get(schema.GATE_METRIC, 0.0)) >= PASSED:
        return "passed"
    spent = float(last.get(schema.CPU_SECONDS, 0.0)) >= budget_s
    if int(last.get("epoch", epochs)) >= epochs:
        return BUDGET if spent else ""
    return BUDGET if spent else RUNG


def end_stopped_run(uri: str, run_id: str, why: str) -> str:
    """A stopped trial's MLflow run ended, tagged `search_stopped` with why; returns its status: KILLED
    where ASHA cut it at a rung, FINISHED where it ended as the search means a trial to (at the gate, or
    having spent the whole core-minute budget), so that the MLflow UI does not draw a trial that passed
    the gate as a failure."""
    status = "KILLED" if why == RUNG else "FINISHED"
    store.client(uri).set_tag(run_id, STOPPED_TAG, why)
    store.set_run_status(uri, run_id, status)
    return status


class EndStoppedRuns(Callback):
    """Ends a trial's MLflow run as Tune completes the trial, when the scheduler stopped it: otherwise the
    MLflow UI shows it running until the search's session ends (`SearchRun.record`, which also writes the
    core-minutes). A store it cannot reach only warns: the search goes on, and its end records the run."""

    def __init__(
        self,
        configs: Configs,
        uri: str,
        parent_run_id: str,
        budget_s: float,
        stop_at_gate: bool = True,
    ):
        self.configs, self.uri, self.parent_run_id, self.budget_s = configs, uri, parent_run_id, budget_s
        self.stop_at_gate = stop_at_gate

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        cfg = self.configs.get(trial_key(trial.config[schema.POINT_TAG], trial.config[schema.SEED_TAG]))
        last = trial.last_result or {}
        why = stopped_why(last, cfg.train.epochs, self.budget_s, self.stop_at_gate) if cfg else ""
        if not why:
            return
        t = cfg.tracking
        try:
            runs = store.trial_runs(self.uri, [t.experiment], self.parent_run_id, t.run_name)
            if runs and runs[0].info.status != "FINISHED":
                end_stopped_run(self.uri, runs[0].info.run_id, why)
        except Exception as err:  # a callback that raises ends the whole Tune run
            print(f"warning: {t.run_name} stays RUNNING until the search ends: {err}", file=sys.stderr)


@dataclass(frozen=True)
class SearchRun:
    """One run of a search: the search, its grid and scale, the seeds; what the sweep asks of it."""

    search: Search
    grid: Grid
    scale: Scale
    seeds: tuple[int, ...]

    @classmethod
    def of(
        cls, name: str, scale: str | None, seeds: int | tuple[int, ...], grid: str | None = None
    ) -> SearchRun:
        search = get_search(name)
        if grid and grid != search.experiment:
            raise ConfigError(f"search {name!r} serves grid {search.experiment!r}, not {grid!r}")
        chosen = search_seeds(search, seeds)
        derived = replace(search.grid(get_grid(search.experiment)), presearch_seeds=chosen)
        return cls(
            search,
            derived,
            candidate_scale(get_scale(scale or search.scale), derived, search, chosen),
            chosen,
        )

    def prepare(self, configs: Configs) -> Configs:
        """Each trial evaluated after every epoch, reporting its gate's weakest cell."""
        digits = digit_map(self.grid, self.scale)
        out = {}
        for key, cfg in configs.items():
            cfg = cfg.with_overrides(
                {
                    "train.eval_epochs": list(range(1, cfg.train.epochs + 1)),
                    "train.gate_cells": gate_cells(cfg, digits, self.search),
                }
            )
            out[key] = validate(cfg)
        return out

    def scheduler(self, sweep_uri: str) -> SearchAsha:
        """ASHA over the trials' CPU clock, its rungs in core-minutes, one per compared point; a trial at
        the gate stopped; the rungs kept in the sweep's folder (`sweep_uri`) so that a --resume goes on
        with them."""
        asha = self.search.scheduler
        return SearchAsha(
            f"{sweep_uri}/{ASHA_STATE_FILE}",
            groups={p.name: self.search.split_point(p.name)[1] for p in self.grid.points()},
            stop_at=PASSED if self.search.stop_at_gate else None,
            time_attr=schema.CPU_SECONDS,
            metric=self.search.metric,
            mode="max",
            grace_period=asha.grace_core_min * 60.0,
            max_t=asha.max_core_min * 60.0,
            reduction_factor=asha.reduction_factor,
        )

    def session(
        self, sweep_uri: str, tracking_uri: str, parent_run_id: str, configs: Configs
    ) -> tuple[SearchAsha, list[Callback]]:
        """This session of the search (its start, or a --resume): the machine it runs on added to the
        parent run's `search_machines`; the scheduler (`scheduler`) and the callback that ends a stopped
        trial's MLflow run at once (`EndStoppedRuns`), for `sweeps.tuner.fit`."""
        client = store.client(tracking_uri)
        known = client.get_run(parent_run_id).data.tags.get(MACHINES_TAG, "")
        machines = [m for m in known.split("; ") if m]
        here = machine()[0]
        if here not in machines:
            client.set_tag(parent_run_id, MACHINES_TAG, "; ".join([*machines, here]))
        ends = EndStoppedRuns(configs, tracking_uri, parent_run_id, self.budget_s, self.search.stop_at_gate)
        return self.scheduler(sweep_uri), [ends]

    def progress(self, steps: Mapping[str, int], key_of: Any, **line: Any) -> BudgetProgress:
        """The search's progress line (`sweeps.tuner.fit`): ASHA's metric, and each trial's time left bounded
        by its CPU-time budget."""
        return BudgetProgress(steps, key_of, self.budget_s, self.search.metric, **line)

    @property
    def budget_s(self) -> float:
        """The most CPU seconds a trial runs (ASHA's last rung)."""
        return self.search.scheduler.max_core_min * 60.0

    def describe(self, points: Iterable[str]) -> str:
        """The scheduler's line under the dry run's table, given its configurations (point names): the
        bound of its cost is summed over ASHA's brackets, one a compared point (`SearchAsha`)."""
        asha = self.search.scheduler
        rungs = " / ".join(f"{r:g}" for r in asha.rungs())
        brackets = Counter(self.search.split_point(point)[1] for point in dict.fromkeys(points))
        most = sum(asha.most_core_min(n * len(self.seeds)) for n in brackets.values())
        return (
            f"search {self.search.name}: {sum(brackets.values())} configurations x seeds {list(self.seeds)}; "
            f"ASHA on {self.search.metric} at {rungs} core-minutes (reduction factor "
            f"{asha.reduction_factor}), one per compared point ({len(brackets)}); at most ~{most:.0f} "
            "core-minutes in all"
        )

    def record(self, results: Any, configs: Configs, uri: str, parent_run_id: str) -> int:
        """Write each trial's core-minutes into its MLflow run and end the runs the scheduler stopped
        (tagged `search_stopped`: passed, rung or budget; `end_stopped_run`); returns how many it ended
        KILLED (cut at a rung), the trials a count of FINISHED runs leaves out."""
        from mlflow.entities import Metric

        client, stopped = store.client(uri), 0
        budget_s = self.budget_s
        for result in results:
            history = result.metrics_dataframe
            if not result.config or history is None or "epoch" not in history:
                continue
            cfg = configs[trial_key(result.config[schema.POINT_TAG], result.config[schema.SEED_TAG])]
            t = cfg.tracking
            runs = store.trial_runs(uri, [t.experiment], parent_run_id, t.run_name)
            if not runs:
                continue
            run = runs[0]
            rows = history.dropna(subset=["epoch"])
            clock = rows[schema.CPU_SECONDS]
            metrics = [
                Metric(CORE_MINUTES, float(s) / 60.0, int(ts) * 1000, int(epoch))
                for epoch, s, ts in zip(rows["epoch"], clock, rows["timestamp"], strict=True)
            ]
            client.log_batch(run.info.run_id, metrics=metrics)
            last = result.metrics or {}
            why = stopped_why(last, cfg.train.epochs, budget_s, self.search.stop_at_gate)
            if result.error is None and why:
                if run.info.status != "FINISHED":
                    end_stopped_run(uri, run.info.run_id, why)
                stopped += why == RUNG
        return stopped

    def report(self, uri: str, parent_run_id: str) -> str:
        """The cost-to-gate table of this search's sweep, as the end of the run prints it."""
        return cost_report(uri, parent_run_id, self.search)
