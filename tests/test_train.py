"""The trainer: config rejection, one MLflow run per trial, exact resume, NaN stop, schedule, CLI, Tune."""

from __future__ import annotations

import copy
import json
import time

import pytest
import torch

from arith.config import ConfigError, ExperimentConfig, TrainConfig
from arith.data.datasets import test_examples
from arith.tracking.schema import SESSIONS_TAG, TRAINED_ON_TAG, WEIGHTS_DIGEST_TAG
from arith.training.checkpoints import CHECKPOINT_FILE, load_checkpoint, weights_digest
from arith.training.cli import build_config, config_from_args, main
from arith.training.metrics import probe_examples
from arith.training.optim import lr_lambda, total_steps
from arith.training.step import NonFiniteLossError
from arith.training.train import train

mlflow = pytest.importorskip("mlflow")


def tiny_cfg(tmp_path, **overrides) -> ExperimentConfig:
    """A nano GPT-2 on a few hundred 2-digit additions: seconds per run on a CPU."""
    base = {
        "data.max_digits": 2,
        "data.train_samples": 256,
        "data.test_per_cell": 8,
        "model.preset": "nano",
        "model.n_positions": 64,
        "train.epochs": 4,
        "train.batch_size": 32,
        "train.lr": 3e-3,
        "train.warmup_steps": 4,
        "train.eval_batch_size": 64,
        "train.log_every_steps": 4,
        "train.num_threads": 1,
        "tracking.tracking_uri": f"sqlite:///{tmp_path / 'mlflow.db'}",
        "tracking.experiment": "test-train",
    }
    return ExperimentConfig().with_overrides({**base, **overrides})


def _client(cfg: ExperimentConfig):
    return mlflow.MlflowClient(cfg.tracking.tracking_uri)


def test_impossible_config_fails_before_anything_trains(tmp_path) -> None:
    cfg = tiny_cfg(tmp_path, **{"model.position": "random_embed", "model.n_hash": 6, "model.n_head": 4})
    with pytest.raises(ConfigError, match="multiple of n_head"):
        train(cfg)
    assert not (tmp_path / "mlflow.db").exists()  # no run was even opened


def test_lines_longer_than_the_models_positions_fail_before_anything_trains(tmp_path) -> None:
    """Not an IndexError in the embedding lookup: the setting to change, before a run is opened."""
    with pytest.raises(
        ConfigError, match=r"training data: the longest line is \d+ tokens, more than model.n_positions=8"
    ):
        train(tiny_cfg(tmp_path, **{"model.n_positions": 8}))
    assert not (tmp_path / "mlflow.db").exists()


