"""What a grid is: a base config (the paper's setup, as dotted overrides) and axes whose product gives the
points, plus `also` blocks for coupled values the product cannot express; an axis value may be a `Variant`,
a named bundle of settings that travel together. `variant` derives a grid (a budget, a scale, some points).
Declarative and torch-free: `sweeps.space` turns a grid into trial configs at a scale.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from arith.config import ExperimentConfig

#: pre-searches draw their seeds from here up, so that the seeds that judge a claim (0 up) never chose it
PRESEARCH_FIRST_SEED = 100


@dataclass(frozen=True)
class Variant:
    """A named bundle of coupled settings used as one value of an axis."""

    name: str
    overrides: Mapping[str, Any]

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Point:
    """One grid point before scaling: a readable id and the dotted overrides over the default config."""

    name: str
    overrides: dict[str, Any]
    #: the name's parts, one an axis: `model=tiny`, `lr=0.001` (`--only model=tiny` picks a bundle by them)
    labels: tuple[str, ...] = ()


Axes = Mapping[str, list[Any]]


@dataclass(frozen=True)
class Grid:
    """A named experiment: base settings x axes (+ coupled `also` blocks) -> points -> paper tables."""

    name: str
    description: str
    base: Mapping[str, Any]
    axes: Axes
    #: extra products merged after the main one, for values that exist only together
    also: tuple[Axes, ...] = ()
    #: the paper labels this grid reproduces (tables `tb:*`, figures `fig:*`); empty for new experiments
    paper_tables: tuple[str, ...] = ()
    #: the label(s) one point reproduces, from its paper-scale config; () when the paper has no number
    table_of: Callable[[ExperimentConfig], tuple[str, ...]] = field(default=lambda cfg: ())
    #: scales shrink digit counts, except where the digit split is the experiment (nl_mix's 2-3 vs 4-5)
    scale_digits: bool = True
    #: keys whose point values are set after the scale (tuning grids of a scale's own settings: its model,
    #: step budget, tag width); every other key is in the paper's units and the scale shrinks it
    over_scale: tuple[str, ...] = ()
    #: the seeds of the pre-search that chose this grid's budget or a setting: left out of its verdicts
    presearch_seeds: tuple[int, ...] = ()
    #: the grid this one is a variant of (`variant()`), whose claims judge it; "" for a grid of its own
    parent: str = ""
    #: the scale the grid is made for ("" = any): its `over_scale` settings are that scale's
    scale: str = ""

    def points(self) -> list[Point]:
        """The grid's points in a stable order: the main product, then each `also` block."""
        out: dict[str, Point] = {}
        for block in (self.axes, *self.also):
            for values in itertools.product(*block.values()):
                overrides = dict(self.base)
                labels = []
                for key, value in zip(block, values, strict=True):
                    overrides.update(value.overrides if isinstance(value, Variant) else {key: value})
                    labels.append(f"{_short(key)}={_show(value)}")
                name = ",".join(labels) or "base"
                out.setdefault(name, Point(name, overrides, tuple(labels)))
        return list(out.values())

    def declared_axes(self) -> list[str]:
        """The config keys the main product varies, in order (an axis named without a dot is a bundle)."""
        return [key for key in self.axes if "." in key]

    def bundle_axes(self) -> list[str]:
        """The axes whose values are `Variant`s, in any block: `--only model=tiny` picks one by name."""
        blocks = (self.axes, *self.also)
        bundles = (k for b in blocks for k, vs in b.items() if vs and all(isinstance(v, Variant) for v in vs))
        return list(dict.fromkeys(bundles))

    def axis_summary(self) -> list[str]:
        """Human-readable axes, one line per block, for `--list`."""
        lines = []
        for i, block in enumerate((self.axes, *self.also)):
            body = " x ".join(f"{_short(k)} {{{', '.join(_show(v) for v in vs)}}}" for k, vs in block.items())
            lines.append(("  also " if i else "") + body)
        return lines


def variant(
    parent: Grid,
    name: str,
    description: str,
    settings: Mapping[str, Any],
    *,
    only: Mapping[str, list[Any]] | None = None,
    over_scale: tuple[str, ...] = (),
    scale: str = "",
    presearch_seeds: tuple[int, ...] = (),
) -> Grid:
    """`parent` with `settings` over its base (fixing an axis they name), its axes cut to the values in
    `only` (`also` blocks stay where they hold the fixed values), and the parent's paper tables it reaches."""
    only = dict(only or {})

    def cut(block: Axes) -> dict[str, list[Any]] | None:
        out = {}
        for key, values in block.items():
            if key in settings:
                if settings[key] not in values:
                    return None
                continue
            wanted = only.get(key)  # values, or a bundle's Variant names
            kept = [v for v in values if wanted is None or v in wanted or getattr(v, "name", v) in wanted]
            if not kept:
                return None
            out[key] = kept
        return out

    derived = dataclasses.replace(
        parent,
        name=name,
        description=description,
        base={**parent.base, **settings},
        axes=cut(parent.axes) or {},
        also=tuple(block for block in map(cut, parent.also) if block),
        over_scale=tuple(dict.fromkeys((*parent.over_scale, *over_scale))),
        presearch_seeds=presearch_seeds or parent.presearch_seeds,
        parent=parent.parent or parent.name,
        scale=scale or parent.scale,
    )
    labels = {
        label
        for point in derived.points()
        for label in parent.table_of(ExperimentConfig().with_overrides(point.overrides))
    }
    return dataclasses.replace(derived, paper_tables=tuple(t for t in parent.paper_tables if t in labels))


def _short(key: str) -> str:
    return key.rpartition(".")[2]


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
