"""The one trainer, `train(cfg) -> TrainResult`: plain PyTorch, used alone (`python -m arith.training`), by
the benchmarks and by Ray Tune (sweeps/trainable.py). `setup` builds data, model and optimiser; one loop
evaluates the paper's grids at chosen epochs and saves checkpoints that continue a run exactly (what the
tracker could not send rides in them). A scheduler connects through `checkpoints` and `reporter`.
"""

from __future__ import annotations

import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from arith.config import ExperimentConfig
from arith.tracking import schema
from arith.tracking.runs import NullTracker, start_tracker
from arith.training.checkpoints import CheckpointFolder, Checkpoints, check_same_config, weights_digest
from arith.training.evaluate import evaluate
from arith.training.hardware import bf16_matmuls, machine_of
from arith.training.metrics import exact_match, summary_metrics
from arith.training.sessions import advanced, opened
from arith.training.sessions import tags as session_tags
from arith.training.setup import Setup, TrainState, setup
from arith.training.step import NonFiniteLossError, drain_losses, train_step
from arith.validation import validate

#: called after every epoch with its metrics and the checkpoint saved at it (None when none was due)
Reporter = Callable[[dict[str, Any], "Path | None"], None]


@dataclass
class TrainResult:
    """What a trial returns: the final grid, its mean, and how the run went."""

    test_acc: float
    cells: pd.DataFrame
    epochs_done: int
    steps: int
    train_seconds: float
    tokens_per_s: float
    run_id: str = ""
    checkpoint: str = ""
    stopped: str = "epochs"  # "epochs", "max_steps" or "target_accuracy"
    #: training seconds at which the probe first reached train.target_accuracy (None if it did not)
    seconds_to_target: float | None = None
    failures: list[dict] = field(default_factory=list)
    weights_sha256: str = ""  # `weights_digest`, also the run's WEIGHTS_DIGEST_TAG


def train(
    cfg: ExperimentConfig,
    *,
    reporter: Reporter | None = None,
    checkpoints: Checkpoints | None = None,
    tracker: NullTracker | None = None,
) -> TrainResult:
    """Train one trial. `checkpoints` defaults to `train.checkpoint_dir` (none when empty), `tracker` to the
    config's (MLflow, or none; a machine without MLflow passes an `arith.tracking.recorder`)."""
    cpu_start = time.process_time()
    validate(cfg)
    if checkpoints is None and cfg.train.checkpoint_dir:
        checkpoints = CheckpointFolder(cfg.train.checkpoint_dir)
    saved = checkpoints.load() if checkpoints is not None else None
    if saved is not None:
        check_same_config(saved["config"], cfg)
    s = setup(cfg)
    state = s.restore(saved) if saved is not None else TrainState()
    if tracker is None:
        tracker = start_tracker(
            cfg, state.run_id, (saved or {}).get("unsent"), folder=cfg.train.checkpoint_dir or None
        )
    state.run_id = tracker.run_id
    kernels = bf16_matmuls(s.device, cfg.train.precision)
    state.sessions = opened(state.sessions, state.step, machine_of(s.device), kernels)
    # the device it trained on: a scheduler may assign a (fractional, or fake) GPU where torch has none
    placement = {"hostname": socket.gethostname(), "device": s.device.type, schema.BF16_MATMULS_TAG: kernels}
    tracker.set_tags({**placement, **session_tags(state.sessions)})
    if saved is not None:
        print(
            f"resumed from epoch {state.epoch}, step {state.step} (MLflow run {state.run_id or '-'})",
            flush=True,
        )
    try:
        result = _loop(s, state, tracker, reporter, checkpoints, saved is not None, cpu_start)
    except (KeyboardInterrupt, SystemExit):  # stopped, not failed: Ctrl+C, or Ray Tune stopping a trial
        tracker.finish("KILLED")
        raise
    except BaseException as err:
        if isinstance(err, NonFiniteLossError):
            tracker.set_tags({"failure": "nonfinite_loss", "failure_message": str(err)})
        tracker.finish("FAILED")
        raise
    tracker.finish("FINISHED")
    return result


