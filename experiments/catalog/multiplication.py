"""Multiplication (section 2 and appendix A): the data format, fewer n x 1 lines, simple cases mixed in.

Each claim compares models only after every seed of each learned the cells the paper's own model of that
point learned, else the small products (`MUL_IN_RANGE`), on the cells the paper's table contrasts.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from arith.config import ExperimentConfig
from experiments.cells import large_products, measured, small_products
from experiments.claim import Claim, DigitMap, Experiment
from experiments.grid import Grid
from experiments.setups import MUL_SETUP
from experiments.verdicts import Outcome, Side, compared, compared_cells, competence, difference, untestable

MUL_IN_RANGE = (
    "no paper table for this point: the cells whose factors have at most max_digits digits together"
)
MUL_COMPARED = (
    "the cells with more digits in total than max_digits (no paper table to say which it contrasts)"
)


def _per_max_digits(
    cells: pd.DataFrame,
    key: str,
    better: str,
    worse: str,
    digit_map: DigitMap,
    compare: Callable[[pd.DataFrame], pd.DataFrame],
    compare_note: str,
    gate_order: tuple[str, str] | None = None,
) -> Outcome:
    """A claim made per max_digits, `better` vs `worse` values of `key`, on the settings whose models both
    learned (the others are listed), on the cells `compared_cells` picks; not testable when none is left."""
    order = gate_order or (better, worse)
    contrasts, skipped, gates = [], [], []
    for max_digits, by_n in cells.groupby("data.max_digits"):
        sides = {value: by_n[by_n[key] == value] for value in (better, worse)}
        if any(side.empty for side in sides.values()):
            continue
        gated = {value: sides[value] for value in order}
        why, on = competence(gated, digit_map, small_products, MUL_IN_RANGE)
        gates.append(f"max_digits={max_digits} {on}")
        if why:
            skipped.append(f"max_digits={max_digits} not testable ({why})")
            continue
        high, low, which = compared_cells(sides[better], sides[worse], digit_map, compare, compare_note)
        where = f"max_digits={max_digits}, {which}"
        contrasts.append(difference(Side.of(better, high), Side.of(worse, low), where))
    if not contrasts:
        needs = f"needs {order[0]} and {order[1]} trials with the same max_digits"
        return untestable("; ".join(skipped) or needs, gates)
    return compared(contrasts, notes=[*skipped, *gates])


def _mul_format_table(cfg: ExperimentConfig) -> tuple[str, ...]:
    family = "basic" if cfg.data.format == "basic" else "padding"
    return (f"tb:{family}-{cfg.data.max_digits}",)


def padding_reverse_beats_basic(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    cells = measured(frame)
    cells = cells[cells["data.augment"] == "none"]
    order = ("basic", "padding_reverse")
    return _per_max_digits(
        cells, "data.format", "padding_reverse", "basic", digit_map, large_products, MUL_COMPARED, order
    )


MUL_FORMAT = Experiment(
    Grid(
        name="mul_format",
        description="Multiplication data formats (section 2.2): padding and reversed product vs basic.",
        base={**MUL_SETUP},
        axes={
            "data.format": ["basic", "reverse_product", "padding", "padding_reverse"],
            "data.max_digits": [5, 10],
        },
        also=({"data.format": ["padding_reverse"], "data.max_digits": [15, 20]},),
        paper_tables=(
            "tb:basic-5",
            "tb:padding-5",
            "tb:basic-10",
            "tb:padding-10",
            "tb:padding-15",
            "tb:padding-20",
        ),
        table_of=_mul_format_table,
    ),
    claims=(
        Claim(
            "padding + reversed product beats basic on the cells the paper's tables contrast (mean accuracy)",
            "tb:basic-5 vs tb:padding-5",
            padding_reverse_beats_basic,
            id="padding_reverse_beats_basic",
        ),
    ),
)


def _one_digit_weight_table(cfg: ExperimentConfig) -> tuple[str, ...]:
    # weight 1.0 is the uniform distribution of the main run, printed as tb:padding-10
    return ("tb:padding-10",) if cfg.data.one_digit_weight == 1.0 else ("tb:padding_10_ratio",)


def lower_one_digit_weight_hurts(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    """The lowest 1-digit weight whose model learned against the highest; weights whose models did not
    learn (the paper's weight 0 fails its 1-digit cells) are left out, and listed."""
    cells = measured(frame)
    by_weight = {float(w): c for w, c in cells.groupby("data.one_digit_weight")}
    if len(by_weight) < 2:
        return untestable("needs trials with at least two 1-digit weights")
    learned, skipped, gates = [], [], []
    for weight, chosen in sorted(by_weight.items()):
        why, on = competence({f"weight {weight:g}": chosen}, digit_map, small_products, MUL_IN_RANGE)
        gates.append(on)
        (skipped if why else learned).append(why or weight)
    if len(learned) < 2 or learned[-1] != max(by_weight):
        return untestable("; ".join(skipped) or "needs two weights whose models learned", gates)
    low, high = learned[0], learned[-1]
    better, worse, which = compared_cells(
        by_weight[high], by_weight[low], digit_map, lambda c: c, "every cell (no paper table)"
    )
    contrast = difference(Side.of(f"weight {high:g}", better), Side.of(f"weight {low:g}", worse), which)
    return compared([contrast], notes=[*(f"left out: {w}" for w in skipped), *gates])


MUL_ONE_DIGIT_WEIGHT = Experiment(
    Grid(
        name="mul_one_digit_weight",
        description="Fewer n x 1 multiplications (appendix A): weight of 1 in the digit distribution.",
        base={**MUL_SETUP, "data.format": "padding_reverse", "data.max_digits": 10},
        axes={"data.one_digit_weight": [0.0, 0.2, 0.4, 1.0]},
        paper_tables=("tb:padding_10_ratio", "tb:padding-10"),
        table_of=_one_digit_weight_table,
    ),
    claims=(
        Claim(
            "a lower 1-digit weight hurts: the lowest weight's mean accuracy is below the highest weight's",
            "tb:padding_10_ratio",
            lower_one_digit_weight_hurts,
            id="lower_one_digit_weight_hurts",
        ),
    ),
)


def _simple_case_table(cfg: ExperimentConfig) -> tuple[str, ...]:
    letter = {("n_times_1", 5): "a", ("n_times_1", 6): "b", ("first_step", 5): "c", ("first_step", 6): "d"}
    return (f"tb:onedigit_5-6{letter[(cfg.data.augment, cfg.data.max_digits)]}",)


def first_step_beats_n_times_1(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    every = "every cell of the grid (no paper table)"
    return _per_max_digits(
        measured(frame), "data.augment", "first_step", "n_times_1", digit_map, lambda c: c, every
    )


MUL_SIMPLE_CASE = Experiment(
    Grid(
        name="mul_simple_case",
        description="Simple cases every third sample (appendix A): n x 1 lines or first-step lines.",
        base={**MUL_SETUP, "data.format": "reverse_product"},
        axes={"data.max_digits": [5, 6], "data.augment": ["n_times_1", "first_step"]},
        paper_tables=("tb:onedigit_5-6a", "tb:onedigit_5-6b", "tb:onedigit_5-6c", "tb:onedigit_5-6d"),
        table_of=_simple_case_table,
    ),
    claims=(
        Claim(
            "first-step % augmentation helps more than n x 1 augmentation (mean accuracy, same max_digits)",
            "tb:onedigit_5-6a-d",
            first_step_beats_n_times_1,
            id="first_step_beats_n_times_1",
        ),
    ),
)


EXPERIMENTS = (MUL_FORMAT, MUL_ONE_DIGIT_WEIGHT, MUL_SIMPLE_CASE)
