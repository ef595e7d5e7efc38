"""The `gpu` scale's plan (docs/results/gpu_plan.yaml), read and checked once.

The plan says what each lent GPU runs, batch by batch (the file's header says what each field means).
`lab.bank` runs its batches and `analysis` reports them; both read it through `load_gpu_plan`, so each
field of the plan is spelled here only, and a misspelt or missing field is one line naming it, not a
KeyError in whichever reader met it first. Torch-free, like every declaration in `experiments`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from arith.errors import ConfigError

#: the committed plan
GPU_PLAN = Path(__file__).resolve().parent.parent / "docs" / "results" / "gpu_plan.yaml"
#: a lease returns at most 8 files: the parts' archives and the command's own output
MAX_PARTS = 6
#: a part's scale where it names none
DEFAULT_SCALE = "gpu"

_BATCH_REQUIRED = ("batch", "minutes", "procs")
_BATCH_FIELDS = (*_BATCH_REQUIRED, "what", "parts", "chosen_by")
_PART_REQUIRED = ("grid", "seeds")
_PART_FIELDS = (*_PART_REQUIRED, "scale", "only", "set", "label", "presearch")


@dataclass(frozen=True)
class PlannedPart:
    """One sweep of a batch: a grid at a scale, its seeds (a count K or explicit seeds), its `--only` and
    `--set` values (sweeps/run.py's), and the name of its archive."""

    grid: str
    seeds: int | tuple[int, ...]
    scale: str = DEFAULT_SCALE
    only: Mapping[str, str] = field(default_factory=dict)
    sets: Mapping[str, str] = field(default_factory=dict)
    label: str = ""
    #: true for a pre-search: its seeds (from 100 up) are those that chose a budget
    presearch: bool = False
    #: the seeds of the pre-search that chose this part's budget: its own for a pre-search, else those of
    #: its batch's `chosen_by` batch (empty when none chose it)
    presearch_seeds: tuple[int, ...] = ()

    @property
    def seed_values(self) -> tuple[int, ...]:
        return tuple(range(self.seeds)) if isinstance(self.seeds, int) else self.seeds


@dataclass(frozen=True)
class PlannedBatch:
    """What one lease runs: its parts in one pool of `procs` processes, stopped after `minutes`; no parts
    yet where they wait on an earlier batch's results."""

    name: str
    what: str
    minutes: float
    procs: int
    parts: tuple[PlannedPart, ...] = ()
    #: the batch whose pre-search chose this batch's budget
    chosen_by: str = ""


def load_gpu_plan(path: Path = GPU_PLAN) -> tuple[PlannedBatch, ...]:
    """The plan's batches, in order; raises `ConfigError` (one line naming the batch and field) on a
    field missing, unknown or of the wrong kind, on a `chosen_by` that names no earlier batch, and on a
    batch of more parts than a lease returns."""
    entries = yaml.safe_load(path.read_text()) or []
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: the plan is a list of batches, not {type(entries).__name__}")
    batches: list[PlannedBatch] = []
    for i, entry in enumerate(entries):
        batches.append(_batch(entry, f"{path}: batch {i + 1}", batches))
    return tuple(batches)


def _batch(entry: Any, where: str, earlier: list[PlannedBatch]) -> PlannedBatch:
    if isinstance(entry, dict) and isinstance(entry.get("batch"), str):
        where = f"{where} ({entry['batch']})"  # a message names the batch wherever it can
    _check_fields(entry, where, _BATCH_REQUIRED, _BATCH_FIELDS)
    name = _text(entry, "batch", where)
    chosen_by = _text(entry, "chosen_by", where)
    chooser = next((b for b in earlier if b.name == chosen_by), None)
    if chosen_by and chooser is None:
        raise ConfigError(f"{where}: chosen_by={chosen_by!r} names no earlier batch")
    chosen = tuple(sorted({s for p in chooser.parts for s in p.presearch_seeds})) if chooser else ()
    raw_parts = entry.get("parts") or []
    if not isinstance(raw_parts, list):
        raise ConfigError(f"{where}: parts must be a list of parts")
    if len(raw_parts) > MAX_PARTS:
        raise ConfigError(f"{where}: parts has {len(raw_parts)} parts; a lease returns {MAX_PARTS} at most")
    parts = tuple(_part(p, f"{where}, part {j + 1}", chosen) for j, p in enumerate(raw_parts))
    return PlannedBatch(
        name=name,
        what=" ".join(_text(entry, "what", where).split()),
        minutes=float(_number(entry, "minutes", where)),
        procs=int(_number(entry, "procs", where, whole=True)),
        parts=parts,
        chosen_by=chosen_by,
    )


def _part(entry: Any, where: str, chosen: tuple[int, ...]) -> PlannedPart:
    _check_fields(entry, where, _PART_REQUIRED, _PART_FIELDS)
    seeds = entry["seeds"]
    if isinstance(seeds, list) and seeds and all(type(s) is int for s in seeds):
        seeds = tuple(seeds)
    elif type(seeds) is not int or seeds < 1:
        raise ConfigError(f"{where}: seeds must be a count or a list of seeds, not {seeds!r}")
    presearch = entry.get("presearch", False)
    if not isinstance(presearch, bool):
        raise ConfigError(f"{where}: presearch must be true or false, not {presearch!r}")
    part = PlannedPart(
        grid=_text(entry, "grid", where),
        seeds=seeds,
        scale=_text(entry, "scale", where) or DEFAULT_SCALE,
        only=_values(entry, "only", where),
        sets=_values(entry, "set", where),
        label=_text(entry, "label", where),
        presearch=presearch,
    )
    return replace(part, presearch_seeds=part.seed_values if presearch else chosen)


def _check_fields(entry: Any, where: str, required: tuple[str, ...], known: tuple[str, ...]) -> None:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a mapping of fields, not {entry!r}")
    if missing := [k for k in required if k not in entry]:
        raise ConfigError(f"{where}: missing field {', '.join(missing)}")
    if unknown := [k for k in entry if k not in known]:
        raise ConfigError(f"{where}: unknown field {', '.join(map(str, unknown))}; known: {', '.join(known)}")


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key) or ""
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be text, not {value!r}")
    return value


def _number(entry: dict[str, Any], key: str, where: str, whole: bool = False) -> float:
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
        raise ConfigError(f"{where}: {key} must be a {'whole ' if whole else ''}number, not {value!r}")
    return value


def _values(entry: dict[str, Any], key: str, where: str) -> dict[str, str]:
    """`only` / `set`: setting -> value, the values as a command line writes them."""
    value = entry.get(key) or {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {key} must map settings to values, not {value!r}")
    return {str(k): str(v) for k, v in value.items()}
