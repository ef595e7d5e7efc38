"""How a run optimises: AdamW with weight decay on matrices only, and the learning-rate schedule
(warm-up, then linear or cosine decay, or constant) over the run's total steps."""

from __future__ import annotations

import math

import torch

from arith.config import ExperimentConfig, TrainConfig
from arith.data.datasets import train_size
from arith.training.epochs import capped_steps


def total_steps(t: TrainConfig, batches_per_pass: int) -> int:
    """Optimiser steps of the whole run: its epochs (`train.epochs_per_pass` a pass), capped by max_steps."""
    return capped_steps(t.epochs, batches_per_pass, t.epochs_per_pass, t.max_steps)


def run_steps(cfg: ExperimentConfig) -> int:
    """Optimiser steps a run of `cfg` will take (`total_steps` over its training set's batches), without
    building the data; a run that reaches its target accuracy stops earlier."""
    return total_steps(cfg.train, math.ceil(train_size(cfg.data) / cfg.train.batch_size))


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


def make_optimizer(model: torch.nn.Module, t: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices only (not biases, norms); fused kernels on CUDA."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": t.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(
        groups, lr=t.lr, betas=(t.adam_beta1, t.adam_beta2), eps=t.adam_eps, fused=device.type == "cuda"
    )
