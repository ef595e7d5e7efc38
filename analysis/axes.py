"""Which params are a sweep's axes (those it declared and every other config key its trials differ in,
less what a scale derives from the others), and each param string back to its config type."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence
from typing import Any

import pandas as pd

from arith.config import ConfigError, ExperimentConfig, coerce
from arith.data.tasks import get_task
from arith.tracking.schema import SEED_KEYS


def type_hints() -> dict[str, Any]:
    """Dotted config key -> the field's type hint, read from the config dataclasses themselves."""
    hints: dict[str, Any] = {}
    cfg = ExperimentConfig()
    for section in dataclasses.fields(cfg):
        section_type = type(getattr(cfg, section.name))
        for name, hint in typing.get_type_hints(section_type).items():
            hints[f"{section.name}.{name}"] = hint
    return hints


def typed_value(key: str, value: str | None, hints: dict[str, Any]) -> Any:
    """A param string back to the config field's type (unknown keys stay strings)."""
    if value is None or key not in hints:
        return value
    try:
        typed = coerce(value, hints[key], key)
    except ConfigError:
        return value
    return tuple(typed) if isinstance(typed, list) else typed


def varying(params: pd.DataFrame) -> list[str]:
    """Config keys the trials differ in, but seeds and tracking; a key a run lacks (an older config) counts
    as its default (a new setting left at its default splits nothing)."""
    hints, defaults = type_hints(), ExperimentConfig().flat()
    defaults = {k: tuple(v) if isinstance(v, list) else v for k, v in defaults.items()}  # as typed_value
    keys = []
    for key in params.columns:
        if key in SEED_KEYS or key.startswith("tracking."):
            continue
        values = params[key]
        if key in defaults:
            values = values.map(lambda v, k=key: defaults[k] if pd.isna(v) else typed_value(k, v, hints))
        if values.astype(str).nunique(dropna=False) > 1:
            keys.append(key)
    return keys


#: settings a scale derives from others (a step budget over a smaller data set gives more epochs)
DERIVED_KEYS = ("train.epochs", "train.eval_epochs", "train.checkpoint_every", "train.max_steps")


#: data the dialogue task alone reads: never an axis of other tasks' sweeps (a scale may set it differently
#: in sweeps run apart, which must not split their tables)
DIALOGUE_KEYS = ("data.mix_format", "data.mix_samples", "data.dialogue_easy", "data.dialogue_hard")


def without_derived(params: pd.DataFrame, axes: list[str], declared: list[str]) -> list[str]:
    """The axes less the undeclared derived keys the other axes determine (they would only split the
    tables), and less the dialogue task's data where no trial is of that task."""
    kept = list(axes)
    if "data.task" in params.columns:  # a task's own data keys, where no trial's task reads them
        tasks = [get_task(str(name)) for name in params["data.task"].unique()]
        read = {k for k in DIALOGUE_KEYS if any(task.reads(k.partition(".")[2]) for task in tasks)}
        kept = [k for k in kept if k not in DIALOGUE_KEYS or k in declared or k in read]
    for key in [k for k in axes if k in DERIVED_KEYS and k not in declared]:
        others = [k for k in kept if k != key and k in params.columns]
        if not others or key not in params.columns:
            continue
        shown = params[[*others, key]].astype(str)
        if (shown.groupby(others)[key].nunique() <= 1).all():
            kept.remove(key)
    return kept


def axes_of(params: pd.DataFrame, declared: Sequence[str] = ()) -> list[str]:
    """The axes of trials whose params (strings) are `params`: the `declared` ones first."""
    declared = list(declared)
    return without_derived(params, list(dict.fromkeys([*declared, *varying(params)])), declared)
