"""`python -m arith.training`: one trial from the command line, printing its accuracy grid and a JSON summary.

Config = defaults <- --config file <- convenience flags <- --set key=value (later wins).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from arith.config import ConfigError, ExperimentConfig
from arith.overrides import parse_set
from arith.tracking.schema import (
    ACCURACY_COLUMN,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    ROW_DIGITS_COLUMN,
    TEST_ACC_METRIC,
)
from arith.training.train import train
from arith.validation import validate

#: convenience flags -> config keys
SHORTCUTS = {
    "task": "data.task",
    "format": "data.format",
    "position": "model.position",
    "max_digits": "data.max_digits",
    "epochs": "train.epochs",
    "tracking_uri": "tracking.tracking_uri",
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's flags; `main` passes their values on (nothing else reads a Namespace)."""
    parser = argparse.ArgumentParser(
        prog="python -m arith.training", description="Train one trial of the arithmetic transformer."
    )
    parser.add_argument("--config", help="a YAML or JSON file with some or all of data/model/train/tracking")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="e.g. train.lr=1e-3")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    for flag, key in SHORTCUTS.items():
        parser.add_argument(f"--{flag.replace('_', '-')}", dest=flag, help=f"= --set {key}=...")
    return parser.parse_args(argv)


def build_config(
    config_file: str | None = None, shortcuts: Mapping[str, Any] | None = None, sets: Sequence[str] = ()
) -> ExperimentConfig:
    """Config = defaults <- `config_file` <- convenience flags (`shortcuts`: a `SHORTCUTS` name -> its
    value, None or absent = not given; other keys are ignored) <- `sets` (`key=value`; later wins)."""
    cfg = ExperimentConfig.load(config_file) if config_file else ExperimentConfig()
    given = shortcuts or {}
    overrides = {key: given[flag] for flag, key in SHORTCUTS.items() if given.get(flag) is not None}
    overrides.update(parse_set(list(sets)))
    return cfg.with_overrides(overrides)


def config_from_args(argv: Sequence[str] | None = None) -> ExperimentConfig:
    """The config a command line (`argv`) asks for, as `main` resolves it."""
    args = parse_args(argv)
    return build_config(args.config, vars(args), args.set)


def format_grid(cells: pd.DataFrame) -> str:
    """The accuracy grid of each context as text: rows = digits of b, columns = digits of a for
    multiplication; one row of accuracy by digit count for the other tasks."""
    parts = []
    for context, frame in cells.groupby(CONTEXT_COLUMN, sort=False):
        if frame[ROW_DIGITS_COLUMN].notna().any():
            grid = frame.pivot_table(
                index=ROW_DIGITS_COLUMN, columns=COL_DIGITS_COLUMN, values=ACCURACY_COLUMN
            )
            grid.index = grid.index.astype(int).rename("b digits \\ a digits")
            grid.columns.name = None
        else:
            grid = frame.set_index(COL_DIGITS_COLUMN)[[ACCURACY_COLUMN]].T
            grid.columns.name = "digits"
        parts.append(f"[{context}]\n{grid.round(3).to_string()}")
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        cfg = build_config(args.config, vars(args), args.set)
        if args.print_config:
            print(cfg.to_json())
            return 0
        validate(cfg)
    except ConfigError as err:
        print(f"config error: {err}", file=sys.stderr)
        return 2
    result = train(cfg)
    print(format_grid(result.cells))
    summary = {
        TEST_ACC_METRIC: round(result.test_acc, 4),
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
