"""Faults, for real processes and real stores, each at smoke scale:

1. a trial's worker process is SIGKILLed after a checkpoint and the trial resumes into the same MLflow run;
2. the MLflow tracking server (PostgreSQL-backed, started here) is stopped mid-trial for longer than a
   send interval and started again: the trial trains on and finishes, its metrics arrive once;
3. the sweep driver is SIGKILLed and `--resume` runs only what was unfinished (and Ctrl-C does the same);
after each, every trial's history holds every logged `train/loss` step exactly once, `test_acc` at every
evaluation once, one `eval/cells.csv` row per evaluated cell, and one FINISHED run per trial.

Only processes this test started are ever signalled (by pid, or by the session of a driver it started).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

from arith.tracking import store

ROOT = Path(__file__).resolve().parent.parent
GRID = "add_posembed"  # three smoke trials
N_TRIALS = 3
EPOCHS = 6
#: generous waits: on a loaded 2-core machine (load average 25 while measured) a local Ray takes a minute
WAIT_S = 600
pytestmark = pytest.mark.timeout(1800)


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


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def check_histories(uri: str, n_trials: int) -> None:
    """The history checks on every trial run of the grid's experiment."""
    client = store.client(uri)
    (experiment,) = store.experiment_ids(client, [GRID])
    runs = [r for r in store.search_runs(client, [experiment]) if r.data.tags.get("sweep") != "1"]
    names = [r.info.run_name for r in runs]
    assert len(runs) == n_trials and len(set(names)) == n_trials, names  # one run per trial
    assert all(r.info.status == "FINISHED" for r in runs), [(r.info.run_name, r.info.status) for r in runs]
    for run in runs:
        run_id, params = run.info.run_id, run.data.params
        every = int(params["train.log_every_steps"])
        (end,) = client.get_metric_history(run_id, "train_seconds")  # logged once, at the last step
        losses = [m.step for m in client.get_metric_history(run_id, "train/loss")]
        assert sorted(losses) == list(range(every, end.step + 1, every)), (run.info.run_name, losses)
        epochs = int(run.data.metrics["epochs_done"])
        evaluated = sorted({e for e in json.loads(params["train.eval_epochs"]) if e <= epochs} | {epochs})
        acc = [m.step for m in client.get_metric_history(run_id, "test_acc")]
        assert sorted(acc) == evaluated, (run.info.run_name, acc)
        with tempfile.TemporaryDirectory() as tmp:
            cells = pd.read_csv(client.download_artifacts(run_id, "eval/cells.csv", tmp))
        keys = ["epoch", "context", "row_digits", "col_digits"]
        assert not cells.duplicated(keys).any() and sorted(set(cells["epoch"])) == evaluated


