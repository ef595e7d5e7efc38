"""Each claim's check: reads one claim of the paper off a sweep's per-seed cells, with its reason.

A check takes the tidy per-seed cells (`analysis.load.Sweep.cells`) and returns (status, evidence) by the
cell selectors and the verdict rule of `analysis.verdicts`: every compared model must have learned the task
in range before a difference is judged. The catalogue that names them, with the grid, the paper label and
the in-range cells of each claim, is `analysis.findings.CLAIMS`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.verdicts import (
    NO_EXTRAPOLATION,
    Contrast,
    Side,
    beyond_training,
    difference,
    digit_range,
    judge,
    large_products,
    largest_digits,
    measured,
    small_products,
    smaller_digits,
    unlearned,
    untestable,
    within_training,
)

# ---------------------------------------------------------------------------------------------------------
# The paper's claims (CLAIMS in analysis.findings names each with its grid and paper label)
# ---------------------------------------------------------------------------------------------------------

MUL_IN_RANGE = "the cells whose factors have at most max_digits digits together"


def padding_reverse_beats_basic(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    cells = cells[cells["data.augment"] == "none"]
    contrasts, skipped = [], []
    for max_digits, by_n in cells.groupby("data.max_digits"):
        basic, padded = (by_n[by_n["data.format"] == f] for f in ("basic", "padding_reverse"))
        if basic.empty or padded.empty or large_products(by_n).empty:
            continue
        in_range = {"basic": small_products(basic), "padding_reverse": small_products(padded)}
        why = unlearned(in_range, MUL_IN_RANGE)
        if why:
            skipped.append(f"max_digits={max_digits} not testable ({why})")
            continue
        better, worse = (
            Side.of("padding_reverse", large_products(padded)),
            Side.of("basic", large_products(basic)),
        )
        contrasts.append(difference(better, worse, f"max_digits={max_digits}, cells beyond it in total"))
    return _judge_parts(
        contrasts, skipped, "needs basic and padding_reverse trials with the same max_digits and large cells"
    )


def _judge_parts(contrasts: list[Contrast], skipped: list[str], needs: str) -> tuple[str, str]:
    """A claim made per setting (max_digits): judged on the settings whose models learned; the others
    are listed. Not testable when none is left."""
    if not contrasts:
        return untestable("; ".join(skipped) or needs)
    status, evidence = judge(contrasts)
    return status, "; ".join([evidence, *skipped])


def lower_one_digit_weight_hurts(frame: pd.DataFrame) -> tuple[str, str]:
    """The lowest 1-digit weight whose model learned against the highest; weights whose models did not
    learn in range (the paper's weight 0 fails its 1-digit cells) are left out, and listed."""
    cells = measured(frame)
    by_weight = {float(w): c for w, c in cells.groupby("data.one_digit_weight")}
    if len(by_weight) < 2:
        return untestable("needs trials with at least two 1-digit weights")
    learned, skipped = [], []
    for weight, chosen in sorted(by_weight.items()):
        why = unlearned({f"weight {weight:g}": small_products(chosen)}, MUL_IN_RANGE)
        (skipped if why else learned).append(why or weight)
    if len(learned) < 2 or learned[-1] != max(by_weight):
        return untestable("; ".join(skipped) or "needs two weights whose models learned")
    low, high = learned[0], learned[-1]
    contrast = difference(
        Side.of(f"weight {high:g}", by_weight[high]), Side.of(f"weight {low:g}", by_weight[low])
    )
    status, evidence = judge([contrast])
    return status, "; ".join([f"mean over all cells: {evidence}", *(f"left out: {w}" for w in skipped)])


def first_step_beats_n_times_1(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    contrasts, skipped = [], []
    for max_digits, by_n in cells.groupby("data.max_digits"):
        first, times = (by_n[by_n["data.augment"] == a] for a in ("first_step", "n_times_1"))
        if first.empty or times.empty:
            continue
        why = unlearned(
            {"first_step": small_products(first), "n_times_1": small_products(times)}, MUL_IN_RANGE
        )
        if why:
            skipped.append(f"max_digits={max_digits} not testable ({why})")
            continue
        where = f"max_digits={max_digits}, mean over the grid"
        contrasts.append(difference(Side.of("first_step", first), Side.of("n_times_1", times), where))
    return _judge_parts(contrasts, skipped, "needs first_step and n_times_1 trials with the same max_digits")


def scratchpad_extrapolation_order(frame: pd.DataFrame) -> tuple[str, str]:
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
    why = unlearned(
        {
            "basic": within_training(basic),
            "random_space": within_training(spaced),
            "recursive_scratchpad": within_training(recursive),
        },
        "the digit counts trained on",
    )
    if why:
        return untestable(why)
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
    return judge(
        [difference(s, b, where), difference(r, s)],
        extrapolates,
    )


def _by_position(cells: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {str(p): c for p, c in cells.groupby("model.position")}


def no_position_generalises_further(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    cells = cells[cells["context"] == "regular"]
    contrasts = []
    for init, by_init in cells.groupby("model.init"):
        positions = _by_position(by_init)
        if not {"none", "learned"} <= set(positions) or beyond_training(by_init).empty:
            continue
        why = unlearned(
            {p: within_training(positions[p]) for p in ("none", "learned")}, "regular data in range"
        )
        if why:
            return untestable(f"init={init}: {why}")
        none, learned = (Side.of(p, beyond_training(positions[p])) for p in ("none", "learned"))
        label = f"init={init}, regular data, {digit_range(beyond_training(by_init))} digits"
        contrasts.append(difference(none, learned, label))
    if not contrasts:
        return untestable("needs learned and none trials with regular test cells beyond the training length")
    return judge(contrasts)


def random_embed_fixes_repetitive(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    cells = cells[cells["model.init"] == "random"]
    positions = _by_position(cells)
    if not {"none", "random_embed"} <= set(positions):
        return untestable("needs none and random_embed trials from random init with repetitive test cells")
    regular = {
        p: within_training(positions[p][positions[p]["context"] == "regular"])
        for p in ("none", "random_embed")
    }
    why = unlearned(regular, "regular data in range")
    if why:
        return untestable(why)
    repetitive = {p: positions[p][positions[p]["context"] == "repetitive"] for p in ("none", "random_embed")}
    if any(c.empty for c in repetitive.values()):
        return untestable("needs repetitive test cells for none and random_embed")
    tags, none = Side.of("random_embed", repetitive["random_embed"]), Side.of("none", repetitive["none"])
    label = f"repetitive data, init=random, {digit_range(repetitive['none'])} digits"
    return judge([difference(tags, none, label)])


def random_embed_extrapolates_addition(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    positions = _by_position(cells)
    if not {"random_embed", "learned", "none"} <= set(positions) or beyond_training(cells).empty:
        return untestable("needs learned, none and random_embed cells beyond the training length")
    # the paper: without a position embedding the model "does not perform well" even in range, so only
    # random_embed and learned must have learned; none is compared as it is
    why = unlearned(
        {p: within_training(positions[p]) for p in ("random_embed", "learned")}, "the digit counts trained on"
    )
    if why:
        return untestable(why)
    tags, learned, none = (
        Side.of(p, beyond_training(positions[p])) for p in ("random_embed", "learned", "none")
    )
    where = f"{digit_range(beyond_training(cells))} digits (beyond training)"
    return judge(
        [
            difference(tags, learned, where),
            difference(tags, none),
        ]
    )


NL_IN_RANGE = "the smaller half of the dialogue-context sums (2-3 digits in the paper)"


def _nl_sides(frame: pd.DataFrame, points: Sequence[tuple[str, str]]) -> tuple[dict, str, pd.DataFrame]:
    """({(position, mix): cells of the largest sums}, why-untestable, the dialogue cells)."""
    cells = measured(frame)
    cells = cells[cells["context"] == "dialogue"]
    found = {}
    for position, mix in points:
        chosen = cells[(cells["model.position"] == position) & (cells["data.mix_format"] == mix)]
        if chosen.empty:
            return {}, f"needs {position} trials with mix_format {mix} in the dialogue context", cells
        found[(position, mix)] = chosen
    why = unlearned(
        {f"{p}/dia+{m}".replace("dia+none", "dia"): smaller_digits(c) for (p, m), c in found.items()},
        NL_IN_RANGE,
    )
    return {k: largest_digits(c) for k, c in found.items()}, why, cells


def _mix_name(mix: str) -> str:
    return "dia" if mix == "none" else f"dia+{mix}"


def _nl_pair(frame: pd.DataFrame, position: str, better: str, worse: str) -> tuple[str, str]:
    sides, why, cells = _nl_sides(frame, [(position, better), (position, worse)])
    if why:
        return untestable(why)
    a, b = (
        Side.of(_mix_name(better), sides[(position, better)]),
        Side.of(_mix_name(worse), sides[(position, worse)]),
    )
    label = f"position={position}, dialogue context, {digit_range(largest_digits(cells))}-digit sums"
    return judge([difference(a, b, label)])


def random_space_beats_dialogue_alone(frame: pd.DataFrame) -> tuple[str, str]:
    return _nl_pair(frame, "learned", "random_space", "none")


def random_space_beats_basic_with_learned(frame: pd.DataFrame) -> tuple[str, str]:
    return _nl_pair(frame, "learned", "random_space", "basic")


def positions_close_the_gap(frame: pd.DataFrame) -> tuple[str, str]:
    positions = ("learned", "none", "random_embed")
    points = [(p, m) for p in positions for m in ("random_space", "basic")]
    sides, why, cells = _nl_sides(frame, points)
    if why:
        return untestable(why)
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
    status, evidence = judge(contrasts)
    sums = digit_range(largest_digits(cells))
    where = f"dialogue context, {sums}-digit sums, dia+random_space minus dia+basic: {listed}"
    return status, f"{where}; {evidence}"


# ---------------------------------------------------------------------------------------------------------
# The demo grid (`make demo`): the answer's format on short addition. The claim is about learning inside the
# training range itself (the plain answer is not learned in the budget where the padded, reversed one is),
# so the competence gate is on the better side only: the task must be learnable at this budget.
# ---------------------------------------------------------------------------------------------------------


def padded_reversed_answer_beats_plain(frame: pd.DataFrame) -> tuple[str, str]:
    cells = within_training(measured(frame))
    padded = cells[cells["data.format"] == "padding_reverse"]
    basic = cells[cells["data.format"] == "basic"]
    if padded.empty or basic.empty:
        return untestable("needs padding_reverse and basic trials with cells in the training range")
    why = unlearned({"padding_reverse": padded}, "the training range")
    if why:
        return untestable(why)
    where = f"{digit_range(cells)}-digit sums (training range)"
    return judge([difference(Side.of("padding_reverse", padded), Side.of("basic", basic), where)])