def _loop(
    s: Setup, state: TrainState, tracker, reporter, checkpoints, resumed_finished: bool, cpu_mark: float
) -> TrainResult:
    """Epochs of optimiser steps, each followed by probe, evaluation, checkpoint and report. `cpu_mark`: the
    process's CPU time when this run began, so setup counts in cpu_seconds."""
    t, device, model = s.cfg.train, s.device, s.model
    # A resumed run that had already finished does no more steps and is just evaluated again.
    done = resumed_finished and (state.step >= s.n_steps or state.stopped != "epochs")
    last_eval: tuple[pd.DataFrame, list[dict], dict[str, float]] | None = None
    last_test_acc, last_saved = 0.0, ""
    for epoch in range(state.epoch + 1, t.epochs + 1) if not done else ():  # 1-based
        model.train()
        model.new_epoch(epoch)
        epoch_start, epoch_loss, epoch_steps = time.perf_counter(), 0.0, 0
        window: list[torch.Tensor] = []
        for batch in s.loader.epoch(epoch):
            if state.step >= s.n_steps:
                break
            state.tokens += batch.n_tokens  # counted on the host: no device sync per step
            loss = train_step(s.step_model, s.optimizer, s.scheduler, batch.to(device), t, s.autocast)
            state.step += 1
            epoch_steps += 1
            window.append(loss)
            # On a CPU reading the loss costs nothing, so it is checked every step; on a GPU once per log
            # window (no sync each step), still naming the first bad step.
            if device.type == "cpu" or len(window) >= t.log_every_steps:
                epoch_loss += drain_losses(window, state.step, epoch)
            if state.step % t.log_every_steps == 0:
                elapsed = state.train_seconds + time.perf_counter() - epoch_start
                metrics = {
                    schema.LOSS_METRIC: float(loss),
                    "train/lr": s.scheduler.get_last_lr()[0],
                    "train/tokens_per_s": state.tokens / max(elapsed, 1e-9),
                }
                tracker.log_metrics(metrics, state.step)
        epoch_loss += drain_losses(window, state.step, epoch)
        if device.type == "cuda":
            torch.cuda.synchronize()
        epoch_seconds = time.perf_counter() - epoch_start
        state.train_seconds += epoch_seconds
        state.epoch = epoch
        mean_loss = epoch_loss / max(1, epoch_steps)
        if state.step >= s.n_steps and epoch < t.epochs:
            state.stopped = "max_steps"

        metrics: dict[str, Any] = {"epoch": epoch, "step": state.step, "train_loss": mean_loss}
        metrics["tokens_per_s"] = tokens_per_s = state.tokens / max(state.train_seconds, 1e-9)
        line = f"epoch {epoch:4d}  step {state.step:7d}  loss {mean_loss:.4f}  tokens/s {tokens_per_s:9.0f}"
        if s.probe:
            with s.autocast:
                probe = evaluate(model, s.tokenizer, s.probe, batch_size=t.eval_batch_size)
            probe_acc = exact_match(probe.to_frame())
            metrics["probe_acc"] = probe_acc
            tracker.log_metrics({"probe_acc": probe_acc}, epoch)
            line += f"  probe {probe_acc:.3f}"
            if probe_acc >= t.target_accuracy:
                state.stopped = "target_accuracy"
                if state.seconds_to_target is None:
                    state.seconds_to_target = state.train_seconds
        final = state.stopped != "epochs" or epoch == t.epochs
        if epoch in t.eval_epochs or final:
            last_eval = evaluate_and_log(s, epoch, tracker)
            metrics.update(last_eval[2])
            line += f"  test_acc {metrics[schema.TEST_ACC_METRIC]:.3f}"
        print(line, flush=True)
        # the scheduler sees test_acc in every report: the latest evaluation's (0 before the first one)
        metrics["evaluated"] = schema.TEST_ACC_METRIC in metrics
        cpu_now = time.process_time()
        state.cpu_seconds += cpu_now - cpu_mark
        advanced(state.sessions, state.step, cpu_now - cpu_mark, epoch_seconds)
        cpu_mark = cpu_now
        metrics[schema.CPU_SECONDS] = state.cpu_seconds
        tracker.log_metrics({schema.CPU_SECONDS: state.cpu_seconds}, epoch)  # a search's clock, live
        last_test_acc = metrics.setdefault(schema.TEST_ACC_METRIC, last_test_acc)
        due = final or epoch in t.eval_epochs or (t.checkpoint_every and epoch % t.checkpoint_every == 0)
        path = None
        if due:  # the record of where it trained, as its checkpoint will hold it
            tracker.set_tags(session_tags(state.sessions))
        if due and checkpoints is not None:
            tracker.flush()  # the store has every value up to here before a checkpoint says so ...
            path = checkpoints.save(s.checkpoint(state, tracker.unsent()))  # ... or the checkpoint has it
            last_saved = str(path)
        if reporter is not None:
            reporter(metrics, path)
        if final:
            break

    if last_eval is None:  # resumed after the last epoch had finished: score it again, log nothing twice
        last_eval = evaluate_and_log(s, state.epoch, NullTracker())
    cells, failures, _ = last_eval
    tracker.log_metrics({"train_seconds": state.train_seconds, "epochs_done": state.epoch}, state.step)
    digest = weights_digest(model)
    tracker.set_tags({schema.WEIGHTS_DIGEST_TAG: digest})
    log_model(s, tracker, state.epoch)
    return TrainResult(
        test_acc=float(cells[schema.ACCURACY_COLUMN].mean()),
        cells=cells,
        epochs_done=state.epoch,
        steps=state.step,
        train_seconds=state.train_seconds,
        tokens_per_s=state.tokens / max(state.train_seconds, 1e-9),
        run_id=state.run_id,
        checkpoint=last_saved,
        stopped=state.stopped,
        seconds_to_target=state.seconds_to_target,
        failures=failures,
        weights_sha256=digest,
    )


