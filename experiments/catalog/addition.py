"""Addition's length generalisation by data format (section 3.1): 2-10 digits trained, 9-13 tested.

The paper's table (tb:acc_dataformat) holds GPT-2 fine-tuned from its pretrained weights; the grid runs
random init beside it, which the claim does not read.
"""

from __future__ import annotations

import pandas as pd

from arith.config import ExperimentConfig
from arith.tracking.schema import ACCURACY_COLUMN, COL_DIGITS_COLUMN
from experiments.cells import beyond_training, digit_range, measured, within_training
from experiments.claim import Claim, DigitMap, Experiment
from experiments.grid import Grid
from experiments.recipes import ADD_SCRATCHPAD_24K
from experiments.setups import ADD_LENGTH_SETUP
from experiments.verdicts import NO_EXTRAPOLATION, Outcome, Side, compared, competence, difference, untestable


def _add_length_table(cfg: ExperimentConfig) -> tuple[str, ...]:
    # the table holds the pretrained models; its recursive scratchpad reverses the addends (appendix B)
    recursive = cfg.data.format == "recursive_scratchpad"
    in_table = cfg.model.init == "pretrained" and cfg.data.reverse_addends == recursive
    return ("tb:acc_dataformat",) if in_table else ()


def scratchpad_extrapolation_order(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    cells = measured(frame)
    if not (cells["model.init"] == "pretrained").any():
        return untestable(
            "the paper's claim (tb:acc_dataformat) is about GPT-2 fine-tuned from its pretrained weights; "
            "this sweep has only random-init runs, which cannot test it"
        )
    cells = cells[cells["model.init"] == "pretrained"]
    reversed_addends = cells["data.reverse_addends"].astype(str).str.lower().isin(["true", "1"])
    recursive = cells[(cells["data.format"] == "recursive_scratchpad") & reversed_addends]
    basic = cells[cells["data.format"] == "basic"]
    spaced = cells[cells["data.format"] == "random_space"]
    if basic.empty or spaced.empty or recursive.empty or beyond_training(cells).empty:
        return untestable(
            "needs basic, random_space and recursive_scratchpad (reversed addends, the paper's definition) "
            "cells beyond the training length from pretrained runs"
        )
    why, on = competence(
        {"basic": basic, "random_space": spaced, "recursive_scratchpad": recursive},
        digit_map,
        within_training,
        "the digit counts trained on",
    )
    if why:
        return untestable(why, [on])
    b, s, r = (
        Side.of(n, beyond_training(c))
        for n, c in (("basic", basic), ("random_space", spaced), ("recursive", recursive))
    )
    best_basic = float(beyond_training(basic).groupby([COL_DIGITS_COLUMN])[ACCURACY_COLUMN].mean().max())
    extrapolates = (
        f"basic reaches {best_basic:.2f} on a cell beyond training (more than {NO_EXTRAPOLATION})"
        if best_basic > NO_EXTRAPOLATION
        else ""
    )
    where = f"{digit_range(beyond_training(cells))} digits (beyond training, init=pretrained)"
    return compared([difference(s, b, where), difference(r, s)], fails=extrapolates, notes=[on])


ADD_LENGTH = Experiment(
    Grid(
        name="add_length",
        description="Addition length generalisation by data format (section 3.1), 2-10 -> 9-13 digits.",
        base={**ADD_LENGTH_SETUP},
        axes={
            "data.format": ["basic", "random_space", "recursive_scratchpad"],
            "model.init": ["pretrained", "random"],
        },
        also=(
            {
                "data.format": ["recursive_scratchpad"],
                "data.reverse_addends": [True],
                "model.init": ["pretrained", "random"],
            },
        ),
        paper_tables=("tb:acc_dataformat",),
        table_of=_add_length_table,
    ),
    claims=(
        Claim(
            "fine-tuned GPT-2, beyond the training length: basic does not extrapolate; random space a "
            "little; recursive scratchpad (reversed addends) most",
            "tb:acc_dataformat",
            scratchpad_extrapolation_order,
            id="scratchpad_extrapolates",
        ),
    ),
    # at cpu_recipe: the scratchpad budget add_posembed's pre-search is choosing (its candidate until then)
    recipes=(ADD_SCRATCHPAD_24K,),
)

EXPERIMENTS = (ADD_LENGTH,)
