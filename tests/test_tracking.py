"""MLflow tracking against a real SQLite store: the DESIGN.md schema, batching, resume, status."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from arith.config import ExperimentConfig
from arith.tracking.runs import MlflowTracker, NullTracker, start_tracker

mlflow = pytest.importorskip("mlflow")


def _cfg(tmp_path, **tracking) -> ExperimentConfig:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    overrides = {"tracking.tracking_uri": uri, "tracking.experiment": "unit", **tracking}
    return ExperimentConfig().with_overrides(overrides)


def _cells(acc: float) -> pd.DataFrame:
    rows = [("main", None, n, 10, round(10 * acc), acc, 0.1 * n) for n in (1, 2, 3)]
    columns = ["context", "row_digits", "col_digits", "n", "correct", "accuracy", "seen_in_train"]
    return pd.DataFrame(rows, columns=columns)


def test_run_holds_params_tags_metrics_and_artifacts(tmp_path) -> None:
    cfg = _cfg(tmp_path, **{"tracking.run_name": "trial-1", "tracking.tags": {"grid": "g", "seed": "0"}})
    client = mlflow.MlflowClient(cfg.tracking.tracking_uri)
    experiment = client.create_experiment("unit", artifact_location=(tmp_path / "mlartifacts").as_uri())
    parent = client.create_run(experiment, run_name="sweep").info.run_id
    tracker = MlflowTracker(cfg.with_overrides({"tracking.parent_run_id": parent}))
    for step in range(1, 1201):  # more than one log_batch can take
        tracker.log_metrics({"train/loss": 1.0 / step}, step)
    tracker.log_evaluation(_cells(0.5), [{"prompt": "1 + 2", "expected": "3", "generated": "4"}], epoch=1)
    tracker.log_evaluation(_cells(1.0), [], epoch=2)
    staging = tracker._staging
    assert any(staging.iterdir())  # the heatmaps are drawn there before upload
    tracker.finish()
    assert not staging.exists()  # sent, so the local copies go

    run = client.get_run(tracker.run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "trial-1"
    assert run.data.tags["mlflow.parentRunId"] == parent and run.data.tags["grid"] == "g"
    assert set(run.data.params) == set(cfg.flat())
    assert run.data.params["data.task"] == "add" and json.loads(run.data.params["train.eval_epochs"]) == []
    history = client.get_metric_history(tracker.run_id, "train/loss")
    assert len(history) == 1200 and {m.step for m in history} == set(range(1, 1201))
    # stored with 6 significant digits: 1/3 reads 0.333333 in the UI, not 0.3333333333333333
    by_step = {m.step: m.value for m in history}
    assert by_step[3] == 0.333333 and by_step[7] == 0.142857 and by_step[1000] == 0.001

    artifacts = {a.path for a in client.list_artifacts(tracker.run_id)}
    assert {"config.json", "eval"} <= artifacts
    evals = {a.path for a in client.list_artifacts(tracker.run_id, "eval")}
    assert {"eval/cells.csv", "eval/failures.jsonl", "eval/heatmap_main_epoch1.png"} <= evals
    local = client.download_artifacts(tracker.run_id, "eval/cells.csv", str(tmp_path))
    cells = pd.read_csv(local)
    assert list(cells.columns[:2]) == ["epoch", "context"] and sorted(set(cells["epoch"])) == [1, 2]
    config_path = client.download_artifacts(tracker.run_id, "config.json", str(tmp_path))
    assert (
        ExperimentConfig.from_dict(json.loads(Path(config_path).read_text())).flat()
        == cfg.with_overrides({"tracking.parent_run_id": parent}).flat()
    )


def test_resumed_run_is_the_same_run_and_keeps_its_eval_history(tmp_path) -> None:
    cfg = _cfg(tmp_path)
    first = MlflowTracker(cfg)
    first.log_metrics({"train/loss": 2.0}, 1)
    first.log_evaluation(_cells(0.2), [{"prompt": "p", "expected": "1", "generated": "2"}], epoch=1)
    first.finish("FAILED")
    client = mlflow.MlflowClient(cfg.tracking.tracking_uri)
    assert client.get_run(first.run_id).info.status == "FAILED"

    second = MlflowTracker(cfg, run_id=first.run_id)
    assert client.get_run(first.run_id).info.status == "RUNNING"
    second.log_metrics({"train/loss": 1.0}, 2)
    second.log_evaluation(_cells(0.9), [], epoch=2)
    second.finish()
    assert client.get_run(first.run_id).info.status == "FINISHED"
    assert len(client.search_runs([client.get_experiment_by_name("unit").experiment_id])) == 1
    assert [m.step for m in client.get_metric_history(first.run_id, "train/loss")] == [1, 2]
    cells = pd.read_csv(client.download_artifacts(first.run_id, "eval/cells.csv", str(tmp_path)))
    assert sorted(set(cells["epoch"])) == [1, 2]
    failures = client.download_artifacts(first.run_id, "eval/failures.jsonl", str(tmp_path))
    assert [json.loads(line)["epoch"] for line in Path(failures).read_text().splitlines()] == [1]
    # the experiment the tracker created keeps artifacts beside the SQLite database, not in the cwd
    assert (tmp_path / "mlartifacts").is_dir()


def test_a_stopped_trial_keeps_the_finished_status_its_stopper_gave_it(tmp_path) -> None:
    """A search's scheduler ends a trial that reached the gate FINISHED while Tune stops its process; the
    trainer's own end (KILLED, as any stop) may come after, and does not overwrite it."""
    cfg = _cfg(tmp_path)
    tracker = MlflowTracker(cfg)
    tracker.log_metrics({"train/loss": 2.0}, 1)
    client = mlflow.MlflowClient(cfg.tracking.tracking_uri)
    client.set_terminated(tracker.run_id, "FINISHED")
    tracker.finish("KILLED")
    assert client.get_run(tracker.run_id).info.status == "FINISHED"
    assert [m.value for m in client.get_metric_history(tracker.run_id, "train/loss")] == [2.0]
    other = MlflowTracker(cfg)  # a stop nothing else ended: KILLED
    other.finish("KILLED")
    assert client.get_run(other.run_id).info.status == "KILLED"


