"""What the reproduction's sweeps cost (lab.spend): core-minutes spent, read from a real MLflow store,
beside what a plan part declared before it ran, and the cost of a judged sweep of a claim not testable."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from arith.tracking.schema import CPU_SECONDS
from arith.training.sessions import NOT_RECORDED
from lab.budget import steps_needed
from lab.gpu_plan import PlannedBatch, PlannedPart, load_gpu_plan
from lab.plan import PLAN, TAG_COMMAND, Planned, load_plan, unended_grids
from lab.presearch import presearch_records
from lab.reach import (
    GpuBatch,
    compared_points,
    gpu_batches,
    gpu_cost,
    gpu_rates,
    judged_cost,
    one_core_cost,
    planned_gpu_sweeps,
)
from lab.results import grids as results_grids
from lab.results import page as results
from lab.spend import NOT_ENDED, TrialCost, planned_text, spend_table, spent_line, trial_costs

ROOT = Path(__file__).resolve().parent.parent
MINUTE_MS = 60_000


def test_a_trial_resumed_in_a_later_session_is_not_charged_for_the_hours_between(tmp_path: Path) -> None:
    """A trial's run keeps its start time when its sweep resumes it in a later session: its spend is its
    wall time less the stops in its loss log, not the hours the machine was off."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("g", artifact_location=(tmp_path / "art").as_uri())
    parent = client.create_run(experiment, tags={"sweep": "1", "grid": "g"}, start_time=0)
    # loss logged each minute: 10 min, a 40-minute stop, 8 more minutes, then 1 min of evaluation
    t0 = 1_000  # MLflow reads a start time of 0 as "now"
    stamps = [t0 + m * MINUTE_MS for m in (*range(1, 11), *range(51, 59))]
    for seed, (end_min, trained_min, log) in enumerate([(59, 17, stamps), (12, 11, stamps[:10])]):
        tags = {"mlflow.parentRunId": parent.info.run_id, "point": "p", "seed": str(seed)}
        run = client.create_run(experiment, tags=tags, start_time=t0)
        losses = [Metric("train/loss", 1.0, t, i) for i, t in enumerate(log)]
        client.log_batch(run.info.run_id, metrics=[*losses, Metric("train_seconds", trained_min * 60, 0, 0)])
        client.set_terminated(run.info.run_id, "FINISHED", end_time=t0 + end_min * MINUTE_MS)
    costs = sorted(trial_costs(client, client.get_run(parent.info.run_id)), key=lambda c: c.seed)
    assert [c.minutes for c in costs] == [59 - 41, 12]  # the 41 minutes between logs at 10 and 51 are a stop


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
        "and end times less the stops between sessions)"
    )
    assert "spent 6 (1 finished trial x 1 CPU each" in spent_line(plan, costs[:1])
    # a trial stopped for good (its part ended early) spent its minutes: counted, and said to be unfinished
    stopped = dataclasses.replace(costs[1], finished=False)
    assert "spent 14 (2 trials, 1 finished x 1, 2 CPU each" in spent_line(plan, [costs[0], stopped])
    table = spend_table([(plan, costs), (Planned("h", 1), None), (Planned("u", 1), None)], {"u"})
    assert "| g | cpu | 0, 1, 2 |  | 2 | 20 | 14 | — |" in table  # no trial logged its CPU clock
    assert "| h | cpu | 0 |  |  | not declared | not yet run |  |" in table
    assert "| u | cpu | 0 |  |  | not declared | before the archives |  |" in table
    # a part the plan ended before it ran: said so, and not counted among the parts still to run
    unrun = Planned("e", 1, estimate_core_min=30, ended_early="no padded configuration passed")
    waiting = Planned("w", 1, estimate_core_min=40)
    ended = spend_table([(plan, costs), (unrun, None), (waiting, None)])
    assert "| e | cpu | 0 |  |  | 30 | ended unrun: no padded configuration passed |  |" in ended
    # planned beside spent only over the parts that declared and ran; the unrun parts' estimates apart
    assert (
        "Over the 1 part that declared an estimate and then ran: 20 core-minutes planned, 14 spent." in ended
    )
    assert (
        "The 1 part ended unrun had declared 30 and spent nothing. The 1 part not yet run or not ended "
        "declares 40." in ended
    )
    # a part whose grid has a sweep in the store that has not ended (the parent here is still RUNNING and
    # was never recorded as a part): running now, or stopped to be resumed; once recorded, it has ended
    assert unended_grids(client) == {"g"}
    assert f"| w | cpu | 0 |  |  | 40 | {NOT_ENDED} |  |" in spend_table([(waiting, None)], unended={"w"})
    client.set_tag(parent.info.run_id, TAG_COMMAND, "python sweeps/run.py --grid g")
    assert unended_grids(client) == set()
    client.delete_tag(parent.info.run_id, TAG_COMMAND)
    # trials that logged their own CPU time (cpu_seconds) show it beside the wall minutes other work
    # on the same cores stretched: 5 + 7 of the 14
    for cost, seconds in zip(costs, [300.0, 420.0], strict=True):
        run = next(r for r in client.search_runs([experiment]) if r.data.tags.get("seed") == str(cost.seed))
        client.log_metric(run.info.run_id, CPU_SECONDS, seconds, step=3)
    clocked = trial_costs(client, client.get_run(parent.info.run_id))
    assert sorted(c.cpu_minutes for c in clocked) == [5.0, 7.0]
    assert spent_line(plan, clocked).endswith("between sessions; 12 of the trials' own CPU time)")
    assert "| g | cpu | 0, 1, 2 |  | 2 | 20 | 14 | 12 |" in spend_table([(plan, clocked)])
    assert "Spent in all: 14 core-minutes over 2 trials (the sum of the spent column" in table