def test_trial_is_one_mlflow_run_with_the_schema(tmp_path) -> None:
    cfg = tiny_cfg(
        tmp_path, **{"train.eval_epochs": [2], "tracking.run_name": "t1", "tracking.tags": {"grid": "g"}}
    )
    result = train(cfg)
    assert result.epochs_done == 4 and result.steps == 4 * 8 and result.stopped == "epochs"
    assert 0.0 <= result.test_acc <= 1.0 and result.tokens_per_s > 0 and result.train_seconds > 0
    assert list(result.cells["col_digits"]) == [1, 2]

    client = _client(cfg)
    run = client.get_run(result.run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "t1" and run.data.tags["grid"] == "g"
    assert run.data.params["train.lr"] == "0.003" and set(run.data.params) == set(cfg.flat())
    assert len(result.weights_sha256) == 64 and run.data.tags[WEIGHTS_DIGEST_TAG] == result.weights_sha256
    losses = client.get_metric_history(result.run_id, "train/loss")
    assert [m.step for m in losses] == list(range(4, 33, 4))
    assert losses[-1].value < losses[0].value  # it learns something
    assert [m.step for m in client.get_metric_history(result.run_id, "test_acc")] == [2, 4]
    assert run.data.metrics["test_acc"] == pytest.approx(result.test_acc)
    for key in ("test_acc/main", "seen_fraction", "eval/samples_per_s", "train/lr", "train/tokens_per_s"):
        assert key in run.data.metrics
    assert run.data.metrics["epochs_done"] == 4 and run.data.metrics["train_seconds"] > 0
    evals = {a.path for a in client.list_artifacts(result.run_id, "eval")}
    assert {"eval/cells.csv", "eval/failures.jsonl", "eval/heatmap_main_epoch2.png"} <= evals
    assert "eval/heatmap_main_epoch4.png" in evals


def test_trial_restarted_after_it_finished_leaves_its_run_untouched(tmp_path) -> None:
    """A driver killed after a trial's last report but before Tune saved that the trial ended restarts
    it from its last checkpoint: the run it finished is kept as it was, nothing logged or re-ended."""
    cfg = tiny_cfg(
        tmp_path, **{"train.epochs": 3, "train.eval_epochs": [2], "train.checkpoint_dir": str(tmp_path / "c")}
    )
    first = train(cfg)
    client = _client(cfg)
    before = client.get_run(first.run_id)
    histories = {key: client.get_metric_history(first.run_id, key) for key in before.data.metrics}

    again = train(cfg)
    after = client.get_run(first.run_id)
    assert again.run_id == first.run_id and again.cells.equals(first.cells)
    assert after.info.status == "FINISHED" and after.info.end_time == before.info.end_time
    assert {key: client.get_metric_history(first.run_id, key) for key in after.data.metrics} == histories
    assert len(client.search_runs([client.get_experiment_by_name("test-train").experiment_id])) == 1


@pytest.mark.parametrize("curriculum, epochs_per_pass", [(0.0, 1), (0.9, 1), (0.9, 3)])
def test_resumed_trial_ends_with_the_same_weights_in_the_same_run(
    tmp_path, monkeypatch, curriculum, epochs_per_pass
) -> None:
    """Dropout and random_embed make the RNG states matter: only an exact restore reproduces the run
    (with a digit curriculum over 36 of the 40 steps, the crash and the restart fall inside it; with
    three epochs a pass, in the middle of the second pass)."""
    common = {
        "model.position": "random_embed",
        "model.dropout": 0.1,
        "train.epochs": 5,
        "train.epochs_per_pass": epochs_per_pass,
        "train.eval_epochs": [2],
        "train.curriculum": curriculum,
        "data.min_digits": 1,
    }
    cpu_before = time.process_time()
    straight = train(tiny_cfg(tmp_path, **common, **{"train.checkpoint_dir": str(tmp_path / "a")}))
    # the CPU clock a search reads: this process's CPU time in the run, kept in the checkpoint
    assert 0 < load_checkpoint(tmp_path / "a")["cpu_seconds"] <= time.process_time() - cpu_before

    cfg = tiny_cfg(tmp_path, **common, **{"train.checkpoint_dir": str(tmp_path / "b")})
    from arith.model.gpt import ArithModel

    real_new_epoch = ArithModel.new_epoch

    def crash_at_epoch_4(self, epoch: int) -> None:
        if epoch == 4:
            raise RuntimeError("node lost")
        real_new_epoch(self, epoch)

    monkeypatch.setattr(ArithModel, "new_epoch", crash_at_epoch_4)
    with pytest.raises(RuntimeError, match="node lost"):
        train(cfg)
    saved = load_checkpoint(tmp_path / "b")
    assert saved["epoch"] == 3 and _client(cfg).get_run(saved["run_id"]).info.status == "FAILED"
    assert saved["cpu_seconds"] > 0
    monkeypatch.setattr(ArithModel, "new_epoch", real_new_epoch)

    resumed = train(cfg)
    assert resumed.run_id == saved["run_id"] and resumed.steps == straight.steps
    assert load_checkpoint(tmp_path / "b")["cpu_seconds"] > saved["cpu_seconds"]  # counted on, not anew
    a = load_checkpoint(tmp_path / "a")["model"]
    b = load_checkpoint(tmp_path / "b")["model"]
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0, msg=name)
    assert resumed.cells.equals(straight.cells)
    assert resumed.weights_sha256 == straight.weights_sha256  # what the run's tag tells a reader
    client = _client(cfg)
    assert client.get_run(resumed.run_id).data.tags[WEIGHTS_DIGEST_TAG] == straight.weights_sha256
    assert client.get_run(resumed.run_id).info.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(resumed.run_id, "test_acc")] == [2, 5]
    runs = client.search_runs([client.get_experiment_by_name("test-train").experiment_id])
    assert len(runs) == 2  # the straight run and the one resumed run, not a third


