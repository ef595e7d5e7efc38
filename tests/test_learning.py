"""The CI-sized learning check: a tiny GPT-2 learns a task of the paper within a fixed step budget."""

from __future__ import annotations

import pytest

from arith.config import ExperimentConfig
from arith.train import train

#: benchmarks/bench_train.py's time-to-accuracy recipe (add padding_reverse <= 3 digits, tiny GPT-2)
RECIPE = {
    "data.task": "add",
    "data.format": "padding_reverse",
    "data.max_digits": 3,
    "data.train_samples": 6400,
    "data.test_per_cell": 100,
    "model.preset": "tiny",
    "model.n_positions": 64,
    "train.epochs": 100,
    "train.max_steps": 800,
    "train.batch_size": 128,
    "train.lr": 3e-3,
    "train.warmup_steps": 50,
    "train.schedule": "linear",
    "train.grad_clip": 0.0,
    "train.loss_on": "answer",
    "train.eval_batch_size": 512,
    "tracking.enabled": False,
}


@pytest.mark.slow
def test_tiny_gpt2_learns_padded_reversed_addition() -> None:
    """4-layer, 4-head, 128-wide GPT-2 on the paper's padded, reversed addition (up to 3 digits): >= 95%
    exact match on the test grid within 800 optimiser steps (about 30-60 s on two CPU cores). It stops
    early once a held-out probe reaches 98%."""
    result = train(ExperimentConfig().with_overrides({**RECIPE, "train.target_accuracy": 0.98}))
    assert result.steps <= 800
    assert result.test_acc >= 0.95, result.cells
    assert set(result.cells["col_digits"]) == {1, 2, 3}
