"""Each claim's check: reads one claim of the paper off a sweep's per-seed cells.

A check takes the tidy per-seed cells (`analysis.load.Sweep.cells`) and the sweep's digit map and returns an
`Outcome` (`analysis.verdicts`): the contrasts it compared, one point a side, or why the claim cannot be
tested. Every compared model must have learned first (`competence`: each seed, on the cells the paper's own
model of that point learned, else the cells the claim names); a claim compares the cells the paper's table
contrasts where it has one. The verdict over every claim of a report (Holm's correction) is
`analysis.verdicts.decide_family`; the catalogue is `analysis.findings.CLAIMS`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.verdicts import (
    NO_EXTRAPOLATION,
    Contrast,
    Outcome,
    Side,
    beyond_training,
    compared,
    compared_cells,
    competence,
    difference,
    digit_range,
    largest_digits,
    measured,
    small_products,
    smaller_digits,
    untestable,
    within_training,
)

DigitMap = dict[int, int] | None

MUL_IN_RANGE = (
    "no paper table for this point: the cells whose factors have at most max_digits digits together"
)
MUL_COMPARED = (
    "the cells with more digits in total than max_digits (no paper table to say which it contrasts)"
)


def _per_max_digits(contrasts: list[Contrast], skipped: list[str], gates: list[str], needs: str) -> Outcome:
    """A claim made per setting (max_digits): judged on the settings whose models learned; the others are
    listed. Not testable when none is left."""
    if not contrasts:
        return untestable("; ".join(skipped) or needs, gates)
    return compared(contrasts, notes=[*skipped, *gates])


def padding_reverse_beats_basic(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    cells = measured(frame)
    cells = cells[cells["data.augment"] == "none"]
    contrasts, skipped, gates = [], [], []
    for max_digits, by_n in cells.groupby("data.max_digits"):
        basic, padded = (by_n[by_n["data.format"] == f] for f in ("basic", "padding_reverse"))
        if basic.empty or padded.empty:
            continue
        why, on = competence(
            {"basic": basic, "padding_reverse": padded}, digit_map, small_products, MUL_IN_RANGE
        )
        gates.append(f"max_digits={max_digits} {on}")
        if why:
            skipped.append(f"max_digits={max_digits} not testable ({why})")
            continue
        better, worse, which = compared_cells(padded, basic, digit_map, _large_products, MUL_COMPARED)
        where = f"max_digits={max_digits}, {which}"
        contrasts.append(difference(Side.of("padding_reverse", better), Side.of("basic", worse), where))
    return _per_max_digits(
        contrasts, skipped, gates, "needs basic and padding_reverse trials with the same max_digits"
    )


def _large_products(frame: pd.DataFrame) -> pd.DataFrame:
    total = frame["row_digits"].astype(float) + frame["col_digits"].astype(float)
    return frame[total > frame["data.max_digits"].astype(float)]


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


def first_step_beats_n_times_1(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    cells = measured(frame)
    contrasts, skipped, gates = [], [], []
    for max_digits, by_n in cells.groupby("data.max_digits"):
        first, times = (by_n[by_n["data.augment"] == a] for a in ("first_step", "n_times_1"))
        if first.empty or times.empty:
            continue
        why, on = competence(
            {"first_step": first, "n_times_1": times}, digit_map, small_products, MUL_IN_RANGE
        )
        gates.append(f"max_digits={max_digits} {on}")
        if why:
            skipped.append(f"max_digits={max_digits} not testable ({why})")
            continue
        better, worse, which = compared_cells(
            first, times, digit_map, lambda c: c, "every cell of the grid (no paper table)"
        )
        where = f"max_digits={max_digits}, {which}"
        contrasts.append(difference(Side.of("first_step", better), Side.of("n_times_1", worse), where))
    return _per_max_digits(
        contrasts, skipped, gates, "needs first_step and n_times_1 trials with the same max_digits"
    )


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
    best_basic = float(beyond_training(basic).groupby(["col_digits"])["accuracy"].mean().max())
    extrapolates = (
        f"basic reaches {best_basic:.2f} on a cell beyond training (more than {NO_EXTRAPOLATION})"
        if best_basic > NO_EXTRAPOLATION
        else ""
    )
    where = f"{digit_range(beyond_training(cells))} digits (beyond training, init=pretrained)"
    return compared([difference(s, b, where), difference(r, s)], fails=extrapolates, notes=[on])


FIGURE_GATE = (
    "regular data of the digit counts trained on, every cell (the paper shows a figure, no table: its "
    "models are read off the figure as learning their training range)"
)


def _of_figure(cells: pd.DataFrame, label: str) -> pd.DataFrame:
    """The trials of the points the sweep tagged as standing for the paper's figure `label`."""
    return cells[cells["paper_table"].astype(str).str.split(",").map(lambda t: label in t)]


