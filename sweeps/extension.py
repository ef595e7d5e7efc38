"""What a sweep may be extended with: a `SweepExtension` changes a sweep's trials and adds to how Tune runs
them (a scheduler, callbacks), then records and reports what it did. Its own command line builds it, so
the runner knows no extension by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from arith.config import ExperimentConfig
from experiments.grid import Grid
from sweeps.scales import Scale

#: trial key -> the trial's config (`sweeps.run.build_configs`)
Configs = dict[str, ExperimentConfig]


class SweepExtension(Protocol):
    """A sweep's grid, scale and seeds, and the steps it adds to the sweep's own (`sweeps.run.tune_sweep`)."""

    grid: Grid
    scale: Scale
    seeds: tuple[int, ...]

    def prepare(self, configs: Configs) -> Configs:
        """The trials' configs as the extension runs them (validated), before anything starts."""
        ...

    def describe(self, points: Iterable[str]) -> str:
        """A line under the dry run's trial table, given the trials' point names."""
        ...

    def session(
        self, sweep_uri: str, tracking_uri: str, parent_run_id: str, configs: Configs
    ) -> tuple[Any, Sequence[Any]]:
        """This session's Tune scheduler and callbacks (`sweeps.tuner.fit`)."""
        ...

    def record(self, results: Any, configs: Configs, uri: str, parent_run_id: str) -> int:
        """Write what the extension did into the store once Tune is done; returns how many trials it ended
        KILLED on purpose (counted as done)."""
        ...

    def report(self, uri: str, parent_run_id: str) -> str:
        """The sweep's report, in place of the analysis's."""
        ...
