"""The one trainer: `train(cfg) -> TrainResult`, used alone (`python -m arith.train`) and by Ray Tune.

One loop for every task, format and position scheme: AdamW with warmup and a decaying schedule,
gradient clipping, loss on the answer (or the whole line), length-bucketed batches, evaluations of the
paper's grids at chosen epochs, and checkpoints that hold everything needed to continue exactly
(weights, optimiser, scheduler, RNG states, epoch, step, MLflow run id). Inside a Ray Tune trial it
reports to Tune and checkpoints through Tune; alone it does neither.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from arith.batching import BatchLoader, encode_lines, example_digits, pad_token_id
from arith.config import ConfigError, ExperimentConfig, TrainConfig, parse_set
from arith.tracking import NullTracker, ray_placement_tags, start_tracker

#: the held-out probe for `train.target_accuracy`: this many fresh examples, drawn with a seed offset
PROBE_SIZE = 300
PROBE_SEED_OFFSET = 7919
CHECKPOINT_FILE = "trainer_state.pt"


class NonFiniteLossError(FloatingPointError):
    """The loss became NaN or infinite; the message names the step and epoch."""


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
    #: why training ended: "epochs", "max_steps" or "target_accuracy"
    stopped: str = "epochs"
    #: training seconds at which the probe first reached train.target_accuracy (None if it did not)
    seconds_to_target: float | None = None
    failures: list[dict] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------------
# Hardware
# ---------------------------------------------------------------------------------------------------------


def resolve_device(name: str) -> torch.device:
    """`auto` = CUDA when present; asking for `cuda` without one is an error, not a silent CPU run."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device='cuda' but no CUDA device is available; use 'auto' or 'cpu'")
    return torch.device(name)


def autocast_context(device: torch.device, precision: str):
    """bf16 autocast on CUDA for `auto`/`bf16`; on a CPU only when bf16 is asked for explicitly."""
    if precision == "bf16" or (precision == "auto" and device.type == "cuda"):
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return nullcontext()


def cpu_threads(requested: int) -> int:
    """Threads for a CPU run: the request, else the trial's CPUs inside Ray, else this process's CPUs."""
    if requested > 0:
        return requested
    if _in_ray_worker():
        import ray

        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
        if cpus:
            return max(1, int(cpus))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _in_ray_worker() -> bool:
    if "ray" not in sys.modules:
        return False
    import ray

    return ray.is_initialized()


def in_tune_trial() -> bool:
    """True inside a Ray Tune trial (a Tune session exists); never imports ray when it is not loaded."""
    if not _in_ray_worker():
        return False
    from ray import tune

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tune.get_context().get_trial_id() is not None


# ---------------------------------------------------------------------------------------------------------
# Optimisation
# ---------------------------------------------------------------------------------------------------------


def total_steps(t: TrainConfig, steps_per_epoch: int) -> int:
    """Optimiser steps of the whole run: the epochs, capped by max_steps."""
    steps = t.epochs * steps_per_epoch
    return min(steps, t.max_steps) if t.max_steps else steps


def lr_lambda(t: TrainConfig, n_steps: int):
    """Multiplier of the peak lr at each step: linear warmup, then linear / cosine decay to 0 or constant."""
    warmup = t.warmup_steps or round(t.warmup_ratio * n_steps)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        if t.schedule == "constant":
            return 1.0
        progress = min(1.0, (step - warmup) / max(1, n_steps - warmup))
        if t.schedule == "cosine":
            return 0.5 * (1.0 + math.cos(math.pi * progress))
        return 1.0 - progress

    return factor


def compile_model(model: torch.nn.Module, t: TrainConfig) -> torch.nn.Module:
    """The module the training step calls: `model` itself, or compiled in `train.compile_mode`."""
    return torch.compile(model, mode=t.compile_mode) if t.compile else model


def make_optimizer(model: torch.nn.Module, t: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices only (not biases, norms); fused kernels on CUDA."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": t.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=t.lr, betas=(0.9, 0.95), fused=device.type == "cuda")


# ---------------------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------------------