def test_disabled_tracking_logs_nothing(tmp_path) -> None:
    cfg = _cfg(tmp_path, **{"tracking.enabled": False})
    tracker = start_tracker(cfg)
    assert type(tracker) is NullTracker and tracker.run_id == ""
    tracker.log_metrics({"x": 1.0}, 1)
    tracker.finish()
    assert not (tmp_path / "mlflow.db").exists()


def test_tracking_uri_falls_back_to_the_environment(tmp_path, monkeypatch) -> None:
    uri = f"sqlite:///{tmp_path / 'env.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    tracker = MlflowTracker(ExperimentConfig().with_overrides({"tracking.experiment": "env"}))
    tracker.finish()
    assert mlflow.MlflowClient(uri).get_run(tracker.run_id).info.status == "FINISHED"


def _open_and_start_a_run(uri: str, barrier, results) -> None:
    from arith.tracking.store import open_client

    barrier.wait()
    try:
        client = open_client(uri)
        client.search_experiments()
        results.put("ok")
    except Exception as err:  # reported to the test rather than lost in the child
        results.put(repr(err))


def test_processes_opening_a_new_store_at_once_take_turns(tmp_path) -> None:
    """Two trials started together on a new SQLite file used to race on its schema migrations."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    uri = f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}"
    barrier, results = ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_open_and_start_a_run, args=(uri, barrier, results)) for _ in range(3)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert sorted(results.get(timeout=5) for _ in procs) == ["ok"] * 3
    assert (tmp_path / "new" / "mlflow.db.lock").exists()


def test_restored_run_logs_nothing_it_already_has(tmp_path) -> None:
    """An attempt that sent steps past its last checkpoint and died: the restored attempt logs those steps
    and that evaluation again, and the run still holds each (key, step) and each evaluation once."""
    cfg = _cfg(tmp_path)
    first = MlflowTracker(cfg)
    for step in (1, 2, 3, 4, 6, 7, 8, 9, 10):  # step 5 could not be sent: the checkpoint at 5 holds it
        first.log_metrics({"train/loss": 1.0 / step}, step)
    first.log_metrics({"test_acc": 0.5}, 1)
    first.log_evaluation(_cells(0.5), [{"prompt": "p", "expected": "1", "generated": "2"}], epoch=1)
    first.flush()  # ... and the worker is killed here, before its run is ended

    second = MlflowTracker(cfg, run_id=first.run_id, unsent={"metrics": [("train/loss", 0.2, 0, 5)]})
    for step in range(6, 15):  # the checkpoint was at step 5: steps 6-10 come again
        second.log_metrics({"train/loss": 1.0 / step}, step)
    second.log_metrics({"test_acc": 0.5}, 1)
    second.log_evaluation(_cells(0.5), [{"prompt": "p", "expected": "1", "generated": "2"}], epoch=1)
    second.log_evaluation(_cells(0.9), [], epoch=2)
    second.finish()

    client = mlflow.MlflowClient(cfg.tracking.tracking_uri)
    steps = [m.step for m in client.get_metric_history(first.run_id, "train/loss")]
    assert sorted(steps) == list(range(1, 15))
    assert [m.step for m in client.get_metric_history(first.run_id, "test_acc")] == [1]
    cells = pd.read_csv(client.download_artifacts(first.run_id, "eval/cells.csv", str(tmp_path)))
    assert list(cells["epoch"]) == [1, 1, 1, 2, 2, 2]
    failures = client.download_artifacts(first.run_id, "eval/failures.jsonl", str(tmp_path))
    assert len(Path(failures).read_text().splitlines()) == 1


def test_metrics_wait_for_a_full_batch_or_a_minute_whichever_comes_first(tmp_path, monkeypatch) -> None:
    """A slow trial (a CPU model logging every few seconds) fills a batch in most of an hour: its values
    are sent once the oldest has waited FLUSH_AFTER_S, so the MLflow UI's curves follow the trial."""
    import time

    import arith.tracking.outbox as outbox

    monkeypatch.setattr(outbox, "FLUSH_AFTER_S", 0.5)
    cfg = _cfg(tmp_path)
    tracker = MlflowTracker(cfg)
    client = mlflow.MlflowClient(cfg.tracking.tracking_uri)

    def stored() -> list[int]:
        return sorted(m.step for m in client.get_metric_history(tracker.run_id, "train/loss"))

    tracker.log_metrics({"train/loss": 1.0}, 1)
    tracker.log_metrics({"train/loss": 0.9}, 2)
    assert stored() == []  # batched: nothing sent yet
    time.sleep(0.6)
    tracker.log_metrics({"train/loss": 0.8}, 3)
    assert stored() == [1, 2, 3]  # the oldest waited long enough: the whole batch went
    tracker.log_metrics({"train/loss": 0.7}, 4)
    assert stored() == [1, 2, 3]  # a new batch starts its own wait
    tracker.finish()
    assert stored() == [1, 2, 3, 4]


