"""A real sweep end to end: `python sweeps/run.py` runs two smoke grids on a local Ray, two 1-CPU trials at
a time, with the real trainer, into a real SQLite MLflow store, read back with `mlflow.search_runs`."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from analysis.report import VERDICTS_HEADING
from arith.config import ExperimentConfig
from arith.tracking.runs import stored
from arith.tracking.schema import WEIGHTS_DIGEST_TAG
from arith.training.train import train
from experiments.registry import claims_for
from sweeps.grids import GRIDS
from sweeps.trainable import trial_key
from tests.test_fast_paths import LossCurve

ROOT = Path(__file__).resolve().parent.parent
GRIDS_UNDER_TEST = ("add_posembed", "mul_simple_case")


@pytest.fixture
def ray_temp_dir():
    """A short Ray temp folder of our own (Unix socket paths must stay under ~100 characters)."""
    path = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run_sweep(*args: str, temp_dir: str, timeout: int = 400) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")}
    cmd = [sys.executable, "sweeps/run.py", "--ray-temp-dir", temp_dir, "--cpus-per-trial", "1", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@contextlib.contextmanager
def cluster(temp_dir: str):
    """A running Ray cluster owned by this test (with Ray's token auth), for `--address`."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp_dir)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.slow
def test_smoke_sweep_of_two_grids_into_mlflow(tmp_path, ray_temp_dir):
    """The first grid on a local Ray the sweep starts itself, the second on a cluster given by --address."""
    import mlflow

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    storage = tmp_path / "ray_results"
    for grid in GRIDS_UNDER_TEST:
        args = [
            "--grid",
            grid,
            "--scale",
            "smoke",
            "--max-concurrent",
            "2",
            "--tracking-uri",
            uri,
            "--storage-path",
            str(storage),
        ]
        if grid == GRIDS_UNDER_TEST[0]:
            proc = run_sweep(*args, temp_dir=ray_temp_dir)
        else:
            with cluster(tempfile.mkdtemp(prefix="ray", dir="/tmp")) as address:
                proc = run_sweep(*args, "--address", address, "--verbose", temp_dir=ray_temp_dir)
            assert "Connecting to existing Ray cluster" in proc.stderr, proc.stderr[-3000:]
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        if grid == GRIDS_UNDER_TEST[0]:  # by default the sweep's own progress line, not Tune's table
            assert (
                " done, " in proc.stdout
                and " pending, " in proc.stdout
                and " failed | best test_acc" in proc.stdout
            )
            assert "Trial status" not in proc.stdout + proc.stderr
            assert "tensorboard" not in (proc.stdout + proc.stderr).lower()  # Tune's hint, not installed
        else:
            assert "Trial status" in proc.stdout + proc.stderr  # Tune's progress table, behind --verbose
        assert (
            f"Sweep analysis: {grid}" in proc.stdout or "test_acc" in proc.stdout
        )  # the end-of-sweep report

        mlflow.set_tracking_uri(uri)
        runs = mlflow.search_runs(experiment_names=[grid])
        parents = runs[runs["tags.sweep"] == "1"]
        assert len(parents) == 1
        parent = parents.iloc[0]
        assert parent["status"] == "FINISHED"
        assert parent["tags.grid"] == grid and parent["tags.scale"] == "smoke" and parent["tags.git_commit"]
        # what the analysis reads instead of importing sweeps: the grid's axes and the scale's digit map
        assert json.loads(parent["tags.axes"]) == GRIDS[grid].declared_axes()
        assert json.loads(parent["tags.digit_map"])["5"] == 2  # smoke: the paper's 5 digits are 2
        # the UI's description of the parent run: what ran, without where (two parts of a grid told apart)
        command = f"`python sweeps/run.py --cpus-per-trial 1 --grid {grid} --scale smoke --max-concurrent 2`"
        command_part, verdicts = parent["tags.mlflow.note.content"].split(f"\n\n{VERDICTS_HEADING}\n")
        assert command_part == command  # run_sweep adds --cpus-per-trial 1
        # then the verdicts of the end-of-sweep analysis, one line a claim, and the tag the runs table shows
        claims = [f"- {c.text} [{c.source}]: **" for c in claims_for(grid)]
        assert [line.split("]: **")[0] + "]: **" for line in verdicts.splitlines()] == claims
        assert parent["tags.verdicts"].startswith(f"{claims_for(grid)[0].id}: ")
        assert parent[f"tags.claim.{claims_for(grid)[0].id}"]  # a tag a claim, its verdict
        assert parent["params.grid"] == grid and parent["params.seeds"] == "0"  # the sweep's params

        children = runs[runs["tags.mlflow.parentRunId"] == parent["run_id"]]
        n_points = len(GRIDS[grid].points())
        assert len(children) == len(runs) - 1 == n_points  # one run per trial, no orphans
        assert (children["status"] == "FINISHED").all()
        assert children["metrics.test_acc"].between(0, 1).all()
        assert set(children["tags.point"]) == {p.name for p in GRIDS[grid].points()}
        for _, child in children.iterrows():
            assert child["tags.grid"] == grid and child["tags.scale"] == "smoke" and child["tags.seed"] == "0"
            assert child["tags.paper_table"].startswith(("tb:", "fig:"))
            assert child["tags.git_commit"] == parent["tags.git_commit"]
            assert child["tags.mlflow.runName"] == f"{child['tags.point']},seed=0"
            assert child["params.model.preset"] == "nano" and child["params.data.task"]

        # the sweep's record for --resume: its configs and parent run
        (sweep_dir,) = storage.glob(f"{grid}-smoke-*")
        state = json.loads((sweep_dir / "sweep.json").read_text())
        assert state["parent_run_id"] == parent["run_id"] and len(state["configs"]) == n_points

        if grid == GRIDS_UNDER_TEST[0]:  # 3 trials, 2 at a time: the third starts where one of them ended
            assert children["tags.ray_worker_pid"].nunique() < len(children)
            last = children.sort_values("start_time").iloc[-1]
            config = state["configs"][trial_key(last["tags.point"], int(last["tags.seed"]))]
            alone, digest = trained_alone(config)  # what a fresh process computes, as the store keeps it
            assert alone and {step: stored(v) for step, v in alone.items()} == losses_of(uri, last["run_id"])
            assert last[f"tags.{WEIGHTS_DIGEST_TAG}"] == digest  # and the weights, to the last bit


def trained_alone(config: dict) -> tuple[dict[int, float], str]:
    """The loss curve and weights digest of a trial's config trained in this process, on one thread, as Ray
    gave it one CPU."""
    cfg = ExperimentConfig.from_dict(config).with_overrides(
        {"tracking.enabled": False, "train.num_threads": 1, "train.checkpoint_dir": ""}
    )
    curve = LossCurve()
    result = train(cfg, tracker=curve)
    return curve.losses, result.weights_sha256


def losses_of(uri: str, run_id: str) -> dict[int, float]:
    from mlflow import MlflowClient

    return {m.step: m.value for m in MlflowClient(uri).get_metric_history(run_id, "train/loss")}


@pytest.mark.slow
def test_the_grids_axes_are_columns_of_tunes_result_grid(tmp_path, ray_temp_dir):
    """A real local sweep of the demo grid: Tune's param space holds point, seed and every declared axis,
    so `ResultGrid.get_dataframe()` of the Tuner restored from the sweep's storage has a column for each."""
    from ray import tune

    from sweeps.storage import SweepStorage, state_configs
    from sweeps.tuner import make_trainable

    storage = tmp_path / "ray_results"
    args = ["--grid", "demo", "--scale", "smoke", "--seeds", "1", "--set", "train.max_steps=12"]
    args += ["--set", "data.test_per_cell=2", "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"]
    proc = run_sweep(*args, "--storage-path", str(storage), "--quiet", temp_dir=ray_temp_dir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    sweeps = SweepStorage(str(storage))
    name = sweeps.latest("demo", "smoke")
    state = sweeps.state(name)
    trainable = make_trainable(state_configs(state), state["resources"])
    frame = tune.Tuner.restore(sweeps.uri(name), trainable=trainable).get_results().get_dataframe()
    axes = GRIDS["demo"].declared_axes()
    assert axes and {f"config/{axis}" for axis in axes} <= set(frame.columns)
    assert {"config/point", "config/seed"} <= set(frame.columns) and len(frame) == len(state["configs"])
    for _, row in frame.iterrows():  # each trial's axis values are its point's
        point = next(p for p in GRIDS["demo"].points() if p.name == row["config/point"])
        assert all(row[f"config/{axis}"] == point.overrides[axis] for axis in axes)


@pytest.mark.slow
def test_paper_scale_without_a_gpu_stops_before_starting_anything(tmp_path, ray_temp_dir):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    storage = tmp_path / "ray_results"
    proc = run_sweep(
        "--grid",
        "add_posembed",
        "--tracking-uri",
        f"sqlite:///{tmp_path}/mlflow.db",
        "--storage-path",
        str(storage),
        temp_dir=ray_temp_dir,
        timeout=180,
    )
    assert proc.returncode == 2
    assert "needs GPUs" in proc.stderr and "--scale cpu" in proc.stderr
    assert not storage.exists()  # no sweep, no trials
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    assert mlflow.search_runs(search_all_experiments=True).empty  # and no MLflow runs


@pytest.mark.slow
def test_a_nan_loss_is_not_retried(tmp_path, ray_temp_dir):
    """A trial whose loss diverges (lr 1e30, no warmup, no clipping) would diverge again from the same
    checkpoint and seed: with retries allowed it still runs once, its run is FAILED with the error, and the
    sweep counts it failed."""
    from mlflow import MlflowClient
    from mlflow.entities import ViewType
    from test_faults import trial_failures

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    storage = tmp_path / "ray_results"
    proc = run_sweep(
        *("--grid", "add_posembed", "--scale", "smoke", "--only", "model.position=learned"),
        *("--set", "train.lr=1e30", "--set", "train.warmup_steps=0", "--set", "train.grad_clip=0"),
        *("--max-failures", "2", "--tracking-uri", uri, "--storage-path", str(storage)),
        temp_dir=ray_temp_dir,
    )
    output = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.returncode == 1, output  # some trial failed

    (sweep_dir,) = storage.glob("add_posembed-smoke-*")
    (failures,) = trial_failures(sweep_dir).values()
    assert failures == 0  # Tune saw no failure to retry
    (trial_dir,) = [path for path in sweep_dir.iterdir() if (path / "result.json").exists()]
    (report,) = [json.loads(line) for line in (trial_dir / "result.json").read_text().splitlines()]
    assert report["nonfinite_loss"] == 1 and "training loss became" in report["error"]

    client = MlflowClient(uri)
    (experiment,) = [e.experiment_id for e in client.search_experiments() if e.name == "add_posembed"]
    runs = client.search_runs([experiment], run_view_type=ViewType.ALL)  # deleted runs too: one attempt
    (parent,) = [r for r in runs if r.data.tags.get("sweep") == "1"]
    (trial,) = [r for r in runs if r.data.tags.get("sweep") != "1"]
    assert parent.info.status == "FAILED" and trial.info.status == "FAILED"
    assert trial.info.lifecycle_stage == "active" and trial.data.tags["failure"] == "nonfinite_loss"
    assert trial.data.tags["failure_message"] == report["error"]

    assert "trials 0 done, 0 running, 0 pending, 1 failed" in proc.stdout, output  # the progress line
    assert "FAILED (non-finite loss)" in proc.stdout, output  # the end-of-sweep summary