def rng_state(device: torch.device) -> dict[str, Any]:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if device.type == "cuda" else None,
    }


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def save_checkpoint(directory: str | Path, state: dict[str, Any]) -> Path:
    """Write `state` into `directory` atomically (a crash mid-write leaves the previous checkpoint)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / (CHECKPOINT_FILE + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, directory / CHECKPOINT_FILE)
    return directory


def load_checkpoint(directory: str | Path) -> dict[str, Any] | None:
    path = Path(directory) / CHECKPOINT_FILE
    if not path.exists():
        return None
    return torch.load(path, map_location="cpu", weights_only=False)


def _check_same_config(saved: dict[str, Any], cfg: ExperimentConfig) -> None:
    """A checkpoint resumes only the trial that wrote it: data, model and training settings must match."""
    ignore = ("tracking.", "train.checkpoint_dir", "train.device", "train.num_threads", "train.log_every")
    ignore += ("train.compile",)  # compiled or not, a step computes the same
    now = cfg.flat()
    before = ExperimentConfig.from_dict(saved).flat()
    diff = [k for k in now if not k.startswith(ignore) and now[k] != before.get(k)]
    if diff:
        raise ConfigError(
            "the checkpoint in train.checkpoint_dir was written by a different config "
            f"({', '.join(f'{k}: {before.get(k)!r} -> {now[k]!r}' for k in diff)}); "
            "use a fresh train.checkpoint_dir"
        )


class Checkpointer:
    """Where checkpoints go: Tune's storage inside a trial, `train.checkpoint_dir` alone, or nowhere."""

    def __init__(self, cfg: ExperimentConfig, tune_trial: bool) -> None:
        self.tune_trial = tune_trial
        self.directory = cfg.train.checkpoint_dir
        self.last = ""

    @property
    def enabled(self) -> bool:
        return self.tune_trial or bool(self.directory)

    def restore(self) -> dict[str, Any] | None:
        if self.tune_trial:
            from ray import tune

            checkpoint = tune.get_checkpoint()
            if checkpoint is None:
                return None
            with checkpoint.as_directory() as directory:
                return load_checkpoint(directory)
        saved = load_checkpoint(self.directory) if self.directory else None
        self.last = self.directory if saved is not None else ""
        return saved

    def report(self, metrics: dict[str, Any], state: dict[str, Any] | None) -> None:
        """Save `state` (when given) and, inside Tune, report `metrics` with it."""
        if not self.tune_trial:
            if state is not None and self.directory:
                self.last = str(save_checkpoint(self.directory, state))
            return
        from ray import tune

        if state is None:
            tune.report(metrics)
            return
        tmp = tempfile.mkdtemp(prefix="arith-ckpt-")
        try:
            save_checkpoint(tmp, state)
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(tmp))  # persisted before return
            self.last = tune.get_context().get_trial_dir()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------
# Evaluation helpers
# ---------------------------------------------------------------------------------------------------------


def probe_examples(cfg: ExperimentConfig) -> list:
    """A few hundred held-out examples (fresh seed) for early stopping at train.target_accuracy."""
    from arith.data import test_examples

    pool = test_examples(replace(cfg.data, seed=cfg.data.seed + PROBE_SEED_OFFSET))
    if len(pool) <= PROBE_SIZE:
        return pool
    picks = np.random.default_rng(cfg.data.seed + PROBE_SEED_OFFSET).choice(
        len(pool), PROBE_SIZE, replace=False
    )
    return [pool[i] for i in sorted(picks)]


def exact_match(cells: pd.DataFrame) -> float:
    """Share of all items answered exactly (the probe's measure, pooled over cells)."""
    return float(cells["correct"].sum() / max(1, cells["n"].sum()))


def summary_metrics(cells: pd.DataFrame, seconds: float) -> dict[str, float]:
    """test_acc (mean over all cells), test_acc/<context>, seen_fraction, eval/samples_per_s."""
    metrics = {"test_acc": float(cells["accuracy"].mean())}
    for context, frame in cells.groupby("context", sort=False):
        metrics[f"test_acc/{context}"] = float(frame["accuracy"].mean())
    if "seen_in_train" in cells:
        metrics["seen_fraction"] = float(
            (cells["seen_in_train"] * cells["n"]).sum() / max(1, cells["n"].sum())
        )
    metrics["eval/samples_per_s"] = float(cells["n"].sum() / max(seconds, 1e-9))
    return metrics


# ---------------------------------------------------------------------------------------------------------
# The trainer
# ---------------------------------------------------------------------------------------------------------