@pytest.mark.slow
def test_store_outage_keeps_metrics_and_unsent_ones_are_sent_later(tmp_path, monkeypatch, capsys) -> None:
    """A real MLflow server stops mid-trial: sends fail without an error and keep the buffer (one warning),
    the metrics arrive when it is back; still down at the end, the trial fails naming the store, leaves
    its metrics in its folder, and `python -m arith.tracking send` delivers them exactly once."""
    import subprocess
    import sys

    from stores import mlflow_server

    import arith.tracking.outbox as outbox
    import arith.tracking.runs as tracking

    monkeypatch.setattr(outbox, "PATIENCE_S", 3.0)
    monkeypatch.setattr(outbox, "FLUSH_EVERY", 5)
    with mlflow_server(f"sqlite:///{tmp_path / 'server.db'}", tmp_path) as server:
        cfg = ExperimentConfig().with_overrides(
            {"tracking.tracking_uri": server.uri, "tracking.experiment": "outage"}
        )
        tracker = MlflowTracker(cfg, folder=tmp_path / "trial")
        tracker.log_metrics({"train/loss": 1.0}, 1)
        assert tracker.flush()
        server.stop()
        for step in range(2, 20):
            tracker.log_metrics({"train/loss": 1.0 / step}, step)  # sends fail quietly
        tracker.log_evaluation(_cells(0.5), [], epoch=1)
        assert not tracker.flush() and len(tracker.unsent()["metrics"]) == 18
        assert capsys.readouterr().err.count("unreachable") == 1  # warned once
        with pytest.raises(tracking.TrackingUnavailableError, match=server.uri) as failed:
            tracker.finish()
        folder = tmp_path / "trial" / f"unsent-{tracker.run_id}"
        assert f"python -m arith.tracking send {folder}" in str(failed.value)
        assert (folder / "metrics.jsonl").exists()

        server.start()
        for _ in range(2):  # sending twice is harmless
            if folder.exists():
                sent = subprocess.run(
                    [sys.executable, "-m", "arith.tracking", "send", str(folder)],
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                assert sent.returncode == 0, sent.stderr
        client = mlflow.MlflowClient(server.uri)
        run = client.get_run(tracker.run_id)
        assert run.info.status == "FINISHED"
        assert sorted(m.step for m in client.get_metric_history(tracker.run_id, "train/loss")) == list(
            range(1, 20)
        )
        assert {a.path for a in client.list_artifacts(tracker.run_id, "eval")} >= {
            "eval/cells.csv",
            "eval/heatmap_main_epoch1.png",
        }


def test_a_stopped_sweep_leaves_no_trial_running(tmp_path) -> None:
    """`store.end_stopped_trials`: a trial run a stopped session left RUNNING is ended KILLED when it last
    logged its loss, or deleted where it logged none (an attempt stopped in its setup); others are kept."""
    from mlflow.entities import Metric

    from arith.tracking import schema, store

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = store.client(uri)
    experiment = store.experiment_id(client, "unit", uri)
    parent = client.create_run(experiment, tags={schema.SWEEP_TAG: "1"}).info.run_id
    child = {schema.PARENT_RUN_TAG: parent}
    trained, empty, done = (client.create_run(experiment, tags=child).info.run_id for _ in range(3))
    client.log_batch(trained, metrics=[Metric(schema.LOSS_METRIC, 1.0, ts, ts) for ts in (1_000, 2_000)])
    client.set_terminated(done, "FINISHED")
    assert store.end_stopped_trials(client, parent) == (1, 1)
    run = client.get_run(trained)
    assert (run.info.status, run.info.end_time) == ("KILLED", 2_000)  # when it last computed, not now
    assert client.get_run(empty).info.lifecycle_stage == "deleted"
    assert client.get_run(done).info.status == "FINISHED"
    assert store.end_stopped_trials(client, parent) == (0, 0)  # nothing left running
