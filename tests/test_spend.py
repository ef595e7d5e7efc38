"""What the reproduction's sweeps cost (analysis.spend): core-minutes spent, read from a real MLflow store,
beside what a plan part declared before it ran."""

from __future__ import annotations

import json
from pathlib import Path

from analysis.plan import Planned, load_plan
from analysis.spend import planned_text, spend_table, spent_line, trial_costs

ROOT = Path(__file__).resolve().parent.parent
MINUTE_MS = 60_000


def test_a_part_declares_its_estimate_or_says_it_declared_none(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("- {grid: g, seeds: [20, 21], estimate_core_min: 106}\n- {grid: g, seeds: 1}\n")
    declared, old = load_plan(plan)
    assert declared.estimate_core_min == 106 and old.estimate_core_min is None
    assert planned_text(declared) == "106" and planned_text(old) == "not declared"


def test_spent_is_each_finished_trials_minutes_times_its_cpus_read_from_the_store(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("g", artifact_location=(tmp_path / "art").as_uri())
    parent = client.create_run(experiment, tags={"sweep": "1", "grid": "g"}, start_time=0)
    # two finished trials (6 min on 1 CPU, 4 min on 2) and one still running (no end time: not counted)
    for seed, (minutes, cpus) in enumerate([(6, 1), (4, 2), (None, 1)]):
        tags = {"mlflow.parentRunId": parent.info.run_id, "point": "p", "seed": str(seed)}
        run = client.create_run(experiment, tags=tags, start_time=1_000)
        client.log_param(run.info.run_id, "train.num_threads", str(cpus))
        client.log_param(run.info.run_id, "train.max_steps", "6000")
        if minutes is not None:
            client.set_terminated(run.info.run_id, "FINISHED", end_time=1_000 + minutes * MINUTE_MS)
    costs = sorted(trial_costs(client, client.get_run(parent.info.run_id)), key=lambda c: c.seed)
    assert [(c.seed, c.minutes, c.cpus, c.steps) for c in costs] == [(0, 6.0, 1.0, 6000), (1, 4.0, 2.0, 6000)]
    plan = Planned("g", (0, 1, 2), estimate_core_min=20)
    assert spent_line(plan, costs) == (
        "  - core-minutes: planned 20, spent 14 (2 finished trials x 1, 2 CPU each, from their runs' start "
        "and end times)"
    )
    table = spend_table([(plan, costs), (Planned("h", 1), None), (Planned("u", 1), None)], {"u"})
    assert "| g | cpu | 0, 1, 2 |  | 2 | 20 | 14 |" in table
    assert "| h | cpu | 0 |  |  | not declared | not yet run |" in table
    assert "| u | cpu | 0 |  |  | not declared | before the archives |" in table
    assert (
        "Spent in all: 14 core-minutes over 2 trials; declared: 20, of which 0 for the parts not yet run"
        in table
    )


def test_every_archived_trial_records_what_its_spend_is_read_from() -> None:
    """The archives keep each trial's start and end time and the CPUs it held (`train.num_threads`)."""
    for path in sorted((ROOT / "docs" / "results" / "sweeps").glob("*.jsonl")):
        trials = [json.loads(line) for line in path.read_text().splitlines()[2:]]
        trials = [t for t in trials if t.get("parent_run_id")]
        assert trials and all(t["end_time"] > t["start_time"] > 0 for t in trials), path.name
        assert all(int(t["params"]["train.num_threads"]) >= 1 for t in trials), path.name