def evaluate_and_log(s: Setup, epoch: int, tracker) -> tuple[pd.DataFrame, list[dict], dict[str, float]]:
    """Evaluate the test grid at `epoch`, log it (step = epoch) and return (cells, failures, metrics)."""
    t = s.cfg.train
    with s.autocast:
        result = evaluate(
            s.model,
            s.tokenizer,
            s.test_set,
            batch_size=t.eval_batch_size,
            train_problems=s.train_problems,
            failures_per_cell=t.failures_per_cell,
            errors_per_cell=t.errors_per_cell,
            seed=t.seed,
            max_new_tokens=t.eval_max_new_tokens,
        )
    cells, failures = result.to_frame(), [failure.to_json() for failure in result.failures]
    metrics = summary_metrics(cells, result.seconds, s.cfg.data.max_digits, t.gate_cells)
    tracker.log_metrics(metrics, epoch)
    tracker.log_evaluation(cells, failures, epoch)
    tracker.log_errors(result.errors_frame(), epoch)
    return cells, failures, metrics


def log_model(s: Setup, tracker, epoch: int) -> None:
    """The trained model, tokenizer and config as the run's logged model, linked to its last evaluation."""
    if s.cfg.tracking.log_model == "none" or not s.cfg.tracking.enabled:
        return
    with tempfile.TemporaryDirectory(prefix="arith-model-") as folder:
        s.model.save(folder, s.tokenizer)
        (Path(folder) / schema.EXPERIMENT_CONFIG).write_text(s.cfg.to_json())  # what `arith.ask` renders with
        tracker.log_model(s.model, folder, step=epoch)
