"""What an evaluation is summed up as: the metrics it logs (`summary_metrics`, what the analysis and the
MLflow UI read) and the held-out probe that stops a run at `train.target_accuracy`; apart from how the
trainer runs one, so that either can change without the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from arith.config import ExperimentConfig
from arith.data.datasets import test_examples
from arith.tracking import schema

#: the held-out probe for `train.target_accuracy`: this many fresh examples, drawn with a seed offset
PROBE_SIZE = 300
PROBE_SEED_OFFSET = 7919


def probe_examples(cfg: ExperimentConfig) -> list:
    """A few hundred held-out examples (a fresh seed) for early stopping at train.target_accuracy."""
    pool = test_examples(replace(cfg.data, seed=cfg.data.seed + PROBE_SEED_OFFSET))
    if len(pool) <= PROBE_SIZE:
        return pool
    picks = np.random.default_rng(cfg.data.seed + PROBE_SEED_OFFSET).choice(
        len(pool), PROBE_SIZE, replace=False
    )
    return [pool[i] for i in sorted(picks)]


def exact_match(cells: pd.DataFrame) -> float:
    """Share of all items answered exactly (the probe's measure, pooled over cells)."""
    return float(cells[schema.CORRECT_COLUMN].sum() / max(1, cells[schema.N_COLUMN].sum()))


def gate_cell_name(context: str, row_digits: float, col_digits: float) -> str:
    """A test cell as `train.gate_cells` names it: `main:2x3` (row x column digits) or `regular:5`."""
    if pd.isna(row_digits):
        return f"{context}:{int(col_digits)}"
    return f"{context}:{int(row_digits)}x{int(col_digits)}"


#: a gated cell is read on its unseen test problems only where it has at least this many (else on all):
#: 0.9 on 20 problems has a standard error of ~0.07, while 2 unseen ones read 0.0, 0.5 or 1.0 at random
MIN_UNSEEN = 20


def weakest_unseen(cells: pd.DataFrame, labels: Sequence[str]) -> float:
    """The lowest accuracy over the cells `labels` names, each on its problems not trained on where it has
    `MIN_UNSEEN` of them, else on all (NaN when none is found): what a recipe search's scheduler reads, so
    that memorised training lines do not count."""
    wanted = set(labels)
    named = cells[[gate_cell_name(*key) in wanted for key in cells[schema.CELL_KEYS].itertuples(index=False)]]
    if named.empty:
        return float("nan")
    unseen = named.get(schema.ACCURACY_UNSEEN_COLUMN, pd.Series(float("nan"), index=named.index))
    if schema.N_SEEN_COLUMN in named:
        unseen = unseen.where(named[schema.N_COLUMN] - named[schema.N_SEEN_COLUMN].fillna(0) >= MIN_UNSEEN)
    return float(unseen.fillna(named[schema.ACCURACY_COLUMN]).min())


def length_reach(cells: pd.DataFrame, context: str = "main") -> tuple[int, float] | None:
    """(longest, score) of a one-dimensional test of `context`: the longest length L such that every cell up
    to L holds HELD_ACCURACY (0 if the shortest does not), and L plus the mean accuracy beyond it (a
    tie-breaker below 1). None for a test without such cells (a multiplication grid, another context)."""
    own = cells[(cells[schema.CONTEXT_COLUMN] == context) & cells[schema.ROW_DIGITS_COLUMN].isna()]
    if own.empty:
        return None
    by_length = own.groupby(schema.COL_DIGITS_COLUMN)[schema.ACCURACY_COLUMN].mean().sort_index()
    held = (by_length >= schema.HELD_ACCURACY - 1e-9).to_numpy()
    leading = len(held) if held.all() else int(held.argmin())  # the cells held before the first that is not
    longest = int(by_length.index[leading - 1]) if leading else 0
    beyond = by_length.iloc[leading:]
    return longest, longest + (float(beyond.mean()) if len(beyond) else 0.0)


def summary_metrics(
    cells: pd.DataFrame, seconds: float, max_digits: int | None = None, gate_cells: Sequence[str] = ()
) -> dict[str, float]:
    """test_acc (the mean over cells) and per context, seen_fraction, test_acc/seen and /unseen (on problems
    in / not in the training set), eval/samples_per_s; given the training's `max_digits`, test_acc/in_range
    and /beyond (longer operands), also per context, and the length reach; given `gate_cells`, the gate."""
    metrics = {schema.TEST_ACC_METRIC: float(cells[schema.ACCURACY_COLUMN].mean())}
    for context, frame in cells.groupby(schema.CONTEXT_COLUMN, sort=False):
        metrics[f"test_acc/{context}"] = float(frame[schema.ACCURACY_COLUMN].mean())
    if max_digits is not None:
        longest = cells[[schema.ROW_DIGITS_COLUMN, schema.COL_DIGITS_COLUMN]].astype(float).max(axis=1)
        several_contexts = cells[schema.CONTEXT_COLUMN].nunique() > 1
        for name, part in (
            ("in_range", cells[longest <= max_digits]),
            ("beyond", cells[longest > max_digits]),
        ):
            if part.empty:
                continue
            metrics[f"test_acc/{name}"] = float(part[schema.ACCURACY_COLUMN].mean())
            if several_contexts:
                for context, frame in part.groupby(schema.CONTEXT_COLUMN, sort=False):
                    metrics[f"test_acc/{context}/{name}"] = float(frame[schema.ACCURACY_COLUMN].mean())
    if schema.SEEN_IN_TRAIN_COLUMN in cells:
        seen = cells[schema.SEEN_IN_TRAIN_COLUMN] * cells[schema.N_COLUMN]
        metrics["seen_fraction"] = float(seen.sum() / max(1, cells[schema.N_COLUMN].sum()))
    for part in ("seen", "unseen"):
        # the mean over the cells that hold such problems: unseen is what the model generalised to
        accuracies = cells.get(f"accuracy_{part}", pd.Series(dtype=float)).dropna()
        if not accuracies.empty:
            metrics[f"test_acc/{part}"] = float(accuracies.mean())
    if gate_cells:
        metrics[schema.GATE_METRIC] = weakest_unseen(cells, gate_cells)
    reach = length_reach(cells) if max_digits is not None and schema.BEYOND_METRIC in metrics else None
    if reach is not None:
        metrics[schema.LONGEST_HELD_METRIC], metrics[schema.LENGTH_SCORE_METRIC] = float(reach[0]), reach[1]
    metrics["eval/samples_per_s"] = float(cells[schema.N_COLUMN].sum() / max(seconds, 1e-9))
    return metrics
