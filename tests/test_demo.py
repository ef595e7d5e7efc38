"""`make demo`: the demo grid's trials, its claim's verdicts, and the per-range accuracy metrics that the
claim and the MLflow UI view read."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from analysis.findings import CLAIMS, HELD, NOT_HELD, NOT_TESTABLE, padded_reversed_answer_beats_plain
from arith.train import summary_metrics
from sweeps.grids import points

ROOT = Path(__file__).resolve().parent.parent


def test_demo_grid_is_the_fast_addition_recipe_in_both_answer_formats() -> None:
    trials = points("demo", "cpu", 3)
    assert [(c.data.format, c.train.seed) for c in trials] == [
        (fmt, seed) for fmt in ("basic", "padding_reverse") for seed in (0, 1, 2)
    ]
    recipe = yaml.safe_load((ROOT / "configs" / "add3_padding_reverse.yaml").read_text())
    for cfg in trials:
        flat = cfg.flat()
        # the recipe's data, model and optimiser, whatever the cpu scale sets for other grids
        for section in ("data", "model", "train"):
            for key, value in recipe[section].items():
                if key not in ("format", "epochs", "max_steps", "target_accuracy", "log_every_steps"):
                    assert flat[f"{section}.{key}"] == value, key
        assert cfg.train.max_steps == 700 and cfg.train.target_accuracy == 0.0  # both formats train as long
        assert cfg.train.epochs * 6400 // 128 >= cfg.train.max_steps
        assert cfg.train.eval_epochs[-1] == cfg.train.epochs and len(cfg.train.eval_epochs) >= 5
    assert [c.grid for c in CLAIMS].count("demo") == 1


def frame(padded: list[float], basic: list[float], std: float, seeds: int) -> pd.DataFrame:
    """The analysis's seed-mean frame for the demo: three in-range cells and one beyond, per format."""
    rows = []
    for fmt, values in (("padding_reverse", padded), ("basic", basic)):
        for digits, value in zip((1, 2, 3, 4), [*values, 0.0], strict=True):
            rows.append(
                {
                    "data.format": fmt,
                    "data.max_digits": 3,
                    "col_digits": digits,
                    "final": True,
                    "accuracy": value,
                    "accuracy_std": std if seeds > 1 else float("nan"),
                    "seeds": seeds,
                }
            )
    return pd.DataFrame(rows)


def test_demo_claim_verdicts_follow_the_seed_rule() -> None:
    status, evidence = padded_reversed_answer_beats_plain(frame([1.0, 0.98, 0.95], [0.9, 0.4, 0.1], 0.05, 3))
    assert status == HELD
    assert "1-3-digit sums" in evidence and "padding_reverse 0.98 vs basic 0.47" in evidence
    assert "mean of 3 seed(s)" in evidence and "2 SE 0.08" in evidence  # 2 * sqrt(2) * 0.05 / sqrt(3)
    # the same means with a wide spread over seeds: the difference is within 2 standard errors
    assert (
        padded_reversed_answer_beats_plain(frame([1.0, 0.98, 0.95], [0.9, 0.4, 0.1], 0.9, 3))[0] == NOT_HELD
    )
    # one seed only suggests; neither format learning the training range tests nothing
    assert padded_reversed_answer_beats_plain(frame([1.0, 0.98, 0.95], [0.9, 0.4, 0.1], 0, 1))[0] == (
        f"suggests {HELD}"
    )
    assert padded_reversed_answer_beats_plain(frame([0.5, 0.2, 0.1], [0.4, 0.1, 0.0], 0.05, 3))[0] == (
        NOT_TESTABLE
    )


def test_summary_metrics_split_the_training_range_and_the_contexts() -> None:
    cells = pd.DataFrame(
        {
            "context": ["regular"] * 3 + ["repetitive"] * 3,
            "row_digits": [None] * 6,
            "col_digits": [2, 3, 4] * 2,
            "n": [10] * 6,
            "correct": [10, 8, 0, 10, 6, 2],
            "accuracy": [1.0, 0.8, 0.0, 1.0, 0.6, 0.2],
            "seen_in_train": [0.0] * 6,
        }
    )
    metrics = summary_metrics(cells, seconds=1.0, max_digits=3)
    assert metrics["test_acc"] == pytest.approx(0.6)
    assert metrics["test_acc/in_range"] == pytest.approx(0.85)
    assert metrics["test_acc/beyond"] == pytest.approx(0.1)
    assert metrics["test_acc/regular/in_range"] == pytest.approx(0.9)
    assert metrics["test_acc/repetitive/beyond"] == pytest.approx(0.2)
    # a grid inside the training range (multiplication: both factors) has no "beyond"; without the
    # training length there is no split at all
    mul = cells.assign(context="main", row_digits=[1, 2, 3] * 2, col_digits=[1, 2, 3] * 2)
    assert "test_acc/beyond" not in summary_metrics(mul, 1.0, max_digits=3)
    assert "test_acc/main/in_range" not in summary_metrics(mul, 1.0, max_digits=3)
    assert not any("range" in k for k in summary_metrics(cells, 1.0))