def test_a_judged_sweep_costs_its_seeds_times_its_points_at_the_measured_rate_on_one_core() -> None:
    # 3,000 steps in 5 and 7 min on one CPU: 0.002 core-minutes a step; a 2-CPU trial is not a one-core rate
    costs = [
        TrialCost("p", 0, 5.0, 1.0, 3000),
        TrialCost("q", 0, 7.0, 1.0, 3000),
        TrialCost("p", 1, 1, 2, 3000),
    ]
    said = one_core_cost(costs, 2, [6000.0, None, 12000.0], "the pre-search's steps")
    # 5 seeds x 2 points x 6,000 (or 12,000) steps x 0.002 min = 120 (240) min
    assert said.startswith("2.0-4.0 core-hours: 5 seeds x 2 points x 6,000, 12,000 steps (the pre-search's")
    assert "0.12 s a step of wall time held (slower where trials shared cores), measured over" in said
    assert said.endswith("; an extrapolation")
    # an extrapolated budget shown to two significant figures, one number where the seeds agree
    assert one_core_cost(costs, 1, [46_629.0, 46_629.0], "x").startswith(
        "7.8 core-hours: 5 seeds x 1 points x 47,000"
    )
    assert one_core_cost(costs, 2, [None], "x").startswith("no estimate: the pre-search gives no budget")
    assert one_core_cost([], 2, [6000.0], "x") == "no one-core measurement"
    # a trial stopped part-way (a part ended early) spent its minutes on fewer steps than its budget
    stopped = TrialCost("q", 2, 1.0, 1.0, 3000, finished=False)
    assert "over its sweep's 2 one-CPU trials" in one_core_cost([*costs, stopped], 2, [6000.0], "x")
    # where every trial logged its CPU time, the rate is read from it (two trials sharing a core each
    # held 10 wall minutes for 5 of CPU time)
    clocked = [TrialCost("p", s, 10.0, 1.0, 3000, cpu_minutes=5.0) for s in (0, 1)]
    said = one_core_cost(clocked, 2, [6000.0], "x")
    assert said.startswith("1.7 core-hours") and "0.10 s a step of CPU time, measured over" in said
    assert "wall time" in one_core_cost([*clocked, costs[0]], 2, [6000.0], "x")  # one without: wall time
    # trials from two machines: a rate each, and the cost spans the fastest to the slowest
    fast = [TrialCost("p", s, 10.0, 1.0, 3000, cpu_minutes=5.0, machine="EPYC (native bf16)") for s in (0, 1)]
    slow = TrialCost("p", 2, 30.0, 1.0, 3000, cpu_minutes=15.0, machine="EPYC (no native bf16)")
    said = one_core_cost([*fast, slow], 2, [6000.0], "x")
    assert said.startswith(
        "1.7-5.0 core-hours: 5 seeds x 2 points x 6,000 steps (x) at the seconds a step of CPU"
    )
    assert "0.10 s on EPYC (native bf16) (2 trials); 0.30 s on EPYC (no native bf16) (1 trial)" in said
    # a trial resumed on the other machine: each session's steps at its own CPU time, not the sweep's
    # last machine for the whole trial (1,000 steps in 5 min where bf16 is emulated, 2,000 in 3.33 min
    # where it is native: the rates of the trials that ran on one machine each)
    sessions = (
        {"machine": "EPYC (no native bf16)", "from_step": 0, "to_step": 1000, "cpu_seconds": 300.0},
        {"machine": "EPYC (native bf16)", "from_step": 1000, "to_step": 3000, "cpu_seconds": 200.0},
    )
    both = TrialCost(
        "p", 3, 20.0, 1.0, 3000, cpu_minutes=500 / 60, machine="EPYC (native bf16)", sessions=sessions
    )
    said = one_core_cost([*fast, slow, both], 2, [6000.0], "x")
    assert "0.10 s on EPYC (native bf16) (3 trials); 0.30 s on EPYC (no native bf16) (2 trials)" in said
    assert both.by_machine(clocked=True) == {
        "EPYC (no native bf16)": (5.0, 1000),
        "EPYC (native bf16)": (200 / 60, 2000),
    }
    # without a CPU clock, or with steps no one recorded the machine of, the trial counts as a whole
    assert both.by_machine(clocked=False) == {"EPYC (native bf16)": (20.0, 3000)}
    unknown = TrialCost(
        "p",
        4,
        20.0,
        1.0,
        3000,
        cpu_minutes=8.0,
        machine="m",
        sessions=({**sessions[0], "machine": NOT_RECORDED}, sessions[1]),
    )
    assert unknown.by_machine(clocked=True) == {"m": (8.0, 3000)}


