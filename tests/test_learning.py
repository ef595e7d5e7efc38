"""The CI-sized learning check: a tiny GPT-2 learns a task of the paper within a fixed step budget, and the
paper's format effect shows at that size, so a change that breaks learning (or the formats) is caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from arith.config import ExperimentConfig
from arith.training.train import train

#: the time-to-accuracy recipe of benchmarks/bench_train.py, at the batch of 128 this check's margin was
#: measured with: at the recipe's 64 (chosen for seconds to 95% in bf16), fp32 seeds 0 / 1 / 2 end at 0.987 /
#: 1.000 / 0.913 (600 / 700 / 800 steps), too close to the bound for a check that runs on any CPU
RECIPE = ExperimentConfig.load(
    Path(__file__).resolve().parent.parent / "configs" / "add3_padding_reverse.yaml"
).with_overrides({"tracking.enabled": False, "train.batch_size": 128})

#: the plain answer, trained for as many steps as the padded one needed, stays far below it. Measured with
#: this protocol: seed 0 (the test's): padded 0.993 after 600 steps vs basic 0.013 (85 s in all on 2 quiet
#: cores); seed 1: 0.977 after 650 vs 0.013; seed 2: 0.997 after 500 vs 0.040. The bound leaves a wide margin.
BASIC_CEILING = 0.5


@pytest.mark.slow
def test_padded_reversed_addition_learns_and_beats_the_plain_answer() -> None:
    """4-layer, 4-head, 128-wide GPT-2 on up to 3-digit addition. The paper's padded, reversed answer
    reaches >= 95% exact match within 800 optimiser steps (it stops once a held-out probe reaches 98%,
    about 30-60 s on two CPU cores); the same model given the same number of steps on the plain answer
    stays below BASIC_CEILING (the direction of the paper's format finding, at a size CI can afford)."""
    padded = train(RECIPE.with_overrides({"train.target_accuracy": 0.98}))
    assert padded.steps <= 800
    assert padded.test_acc >= 0.95, padded.cells
    assert set(padded.cells["col_digits"]) == {1, 2, 3}

    basic = train(RECIPE.with_overrides({"data.format": "basic", "train.max_steps": padded.steps}))
    assert basic.steps == padded.steps
    assert set(basic.cells["col_digits"]) == {1, 2, 3}
    assert basic.test_acc < BASIC_CEILING < padded.test_acc, (basic.test_acc, padded.test_acc)
