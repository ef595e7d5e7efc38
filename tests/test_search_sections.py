"""What docs/RESULTS.md says of a recipe search: the not-testable claim names what its search found, the
search's section names every processor, a stopped search resumes with its rungs, a recipe costs the most
its compared points needed."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import shutil
import subprocess
import tempfile

import pytest
from test_search import ROOT, TOY_SEARCH, evaluations
from test_search_runs import check_the_toy_search, toy_search_command

from analysis.load import find_parent
from arith.tracking import store
from arith.tracking.schema import GATE_METRIC, POINT_TAG
from lab.plan import PLAN
from lab.search.costs import (
    NOT_NEEDED,
    cost_to_gate,
    recipe_costs,
    search_evaluations,
)
from lab.search.costs import main as search_main
from lab.search.declared import CORE_MINUTES, STOPPED_TAG
from lab.search.report import search_sections
from lab.search.sweep import SearchRun, gate_cells
from lab.searches import SEARCHES
from sweeps.grids import points
from sweeps.storage import digit_map


def test_a_claim_not_testable_names_what_its_recipe_search_found(tmp_path) -> None:
    """The not-testable row of a grid whose claims a search serves (mul_format and its variant
    mul_format_long share its claim) reads the search's store: per compared format the cheapest
    configuration at the gate, or that none of those read passed and the best; none for other grids."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    from lab.search.report import search_evidence

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert search_evidence(uri, "mul_format") == ""  # no search has run
    client = MlflowClient(uri)
    experiment = client.create_experiment("mul_format_recipe", artifact_location=(tmp_path / "a").as_uri())
    parent = client.create_run(experiment, tags={"sweep": "1", "grid": "mul_format_recipe"})
    trials = {  # configuration -> (gate, core-minutes) at each epoch
        "model=tiny,batch=128x20000,lr=0.001,format=basic,max_digits=5": [(0.65, 16.0), (0.93, 30.5)],
        "model=4x256,batch=128x20000,lr=0.003,format=basic,max_digits=5": [(0.0, 20.2)],
        "model=tiny,batch=128x20000,lr=0.001,format=padding_reverse,max_digits=5": [
            (0.1, 12.0),
            (0.25, 61.2),
        ],
        "model=gpt2-mini,batch=512x6000,lr=0.001,format=padding_reverse,max_digits=5": [(0.05, 38.0)],
    }
    for point, readings in trials.items():
        tags = {"mlflow.parentRunId": parent.info.run_id, POINT_TAG: point, "seed": "100"}
        run = client.create_run(experiment, tags=tags)
        metrics = [
            Metric(name, value, 0, epoch)
            for epoch, (gate, spent) in enumerate(readings, 1)
            for name, value in ((GATE_METRIC, gate), (CORE_MINUTES, spent))
        ]
        client.log_batch(run.info.run_id, metrics=metrics)
    found = search_evidence(uri, "mul_format")
    assert found.startswith("mul_format_recipe (not ended; 4 of 24 configurations read, at most 90 core-min")
    assert "format=basic,max_digits=5 passed at 30.5 core-min (model=tiny,batch=128x20000,lr=0.001)" in found
    assert (
        "format=padding_reverse,max_digits=5: none of 2 configurations read passed (best 0.25, "
        "model=tiny,batch=128x20000,lr=0.001)"
    ) in found
    assert search_evidence(uri, "mul_format_long") == found  # its variant: the same claim
    assert search_evidence(uri, "add_posembed") == ""
    # where the plan declares the search's parts, how many of them have run, not whether a sweep ended
    # (the plan's parts as declared, none yet ended: the test sets what the plan says of them below)
    first, *rest = [dataclasses.replace(p, ended_early="") for p in PLAN if p.grid == "mul_format_recipe"]
    parts = [(first, parent), *((p, None) for p in rest)]
    planned = search_evidence(uri, "mul_format", {"mul_format_recipe": parts})
    assert planned.startswith(
        "mul_format_recipe (1 of 6 plan parts run, 1 sweep not ended; 4 of 24 configurations"
    )
    client.set_terminated(parent.info.run_id, "FINISHED")
    assert search_evidence(uri, "mul_format").startswith("mul_format_recipe (ended; ")
    # a second part of the search (docs/results/plan.yaml): its own configuration, and one of the first
    # part's run again, which is read from this later sweep alone; both parts read as one search
    later = client.create_run(experiment, tags={"sweep": "1", "grid": "mul_format_recipe"})
    again = {
        "model=gpt2-mini,batch=512x6000,lr=0.001,format=padding_reverse,max_digits=5": [(0.95, 45.0)],
        "model=gpt2-mini,batch=128x20000,lr=0.003,format=basic,max_digits=5": [(0.4, 38.0)],
    }
    for point, readings in again.items():
        tags = {"mlflow.parentRunId": later.info.run_id, POINT_TAG: point, "seed": "100"}
        run = client.create_run(experiment, tags=tags)
        metrics = [
            Metric(n, v, 0, 1) for n, v in ((GATE_METRIC, readings[0][0]), (CORE_MINUTES, readings[0][1]))
        ]
        client.log_batch(run.info.run_id, metrics=metrics)
    found = search_evidence(uri, "mul_format")
    assert found.startswith("mul_format_recipe (2 sweeps, 1 not ended; 5 of 24 configurations read")
    assert (
        "format=padding_reverse,max_digits=5 passed at 45 core-min (model=gpt2-mini,batch=512x6000,lr=0.001)"
    ) in found
    section = search_sections(uri, ["mul_format_recipe"])
    assert (
        f"its sweeps (the plan's parts, read as one search) {parent.info.run_id}; {later.info.run_id}; "
        "2 sweeps, 1 not ended." in section
    )
    parts = [(first, parent), (rest[0], later), *((p, None) for p in rest[1:])]
    planned = search_sections(uri, ["mul_format_recipe"], plan_parts={"mul_format_recipe": parts})
    assert (
        f"{later.info.run_id}; 2 of 6 plan parts run, 1 sweep not ended; the tables read the configurations "
        "run so far." in planned
    )
    # the plan ends the parts left before they run (a basic part of a shape whose padded ones all failed)
    ended = [(dataclasses.replace(p, ended_early="no padded configuration passed"), None) for p in rest[1:]]
    planned = search_sections(uri, ["mul_format_recipe"], plan_parts={"mul_format_recipe": parts[:2] + ended})
    assert (
        f"{later.info.run_id}; 2 of 6 plan parts run, 1 sweep not ended, 4 ended unrun "
        "(docs/results/plan.yaml says why)." in planned
    )
    assert section.count("model=gpt2-mini,batch=512x6000,lr=0.001,format=padding_reverse") == 1
    # the command line reads the parts as one too; --run reads one sweep
    for run, rows in ((None, 5), (parent.info.run_id, 4)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert (
                search_main(
                    ["--grid", "mul_format_recipe", "--tracking-uri", uri, *(["--run", run] if run else [])]
                )
                == 0
            )
        by_configuration, by_recipe = out.getvalue().split("By recipe:")
        assert sum(line.startswith("| model=") for line in by_configuration.splitlines()) == rows
        assert "| recipe | format=basic,max_digits=5 | format=padding_reverse,max_digits=5 |" in by_recipe
        assert "at most 90 core-minutes a trial" in by_configuration
    # no conclusion while a part runs; once every part has run or was ended unrun, the search is complete
    # and says that no recipe it read served the claim within its budget
    ended_plan = {"mul_format_recipe": parts[:2] + ended}
    assert "complete" not in search_evidence(uri, "mul_format", ended_plan)
    client.set_terminated(later.info.run_id, "FINISHED")
    found = search_evidence(uri, "mul_format", ended_plan)
    assert found.endswith(
        "; complete: none of the 4 recipes read brought every compared point to the gate within 90 "
        "core-min a trial (its trials that missed it ran out of steps first, after 20-61 core-min)"
    )  # no trial here is tagged as stopped by the scheduler: those that missed the gate ran their steps
    assert "**Found:** complete: none of the 4 recipes" in search_sections(uri, plan_parts=ended_plan)
    # a recipe at which every compared point passed is the search's finding, whether or not it is complete
    mini = "model=gpt2-mini,batch=512x6000,lr=0.001"
    run = client.create_run(
        experiment,
        tags={
            "mlflow.parentRunId": later.info.run_id,
            POINT_TAG: f"{mini},format=basic,max_digits=5",
            "seed": "100",
        },
    )
    client.log_batch(
        run.info.run_id, metrics=[Metric(GATE_METRIC, 0.97, 0, 1), Metric(CORE_MINUTES, 20.0, 0, 1)]
    )
    served = f"every compared point passed at {mini}, 45 core-min a trial"
    assert search_evidence(uri, "mul_format", ended_plan).endswith(served)
    assert search_evidence(uri, "mul_format").endswith(served)


def test_a_search_section_names_every_processor_its_sessions_ran_on() -> None:
    from types import SimpleNamespace

    from lab.search.declared import MACHINES_TAG
    from lab.search.report import machines

    def parent(tag: str) -> SimpleNamespace:
        return SimpleNamespace(data=SimpleNamespace(tags={MACHINES_TAG: tag} if tag else {}))

    assert machines(parent("")) == ""
    assert machines(parent("AMD EPYC (no native bf16)")) == ", on AMD EPYC (no native bf16)"
    both = machines(parent("AMD EPYC (no native bf16); Intel Xeon (native bf16)"))
    assert "AMD EPYC (no native bf16) and Intel Xeon (native bf16)" in both and "mix processors" in both


@pytest.mark.slow
def test_a_search_stopped_part_way_resumes_with_its_rungs(tmp_path) -> None:
    """A real search stopped (Ctrl+C to its session) once its good trial has ended at the gate and the next
    one has a checkpoint, then resumed: the trial left at a checkpoint goes on from it, the one not yet
    started is cut against the rungs recorded before the stop (the slow two read alike, so only the good
    trial's record can cut it), and every trial is one run with each epoch once."""
    import pickle
    import signal

    from test_faults import end_session, wait_for

    from lab.search.asha import ASHA_STATE_FILE

    ray_temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    command, env, uri = toy_search_command(tmp_path, "toy_search", TOY_SEARCH, ray_temp)
    results = tmp_path / "ray_results"

    def second_trial_checkpointed() -> bool:
        return len({c.parent for c in results.glob("*/*/checkpoint_*")}) >= 2

    try:
        with (tmp_path / "session1.log").open("w") as log:
            first = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
            try:
                wait_for(second_trial_checkpointed, first, 600, "the second trial's checkpoint")
                # the good trial, stopped at the gate, is ended in the store while the search runs (not
                # left RUNNING in the MLflow UI until the session ends)
                running = find_parent(store.client(uri), "toy_reverse_recipe").info.run_id
                runs = store.trial_runs(uri, ["toy_reverse_recipe"], running)
                (good,) = [run for run in runs if run.data.params["train.lr"] == "0.003"]
                os.killpg(first.pid, signal.SIGINT)
                first.wait(timeout=600)
            finally:
                end_session(first.pid)
        said = (tmp_path / "session1.log").read_text()
        assert first.returncode == 130, said[-3000:]
        # a stopped search says what it found so far, and logs it for the MLflow UI, where no trial is
        # left running
        assert "So far:" in said and "core-min to gate" in said, said[-3000:]
        logged = {f.path for f in store.client(uri).list_artifacts(running, "search")}
        assert "search/cost_to_gate.md" in logged
        stopped = store.trial_runs(uri, ["toy_reverse_recipe"], running)
        assert stopped and "RUNNING" not in {run.info.status for run in stopped}
        assert (good.info.status, good.data.tags.get(STOPPED_TAG)) == ("FINISHED", "passed"), said[-3000:]
        (sweep,) = [p for p in results.iterdir() if p.is_dir()]
        assert (sweep / ASHA_STATE_FILE).is_file()
        second = subprocess.run(
            [*command, "--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
        )
    finally:
        shutil.rmtree(ray_temp, ignore_errors=True)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    check_the_toy_search(uri, resumed=True)
    parent = find_parent(store.client(uri), "toy_reverse_recipe")
    trials = store.trial_runs(uri, ["toy_reverse_recipe"], parent.info.run_id)
    by_lr = {run.data.params["train.lr"]: run for run in trials}
    assert len(trials) == 3 and set(by_lr) == {"0.003", "1e-05", "2e-05"}
    assert by_lr["2e-05"].data.tags.get(STOPPED_TAG) in ("rung", "budget")
    # the scheduler came back with what it had recorded: the good trial's rungs, from before the stop, are
    # beside those the trials recorded after it
    state = pickle.loads((sweep / ASHA_STATE_FILE).read_bytes())
    (asha,) = state["_groups"].values()
    recorded = {trial for _, rung in asha._brackets[0]._rungs for trial in rung}
    # every trial, the one that ended before the stop too (Tune's sync had put the first session's state
    # back over this one's when it was a .pkl)
    assert len(recorded) == 3, recorded
    evaluations = search_evaluations(uri, parent.info.run_id)
    assert not evaluations.duplicated(["point", "seed", "epoch"]).any()  # no epoch twice after the resume


def test_a_recipe_costs_the_most_its_compared_points_needed_and_serves_only_where_all_passed() -> None:
    search = SEARCHES["mul_format_recipe"]
    assert search.split_point("model=tiny,batch=128x20000,lr=0.001,format=basic,max_digits=5") == (
        "model=tiny,batch=128x20000,lr=0.001",
        "format=basic,max_digits=5",
    )
    tiny, mini = "model=tiny,batch=128x20000,lr=0.001", "model=gpt2-mini,batch=512x6000,lr=0.003"
    rows = [
        (f"{tiny},format=basic,max_digits=5", 100, 1, 16.0, 0.95, "passed"),
        (f"{tiny},format=padding_reverse,max_digits=5", 100, 1, 30.0, 0.40, "rung"),
        (f"{mini},format=basic,max_digits=5", 100, 1, 20.0, 0.92, "passed"),
        (f"{mini},format=padding_reverse,max_digits=5", 100, 1, 50.0, 0.50, ""),
        (f"{mini},format=padding_reverse,max_digits=5", 100, 2, 70.0, 0.91, "passed"),
    ]
    recipes = recipe_costs(cost_to_gate(evaluations(rows)), search)
    assert list(recipes["recipe"]) == [mini, tiny]  # the one both formats passed at, first
    both = "core-min to gate, every compared point"
    assert recipes.iloc[0][both] == "70"  # padding_reverse's 70 > basic's 20
    assert recipes.iloc[0]["format=basic,max_digits=5"] == "20"
    assert recipes.iloc[1][both] == "not reached by format=padding_reverse,max_digits=5"
    # a recipe one of whose compared points has not run yet is not costed by the others' alone: its column
    # says so, and it sorts after every recipe all points passed at, before those a point failed at
    wide = "model=4x256,batch=128x20000,lr=0.001"
    more = [*rows, (f"{wide},format=basic,max_digits=5", 100, 1, 9.0, 0.93, "passed")]
    recipes = recipe_costs(cost_to_gate(evaluations(more)), search)
    assert list(recipes["recipe"]) == [mini, wide, tiny]
    assert recipes.iloc[1]["format=padding_reverse,max_digits=5"] == "not run yet"
    assert recipes.iloc[1][both] == "not known: format=padding_reverse,max_digits=5 not run yet"
    # a point not run at a recipe another point missed the gate at is not needed there (the plan ends its
    # part unrun): the table does not wait on it
    big = "model=4x256,batch=512x6000,lr=0.001"
    missed = [*rows, (f"{big},format=padding_reverse,max_digits=5", 100, 1, 90.0, 0.84, "budget")]
    (row,) = (
        recipe_costs(cost_to_gate(evaluations(missed)), search).query("recipe == @big").to_dict("records")
    )
    assert row["format=basic,max_digits=5"] == NOT_NEEDED
    assert row[both] == "not reached by format=padding_reverse,max_digits=5"
    # a search whose first part ran one format only still names both columns
    basic_only = recipe_costs(cost_to_gate(evaluations(rows[:1])), search)
    basic, padded = "format=basic,max_digits=5", "format=padding_reverse,max_digits=5"
    assert list(basic_only.columns) == ["recipe", basic, padded, both]
    assert "machine" not in cost_to_gate(evaluations(rows))  # one processor (none named): no column
    # the plan's parts of a search may run sessions apart, on other processors: a core-minute of a CPU with
    # AMX is not one of a CPU without, so the table names each configuration's and a recipe measured on
    # two says so beside its cost
    amd, xeon = "AMD EPYC (native bf16)", "Intel Xeon (AMX)"
    parts = evaluations(rows).assign(machine=[amd, amd, amd, xeon, xeon])
    table = cost_to_gate(parts)
    assert (
        dict(zip(table["configuration"], table["machine"], strict=True))[f"{mini},format=basic,max_digits=5"]
        == amd
    )
    recipes = recipe_costs(table, search)
    assert recipes.iloc[0][both] == "70 (measured on different processors: compare within one)"


def test_the_mul_search_gates_each_format_on_the_cells_its_paper_table_learned() -> None:
    """Through the cpu scales' digit map (the paper's 5 digits read as 3: each 3-digit cell stands for the
    paper's 5-digit one), tb:basic-5's model reached 0.9 on 1x1-1x5, 2x1-2x3 (2x5 0.86 is not), 3x1 and
    5x1, and tb:padding-5's padding + reversed product on every cell: the search's gate is the verdict's,
    not the fallback's small products."""
    run = SearchRun.of("mul_format_recipe", None, 1)
    digits = digit_map(run.grid, run.scale)
    by_format = {
        cfg.data.format: gate_cells(cfg, digits, run.search) for cfg in points(run.grid, run.scale, (100,))
    }
    assert by_format["basic"] == ["main:1x1", "main:1x2", "main:1x3", "main:2x1", "main:2x2", "main:3x1"]
    assert by_format["padding_reverse"] == [f"main:{r}x{c}" for r in (1, 2, 3) for c in (1, 2, 3)]


def test_a_search_whose_trials_ran_out_of_steps_before_its_budget_says_so() -> None:
    from lab.search.report import conclusion

    search = SEARCHES["mul_simple_case_recipe"]  # 180 core-min a trial at most
    shape = "model=4x256,batch=128x40000,lr=0.001,max_digits=5"
    rows = [
        (f"{shape},augment=n_times_1", 100, 10, 104.8, 0.38, ""),
        (f"{shape},augment=first_step", 100, 10, 106.6, 0.30, ""),
    ]
    budget = "to the gate within 180 core-min a trial"
    said = conclusion(cost_to_gate(evaluations(rows)), search, complete=True)
    assert said.endswith(
        f"{budget} (its trials that missed it ran out of steps first, after 105-107 core-min)"
    )
    # a trial cut at a rung stopped for the scheduler, not for its steps: the budget alone is said
    cut = [rows[0], (*rows[1][:5], "rung")]
    assert conclusion(cost_to_gate(evaluations(cut)), search, complete=True).endswith(budget)
    # two seeds a configuration: the core-minutes spent are per trial
    seeds = [*rows, (f"{shape},augment=n_times_1", 101, 10, 104.8, 0.40, "")]
    assert "after 105-107 core-min" in conclusion(cost_to_gate(evaluations(seeds)), search, complete=True)
