"""What a trial is built from before it trains, from its config alone: its data, tokenizer, model, optimiser
and batches (the `Setup`); and where it stands between steps (the `TrainState`), which with the modules'
states is its checkpoint."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from arith.config import ExperimentConfig, TrainConfig
from arith.data.datasets import test_examples, train_examples
from arith.data.tasks import problem_ids
from arith.model.gpt import build_model
from arith.model.tokenizer import encode_examples, tokenizer_for
from arith.training.batching import BatchLoader, EncodedLine, example_digits, pad_token_id
from arith.training.checkpoints import rng_state, seed_everything, set_rng_state
from arith.training.hardware import (
    autocast_context,
    compile_model,
    cpu_threads,
    keep_freed_memory,
    resolve_device,
)
from arith.training.lengths import check_decoding, check_train_lines
from arith.training.metrics import probe_examples
from arith.training.optim import lr_lambda, make_optimizer, total_steps


@dataclass
class TrainState:
    """Where training stands: with the weights, optimiser, scheduler and RNG states it is the checkpoint."""

    epoch: int = 0
    step: int = 0
    tokens: int = 0
    train_seconds: float = 0.0
    #: CPU time of the trial's process (setup, steps, evaluations; every thread), summed across restores:
    #: core-seconds that contention for the machine does not inflate, the clock a recipe search reads
    cpu_seconds: float = 0.0
    seconds_to_target: float | None = None
    #: why training ended: "epochs" (not yet, or all done), "max_steps" or "target_accuracy"
    stopped: str = "epochs"
    run_id: str = ""
    #: each process that trained it: its machine, steps and CPU time (`arith.training.sessions`)
    sessions: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, saved: dict[str, Any]) -> TrainState:
        """The state a checkpoint saved (one from before a counter existed starts that counter at 0)."""
        return cls(**{k: saved[k] for k in cls.__dataclass_fields__ if k in saved})


@dataclass
class Setup:
    """Everything a run is built from; the benchmarks build theirs with `setup` too."""

    cfg: ExperimentConfig
    device: torch.device
    autocast: Any
    tokenizer: Any
    train_set: list
    test_set: list
    train_problems: set
    probe: list
    loader: BatchLoader
    model: torch.nn.Module
    step_model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    n_steps: int

    def checkpoint(self, state: TrainState, unsent: dict[str, Any]) -> dict[str, Any]:
        """The checkpoint: config, modules' states, RNG states, the TrainState and unsent metrics."""
        return {
            "config": self.cfg.to_dict(),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": rng_state(self.device),
            **asdict(state),
            "unsent": unsent,
        }

    def restore(self, saved: dict[str, Any]) -> TrainState:
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        set_rng_state(saved["rng"])
        return TrainState.of(saved)


def train_loader(train_set: list, tokenizer, t: TrainConfig) -> BatchLoader:
    """The trainer's batches of `train_set` (the benchmarks time these same batches)."""
    return BatchLoader(
        [EncodedLine(tuple(ids), start) for ids, start in encode_examples(tokenizer, train_set)],
        t.batch_size,
        pad_token_id(tokenizer),
        t.loss_on,
        t.seed,
        digits=[example_digits(example) for example in train_set],
        bucket_lengths=t.bucket_lengths,
        epochs_per_pass=t.epochs_per_pass,
    )


def setup(cfg: ExperimentConfig) -> Setup:
    """Device, data, tokenizer, batches, model, optimiser and schedule of `cfg`, seeded."""
    t = cfg.train
    device = resolve_device(t.device)
    if device.type == "cpu":
        torch.set_num_threads(cpu_threads(t.num_threads))
        keep_freed_memory()
    else:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    seed_everything(t.seed)
    train_set = train_examples(cfg.data)
    tokenizer = tokenizer_for(cfg.model, [example.text for example in train_set])
    loader = train_loader(train_set, tokenizer, t)
    test_set = test_examples(cfg.data)
    probe = probe_examples(cfg) if t.target_accuracy > 0 else []
    check_train_lines(map(len, loader.lines), cfg)
    check_decoding(tokenizer, test_set + probe, cfg)
    model = build_model(cfg.model, tokenizer, cfg.data).to(device)
    optimizer = make_optimizer(model, t, device)
    n_steps = total_steps(t, len(loader))
    loader.curriculum_steps = round(t.curriculum * n_steps)
    return Setup(
        cfg=cfg,
        device=device,
        autocast=autocast_context(device, t.precision),
        tokenizer=tokenizer,
        train_set=train_set,
        test_set=test_set,
        train_problems=problem_ids(train_set),
        probe=probe,
        loader=loader,
        model=model,
        step_model=compile_model(model, t),
        optimizer=optimizer,
        scheduler=torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(t, n_steps)),
        n_steps=n_steps,
    )