def train(cfg: ExperimentConfig) -> TrainResult:
    """Train one trial and return its results; see the module docstring."""
    cfg.validate()
    tune_trial = in_tune_trial()
    device = resolve_device(cfg.train.device)
    if device.type == "cpu":
        torch.set_num_threads(cpu_threads(cfg.train.num_threads))
    else:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    checkpointer = Checkpointer(cfg, tune_trial)
    saved = checkpointer.restore()
    if saved is not None:
        _check_same_config(saved["config"], cfg)
    tracker = start_tracker(cfg, run_id=saved["run_id"] if saved else "")
    try:
        if _in_ray_worker():
            tracker.set_tags(ray_placement_tags())
        result = _train(cfg, device, tracker, checkpointer, saved)
    except KeyboardInterrupt:
        tracker.finish("KILLED")
        raise
    except BaseException:
        tracker.finish("FAILED")
        raise
    tracker.finish("FINISHED")
    return result


def _train(cfg: ExperimentConfig, device: torch.device, tracker, checkpointer, saved) -> TrainResult:
    from arith.data import test_examples, train_examples
    from arith.evaluate import evaluate
    from arith.formats import problem_ids
    from arith.model import build_model
    from arith.tokenizer import tokenizer_for

    t = cfg.train
    seed_everything(t.seed)
    train_set = train_examples(cfg.data)
    test_set = test_examples(cfg.data)
    train_problems = problem_ids(train_set)
    tokenizer = tokenizer_for(cfg.model, [example.text for example in train_set])
    loader = BatchLoader(
        encode_lines(tokenizer, train_set),
        t.batch_size,
        pad_token_id(tokenizer),
        t.loss_on,
        t.seed,
        digits=[example_digits(example) for example in train_set],
        bucket_lengths=t.bucket_lengths,
    )
    probe = probe_examples(cfg) if t.target_accuracy > 0 else []

    model = build_model(cfg.model, tokenizer).to(device)
    step_model = compile_model(model, t)
    optimizer = make_optimizer(model, t, device)
    n_steps = total_steps(t, len(loader))
    loader.curriculum_steps = round(t.curriculum * n_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(t, n_steps))
    autocast = autocast_context(device, t.precision)

    start_epoch, step, tokens, train_seconds, seconds_to_target = 0, 0, 0, 0.0, None
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        set_rng_state(saved["rng"])
        start_epoch, step, tokens = saved["epoch"], saved["step"], saved["tokens"]
        train_seconds, seconds_to_target = saved["train_seconds"], saved["seconds_to_target"]
        print(
            f"resumed from epoch {start_epoch}, step {step} (MLflow run {tracker.run_id or '-'})", flush=True
        )

    last_eval: tuple[pd.DataFrame, list[dict]] | None = None
    last_test_acc = 0.0
    stopped = "epochs"
    epoch = start_epoch
    # A resumed run that had already finished does no more steps and is just evaluated again.
    finished_before = saved is not None and (step >= n_steps or saved["stopped"] != "epochs")
    if finished_before:
        stopped = saved["stopped"]
    epochs = range(start_epoch + 1, t.epochs + 1) if not finished_before else range(0)  # 1-based
    for epoch in epochs:
        model.train()
        model.new_epoch(epoch)
        epoch_start = time.perf_counter()
        epoch_loss, epoch_steps, epoch_tokens = _run_epoch(
            loader.epoch(epoch),
            step_model,
            optimizer,
            scheduler,
            t,
            device,
            autocast,
            tracker,
            first_step=step,
            last_step=n_steps,
            epoch=epoch,
            seconds_before=train_seconds,
            tokens_before=tokens,
        )
        step += epoch_steps
        train_seconds += time.perf_counter() - epoch_start
        tokens += epoch_tokens
        mean_loss = epoch_loss / max(1, epoch_steps)
        if step >= n_steps and epoch < t.epochs:
            stopped = "max_steps"

        metrics: dict[str, Any] = {"epoch": epoch, "step": step, "train_loss": mean_loss}
        metrics["tokens_per_s"] = tokens / max(train_seconds, 1e-9)
        line = (
            f"epoch {epoch:4d}  step {step:7d}  loss {mean_loss:.4f}  tokens/s {metrics['tokens_per_s']:9.0f}"
        )
        if probe:
            with autocast:
                probe_acc = exact_match(
                    evaluate(model, tokenizer, probe, batch_size=t.eval_batch_size).to_frame()
                )
            metrics["probe_acc"] = probe_acc
            tracker.log_metrics({"probe_acc": probe_acc}, epoch)
            line += f"  probe {probe_acc:.3f}"
            if probe_acc >= t.target_accuracy:
                stopped = "target_accuracy"
                if seconds_to_target is None:
                    seconds_to_target = train_seconds
        final = stopped != "epochs" or epoch == t.epochs
        if epoch in t.eval_epochs or final:
            last_eval = _evaluate(cfg, model, tokenizer, test_set, train_problems, epoch, tracker, autocast)
            metrics.update(summary_metrics(last_eval[0], seconds=last_eval[2]))
            line += f"  test_acc {metrics['test_acc']:.3f}"
            last_eval = last_eval[:2]
        print(line, flush=True)
        # Tune sees test_acc in every report: the latest evaluation's (0 before the first one)
        metrics["evaluated"] = "test_acc" in metrics
        last_test_acc = metrics.setdefault("test_acc", last_test_acc)
        due = final or epoch in t.eval_epochs or (t.checkpoint_every and epoch % t.checkpoint_every == 0)
        state = None
        if due and checkpointer.enabled:
            state = {
                "config": cfg.to_dict(),
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "rng": rng_state(device),
                **{"epoch": epoch, "step": step, "tokens": tokens, "train_seconds": train_seconds},
                **{"seconds_to_target": seconds_to_target, "stopped": stopped, "run_id": tracker.run_id},
            }
        checkpointer.report(metrics, state)
        if final:
            break

    if last_eval is None:  # resumed after the last epoch had finished: score it again, log nothing twice
        epoch = saved["epoch"]
        quiet = NullTracker()
        last_eval = _evaluate(cfg, model, tokenizer, test_set, train_problems, epoch, quiet, autocast)[:2]
    cells, failures = last_eval
    tracker.log_metrics({"train_seconds": train_seconds, "epochs_done": epoch}, step)
    return TrainResult(
        test_acc=float(cells["accuracy"].mean()),
        cells=cells,
        epochs_done=epoch,
        steps=step,
        train_seconds=train_seconds,
        tokens_per_s=tokens / max(train_seconds, 1e-9),
        run_id=tracker.run_id,
        checkpoint=checkpointer.last,
        stopped=stopped,
        seconds_to_target=seconds_to_target,
        failures=failures,
    )


