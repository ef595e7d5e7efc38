"""Dialogues mixed with arithmetic (section 4): does arithmetic data in another format help the dialogue's
sums, and do position schemes close the gap? Read at epochs 50 and 100, in the dialogue's context and in a
pure-addition one."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from arith.config import ExperimentConfig
from arith.tracking.schema import CONTEXT_COLUMN
from experiments.cells import digit_range, largest_digits, measured, smaller_digits
from experiments.claim import Check, Claim, DigitMap, Experiment
from experiments.grid import Grid
from experiments.setups import PAPER_POSITIONS
from experiments.verdicts import Contrast, Outcome, Side, compared, competence, difference, untestable

NL_IN_RANGE = "the smaller half of the dialogue-context sums (2-3 digits in the paper), every cell"


def _nl_mix_table(cfg: ExperimentConfig) -> tuple[str, ...]:
    # a/b: dialogue context at 100/50 epochs; c/d: pure-addition context (only with arithmetic mixed in)
    return ("tb:acc_nldia_a", "tb:acc_nldia_b") + (
        ("tb:acc_nldia_c", "tb:acc_nldia_d") if cfg.data.mix_format != "none" else ()
    )


def _nl_sides(
    frame: pd.DataFrame, points: Sequence[tuple[str, str]], digit_map: DigitMap
) -> tuple[dict, str, str, pd.DataFrame]:
    """({(position, mix): cells of the largest sums}, why-untestable, gated on, the dialogue cells)."""
    cells = measured(frame)
    cells = cells[cells[CONTEXT_COLUMN] == "dialogue"]
    found = {}
    for position, mix in points:
        chosen = cells[(cells["model.position"] == position) & (cells["data.mix_format"] == mix)]
        if chosen.empty:
            return {}, f"needs {position} trials with mix_format {mix} in the dialogue context", "", cells
        found[(position, mix)] = chosen
    why, on = competence(
        {f"{p}/{_mix_name(m)}": c for (p, m), c in found.items()}, digit_map, smaller_digits, NL_IN_RANGE
    )
    return {k: largest_digits(c) for k, c in found.items()}, why, on, cells


def _mix_name(mix: str) -> str:
    return "dia" if mix == "none" else f"dia+{mix}"


def random_space_beats(worse: str) -> Check:
    """With learned positions, dia+random_space against dialogue with `worse` mixed in (largest sums)."""
    position, better = "learned", "random_space"

    def check(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
        sides, why, on, cells = _nl_sides(frame, [(position, better), (position, worse)], digit_map)
        if why:
            return untestable(why, [on] if on else [])
        a, b = (Side.of(_mix_name(mix), sides[(position, mix)]) for mix in (better, worse))
        label = f"position={position}, dialogue context, {digit_range(largest_digits(cells))}-digit sums"
        return compared([difference(a, b, label)], notes=[on])

    return check


def positions_close_the_gap(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    positions = ("learned", "none", "random_embed")
    points = [(p, m) for p in positions for m in ("random_space", "basic")]
    sides, why, on, cells = _nl_sides(frame, points, digit_map)
    if why:
        return untestable(why, [on] if on else [])
    side = {k: Side.of(f"{k[0]}/{_mix_name(k[1])}", c) for k, c in sides.items()}
    gaps = {p: side[(p, "random_space")].mean - side[(p, "basic")].mean for p in positions}
    listed = ", ".join(f"{p} {gaps[p]:+.2f}" for p in positions)
    contrasts = [
        Contrast(
            (
                (1.0, side[("learned", "random_space")]),
                (-1.0, side[("learned", "basic")]),
                (-1.0, side[(p, "random_space")]),
                (1.0, side[(p, "basic")]),
            ),
            f"learned's gap minus {p}'s",
        )
        for p in ("none", "random_embed")
    ]
    sums = digit_range(largest_digits(cells))
    where = f"dialogue context, {sums}-digit sums, dia+random_space minus dia+basic: {listed}"
    return compared(contrasts, notes=[where, on])


NL_MIX = Experiment(
    Grid(
        name="nl_mix",
        description="Dialogues mixed with arithmetic (section 4), read at epochs 50 and 100.",
        base={
            "data.task": "dialogue",
            "data.format": "basic",
            "data.min_digits": 2,
            "data.max_digits": 5,
            "data.mix_samples": 120_000,
            "data.dialogue_easy": 12_200,
            "data.dialogue_hard": 1_040,
            "data.test_digits": [2, 3, 4, 5],
            "data.test_per_cell": 100,
            "model.init": "random",
            "train.epochs": 100,
            "train.lr": 2e-5,
            "train.eval_epochs": [50, 100],
        },
        axes={"data.mix_format": ["none", "basic", "random_space"], "model.position": PAPER_POSITIONS},
        paper_tables=("tb:acc_nldia_a", "tb:acc_nldia_b", "tb:acc_nldia_c", "tb:acc_nldia_d"),
        table_of=_nl_mix_table,
        scale_digits=False,
    ),
    claims=(
        Claim(
            "with learned positions, dialogue + random-space data beats dialogue alone on the largest sums "
            "(dialogue context)",
            "tb:acc_nldia_a",
            random_space_beats("none"),
            id="random_space_beats_dialogue",
        ),
        Claim(
            "with learned positions, dia+random_space beats dia+basic on the largest sums (dialogue context)",
            "tb:acc_nldia_a",
            random_space_beats("basic"),
            id="random_space_beats_basic",
        ),
        Claim(
            "no position embedding and random embedding close that gap (dia+random_space minus dia+basic is "
            "smaller than with learned)",
            "tb:acc_nldia_a",
            positions_close_the_gap,
            id="positions_close_the_gap",
        ),
    ),
)

EXPERIMENTS = (NL_MIX,)
