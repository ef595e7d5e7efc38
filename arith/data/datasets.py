"""The public data API (its command line is `python -m arith.data`): `train_examples(cfg)` and
`test_examples(cfg)` from a DataConfig, `generate(task, fmt, count=..., seed=...)` the same from keywords.
Settings are checked before anything is generated: a bad one fails at once, naming the valid choices."""

from __future__ import annotations

import dataclasses
from typing import Any

from arith.config import ConfigError, DataConfig, ExperimentConfig, choice
from arith.data.examples import Example
from arith.data.tasks import TASKS, check_data_config, get_task

#: the DataConfig fields `generate` and the command line take as options
OPTIONS = {f.name for f in dataclasses.fields(DataConfig)} - {"task", "format", "seed"}
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
    cfg = _config(task, fmt, count=count, seed=seed, split=split, **options)
    return train_examples(cfg) if split == "train" else test_examples(cfg)


def _config(task: str, fmt: str | None, *, count: int | None, seed: int, split: str, **options) -> DataConfig:
    spec = get_task(task)
    unknown = set(options) - OPTIONS
    if unknown:
        raise ConfigError(f"unknown data option(s) {sorted(unknown)}; valid: {', '.join(sorted(OPTIONS))}")
    choice("split", split, ("train", "test"))
    values = {**PAPER_DEFAULTS[task], **{k: v for k, v in options.items() if v is not None}}
    if "max_digits" in options and "min_digits" not in options:
        values["min_digits"] = min(values.get("min_digits", 1), values["max_digits"])
    if count is not None and count < 1:
        raise ConfigError(f"count must be >= 1 (got {count})")
    if count is not None:
        values.update({"test_per_cell": count} if split == "test" else spec.sized(count))
    cfg = DataConfig(task=task, format=fmt or spec.formats[0], seed=seed)
    overrides = {f"data.{k}": v for k, v in values.items()}
    return validate_data(ExperimentConfig(data=cfg).with_overrides(overrides).data)