def _run_epoch(
    batches,
    step_model,
    optimizer,
    scheduler,
    t: TrainConfig,
    device: torch.device,
    autocast,
    tracker,
    *,
    first_step: int,
    last_step: int,
    epoch: int,
    seconds_before: float,
    tokens_before: int,
) -> tuple[float, int, int]:
    """One epoch of optimiser steps (stopping at `last_step`); returns (loss sum, steps, tokens)."""
    loss_sum, steps, tokens, start = 0.0, 0, 0, time.perf_counter()
    window: list[torch.Tensor] = []
    for batch in batches:
        step = first_step + steps
        if step >= last_step:
            break
        tokens += batch.n_tokens  # counted on the host: no device sync per step
        batch = batch.to(device)
        with autocast:
            loss = step_model(batch.input_ids, batch.attention_mask, loss_mask=batch.loss_mask).loss
        loss.backward()
        if t.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(step_model.parameters(), t.grad_clip)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        steps += 1
        # a copy: a CUDA-graph step (compile mode reduce-overhead) reuses its output memory next step
        window.append(loss.detach().clone())
        # On a CPU reading the loss costs nothing, so it is checked every step; on a GPU once per log
        # window (no sync each step), still naming the first bad step.
        if device.type == "cpu" or len(window) >= t.log_every_steps:
            loss_sum += _drain(window, step + 1, epoch)
        if (step + 1) % t.log_every_steps == 0:
            elapsed = seconds_before + time.perf_counter() - start
            metrics = {
                "train/loss": float(loss.detach()),
                "train/lr": scheduler.get_last_lr()[0],
                "train/tokens_per_s": (tokens_before + tokens) / max(elapsed, 1e-9),
            }
            tracker.log_metrics(metrics, step + 1)
    loss_sum += _drain(window, first_step + steps, epoch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return loss_sum, steps, tokens


def _drain(window: list[torch.Tensor], step: int, epoch: int) -> float:
    """Sum the losses of the last `len(window)` steps (ending at `step`), emptying the window; a NaN or
    infinite one stops training with an error naming its step and epoch."""
    if not window:
        return 0.0
    losses = torch.stack(window).float().cpu()
    first_step = step - len(window) + 1
    window.clear()
    bad = (~torch.isfinite(losses)).nonzero()
    if len(bad):
        i = int(bad[0])
        raise NonFiniteLossError(
            f"training loss became {float(losses[i])} at step {first_step + i} (epoch {epoch}); "
            "lower train.lr, raise train.warmup_steps or check the data"
        )
    return float(losses.sum())


def _evaluate(cfg, model, tokenizer, examples, train_problems, epoch, tracker, autocast):
    """Evaluate the test grid at `epoch`, log it (step = epoch) and return (cells, failures, seconds)."""
    from arith.evaluate import evaluate

    t = cfg.train
    start = time.perf_counter()
    with autocast:
        result = evaluate(
            model,
            tokenizer,
            examples,
            batch_size=t.eval_batch_size,
            train_problems=train_problems,
            failures_per_cell=t.failures_per_cell,
            seed=t.seed,
        )
    seconds = time.perf_counter() - start
    cells, failures = result.to_frame(), [failure.to_json() for failure in result.failures]
    tracker.log_metrics(summary_metrics(cells, seconds), epoch)
    tracker.log_evaluation(cells, failures, epoch)
    return cells, failures, seconds


def tune_entrypoint(config: dict) -> None:
    """The Ray Tune trainable: `train(ExperimentConfig.from_dict(config))`. Metrics and checkpoints go to
    Tune through `tune.report` inside `train`, so nothing is returned (Tune accepts only dicts/numbers)."""
    train(ExperimentConfig.from_dict(config))


# ---------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------

#: convenience flags -> config keys
SHORTCUTS = {
    "task": "data.task",
    "format": "data.format",
    "position": "model.position",
    "max_digits": "data.max_digits",
    "epochs": "train.epochs",
    "tracking_uri": "tracking.tracking_uri",
}


def config_from_args(argv: Sequence[str] | None = None) -> tuple[ExperimentConfig, argparse.Namespace]:
    """Config = defaults <- --config file <- convenience flags <- --set key=value (later wins)."""
    parser = argparse.ArgumentParser(prog="python -m arith.train", description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="a YAML or JSON file with some or all of data/model/train/tracking")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="e.g. train.lr=1e-3")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    for flag, key in SHORTCUTS.items():
        parser.add_argument(f"--{flag.replace('_', '-')}", dest=flag, help=f"= --set {key}=...")
    args = parser.parse_args(argv)
    cfg = ExperimentConfig.load(args.config) if args.config else ExperimentConfig()
    overrides = {
        key: getattr(args, flag) for flag, key in SHORTCUTS.items() if getattr(args, flag) is not None
    }
    overrides.update(parse_set(args.set))
    return cfg.with_overrides(overrides), args


