"""What an evaluation is summed up as: the metrics each evaluation logs (`summary_metrics`, the columns the
analysis and the MLflow UI read) and the held-out probe that stops a run at `train.target_accuracy`
(`probe_examples`, scored by `exact_match`): what an evaluation means, apart from how the trainer runs
one, so that either can change without the other.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from arith.config import ExperimentConfig
from arith.data.datasets import test_examples

#: the held-out probe for `train.target_accuracy`: this many fresh examples, drawn with a seed offset
PROBE_SIZE = 300
PROBE_SEED_OFFSET = 7919


def probe_examples(cfg: ExperimentConfig) -> list:
    """A few hundred held-out examples (fresh seed) for early stopping at train.target_accuracy."""
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


def summary_metrics(cells: pd.DataFrame, seconds: float, max_digits: int | None = None) -> dict[str, float]:
    """test_acc (mean over all cells), test_acc/<context>, seen_fraction, test_acc/seen and test_acc/unseen
    (the mean over cells of the accuracy on test problems in / not in the training set),
    eval/samples_per_s; given the training's `max_digits`, also test_acc/in_range and test_acc/beyond
    (cells with longer operands) and both per context, test_acc/<context>/in_range etc.: the numbers
    length claims rest on, as UI columns."""
    metrics = {"test_acc": float(cells["accuracy"].mean())}
    for context, frame in cells.groupby("context", sort=False):
        metrics[f"test_acc/{context}"] = float(frame["accuracy"].mean())
    if max_digits is not None:
        longest = cells[["row_digits", "col_digits"]].astype(float).max(axis=1)
        several_contexts = cells["context"].nunique() > 1
        for name, part in (
            ("in_range", cells[longest <= max_digits]),
            ("beyond", cells[longest > max_digits]),
        ):
            if part.empty:
                continue
            metrics[f"test_acc/{name}"] = float(part["accuracy"].mean())
            if several_contexts:
                for context, frame in part.groupby("context", sort=False):
                    metrics[f"test_acc/{context}/{name}"] = float(frame["accuracy"].mean())
    if "seen_in_train" in cells:
        metrics["seen_fraction"] = float(
            (cells["seen_in_train"] * cells["n"]).sum() / max(1, cells["n"].sum())
        )
    for part in ("seen", "unseen"):
        # the mean over the cells that hold such problems: unseen is what the model generalised to
        accuracies = cells.get(f"accuracy_{part}", pd.Series(dtype=float)).dropna()
        if not accuracies.empty:
            metrics[f"test_acc/{part}"] = float(accuracies.mean())
    metrics["eval/samples_per_s"] = float(cells["n"].sum() / max(seconds, 1e-9))
    return metrics
