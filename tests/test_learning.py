"""The CI-sized learning check: a tiny GPT-2 learns a task of the paper within a fixed step budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from arith.config import ExperimentConfig
from arith.train import train

#: the time-to-accuracy recipe of benchmarks/bench_train.py
RECIPE = ExperimentConfig.load(
    Path(__file__).resolve().parent.parent / "configs" / "add3_padding_reverse.yaml"
)


@pytest.mark.slow
def test_tiny_gpt2_learns_padded_reversed_addition() -> None:
    """4-layer, 4-head, 128-wide GPT-2 on the paper's padded, reversed addition (up to 3 digits): >= 95%
    exact match on the test grid within 800 optimiser steps (about 30-60 s on two CPU cores). It stops
    early once a held-out probe reaches 98%."""
    result = train(RECIPE.with_overrides({"train.target_accuracy": 0.98, "tracking.enabled": False}))
    assert result.steps <= 800
    assert result.test_acc >= 0.95, result.cells
    assert set(result.cells["col_digits"]) == {1, 2, 3}
