"""The recipes of the `cpu_recipe` scale that the catalogue's experiments train at (`Experiment.recipes`).

A recipe is chosen for a claim's compared models on pre-search seeds (from 100 up), so it lives with the
experiments, not with the scale: `sweeps.space.recipe_scale` applies an experiment's recipe at its scale.
Like `experiments.setups`, this module sits below the catalogue.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ChosenRecipe:
    """The recipe a search chose for an experiment at a scale: its settings (dotted keys, absolute values,
    set after the scale) train every point of the experiment, so the claim's compared formats train at one
    recipe (drawing the paper's sample count at a recipe scale). `chosen_by` names the `Search` (or the
    pre-search record) that chose it; the shared ones are `experiments.recipes`'."""

    scale: str
    settings: Mapping[str, Any]
    chosen_by: str
    #: what the search measured for it (its cost to the gate, its archive)
    evidence: str = ""
    #: the `Search` (its name) that tried it, where one did: a plan part of that search with a choice
    #: rule (docs/results/plan.yaml `choose_if_gate_by_step`) holds `chosen` to what it read
    search: str = ""
    #: False for a candidate a pre-search tried and did not choose: only the scale's pre-search seeds run
    #: it (`sweeps.space.resolve` refuses others), so that no judged sweep trains at a rejected recipe
    chosen: bool = True


#: digit reversal: the paper's 120,000 lines, bf16, 6,000 steps; reverse_posembed and its variants (and the
#: reversal tuning grids, `lab.catalog.tuning`) train at it
REVERSE_RECIPE = ChosenRecipe(
    scale="cpu_recipe",
    settings={"train.max_steps": 6000, "train.precision": "bf16"},
    chosen_by="pre-search seed 100 (docs/results/sweeps/reverse_posembed_recipe__cpu_recipe__seed-100"
    "__train.eval_epochs=1-2-3.jsonl; 2-core AMD EPYC, 7.5-10 min a trial)",
    evidence="read at ~1,900 / 3,750 / 5,600 / 6,000 steps, the weakest in-range regular cell (5 digits) of "
    "none at 1e-5 x 50 was 0.89 / 0.90 / 1.00 / 1.00 and every point's 1.00 at 6,000: the least budget "
    "measured with a margin over the 0.9 gate",
)


#: scratchpad addition at twice that budget again (24,000 steps): chosen by its pre-search's declared rule
#: (docs/results/plan.yaml `choose_if_at_least: 0.95`): random_embed, the scheme that learns the training
#: range last, read 1.00 on every in-range cell of both seeds at the end
ADD_SCRATCHPAD_24K = ChosenRecipe(
    scale="cpu_recipe",
    settings={**REVERSE_RECIPE.settings, "train.max_steps": 24_000},
    chosen_by="pre-search seeds 101, 102 (docs/results/sweeps/add_posembed_recipe_24k__cpu_recipe__seeds-"
    "101-102__model.position=random_embed__train.eval_epochs=4-8-12.jsonl; 79 min of CPU time a trial on "
    "one core of a 2-core AMD EPYC with AVX512-BF16)",
    evidence="random_embed on the 2-5-digit sums it trained on (the weakest cell, 5 digits) read 0.00 / 0.99 "
    "/ 1.00 / 1.00 (seed 101) and 0.17 / 1.00 / 1.00 / 1.00 (seed 102) at ~7,500 / 15,000 / 22,500 / "
    "24,000 steps, the rule's 0.95 met with a margin; on the 6-digit sums beyond training 0.99 and 0.98 at "
    "the end. At 12,000 steps it had learned late (seed 100: 0.99 at the end; seed 0: 0.73); learned and "
    "none read 1.00 in range at 12,000 on seeds 0, 1 and 100",
    chosen=True,
)
