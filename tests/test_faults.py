"""Faults, for real: a trial's worker process is killed mid-run and the trial resumes from its checkpoint
into the same MLflow run; a sweep interrupted with Ctrl-C and started again with --resume runs only
what was unfinished, under the same parent run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GRID = "add_posembed"  # three smoke trials
N_TRIALS = 3
EPOCHS = 6


@pytest.fixture
def ray_temp_dir():
    path = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def sweep_cmd(uri: str, storage: Path, temp_dir: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "sweeps/run.py",
        "--grid",
        GRID,
        "--scale",
        "smoke",
        "--set",
        f"train.epochs={EPOCHS}",
        "--max-concurrent",
        "2",
        "--tracking-uri",
        uri,
        "--storage-path",
        str(storage),
        "--ray-temp-dir",
        temp_dir,
        *extra,
    ]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")}


def child_runs(uri: str):
    import mlflow

    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=[GRID])
    parents = runs[runs["tags.sweep"] == "1"]
    return parents, runs[runs["tags.sweep"] != "1"]


def trial_failures(sweep_dir: Path) -> dict[str, int]:
    """trial id -> how often Tune saw it fail, from Tune's saved experiment state."""
    (state_file,) = sweep_dir.glob("experiment_state-*.json")
    state = json.loads(state_file.read_text())
    out = {}
    for trial_json, runtime_json in state["trial_data"]:
        out[json.loads(trial_json)["trial_id"]] = json.loads(runtime_json)["num_failures"]
    return out


def wait_for(predicate, proc: subprocess.Popen, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            pytest.fail(f"sweep ended (rc {proc.returncode}) before {what}")
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def descendants(pid: int) -> list[int]:
    """Process ids under `pid`, from /proc (only processes this test started are ever signalled)."""
    parent_of = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent_of[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    out, frontier = [], [pid]
    while frontier:
        children = [p for p, parent in parent_of.items() if parent in frontier]
        out += children
        frontier = children
    return out


def trial_worker(driver_pid: int, storage: Path) -> tuple[int, str] | None:
    """A trial process of this sweep (a descendant of our driver) whose trial has a checkpoint."""
    for pid in descendants(driver_pid):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
            trial_id = Path(os.readlink(f"/proc/{pid}/cwd")).name  # Tune runs a trial in working_dirs/<dir>
        except OSError:
            continue
        if title.startswith("ray::") and list(storage.glob(f"*/{trial_id}/checkpoint_000000")):
            return pid, trial_id
    return None


@pytest.mark.slow
def test_killed_worker_resumes_from_checkpoint_into_the_same_run(tmp_path, ray_temp_dir):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    storage = tmp_path / "ray_results"
    log = (tmp_path / "sweep.log").open("w")
    proc = subprocess.Popen(
        sweep_cmd(uri, storage, ray_temp_dir), cwd=ROOT, env=clean_env(), stdout=log, stderr=subprocess.STDOUT
    )
    try:
        worker, trial_id = wait_for(
            lambda: trial_worker(proc.pid, storage), proc, 300, "a checkpointed trial"
        )
        os.kill(worker, signal.SIGKILL)  # the trial's process dies mid-run
        rc = proc.wait(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    output = (tmp_path / "sweep.log").read_text()
    assert rc == 0, output[-4000:]

    (sweep_dir,) = storage.glob(f"{GRID}-smoke-*")
    failures = trial_failures(sweep_dir)
    assert failures[trial_id] >= 1  # Tune saw the death and retried the trial
    point = json.loads((sweep_dir / trial_id / "params.json").read_text())["point"]

    parents, children = child_runs(uri)
    assert len(parents) == 1 and parents.iloc[0]["status"] == "FINISHED"
    assert len(children) == N_TRIALS  # one run per trial: the retry continued its run
    assert (children["status"] == "FINISHED").all()
    killed = children[children["tags.point"] == point].iloc[0]
    assert killed["metrics.epochs_done"] == EPOCHS  # every epoch done, none lost past the checkpoint
    from mlflow import MlflowClient

    history = MlflowClient(uri).get_metric_history(killed["run_id"], "test_acc")
    assert max(m.step for m in history) == EPOCHS


@pytest.mark.slow
def test_interrupted_sweep_resumes_only_what_was_unfinished(tmp_path, ray_temp_dir):
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    storage = tmp_path / "ray_results"
    log = (tmp_path / "sweep.log").open("w")
    proc = subprocess.Popen(
        sweep_cmd(uri, storage, ray_temp_dir), cwd=ROOT, env=clean_env(), stdout=log, stderr=subprocess.STDOUT
    )

    def finished_runs():
        if not list(storage.glob("*/sweep.json")):  # the driver has set up the store and parent run
            return None
        try:
            runs = MlflowClient(uri).search_runs(
                [e.experiment_id for e in MlflowClient(uri).search_experiments()],
                filter_string="attributes.status = 'FINISHED'",
            )
        except Exception:  # the store is still being created
            return None
        return [r for r in runs if "sweep" not in r.data.tags] or None

    try:
        done_before = wait_for(finished_runs, proc, 300, "a finished trial")
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    output = (tmp_path / "sweep.log").read_text()
    assert rc == 130, output[-4000:]
    assert "--resume" in output
    parents, children = child_runs(uri)
    assert len(parents) == 1 and parents.iloc[0]["status"] == "KILLED"
    assert (children["status"] == "FINISHED").sum() < N_TRIALS
    finished_at = {r.info.run_id: r.info.end_time for r in finished_runs()}

    resumed = subprocess.run(
        sweep_cmd(uri, storage, ray_temp_dir, "--resume"),
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]

    parents_after, children_after = child_runs(uri)
    assert list(parents_after["run_id"]) == list(parents["run_id"])  # the same parent run, now finished
    assert parents_after.iloc[0]["status"] == "FINISHED"
    assert len(children_after) == N_TRIALS and (children_after["status"] == "FINISHED").all()
    assert set(children_after["tags.mlflow.parentRunId"]) == {parents.iloc[0]["run_id"]}
    # trials finished before the interrupt were not run again
    client = MlflowClient(uri)
    assert done_before
    for run_id, end_time in finished_at.items():
        assert client.get_run(run_id).info.end_time == end_time
