"""The public data API and its command line.

    train_examples(cfg) / test_examples(cfg)   every task's training set and test cells from a DataConfig
    generate(task, fmt, count=..., seed=...)   the same from keywords
    python -m arith.data dump --task mul --format padding_reverse --max-digits 5 --count 1000 --out d.jsonl
    python -m arith.data preview --task add_scratchpad --format recursive_scratchpad

Settings are checked before anything is generated or written: a bad one fails at once, naming the valid
choices, and leaves the output file untouched.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from arith.config import ConfigError, DataConfig, ExperimentConfig
from arith.data.examples import Example
from arith.data.tasks import TASKS, check_data_config, get_task

#: the DataConfig fields `generate` and the command line take as options
_OPTIONS = {f.name for f in dataclasses.fields(DataConfig)} - {"task", "format", "seed"}
#: the paper's sizes and training digit ranges (`Task.paper_defaults`), the CLI's and `generate`'s defaults
PAPER_DEFAULTS: dict[str, dict[str, Any]] = {name: dict(task.paper_defaults) for name, task in TASKS.items()}


def validate_data(cfg: DataConfig) -> DataConfig:
    """Raise ConfigError for settings the data layer cannot produce; return cfg."""
    check_data_config(cfg)
    get_task(cfg.task).check_data(cfg)
    if cfg.min_digits == 1 == cfg.max_digits and cfg.one_digit_weight == 0:
        raise ConfigError("data.one_digit_weight=0 leaves no digit count to draw from 1..1")
    return cfg


def train_examples(cfg: DataConfig) -> list[Example]:
    """The training set of cfg (deterministic in cfg.seed); dialogues come with their mixed-in lines."""
    validate_data(cfg)
    return get_task(cfg.task).train_set(cfg)


def train_size(cfg: DataConfig) -> int:
    """Lines in the training set of cfg, without generating it (except a dialogue file, which is read)."""
    return get_task(cfg.task).train_size(cfg)


def test_examples(cfg: DataConfig) -> list[Example]:
    """The test set of cfg: cfg.test_per_cell examples per cell, each with its `cell`."""
    validate_data(cfg)
    return get_task(cfg.task).test_set(cfg)


test_examples.__test__ = False  # type: ignore[attr-defined]  # not a pytest test when imported into one


def generate(
    task: str, fmt: str, *, count: int | None = None, seed: int = 0, split: str = "train", **options
):
    """A dataset from keywords: `options` are DataConfig fields; unset digits and sizes take the paper's.

    ``generate("mul", "padding_reverse", count=1000, max_digits=5, augment="first_step")``
    """
    return _examples(_config(task, fmt, count=count, seed=seed, split=split, **options), split)


def _config(task: str, fmt: str | None, *, count: int | None, seed: int, split: str, **options) -> DataConfig:
    spec = get_task(task)
    unknown = set(options) - _OPTIONS
    if unknown:
        raise ConfigError(f"unknown data option(s) {sorted(unknown)}; valid: {', '.join(sorted(_OPTIONS))}")
    if split not in ("train", "test"):
        raise ConfigError(f"split={split!r} is not valid; choose one of: train, test")
    values = {**PAPER_DEFAULTS[task], **{k: v for k, v in options.items() if v is not None}}
    if "max_digits" in options and "min_digits" not in options:
        values["min_digits"] = min(values.get("min_digits", 1), values["max_digits"])
    if count is not None:
        if count < 1:
            raise ConfigError(f"count must be >= 1 (got {count})")
        if split == "test":
            values["test_per_cell"] = count
        else:
            values.update(spec.sized(count))
    cfg = DataConfig(task=task, format=fmt or spec.formats[0], seed=seed)
    overrides = {f"data.{k}": v for k, v in values.items()}
    return validate_data(ExperimentConfig(data=cfg).with_overrides(overrides).data)


def _examples(cfg: DataConfig, split: str) -> list[Example]:
    return train_examples(cfg) if split == "train" else test_examples(cfg)


def write_jsonl(examples: Iterable[Example], path: str | os.PathLike[str]) -> int:
    """Write one JSON object per example (task, format, a, b, prompt, answer, text, key, kind, cell),
    atomically: a reader never sees a half-written file. Returns the number of lines."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    n = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for e in examples:
                f.write(json.dumps(e.to_json()) + "\n")
                n += 1
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--task", required=True, help=f"one of: {', '.join(TASKS)}")
    common.add_argument("--format", help="the task's data format (default: its first, 'basic')")
    common.add_argument("--split", default="train", help="train or test (default train)")
    common.add_argument("--min-digits", type=int)
    common.add_argument("--max-digits", type=int)
    common.add_argument("--one-digit-weight", type=float, help="mul: weight of 1 digit in {a,1,...,1}")
    common.add_argument("--augment", help="mul: none, n_times_1 or first_step")
    common.add_argument("--reverse-addends", action="store_true", help="add_scratchpad recursive_scratchpad")
    common.add_argument("--random-space-prob", type=float)
    common.add_argument("--mix-format", help="dialogue: none, basic or random_space")
    common.add_argument("--mix-samples", type=int)
    common.add_argument("--dialogue-file", help="dialogue: a JSONL (`text` field) or text file to load")
    common.add_argument("--test-digits", help="comma-separated digit counts of the test cells")
    common.add_argument(
        "--count", type=int, help="training lines (test split: lines per cell); default paper's"
    )
    common.add_argument("--seed", type=int, default=0)
    parser = argparse.ArgumentParser(prog="python -m arith.data", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dump = sub.add_parser("dump", parents=[common], help="write the dataset as JSONL")
    dump.add_argument("--out", required=True, help="output .jsonl file")
    preview = sub.add_parser("preview", parents=[common], help="print a few lines for a person to read")
    preview.add_argument("--lines", type=int, default=8)
    return parser


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """The data flags given: one left out (None, or a switch left off) keeps the task's default."""
    return {k: v for k, v in vars(args).items() if k in _OPTIONS and v is not None and v is not False}


def _preview(examples: Sequence[Example], lines: int) -> None:
    kinds = Counter(e.kind for e in examples)
    print(f"{len(examples)} examples ({', '.join(f'{k}: {n}' for k, n in kinds.items())})")
    for e in examples[:lines]:
        cell = f" cell={e.cell}" if e.cell else ""
        print(f"{e.prompt}|{e.answer}".replace("\n", "\u23ce") + f"    [key {e.key}{cell}]")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        cfg = _config(
            args.task, args.format, count=args.count, seed=args.seed, split=args.split, **_options(args)
        )
        examples = _examples(cfg, args.split)
    except (ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.command == "dump":
        n = write_jsonl(examples, args.out)
        print(f"wrote {n} lines to {args.out}", file=sys.stderr)
    else:
        _preview(examples, args.lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