def test_a_gpu_cost_is_what_the_banked_batches_measured() -> None:
    assert gpu_cost([], 2) == "no GPU measurement"
    batch = GpuBatch("b", "NVIDIA H200", 6, 6, 4.7, "gpt2-mini, batch 512, 8000 steps")
    assert gpu_cost([batch], 2) == (
        "b: 6 trials (gpt2-mini, batch 512, 8000 steps) in 4.7 min on one NVIDIA H200, 6 at a time "
        "(measured); 5 seeds x 2 points at that setting: about 9 min (2 such wave(s), an extrapolation)"
    )
    # the committed bank: a2's six mul_format trials, six at once
    banked = gpu_batches(results.GPU_BANK, load_gpu_plan())  # its procs from the committed plan
    a2 = next(b for b in banked["mul_format"] if b.batch == "a2_mul_presearch_batch512")
    assert (a2.trials, a2.procs, a2.machine) == (6, 6, "NVIDIA H200") and 4 < a2.minutes < 6
    assert "mul_simple_case" in banked and "reverse_posembed" not in banked


def test_a_claim_waiting_on_a_planned_gpu_batch_is_costed_at_the_pace_its_setting_was_measured_at() -> None:
    """A judged batch the GPU plan holds, not banked yet, costs what a banked batch of the same task, factor
    digits, batch and steps measured: the one nearest its load (as many trials at once), in waves."""
    fast = {"data.max_digits": "3", "train.batch_size": "512", "train.max_steps": "8000"}
    slow = {**fast, "train.batch_size": "128", "train.max_steps": "5000"}

    def part(grid: str, sets: dict[str, str], presearch: bool = False, **only: str) -> PlannedPart:
        return PlannedPart(grid, (0, 1, 2, 3, 4), only=only, sets=sets, presearch=presearch)

    plan = [
        PlannedBatch("six", "", 5.0, 6, (part("mul_format", fast, True, **{"data.format": "basic"}),)),
        PlannedBatch("ten", "", 8.0, 10, (part("mul_format", fast, **{"data.format": "basic"}),)),
        PlannedBatch("dialogue", "", 8.0, 10, (part("nl_mix", fast, True),)),
        PlannedBatch(
            "judged",
            "",
            9.0,
            10,
            tuple(
                part("mul_simple_case", fast, **{"data.max_digits": "5", "data.augment": augment})
                for augment in ("n_times_1", "first_step")
            ),
        ),
        PlannedBatch("other", "", 9.0, 10, (part("mul_simple_case", slow, **{"data.max_digits": "5"}),)),
        PlannedBatch("search", "", 9.0, 10, (part("mul_one_digit_weight", fast, True),)),
    ]
    setting = "gpt2-mini, batch 512, 8000 steps"
    banked = {
        "mul_format": [
            GpuBatch("six", "H200", 6, 6, 4.7, setting),
            GpuBatch("ten", "H200", 10, 10, 6.9, setting),
        ],
        "nl_mix": [GpuBatch("dialogue", "H200", 10, 10, 11.6, setting)],
    }
    planned = planned_gpu_sweeps(plan, banked)
    # nothing measured batch 128 x 5000, and a pre-search is no judged sweep: only "judged" is costed
    assert list(planned) == ["mul_simple_case"]
    (judged,) = planned["mul_simple_case"]
    assert (judged.batch, judged.trials, judged.measured.batch) == ("judged", 10, "ten")  # not nl_mix's pace
    on_gpu = judged_cost("mul_simple_case", [], "...", [], {}, banked, {}, planned=planned)["on a GPU"]
    assert on_gpu == (
        f"planned: judged, 10 trials at {setting}, the setting ten measured: about 7 min on one H200 (10 "
        "trials took 6.9 min there, 10 at a time; an extrapolation)"
    )
    # a wave a measured batch's procs ran at once: twice the trials at the same procs take twice as long
    twice = dataclasses.replace(plan[3], procs=5)
    (half,) = planned_gpu_sweeps([*plan[:3], twice], banked)["mul_simple_case"]
    assert half.measured.batch == "six"  # 6 at once is nearer 5 than 10 is
    assert (
        "about 9 min"
        in judged_cost("mul_simple_case", [], "...", [], {}, {}, {}, planned={"mul_simple_case": [half]})[
            "on a GPU"
        ]
    )