def format_grid(cells: pd.DataFrame) -> str:
    """The accuracy grid of each context as text: rows = digits of b, columns = digits of a for
    multiplication; one row of accuracy by digit count for the other tasks."""
    parts = []
    for context, frame in cells.groupby("context", sort=False):
        if frame["row_digits"].notna().any():
            grid = frame.pivot_table(index="row_digits", columns="col_digits", values="accuracy")
            grid.index = grid.index.astype(int).rename("b digits \\ a digits")
            grid.columns.name = None
        else:
            grid = frame.set_index("col_digits")[["accuracy"]].T
            grid.columns.name = "digits"
        parts.append(f"[{context}]\n{grid.round(3).to_string()}")
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        cfg, args = config_from_args(argv)
        if args.print_config:
            print(cfg.to_json())
            return 0
        cfg.validate()
    except ConfigError as err:
        print(f"config error: {err}", file=sys.stderr)
        return 2
    result = train(cfg)
    print(format_grid(result.cells))
    summary = {
        "test_acc": round(result.test_acc, 4),
        "epochs_done": result.epochs_done,
        "steps": result.steps,
        "train_seconds": round(result.train_seconds, 2),
        "tokens_per_s": round(result.tokens_per_s),
        "stopped": result.stopped,
        "run_id": result.run_id,
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