def test_a_trial_resumed_on_another_machine_records_each_machines_steps(tmp_path, monkeypatch) -> None:
    """A sweep that spans sessions may resume a trial on another processor: its run keeps one session a
    process, each with the steps it computed (from the checkpoint it started at) and its CPU time, so a
    rate per step is read per machine; the checkpoint holds the same record. A checkpoint written before
    the record existed gets its earlier steps as one session on a machine not recorded."""
    import arith.training.train as trainer
    from arith.model.gpt import ArithModel
    from arith.training import sessions as record
    from arith.training.checkpoints import save_checkpoint
    from lab.training_records import read_sessions

    cfg = tiny_cfg(tmp_path, **{"train.epochs": 5, "train.checkpoint_dir": str(tmp_path / "c")})
    real_new_epoch = ArithModel.new_epoch

    def crash_at_epoch_3(self, epoch: int) -> None:
        if epoch == 3:
            raise RuntimeError("session over")
        real_new_epoch(self, epoch)

    monkeypatch.setattr(trainer, "machine_of", lambda device: "machine A")
    monkeypatch.setattr(ArithModel, "new_epoch", crash_at_epoch_3)
    with pytest.raises(RuntimeError, match="session over"):
        train(cfg)
    saved = load_checkpoint(tmp_path / "c")
    (first,) = saved["sessions"]
    assert (first["machine"], first["from_step"], first["to_step"]) == ("machine A", 0, saved["step"])
    assert first["kernels"] == "none" and first["cpu_seconds"] == pytest.approx(
        saved["cpu_seconds"], abs=0.01
    )

    monkeypatch.setattr(ArithModel, "new_epoch", real_new_epoch)
    monkeypatch.setattr(trainer, "machine_of", lambda device: "machine B")
    done = train(cfg)
    final = load_checkpoint(tmp_path / "c")
    a, b = final["sessions"]
    assert (b["machine"], b["from_step"], b["to_step"]) == ("machine B", a["to_step"], done.steps)
    assert a == first  # the steps a stopped process computed after its checkpoint are not counted twice
    assert a["cpu_seconds"] + b["cpu_seconds"] == pytest.approx(final["cpu_seconds"], abs=0.01)
    tags = _client(cfg).get_run(done.run_id).data.tags
    assert read_sessions(tags[SESSIONS_TAG]) == final["sessions"]
    steps = f"{a['to_step']:,}"
    assert tags[TRAINED_ON_TAG].startswith(f"steps 0-{steps} on machine A, ")
    assert f"; steps {steps}-{done.steps:,} on machine B, " in tags[TRAINED_ON_TAG]

    # a checkpoint from before the record: its steps so far were computed somewhere no one noted
    older = {k: v for k, v in saved.items() if k != "sessions"}
    save_checkpoint(tmp_path / "old", older)
    resumed = train(cfg.with_overrides({"train.checkpoint_dir": str(tmp_path / "old")}))
    unknown, here = load_checkpoint(tmp_path / "old")["sessions"]
    assert (unknown["machine"], unknown["from_step"], unknown["to_step"]) == (
        record.NOT_RECORDED,
        0,
        saved["step"],
    )
    assert (here["machine"], here["to_step"]) == ("machine B", resumed.steps)
    assert record.trained_on_line([unknown]) == f"steps 0-{saved['step']:,} on not recorded"