def end_session(leader: int) -> None:
    """SIGKILL every process of the session a driver we started leads (its local Ray included)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[3]) == leader:  # field 6 of stat: the session id
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


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


def registered_checkpoint(storage: Path, trial_id: str) -> bool:
    """Whether Tune's driver holds a checkpoint of the trial to restore it from. A checkpoint reaches
    storage before the driver registers it (it does when it processes the trial's save), so a kill in
    between restarts the trial from scratch. A function trainable's next `tune.report` waits until the
    driver has processed that save and asked for more training, so a second checkpoint in storage means
    the first is registered."""
    return any(storage.glob(f"*/{trial_id}/checkpoint_000001"))


def trial_worker(driver_pid: int, storage: Path) -> tuple[int, str] | None:
    """A trial process of this sweep (a descendant of our driver) with a checkpoint the driver holds."""
    for pid in descendants(driver_pid):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
            trial_id = Path(os.readlink(f"/proc/{pid}/cwd")).name  # Tune runs a trial in working_dirs/<dir>
        except OSError:
            continue
        if title.startswith("ray::") and registered_checkpoint(storage, trial_id):
            return pid, trial_id
    return None


@pytest.mark.slow
def test_killed_worker_resumes_from_checkpoint_into_the_same_run(tmp_path, ray_temp_dir):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    storage = tmp_path / "ray_results"
    log = (tmp_path / "sweep.log").open("w")
    proc = subprocess.Popen(
        sweep_cmd(uri, storage, ray_temp_dir),
        cwd=ROOT,
        env=clean_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        worker, trial_id = wait_for(
            lambda: trial_worker(proc.pid, storage), proc, WAIT_S, "a checkpointed trial"
        )
        os.kill(worker, signal.SIGKILL)  # the trial's process dies mid-run
        rc = proc.wait(timeout=2 * WAIT_S)
    finally:
        end_session(proc.pid)
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
    check_histories(uri, N_TRIALS)


@pytest.mark.slow
def test_interrupted_sweep_resumes_only_what_was_unfinished(tmp_path, ray_temp_dir):
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    storage = tmp_path / "ray_results"
    log = (tmp_path / "sweep.log").open("w")
    proc = subprocess.Popen(
        sweep_cmd(uri, storage, ray_temp_dir),
        cwd=ROOT,
        env=clean_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
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
        done_before = wait_for(finished_runs, proc, WAIT_S, "a finished trial")
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        rc = proc.wait(timeout=WAIT_S)
    finally:
        end_session(proc.pid)
        log.close()
    output = (tmp_path / "sweep.log").read_text()
    assert rc == 130, output[-4000:]
    assert "--resume" in output
    # the last progress line counts the unfinished trials as interrupted, not done; Tune's warning about
    # the trials that never reported is not printed (the line above says how many are unfinished)
    last = [line for line in output.splitlines() if line.startswith("[") and " done, " in line][-1]
    assert "interrupted" in last, last
    assert "Failed to fetch metrics" not in output
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
        timeout=2 * WAIT_S,
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
    check_histories(uri, N_TRIALS)


def checkpoints_of(storage: Path) -> list[Path]:
    """The checkpoints Tune keeps (the last 2 of each trial)."""
    return sorted(storage.glob("*/*/checkpoint_*"))


def latest_checkpoint(storage: Path) -> int:
    """The index of the newest checkpoint of any trial (-1 before the first)."""
    return max((int(path.name.rpartition("_")[2]) for path in checkpoints_of(storage)), default=-1)


@pytest.mark.slow
def test_killed_driver_resumes_only_unfinished_trials(tmp_path, ray_temp_dir):
    """SIGKILL of the driver (no chance to clean up), then --resume."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    storage = tmp_path / "ray_results"
    log = (tmp_path / "sweep.log").open("w")
    cmd = sweep_cmd(uri, storage, ray_temp_dir, "--set", "train.eval_epochs=[2,4]")
    cmd[cmd.index(f"train.epochs={EPOCHS}")] = "train.epochs=30"  # the last trial runs long enough to be hit
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=clean_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )

    def last_trial_checkpointed():
        # at most 2 run at once: the third trial starts when one has finished
        return len({path.parent for path in checkpoints_of(storage)}) == N_TRIALS

    try:
        wait_for(last_trial_checkpointed, proc, WAIT_S, "the last trial's first checkpoint")
        os.kill(proc.pid, signal.SIGKILL)  # the driver dies without a word
        proc.wait(timeout=30)
    finally:
        end_session(proc.pid)  # its local Ray (GCS, raylet, workers, agents) goes with it
        log.close()
    runs = store.search_runs(store.client(uri), store.experiment_ids(store.client(uri), [GRID]))
    done_before = [r for r in runs if r.data.tags.get("sweep") != "1" and r.info.status == "FINISHED"]
    assert 0 < len(done_before) < N_TRIALS
    finished_at = {r.info.run_id: r.info.end_time for r in done_before}

    # a command naming another part (here: another --set) resumes no sweep of this one, and says which
    # there are; the same command as the sweep's start, with --resume, continues it
    other = subprocess.run(
        [*sweep_cmd(uri, storage, ray_temp_dir, "--resume"), "--set", "train.lr=1"],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert other.returncode == 2 and "started as" in other.stderr, other.stderr[-3000:]
    resumed = subprocess.run(
        [*cmd, "--resume"],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=2 * WAIT_S,
    )
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"resuming sweep {GRID}-smoke-" in resumed.stderr
    # a checkpoint Tune deleted after its last snapshot is named in one line, not two tracebacks
    assert "Traceback" not in resumed.stderr and "FileNotFoundError" not in resumed.stderr
    client = store.client(uri)
    for run_id, end_time in finished_at.items():  # finished trials were not run again
        assert client.get_run(run_id).info.end_time == end_time
    parents, _ = child_runs(uri)
    assert len(parents) == 1 and parents.iloc[0]["status"] == "FINISHED"
    check_histories(uri, N_TRIALS)


@pytest.mark.slow
def test_tracking_server_outage_mid_trial(tmp_path, ray_temp_dir):
    """The PostgreSQL-backed MLflow server goes away after the trial's first checkpoint, stays away while
    the trial checkpoints again, and comes back: the trial finishes and its history is whole."""
    from stores import mlflow_server, postgres

    storage = tmp_path / "ray_results"
    with postgres() as database, mlflow_server(database, tmp_path) as server:
        cmd = sweep_cmd(server.uri, storage, ray_temp_dir, "--only", "model.position=learned", "--verbose")
        cmd += ["--set", "train.eval_epochs=[5,20]"]
        cmd[cmd.index(f"train.epochs={EPOCHS}")] = "train.epochs=40"
        log = (tmp_path / "sweep.log").open("w")
        env = clean_env(POSDESC_TRACKING_PATIENCE_S="300")
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            wait_for(lambda: checkpoints_of(storage), proc, WAIT_S, "the first checkpoint")
            server.stop()
            down = latest_checkpoint(storage)
            # training goes on without the store: two more checkpoints (and sends that fail) while it is down
            wait_for(
                lambda: latest_checkpoint(storage) >= down + 2,
                proc,
                WAIT_S,
                "checkpoints during the outage",
            )
            server.start()
            rc = proc.wait(timeout=2 * WAIT_S)
        finally:
            end_session(proc.pid)
            log.close()
        output = (tmp_path / "sweep.log").read_text()
        assert rc == 0, output[-4000:]
        assert "unreachable" in output  # the trial warned (once) and went on
        check_histories(server.uri, 1)


def _alive_in_session(leader: int) -> list[int]:
    """The live processes of the session a driver we started leads (zombies, dead, are not counted)."""
    pids = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            if entry.name.isdigit() and int(fields[3]) == leader and fields[0] != "Z":
                pids.append(int(entry.name))
    return pids


@pytest.mark.slow
def test_a_killed_drivers_local_ray_is_stopped_by_the_next_sweep(tmp_path, ray_temp_dir):
    """After `kill -9` of sweeps/run.py its local Ray's agents lived on under pid 1 (and ignore
    SIGTERM). The driver notes its Ray session; the next sweep on the same Ray temp folder (resumed or
    new) stops that session's processes, and no other Ray's, before starting its own; an abandoned one is
    stopped by hand with `python -m sweeps.cluster stop-stale` (what this test runs)."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    cmd = sweep_cmd(uri, tmp_path / "ray_results", ray_temp_dir)
    cmd[cmd.index(f"train.epochs={EPOCHS}")] = "train.epochs=1000"
    out = subprocess.DEVNULL
    proc = subprocess.Popen(cmd, cwd=ROOT, env=clean_env(), stdout=out, stderr=out, start_new_session=True)
    try:
        notes = wait_for(
            lambda: list(Path(ray_temp_dir).glob("posdesc-driver-*.json")), proc, WAIT_S, "the local Ray"
        )
        assert json.loads(notes[0].read_text())["driver_pid"] == proc.pid
        time.sleep(10)  # Ray's agents up
        os.kill(proc.pid, signal.SIGKILL)  # the driver alone, as a user's kill -9
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30  # what dies with the driver (GCS, raylet, workers) is gone by then
        while len(_alive_in_session(proc.pid)) > 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _alive_in_session(proc.pid), "the killed driver's Ray left nothing behind (nothing to test)"
        cleanup = [sys.executable, "-m", "sweeps.cluster", "stop-stale", "--ray-temp-dir", str(ray_temp_dir)]
        cleaned = subprocess.run(cleanup, cwd=ROOT, env=clean_env(), capture_output=True, text=True)
        assert re.match(r"stopped [1-9]\d* process", cleaned.stdout), cleaned.stdout + cleaned.stderr
        deadline = time.monotonic() + 30
        while _alive_in_session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _alive_in_session(proc.pid) == []
        assert not list(Path(ray_temp_dir).glob("posdesc-driver-*.json"))
    finally:
        end_session(proc.pid)