def test_a_claims_points_are_those_of_its_paper_tables_the_plan_runs() -> None:
    plan = [p for p in PLAN if p.grid == "reverse_posembed"]
    randembed = compared_points("reverse_posembed", plan, "random embedding ... [fig:randembed]")
    assert randembed == [
        "position=none,init=random,epochs=25,lr=1e-05",
        "position=random_embed,init=random,epochs=25,lr=1e-05",
    ]  # the pretrained points are not run (`--only model.init=random`)
    plan = [p for p in PLAN if p.grid == "add_posembed_recipe_long"]  # one part a position
    assert len(compared_points("add_posembed_recipe_long", plan, "... [fig:acc_add_rand]")) == 3


def test_the_steps_a_point_needs_come_from_the_committed_pre_search() -> None:
    every = [rec for records in presearch_records().values() for rec in records]
    needed = steps_needed(every)
    assert needed["cpu_tune_steps: task=reverse_random_embed"] == [3000.0]  # reached: measured
    assert needed["cpu_tune_steps: task=mul_basic"] == [None]  # nearly flat: no number
    mul = needed["mul_format: format=basic,max_digits=5"]  # as "Steps to competence" shows them, per seed
    assert [int(float(f"{s:.2g}")) for s in mul] == [150_000, 47_000, 4_300_000]
    cost = judged_cost(
        "reverse_posembed",
        [p for p in PLAN if p.grid == "reverse_posembed"],
        "... [fig:randembed]",
        [TrialCost("p", 0, 4.0, 1.0, 3000)],
        needed,
        {},
        results_grids.BUDGET_POINTS,
    )
    # 5 seeds x 2 points x 3,000 steps at 4 min a 3,000-step trial = 40 core-minutes
    assert cost["a judged sweep on one core"].startswith("0.7 core-hours: 5 seeds x 2 points x 3,000 steps")
    assert cost["on a GPU"] == "no GPU measurement"