def test_the_weights_digest_tells_weights_apart_to_the_last_bit() -> None:
    """Equal for a copy; different for one float moved by one ulp, for the same values in bf16, and for
    the same bytes under another name or shape."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    digest = weights_digest(model)
    assert weights_digest(copy.deepcopy(model)) == digest
    nudged = copy.deepcopy(model)
    with torch.no_grad():
        nudged[0].weight[1, 2] = torch.nextafter(nudged[0].weight[1, 2], torch.tensor(float("inf")))
    assert weights_digest(nudged) != digest
    halved = copy.deepcopy(model).to(torch.bfloat16)
    assert weights_digest(halved) not in (digest, "") and weights_digest(
        copy.deepcopy(halved)
    ) == weights_digest(halved)
    flat = torch.nn.Linear(1, 6, bias=False)
    wide = torch.nn.Linear(2, 3, bias=False)
    with torch.no_grad():
        flat.weight.copy_(torch.arange(6.0).reshape(6, 1))
        wide.weight.copy_(torch.arange(6.0).reshape(3, 2))
    assert weights_digest(flat) != weights_digest(wide)  # the same bytes, another shape


def test_a_run_asked_to_exit_is_killed_not_failed(tmp_path) -> None:
    """Ray Tune ends a trial its scheduler stopped by raising SystemExit inside its next report: the run
    reads KILLED (stopped), as after Ctrl+C, not FAILED."""

    def exit_at_first_report(metrics: dict, checkpoint) -> None:
        raise SystemExit(0)

    cfg = tiny_cfg(tmp_path)
    with pytest.raises(SystemExit):
        train(cfg, reporter=exit_at_first_report)
    client = _client(cfg)
    (run,) = client.search_runs([client.get_experiment_by_name("test-train").experiment_id])
    assert run.info.status == "KILLED" and "failure" not in run.data.tags


def test_checkpoint_from_another_config_is_refused(tmp_path) -> None:
    cfg = tiny_cfg(tmp_path, **{"train.epochs": 1, "train.checkpoint_dir": str(tmp_path / "c")})
    train(cfg)
    assert (tmp_path / "c" / CHECKPOINT_FILE).exists()
    with pytest.raises(ConfigError, match=r"train.lr: 0.003 -> 0.001"):
        train(cfg.with_overrides({"train.lr": 1e-3}))


def test_non_finite_loss_stops_with_step_and_epoch(tmp_path) -> None:
    cfg = tiny_cfg(tmp_path, **{"train.lr": 1e30, "train.warmup_steps": 0, "train.grad_clip": 0.0})
    with pytest.raises(NonFiniteLossError, match=r"at step \d+ \(epoch 1\)"):
        train(cfg)
    client = _client(cfg)
    (run,) = client.search_runs([client.get_experiment_by_name("test-train").experiment_id])
    assert run.info.status == "FAILED" and run.data.tags["failure"] == "nonfinite_loss"
    assert run.data.tags["failure_message"].startswith("training loss became ")


def test_target_accuracy_probe_is_logged_and_unreached_targets_run_on(tmp_path) -> None:
    """Stopping once the probe reaches the target is exercised by tests/test_learning.py."""
    cfg = tiny_cfg(tmp_path, **{"train.target_accuracy": 1.0, "train.epochs": 2})
    result = train(cfg)
    assert result.stopped == "epochs" and result.epochs_done == 2 and result.seconds_to_target is None
    probe = _client(cfg).get_metric_history(result.run_id, "probe_acc")
    assert [m.step for m in probe] == [1, 2]
    assert len(probe_examples(cfg)) == 2 * 8  # the test protocol's cells, drawn with another seed
    assert {e.text for e in probe_examples(cfg)} != {e.text for e in test_examples(cfg.data)}


def test_reaching_the_target_stops_training_early(tmp_path, monkeypatch) -> None:
    """The probe's score is forced to 1.0, so the target is met after the first epoch."""
    monkeypatch.setattr("arith.training.train.exact_match", lambda cells: 1.0)
    result = train(tiny_cfg(tmp_path, **{"train.target_accuracy": 0.95, "tracking.enabled": False}))
    assert result.stopped == "target_accuracy" and result.epochs_done == 1 and result.steps == 8
    assert result.seconds_to_target == pytest.approx(result.train_seconds)
    assert result.run_id == ""


def test_a_pass_cut_into_epochs_trains_the_same_steps_and_reports_each_epoch(tmp_path) -> None:
    """`train.epochs_per_pass`: two passes as six epochs end with the weights of two epochs of one
    pass (learned positions: no draws reseeded per epoch; dropout on the same RNG stream), and the
    scheduler hears after each of the six."""
    common = {"model.dropout": 0.1, "train.curriculum": 0.5, "data.min_digits": 1, "tracking.enabled": False}
    whole = train(
        tiny_cfg(tmp_path, **common, **{"train.epochs": 2, "train.checkpoint_dir": str(tmp_path / "a")})
    )
    reports: list[dict] = []
    cut = train(
        tiny_cfg(
            tmp_path,
            **common,
            **{"train.epochs": 6, "train.epochs_per_pass": 3, "train.checkpoint_dir": str(tmp_path / "b")},
        ),
        reporter=lambda metrics, _path: reports.append(metrics),
    )
    assert cut.steps == whole.steps == 16 and cut.epochs_done == 6
    assert [r["epoch"] for r in reports] == [1, 2, 3, 4, 5, 6]
    assert [r["step"] for r in reports] == [2, 5, 8, 10, 13, 16]  # slices of 8 batches: 2, 3, 3
    a = load_checkpoint(tmp_path / "a")["model"]
    b = load_checkpoint(tmp_path / "b")["model"]
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0, msg=name)
    assert cut.cells.equals(whole.cells)


def test_max_steps_caps_the_run(tmp_path) -> None:
    result = train(tiny_cfg(tmp_path, **{"train.max_steps": 10, "tracking.enabled": False}))
    assert result.steps == 10 and result.epochs_done == 2 and result.stopped == "max_steps"