def _by_position(cells: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {str(p): c for p, c in cells.groupby("model.position")}


def _regular_in_range(cells: pd.DataFrame) -> pd.DataFrame:
    return within_training(cells[cells["context"] == "regular"])


def no_position_generalises_further(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    cells = _of_figure(measured(frame), "fig:testacc_rev")
    cells = cells[cells["context"] == "regular"]
    contrasts, gates = [], []
    for init, by_init in cells.groupby("model.init"):
        positions = _by_position(by_init)
        if not {"none", "learned"} <= set(positions) or beyond_training(by_init).empty:
            continue
        why, on = competence(
            {p: positions[p] for p in ("none", "learned")}, None, _regular_in_range, FIGURE_GATE
        )
        if why:
            return untestable(f"init={init}: {why}", [on])
        gates.append(on)
        none, learned = (Side.of(p, beyond_training(positions[p])) for p in ("none", "learned"))
        label = f"init={init}, regular data, {digit_range(beyond_training(by_init))} digits"
        contrasts.append(difference(none, learned, label))
    if not contrasts:
        return untestable(
            "needs fig:testacc_rev's learned and none trials with regular test cells beyond the training "
            "length"
        )
    return compared(contrasts, notes=gates[:1])


def random_embed_fixes_repetitive(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    cells = _of_figure(measured(frame), "fig:randembed")
    cells = cells[cells["model.init"] == "random"]
    positions = _by_position(cells)
    if not {"none", "random_embed"} <= set(positions):
        return untestable("needs fig:randembed's none and random_embed trials from random init")
    sides = {p: positions[p] for p in ("none", "random_embed")}
    why, on = competence(sides, None, _regular_in_range, FIGURE_GATE)
    if why:
        return untestable(why, [on])
    repetitive = {p: c[c["context"] == "repetitive"] for p, c in sides.items()}
    if any(c.empty for c in repetitive.values()):
        return untestable("needs repetitive test cells for none and random_embed")
    tags, none = Side.of("random_embed", repetitive["random_embed"]), Side.of("none", repetitive["none"])
    label = f"repetitive data, init=random, {digit_range(repetitive['none'])} digits"
    return compared([difference(tags, none, label)], notes=[on])


def random_embed_extrapolates_addition(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    cells = measured(frame)
    positions = _by_position(cells)
    if not {"random_embed", "learned", "none"} <= set(positions) or beyond_training(cells).empty:
        return untestable("needs learned, none and random_embed cells beyond the training length")
    # the paper: without a position embedding the model "does not perform well" even in range, so only
    # random_embed and learned must have learned; none is compared as it is
    why, on = competence(
        {p: positions[p] for p in ("random_embed", "learned")},
        None,
        within_training,
        "the digit counts trained on, every cell (the paper shows a figure, no table)",
    )
    if why:
        return untestable(why, [on])
    tags, learned, none = (
        Side.of(p, beyond_training(positions[p])) for p in ("random_embed", "learned", "none")
    )
    where = f"{digit_range(beyond_training(cells))} digits (beyond training)"
    return compared([difference(tags, learned, where), difference(tags, none)], notes=[on])


NL_IN_RANGE = "the smaller half of the dialogue-context sums (2-3 digits in the paper), every cell"


def _nl_sides(
    frame: pd.DataFrame, points: Sequence[tuple[str, str]], digit_map: DigitMap
) -> tuple[dict, str, str, pd.DataFrame]:
    """({(position, mix): cells of the largest sums}, why-untestable, gated on, the dialogue cells)."""
    cells = measured(frame)
    cells = cells[cells["context"] == "dialogue"]
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


def _nl_pair(frame: pd.DataFrame, digit_map: DigitMap, position: str, better: str, worse: str) -> Outcome:
    sides, why, on, cells = _nl_sides(frame, [(position, better), (position, worse)], digit_map)
    if why:
        return untestable(why, [on] if on else [])
    a, b = (
        Side.of(_mix_name(better), sides[(position, better)]),
        Side.of(_mix_name(worse), sides[(position, worse)]),
    )
    label = f"position={position}, dialogue context, {digit_range(largest_digits(cells))}-digit sums"
    return compared([difference(a, b, label)], notes=[on])


def random_space_beats_dialogue_alone(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    return _nl_pair(frame, digit_map, "learned", "random_space", "none")


def random_space_beats_basic_with_learned(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    return _nl_pair(frame, digit_map, "learned", "random_space", "basic")


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


# ---------------------------------------------------------------------------------------------------------
# The demo grid (`make demo`): the answer's format on short addition. The claim is about learning inside the
# training range itself (the plain answer is not learned in the budget where the padded, reversed one is),
# so the competence gate is on the better side only: the task must be learnable at this budget. The paper
# has no table for addition in these formats: the gate reads every cell of the training range.
# ---------------------------------------------------------------------------------------------------------


def padded_reversed_answer_beats_plain(frame: pd.DataFrame, digit_map: DigitMap = None) -> Outcome:
    cells = within_training(measured(frame))
    padded = cells[cells["data.format"] == "padding_reverse"]
    basic = cells[cells["data.format"] == "basic"]
    if padded.empty or basic.empty:
        return untestable("needs padding_reverse and basic trials with cells in the training range")
    why, on = competence(
        {"padding_reverse": padded},
        None,
        lambda c: c,
        "every cell of the training range (no paper table for addition in these formats)",
    )
    if why:
        return untestable(why, [on])
    where = f"{digit_range(cells)}-digit sums (training range)"
    return compared(
        [difference(Side.of("padding_reverse", padded), Side.of("basic", basic), where)], notes=[on]
    )