@pytest.mark.parametrize("grid", ["add_length"])
def test_a_claim_the_cpu_model_cannot_test_says_so_instead_of_a_one_core_cost(grid: str) -> None:
    said = judged_cost(
        grid, [], "... [tb:acc_dataformat]", [], {}, {}, {}, results_grids.ONE_CORE_INSTEAD[grid]
    )
    assert said["a judged sweep on one core"].startswith("not runnable here: the claim is about GPT-2 small")
    assert "about 88 core-hours a trial" in said["a judged sweep on one core"]


def test_a_claim_without_a_cpu_budget_or_a_gpu_rate_shows_its_costs_measured_at_the_paper_scale() -> None:
    """nl_mix: no budget of the cpu model passes its gate and no GPU rate of its trials is banked, so both
    cost columns read the measurements made at the paper's scale (a one-core rate, an H100 grid total);
    a GPU batch banked for the grid would be read first."""
    said = judged_cost(
        "nl_mix",
        [],
        "... [tb:acc_nldia_a]",
        [],
        {},
        {},
        {},
        results_grids.ONE_CORE_INSTEAD["nl_mix"],
        gpu_instead=results_grids.GPU_INSTEAD["nl_mix"],
    )
    assert said["a judged sweep on one core"].startswith("no budget of the cpu model is known")
    assert "151 tokens/s on one core" in said["a judged sweep on one core"]
    assert said["on a GPU"].startswith("measured once on an H100") and "19.5 H100-hours" in said["on a GPU"]
    banked = {"nl_mix": [GpuBatch("b9", "NVIDIA H200", 10, 5, 30.0, "tiny, batch 64, 3000 steps")]}
    on_gpu = judged_cost("nl_mix", [], "...", [], {}, banked, {}, gpu_instead="x")["on a GPU"]
    assert on_gpu.startswith("b9: 10 trials")


def test_every_archived_trial_records_what_its_spend_is_read_from() -> None:
    """The archives keep each trial's start and end time and the CPUs it held (`train.num_threads`)."""
    for path in sorted((ROOT / "docs" / "results" / "sweeps").glob("*.jsonl")):
        trials = [json.loads(line) for line in path.read_text().splitlines()[2:]]
        trials = [t for t in trials if t.get("parent_run_id")]
        assert trials and all(t["end_time"] > t["start_time"] > 0 for t in trials), path.name
        assert all(int(t["params"]["train.num_threads"]) >= 1 for t in trials), path.name