def test_schedule_warms_up_then_decays() -> None:
    t = TrainConfig(warmup_steps=4, schedule="linear")
    f = lr_lambda(t, 14)
    assert [f(s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert f(9) == pytest.approx(0.5) and f(14) == 0.0
    cosine = lr_lambda(TrainConfig(warmup_ratio=0.5, schedule="cosine"), 20)
    assert cosine(9) == 1.0 and cosine(15) == pytest.approx(0.5) and cosine(20) == pytest.approx(0.0)
    assert lr_lambda(TrainConfig(schedule="constant"), 10)(9) == 1.0
    assert total_steps(TrainConfig(epochs=3, max_steps=0), 7) == 21
    assert total_steps(TrainConfig(epochs=3, max_steps=5), 7) == 5
    assert total_steps(TrainConfig(epochs=4, epochs_per_pass=3), 7) == 7 + 2


def test_cli_builds_the_config_from_file_flags_and_set(tmp_path, capsys) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("data:\n  task: mul\n  format: padding\ntrain:\n  lr: 0.001\n")
    cfg = config_from_args(["--config", str(path), "--max-digits", "4", "--set", "train.lr=3e-4"])
    assert (cfg.data.task, cfg.data.format, cfg.data.max_digits, cfg.train.lr) == ("mul", "padding", 4, 3e-4)
    # the library part takes plain values: a file, the convenience flags by name, the --set pairs
    assert build_config(str(path), {"max_digits": "4", "task": None}, ["train.lr=3e-4"]) == cfg
    assert main(["--task", "add", "--set", "model.position=none", "--print-config"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]["position"] == "none"
    assert main(["--format", "no_such_format"]) == 2
    assert "choose one of" in capsys.readouterr().err


def test_cli_trains_and_prints_the_grid(tmp_path, capsys) -> None:
    args = [f"--set={k}={v}" for k, v in tiny_cfg(tmp_path, **{"train.epochs": 1}).flat().items()]
    assert main([a for a in args if "tags" not in a]) == 0
    out = capsys.readouterr().out
    assert "epoch    1" in out and "[main]" in out
    assert json.loads(out.strip().splitlines()[-1])["epochs_done"] == 1


@pytest.mark.slow
def test_tune_trial_reports_checkpoints_and_resumes_in_the_same_mlflow_run(tmp_path) -> None:
    """A real Ray Tune trial that crashes mid-way is restored from its Tune checkpoint and ends with the
    weights of an uninterrupted run, in the one MLflow run it started, tagged with where it ran."""
    ray = pytest.importorskip("ray")
    from ray import tune

    cfg = tiny_cfg(tmp_path, **{"train.epochs": 4, "tracking.run_name": "tuned"})
    straight = train(
        cfg.with_overrides({"tracking.enabled": False, "train.checkpoint_dir": str(tmp_path / "a")})
    )
    crashed = tmp_path / "crashed"

    def crash_once_then_train(config: dict) -> None:
        from arith.model.gpt import ArithModel
        from sweeps.trainable import run_trial, trial_key

        if not crashed.exists():
            real_new_epoch = ArithModel.new_epoch

            def crash_at_epoch_3(self, epoch: int) -> None:
                if epoch == 3:
                    crashed.touch()
                    raise RuntimeError("simulated node loss")
                real_new_epoch(self, epoch)

            ArithModel.new_epoch = crash_at_epoch_3
        run_trial(config, {trial_key(config["point"], config["seed"]): cfg})

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        tuner = tune.Tuner(
            crash_once_then_train,
            param_space={"point": "tiny", "seed": cfg.train.seed},
            run_config=tune.RunConfig(
                name="resume",
                storage_path=str(tmp_path / "ray"),
                failure_config=tune.FailureConfig(max_failures=1),
                verbose=0,
            ),
        )
        (result,) = tuner.fit()
    finally:
        ray.shutdown()
    assert crashed.exists() and result.error is None
    assert result.metrics["epoch"] == 4 and result.metrics["evaluated"]
    assert result.metrics["test_acc"] == pytest.approx(straight.test_acc)
    with result.checkpoint.as_directory() as directory:
        tuned = load_checkpoint(directory)
    # the CPU clock it reported is its checkpoint's, counted on from the restore (epochs 3-4 on top of 1-2)
    assert result.metrics["cpu_seconds"] == tuned["cpu_seconds"] > 0
    history = result.metrics_dataframe
    assert history["cpu_seconds"].is_monotonic_increasing
    reference = load_checkpoint(tmp_path / "a")["model"]
    for name, tensor in reference.items():
        torch.testing.assert_close(tuned["model"][name], tensor, rtol=0, atol=0, msg=name)

    client = _client(cfg)
    (run,) = client.search_runs([client.get_experiment_by_name("test-train").experiment_id])
    assert run.info.run_id == tuned["run_id"] and run.info.status == "FINISHED"
    assert run.data.tags["ray_node_id"] and run.data.tags["hostname"] and run.data.tags["device"] == "cpu"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "test_acc")] == [4]
