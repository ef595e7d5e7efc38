"""Tuning the `cpu` miniature: the sweeps that chose sweeps/scales.py's cpu preset, kept so they can be rerun.

Run them at --scale cpu: learning rates are in the paper's units and the scale multiplies them by its
lr_factor; sample counts are the paper's and the scale takes its fraction (capped at max_samples). Keys in
a grid's `over_scale` (step budget, tag width) are the scale's own settings and replace its values. Each is
an experiment without claims (`EXPERIMENTS`); at a scale that needs a recipe, the reversal grids train at
the reversal experiments' (`CPU_TUNE_RECIPES`).
"""

from __future__ import annotations

from experiments.claim import Experiment
from experiments.grid import Grid, Variant
from experiments.recipes import REVERSE_RECIPE, Recipe
from experiments.setups import ADD_LENGTH_SETUP, MUL_SETUP, RANDEMBED_TRAINING, REVERSE_SETUP

#: learning rates around the paper's 2e-5: about a third, as is, three times (x the cpu scale's lr_factor)
CPU_TUNE_LRS = [7e-6, 2e-5, 6e-5]

CPU_TUNE_GRIDS: list[Grid] = [
    Grid(
        name="cpu_tune_reverse",
        description="cpu preset tuning: learning rate x samples on digit reversal, from scratch.",
        base={**REVERSE_SETUP, "model.init": "random", "model.position": "learned"},
        axes={"train.lr": CPU_TUNE_LRS, "data.train_samples": [120_000, 300_000]},
    ),
    Grid(
        name="cpu_tune_steps",
        description="cpu preset tuning: the step budget, on the three tasks that learn slowest.",
        base={"model.init": "random"},
        axes={
            "data.task": [
                Variant("mul", {**MUL_SETUP, "data.format": "padding_reverse", "data.max_digits": 10}),
                Variant("mul_basic", {**MUL_SETUP, "data.format": "basic", "data.max_digits": 10}),
                Variant(
                    "add_scratchpad",
                    {**ADD_LENGTH_SETUP, "data.format": "basic", **RANDEMBED_TRAINING},
                ),
                Variant("reverse_random_embed", {**REVERSE_SETUP, "model.position": "random_embed"}),
            ],
            "train.max_steps": [1570, 3000, 6000],
        },
        over_scale=("train.max_steps",),
    ),
    Grid(
        name="cpu_tune_hash",
        description="cpu preset tuning: random-tag width on digit reversal (default: n_embd / 4).",
        base={**REVERSE_SETUP, "model.init": "random", "model.position": "random_embed"},
        axes={"model.n_hash": [4, 8, 16, 32]},
        over_scale=("model.n_hash",),
    ),
    Grid(
        name="cpu_tune_plain_add",
        description="cpu preset tuning: plain addition as nl_mix mixes it in (1-5 digits, most "
        "significant first, 120,000 lines): digit curriculum x step budget.",
        base={
            "data.task": "add",
            "data.format": "basic",
            "data.min_digits": 1,
            "data.max_digits": 5,
            "data.test_digits": [2, 3, 4, 5],
            "data.train_samples": 120_000,
            "model.init": "random",
        },
        axes={"train.curriculum": [0.0, 0.5], "train.max_steps": [3000, 9000]},
        over_scale=("train.max_steps", "data.train_samples"),
        scale_digits=False,
    ),
    Grid(
        name="cpu_tune_mul",
        description="cpu preset tuning: learning rate x format on 5-digit multiplication (3 at cpu).",
        base={**MUL_SETUP, "data.max_digits": 5},
        axes={"train.lr": CPU_TUNE_LRS, "data.format": ["basic", "padding_reverse"]},
    ),
]

#: the recipes a tuning grid trains at, as an experiment's (`Experiment.recipes`): the reversal grids at
#: reverse_posembed's, so that at cpu_recipe they tune what its sweeps run
CPU_TUNE_RECIPES: dict[str, tuple[Recipe, ...]] = {
    "cpu_tune_reverse": (REVERSE_RECIPE,),
    "cpu_tune_hash": (REVERSE_RECIPE,),
}

EXPERIMENTS = tuple(Experiment(grid, recipes=CPU_TUNE_RECIPES.get(grid.name, ())) for grid in CPU_TUNE_GRIDS)
