"""Recipe searches run for real at smoke scale under Ray Tune's ASHA on a local Ray into a SQLite MLflow
store: trials stopped early and tabled by their cost, a search run as plan parts, ASHA's rungs across a
resume and per compared point."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from test_search import NAN_SEARCH, ROOT, TOY_SEARCH

from analysis.load import find_parent
from arith.config import ExperimentConfig
from arith.tracking import store
from arith.tracking.archive import export_sweep, import_sweep
from arith.tracking.schema import CPU_SECONDS, GATE_METRIC, PARENT_RUN_TAG, POINT_TAG
from arith.training.hardware import machine
from experiments import registry
from lab.search.costs import (
    cost_to_gate,
    search_cost_table,
    search_evaluations,
)
from lab.search.costs import main as search_main
from lab.search.declared import CORE_MINUTES, STOPPED_TAG
from lab.search.report import search_sections
from lab.search.sweep import PASSED, SearchRun, stopped_why


def toy_search_command(
    tmp_path: Path, plugin: str, source: str, ray_temp: str
) -> tuple[list[str], dict[str, str], str]:
    """`python -m lab.sweep --search toy_reverse_recipe` as a user runs it, the search declared by the plugin
    module `plugin` (its `source` written into tmp_path), on a local Ray into a SQLite store there, one
    trial at a time: (command, environment, the store's URI)."""
    (tmp_path / f"{plugin}.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    env[registry.PLUGINS_ENV] = plugin
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    command = [
        sys.executable, "-m", "lab.sweep", "--search", "toy_reverse_recipe", "--cpus-per-trial", "1",
        "--max-concurrent", "1", "--ray-temp-dir", ray_temp, "--tracking-uri", uri,
        "--storage-path", str(tmp_path / "ray_results"),
    ]  # fmt: skip
    return command, env, uri


def run_toy_search(tmp_path: Path, plugin: str, source: str) -> tuple[subprocess.CompletedProcess, str]:
    """The toy search run to its end (`toy_search_command`); returns the finished process and the store's
    URI."""
    ray_temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Unix socket paths stay short
    command, env, uri = toy_search_command(tmp_path, plugin, source, ray_temp)
    try:
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    finally:
        shutil.rmtree(ray_temp, ignore_errors=True)
    return proc, uri


@pytest.mark.slow
def test_a_smoke_search_stops_trials_early_and_tables_their_cost(tmp_path) -> None:
    """A real search: ASHA on a local Ray (one trial at a time, the good learning rate first), the real
    trainer, a SQLite store; the cost-to-gate table read back from the store."""
    proc, uri = run_toy_search(tmp_path, "toy_search", TOY_SEARCH)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "core-min to gate" in proc.stdout  # the table, printed at the end
    assert f"| best {GATE_METRIC}: " in proc.stdout  # the progress line shows what ASHA reads, each point's
    # ... and logged on the search's parent run, with its figure, for the MLflow UI
    client = store.client(uri)
    parent = find_parent(client, "toy_reverse_recipe")
    logged = {f.path for f in client.list_artifacts(parent.info.run_id, "search")}
    assert logged == {"search/cost_to_gate.md", "search/cost_to_gate.png"}
    table = Path(client.download_artifacts(parent.info.run_id, "search/cost_to_gate.md", str(tmp_path)))
    assert "core-min to gate" in table.read_text()

    check_the_toy_search(uri)
    # archived and imported into a fresh store (as docs/RESULTS.md is rebuilt from docs/results/sweeps/):
    # the same table, stopped trials, core-minutes and all
    parent = find_parent(store.client(uri), "toy_reverse_recipe")
    archive = tmp_path / "toy_reverse_recipe.jsonl"
    export_sweep(store.client(uri), parent.info.run_id, archive)
    fresh = f"sqlite:///{tmp_path}/fresh.db"
    import_sweep(fresh, archive)
    assert search_cost_table(fresh, "toy_reverse_recipe").equals(search_cost_table(uri, "toy_reverse_recipe"))
    check_the_toy_search(fresh)


@pytest.mark.slow
def test_a_search_run_as_plan_parts_is_archived_part_by_part_and_read_as_one(tmp_path) -> None:
    """A search longer than a session runs as parts of the plan (docs/results/plan.yaml, `search: true`),
    each a slice of it by `--only`, run and archived when it ends by the reproduction's own `run_part`; a
    fresh store that imports the archives (a new machine) finds each part again and reads them as one
    search: every configuration once, the cost table as if one sweep had run them."""
    from test_faults import clean_env

    from lab.plan import Planned, part_runs, restore_archives

    (tmp_path / "toy_parts.py").write_text(TOY_SEARCH)
    uri, storage = f"sqlite:///{tmp_path}/mlflow.db", tmp_path / "ray_results"
    archives = tmp_path / "archives"
    archives.mkdir()
    parts = (
        Planned("toy_reverse_recipe", seeds=(100,), scale="smoke", only=("train.lr=0.003",), search=True),
        Planned("toy_reverse_recipe", seeds=(100,), scale="smoke", only=("train.lr=1e-05", "train.lr=2e-05"),
                search=True),
    )  # fmt: skip
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Unix socket paths stay short
    env = clean_env(RAY_TMPDIR=ray_tmp, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    env[registry.PLUGINS_ENV] = "toy_parts"
    try:
        for part in parts:
            code = (
                "import pathlib\n"
                "from lab.plan import Planned\n"
                "from lab.run_part import run_part\n"
                f"run_part({part!r}, {uri!r}, {str(storage)!r}, archives=pathlib.Path({str(archives)!r}))\n"
            )
            proc = subprocess.run(
                [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
            )
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert sorted(p.name for p in archives.iterdir()) == sorted(part.archive_name for part in parts)
    fresh = f"sqlite:///{tmp_path}/fresh.db"
    restore_archives(fresh, archives)  # the store reads alone: no declaration of the search is needed
    found = part_runs(store.client(fresh), "toy_reverse_recipe", parts)
    assert [run is not None for _, run in found] == [True, True]  # each part found by its command
    check_the_toy_search_parts(fresh)
    section = search_sections(fresh, ["toy_reverse_recipe"])
    assert "its sweeps (the plan's parts, read as one search)" in section
    # named by the ids they ran under, not the import's new ones: every clone's rebuild reads alike
    ran_under = [run.info.run_id for run in store.sweep_runs(store.client(uri), "toy_reverse_recipe")]
    imported = [run.info.run_id for run in store.sweep_runs(store.client(fresh), "toy_reverse_recipe")]
    assert all(run_id in section for run_id in ran_under)
    assert not any(run_id in section for run_id in imported)
    assert section.count("| lr=0.003,format=basic |") == 1
    # a part's choice rule is read in the section: the step each configuration first reached the gate
    ruled = [(dataclasses.replace(plan, choose_if_gate_by_step=10**9), run) for plan, run in found]
    section = search_sections(fresh, ["toy_reverse_recipe"], plan_parts={"toy_reverse_recipe": ruled[:1]})
    rule = "- choice rule, declared before it ran: every configuration at the gate on every seed by step"
    assert f"{rule} 1,000,000,000: met (lr=0.003,format=basic seed 100 at the gate at step " in section


def check_the_toy_search_parts(uri: str) -> None:
    """The toy search's two parts read as one: a cost row per configuration, lr 0.003 at the gate."""
    from lab.search.costs import every_part_evaluations

    runs = store.sweep_runs(store.client(uri), "toy_reverse_recipe")
    assert len(runs) == 2
    table = cost_to_gate(every_part_evaluations(uri, runs))
    assert len(table) == 3 and "lr=0.003" in table.iloc[0]["configuration"]
    assert not table.iloc[0]["core-min to gate"].startswith("not reached")
    assert table.iloc[1:]["core-min to gate"].str.startswith("not reached").all()


@pytest.mark.slow
def test_a_search_trial_whose_loss_becomes_nan_fails_alone(tmp_path) -> None:
    """A NaN ends its trial without an error (so Tune does not retry it) and with a report that lacks the
    scheduler's metrics: Tune's strict metric check must not end the whole search for it."""
    proc, uri = run_toy_search(tmp_path, "nan_search", NAN_SEARCH)
    output = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "did not include the specified metric" not in proc.stdout + proc.stderr, output
    parent = find_parent(store.client(uri), "toy_reverse_recipe")
    trials = store.trial_runs(uri, ["toy_reverse_recipe"], parent.info.run_id)
    by_lr = {run.data.params["train.lr"]: run for run in trials}
    assert set(by_lr) == {"1e+30", "0.003"}, output
    assert by_lr["1e+30"].info.status == "FAILED" and by_lr["1e+30"].data.tags["failure"] == "nonfinite_loss"
    # the other trial ran to its end, or to its first evaluation at the gate
    sane = by_lr["0.003"]
    assert sane.info.status == "FINISHED" or sane.data.tags.get(STOPPED_TAG) == "passed", output
    assert proc.returncode == 1, output  # a failed trial: the sweep says so in its exit code


def check_the_toy_search(uri: str, resumed: bool = False) -> None:
    """What the smoke search left in its store: a cost row per configuration, the good learning rate at
    the gate and ended there (FINISHED, tagged passed), the others stopped early by ASHA (tagged; KILLED
    where cut at a rung, FINISHED where they spent the whole budget; fewer evaluations)."""
    table = search_cost_table(uri, "toy_reverse_recipe")
    assert len(table) == 3  # one row per configuration
    good = table.iloc[0]
    assert "lr=0.003" in good["configuration"]
    assert not good["core-min to gate"].startswith("not reached") and float(good["core-min to gate"]) > 0
    assert good["best weakest cell"] >= 0.9 and good["cut at a rung"] == "0 of 1"
    slow = table.iloc[1:]
    assert slow["core-min to gate"].str.startswith("not reached").all()
    assert (slow["best weakest cell"] < 0.9).all()
    parent = find_parent(store.client(uri), "toy_reverse_recipe")
    trials = store.trial_runs(uri, ["toy_reverse_recipe"], parent.info.run_id)
    stopped = [run for run in trials if run.data.tags.get(STOPPED_TAG)]
    assert len(trials) == 3 and len(stopped) >= 1
    for run in stopped:  # the MLflow UI draws a trial that passed, or spent its budget, as ended well
        expected = "KILLED" if run.data.tags[STOPPED_TAG] == "rung" else "FINISHED"
        assert run.info.status == expected, run.data.tags
    by_point = {run.data.tags[POINT_TAG]: run for run in trials}
    assert by_point[good["configuration"]].data.tags[STOPPED_TAG] == "passed"
    evaluations = search_evaluations(uri, parent.info.run_id)
    client = store.client(uri)
    for run in trials:  # the trainer's CPU clock, logged each epoch: a running search's core-minutes
        live = {m.step: m.value for m in client.get_metric_history(run.info.run_id, CPU_SECONDS)}
        recorded = {m.step: m.value for m in client.get_metric_history(run.info.run_id, CORE_MINUTES)}
        assert recorded and set(recorded) <= set(live)
        assert list(pd.Series(live).sort_index()) == sorted(live.values())  # a clock: it only goes on
        if not resumed:  # the clock Tune received; an epoch re-run after a restore keeps its first value
            # (both stored to 6 significant digits, arith.tracking.runs.stored)
            assert all(math.isclose(live[epoch] / 60, v, rel_tol=1e-5) for epoch, v in recorded.items())
    mine = evaluations[evaluations["point"] == good["configuration"]].sort_values("epoch")
    # it ended at its first evaluation at the gate, not at its 25th epoch
    assert mine["gate"].iloc[-1] >= 0.9 and (mine["gate"].iloc[:-1] < 0.9).all()
    assert mine["epoch"].max() < 25
    cut = [run for run in stopped if run.data.tags[STOPPED_TAG] in ("rung", "budget")]
    assert cut and all(run.data.tags[POINT_TAG] != good["configuration"] for run in cut)
    # a ready-made MLflow UI view of the search: its trials, best gate first, with their core-minutes
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert (
            search_main(["--grid", "toy_reverse_recipe", "--tracking-uri", uri, "--ui-url", "http://h:5000"])
            == 0
        )
    (link,) = [
        line for line in said.getvalue().splitlines() if line.startswith("MLflow UI view of this search")
    ]
    key = link.rsplit("viewStateShareKey=", 1)[1]
    assert "workflowType=machine_learning" in link and key == f"search-{parent.info.run_id[:12]}"
    experiment = client.get_experiment(parent.info.experiment_id)
    view = json.loads(experiment.tags[f"mlflow.sharedViewState.{key}"])
    assert view["orderByKey"] == f"metrics.`{GATE_METRIC}`" and not view["orderByAsc"]
    assert (
        f"metrics.`{CORE_MINUTES}`" in view["selectedColumns"] and "tags.`point`" in view["selectedColumns"]
    )
    assert view["searchFilter"] == store.trials_filter(parent.info.run_id)
    # its charts open on the gate against the CPU clock, in the section MLflow draws first (by name)
    (section,) = view["compareRunSections"]
    assert section["name"].startswith("Cost to the gate") and section["name"] < "eval"
    line, bar = view["compareRunCharts"]
    assert (line["type"], line["metricKey"], line["selectedXAxisMetricKey"]) == (
        "LINE",
        GATE_METRIC,
        CPU_SECONDS,
    )
    assert (bar["type"], bar["metricKey"]) == ("BAR", GATE_METRIC)
    # docs/RESULTS.md's section, from the store alone
    figures = Path(uri.removeprefix("sqlite:///")).parent / "figures"
    figures.mkdir(exist_ok=True)
    section = search_sections(uri, ["toy_reverse_recipe", "mul_format_recipe"], figures, "results/figures")
    assert "### Recipe search toy_reverse_recipe" in section and "mul_format_recipe" not in section
    assert "(results/figures/search_toy_reverse_recipe.png)" in section
    assert (figures / "search_toy_reverse_recipe.png").stat().st_size > 0
    assert good["configuration"] in section and "not reached" in section
    assert f", on {machine()[0]}; ended." in section  # where its core-minutes were measured; it ended
    # the search's seeds are its parent run's pre-search seeds: no claim is judged on them
    assert parent.data.tags["presearch_seeds"] == "[100]" and parent.info.status == "FINISHED"


def test_asha_keeps_its_rungs_across_a_resume(tmp_path) -> None:
    """Tune pickles the scheduler when a sweep starts (tuner.pkl) and unpickles that copy on --resume:
    SearchAsha comes back with the rungs it recorded since, so a trial reporting after the resume is
    still measured against the ones before it."""
    import pickle
    from types import SimpleNamespace

    from ray.tune.schedulers import TrialScheduler

    from lab.search.asha import ASHA_STATE_FILE

    run = SearchRun.of("mul_format_recipe", None, 1)
    asha = run.scheduler(str(tmp_path))
    at_start = pickle.dumps(asha)  # what tuner.pkl holds
    basic = {"point": "model=tiny,batch=128x20000,lr=0.001,format=basic,max_digits=5"}
    good, bad, later = (SimpleNamespace(trial_id=name, config=basic) for name in ("good", "bad", "later"))
    for trial in (good, bad, later):
        asha.on_trial_add(None, trial)
    ten = {"cpu_seconds": 10 * 60.0}
    assert asha.on_trial_result(None, good, {**ten, "gate/weakest_unseen": 0.8}) == TrialScheduler.CONTINUE
    assert asha.on_trial_result(None, bad, {**ten, "gate/weakest_unseen": 0.1}) == TrialScheduler.STOP
    assert (tmp_path / ASHA_STATE_FILE).is_file()

    restored = pickle.loads(at_start)  # Tuner.restore
    (tmp_path / ASHA_STATE_FILE).unlink()
    forgetful = pickle.loads(at_start)  # what Tune alone would restore: an empty ASHA
    # after the resume, a weak trial at the first rung is stopped against the rungs recorded before it
    assert restored.on_trial_result(None, later, {**ten, "gate/weakest_unseen": 0.2}) == TrialScheduler.STOP
    forgetful.on_trial_add(None, later)
    assert forgetful.on_trial_result(None, later, {**ten, "gate/weakest_unseen": 0.2}) == (
        TrialScheduler.CONTINUE
    )


def test_asha_compares_a_configuration_with_its_own_format_only_and_ends_it_at_the_gate(tmp_path) -> None:
    """The easy format must not fill the rungs the hard one is measured at (the recipe must serve both),
    and a trial whose weakest gated cell reached the gate has nothing left to show the search."""
    from types import SimpleNamespace

    from ray.tune.schedulers import TrialScheduler

    asha = SearchRun.of("mul_format_recipe", None, 1).scheduler(str(tmp_path))
    recipes = ["model=tiny,batch=128x20000,lr=0.001", "model=tiny,batch=128x20000,lr=0.003",
               "model=tiny,batch=512x6000,lr=0.001", "model=tiny,batch=512x6000,lr=0.003"]  # fmt: skip

    def trial(name: str, recipe: str, fmt: str) -> SimpleNamespace:
        # as a restored sweep's trials are: the point's name, its axes Tune's placeholders
        point = f"{recipe},format={fmt},max_digits=5"
        return SimpleNamespace(trial_id=name, config={"point": point, "data.format": ("__fn_ph", "85")})

    trials = {f"b{i + 1}": trial(f"b{i + 1}", r, "basic") for i, r in enumerate(recipes)}
    trials |= {f"p{i + 1}": trial(f"p{i + 1}", r, "padding_reverse") for i, r in enumerate(recipes[:2])}
    for t in trials.values():
        asha.on_trial_add(None, t)

    def report(name: str, minutes: float, gate: float) -> str:
        return asha.on_trial_result(
            None, trials[name], {"cpu_seconds": minutes * 60, "gate/weakest_unseen": gate}
        )

    for name, gate in [("b1", 0.6), ("b2", 0.65), ("b3", 0.7)]:
        assert report(name, 10, gate) == TrialScheduler.CONTINUE
    assert report("b4", 10, 0.2) == TrialScheduler.STOP  # below its own format's rung
    # padding + reversed product, far below every basic trial, meets its own format's rung only
    assert report("p1", 10, 0.05) == TrialScheduler.CONTINUE
    assert report("p2", 10, 0.12) == TrialScheduler.CONTINUE
    # at the gate (0.9, less the verdicts' rounding tolerance), a trial ends there, wherever it stands
    assert report("b1", 12, 0.9) == TrialScheduler.STOP and asha.passed == {"b1"}
    assert report("p1", 15, 0.5) == TrialScheduler.CONTINUE
    assert set(asha._groups) == {"format=basic,max_digits=5", "format=padding_reverse,max_digits=5"}


def test_a_trial_is_stopped_by_the_scheduler_only_when_its_last_result_is_done() -> None:
    cut = {"done": True, "epoch": 3, GATE_METRIC: 0.4, CPU_SECONDS: 100.0}
    assert stopped_why(cut, epochs=10, budget_s=600.0) == "rung"
    assert stopped_why({**cut, CPU_SECONDS: 600.0}, 10, 600.0) == "budget"
    assert stopped_why({**cut, GATE_METRIC: PASSED}, 10, 600.0) == "passed"
    assert stopped_why({**cut, "epoch": 10}, 10, 600.0) == ""  # it ran to its end
    # stopped at its last epoch by the scheduler, at the budget's last rung or at the gate: never a rung cut
    assert stopped_why({**cut, "epoch": 10, CPU_SECONDS: 600.0}, 10, 600.0) == "budget"
    assert stopped_why({**cut, "epoch": 10, GATE_METRIC: PASSED}, 10, 600.0) == "passed"
    assert stopped_why({**cut, "done": False}, 10, 600.0) == ""  # an interrupted sweep left it unfinished
    assert stopped_why({**cut, "nonfinite_loss": 1}, 10, 600.0) == ""  # its NaN loss ended it


def test_a_trial_stopped_at_the_budget_on_its_last_epoch_ends_its_run_finished(tmp_path) -> None:
    """ASHA's last rung is the budget: a trial that reaches it on its last epoch is stopped there before its
    trainer ends its run; the callback ends it FINISHED (tagged budget), not left running to be counted
    KILLED with its search."""
    from ray.tune.experiment import Trial

    from lab.search.sweep import EndStoppedRuns

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = store.client(uri)
    experiment = client.create_experiment("toy")
    parent = client.create_run(experiment, run_name="search").info.run_id
    tags = {PARENT_RUN_TAG: parent}
    run = client.create_run(experiment, run_name="p,seed=100", tags=tags).info.run_id
    trial = ExperimentConfig().with_overrides(
        {"train.epochs": 10, "tracking.run_name": "p,seed=100", "tracking.experiment": "toy"}
    )
    callback = EndStoppedRuns({"p|seed=100": trial}, uri, parent, budget_s=600.0)
    stopped = Trial("run_trial", config={"point": "p", "seed": 100}, stub=True)
    stopped.update_last_result({"done": True, "epoch": 10, GATE_METRIC: 0.4, CPU_SECONDS: 612.0})
    callback.on_trial_complete(0, [stopped], stopped)
    ended = client.get_run(run)
    assert ended.info.status == "FINISHED" and ended.data.tags[STOPPED_TAG] == "budget"


def test_ending_a_stopped_trials_run_never_ends_the_search(tmp_path, capsys) -> None:
    """A Tune callback that raises ends the whole Tune run (as a stale progress callback did on a resume):
    a store that cannot be reached only warns, and the search's end records the run."""
    from ray.tune.experiment import Trial

    from lab.search.sweep import EndStoppedRuns

    trial = ExperimentConfig().with_overrides({"train.epochs": 10, "tracking.run_name": "p"})
    configs = {"p|seed=100": trial}
    (tmp_path / "a_file").write_text("")
    unreachable = f"sqlite:///{tmp_path}/a_file/mlflow.db"  # no store can be made there
    callback = EndStoppedRuns(configs, unreachable, "parent", budget_s=600.0)
    stopped = Trial("run_trial", config={"point": "p", "seed": 100}, stub=True)
    stopped.update_last_result({"done": True, "epoch": 3, GATE_METRIC: 0.2, CPU_SECONDS: 60.0})
    callback.on_trial_complete(0, [stopped], stopped)
    assert "warning: p stays RUNNING until the search ends" in capsys.readouterr().err