def test_a_gpu_cost_without_a_banked_batch_is_read_from_the_presearch_gpu_trials() -> None:
    """The pre-search's records on lent GPUs give seconds a step per task and model: a judged sweep of a
    grid with no banked batch is costed at its trials' task, model and batch from them."""
    every = [rec for records in presearch_records().values() for rec in records]
    rates = gpu_rates(every)
    (scratchpad,) = rates[("add_scratchpad", "tiny")]  # add_posembed_steps (H100) and cpu_tune_steps (H200)
    assert scratchpad.batch == 64 and scratchpad.machines == ("NVIDIA H100 80GB HBM3", "NVIDIA H200")
    assert 0.01 < scratchpad.seconds_per_step < 0.1
    assert ("dialogue", "tiny") not in rates  # nl_mix's pre-search ran on a CPU
    trial = TrialCost("p", 0, 90.0, 1.0, 12_000, task="add_scratchpad", preset="tiny", batch=64)
    plan = [p for p in PLAN if p.grid == "add_posembed_recipe_long"]
    cost = judged_cost(
        "add_posembed_recipe_long", plan, "... [fig:acc_add_rand]", [trial], {}, {}, {}, rates=rates
    )
    minutes = 5 * 3 * 12_000 * scratchpad.seconds_per_step / 60
    assert cost["on a GPU"].startswith(f"{minutes:,.0f} GPU-minutes of trials: 5 seeds x 3 points x 12,000")
    assert "pre-search trials of the same model (tiny, add_scratchpad, batch 64)" in cost["on a GPU"]
    # another batch is said; no rate for the task: no GPU measurement
    other = dataclasses.replace(trial, batch=128)
    said = judged_cost("add_posembed_recipe_long", plan, "...", [other], {}, {}, {}, rates=rates)["on a GPU"]
    assert "the trials judged train at batch 128" in said
    dialogue = dataclasses.replace(trial, task="dialogue")
    assert judged_cost("nl_mix", [], "...", [dialogue], {}, {}, {}, rates=rates)["on a GPU"] == (
        "no GPU measurement"
    )


def _trial(minutes: float, seed: int = 0) -> TrialCost:
    return TrialCost("p", seed, minutes, 1.0, 100)


def test_the_totals_compare_planned_and_spent_only_over_the_parts_that_declared_and_ran() -> None:
    """Planned beside spent over the parts with an estimate that ran; apart, what parts without one spent
    and what parts ended unrun had declared. Each total sums the rounded rows, so it matches its column."""
    declared = Planned("d", 1, estimate_core_min=100)
    undeclared = Planned("u", 1)
    ended = Planned("e", 1, estimate_core_min=70, ended_early="what the rest could not change")
    # two trials of 10.4 min: the row shows 21 (20.8 rounded); undeclared rows 5 (4.6) and 5 (4.6)
    parts = [
        (declared, [_trial(10.4), _trial(10.4, 1)]),
        (undeclared, [_trial(4.6)]),
        (Planned("u", (1,)), [_trial(4.6)]),
        (ended, None),
    ]
    table = spend_table(parts)
    assert "| d | cpu | 0 |  | 2 | 100 | 21 | — |" in table
    assert (
        "Over the 1 part that declared an estimate and then ran: 100 core-minutes planned, 21 spent." in table
    )
    assert "The 2 parts run before the plan declared estimates spent 10 more." in table
    assert "The 1 part ended unrun had declared 70 and spent nothing." in table
    assert "not yet run declare" not in table  # no part is left to run
    # 21 + 5 + 5 as the column shows them, not the unrounded 30.4
    assert "Spent in all: 31 core-minutes over 4 trials (the sum of the spent column" in table


def test_a_part_that_overran_its_estimate_by_more_than_half_again_is_flagged_under_the_table() -> None:
    over = Planned("r", (20, 21, 22, 23), sets=("train.precision=fp32",), estimate_core_min=200)
    near = Planned("r", (5, 6), only=("position=random_embed",), estimate_core_min=100)
    parts = [(over, [_trial(399.4)]), (near, [_trial(150.0)]), (Planned("u", 1), [_trial(900.0)])]
    table = spend_table(parts)
    # 2.0x is flagged; 1.5x exactly is not, nor a part that declared no estimate
    assert table.endswith(
        "\nOver 1.5x their estimate: r (seeds 20-23; train.precision=fp32): 200 -> 399 (2.0x).\n"
    )
    assert "Over 1.5x" not in spend_table(parts[1:])
