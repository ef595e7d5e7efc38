"""The recipes the catalogue's experiments train at (`Experiment.recipes`), as data.

A recipe is a named bundle of settings that trains every point of an experiment at one scale, so that a
claim's compared models train alike: applied after the scale, its settings replace the scale's and its
trials draw the paper's sample count. It is chosen on pre-search seeds, never on those that judge a claim;
why is the lab's record (`lab.recipes.EVIDENCE`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from arith.config import ConfigError, ExperimentConfig


@dataclass(frozen=True)
class Recipe:
    """Settings (dotted keys, absolute values, `train.max_steps` among them) for every point at `scale`."""

    name: str
    scale: str
    settings: Mapping[str, Any]
    #: the fraction of the paper's sample count a trial draws (uncapped: distinct lines are what keeps a
    #: small model from memorising)
    sample_fraction: float = 1.0
    #: False for a candidate a pre-search tried and did not choose: only pre-search seeds run it, so that
    #: no judged sweep trains at a rejected recipe
    chosen: bool = True

    def __post_init__(self) -> None:
        if "train.max_steps" not in self.settings:
            raise ConfigError(f"recipe {self.name!r} must set train.max_steps")

    @property
    def steps(self) -> int:
        return int(self.settings["train.max_steps"])

    def apply(self, cfg: ExperimentConfig, paper_cfg: ExperimentConfig) -> ExperimentConfig:
        """`cfg` (at its scale) at this recipe: the paper's sample count (`paper_cfg`'s) and its settings."""
        n = paper_cfg.data.train_samples
        samples = max(1, round(n * self.sample_fraction)) if n else 0
        return cfg.with_overrides({"data.train_samples": samples, **self.settings})


#: digit reversal: the paper's 120,000 lines in bf16 for 6,000 steps
REVERSE_RECIPE = Recipe("reverse_6k", "cpu_recipe", {"train.max_steps": 6000, "train.precision": "bf16"})

#: scratchpad addition: the paper's 120,000 lines in bf16 for 24,000 steps, where random_embed (the scheme
#: that learns the training range last) learns it too
ADD_SCRATCHPAD_24K = Recipe(
    "add_scratchpad_24k", "cpu_recipe", {**REVERSE_RECIPE.settings, "train.max_steps": 24_000}
)
