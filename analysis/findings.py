"""The paper's claims, each stated once, checked on a sweep's numbers: held / not held / not testable.

Claims are written over relative notions, not the paper's digit counts, so that they read the same at
every scale: "beyond the training length" is a digit count above the trial's `data.max_digits`; "the
largest cells" are the larger half of the digit counts the sweep tested. Every check reads the seed
means of each trial's last evaluation and reports the numbers it compared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

HELD, NOT_HELD, NOT_TESTABLE = "held", "not held", "not testable"
#: "does not extrapolate": no cell beyond the training length above this accuracy
NO_EXTRAPOLATION = 0.1


@dataclass(frozen=True)
class Finding:
    grid: str
    claim: str
    status: str
    evidence: str


@dataclass(frozen=True)
class Claim:
    """One claim of the paper, the grid that tests it, and the check that reads it off the numbers."""

    grid: str
    text: str
    source: str
    check: Callable[[pd.DataFrame], tuple[str, str]]


# ---------------------------------------------------------------------------------------------------------
# Helpers over the paper-attached frame (analysis.paper.attach_paper)
# ---------------------------------------------------------------------------------------------------------


def measured(frame: pd.DataFrame) -> pd.DataFrame:
    """This sweep's cells at each trial's last evaluation (leaving out cells only the paper has)."""
    return frame[frame["final"] & frame["accuracy"].notna()]


def beyond_training(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells whose operands are longer than the trial was trained on."""
    return frame[frame["col_digits"].astype(float) > frame["data.max_digits"].astype(float)]


def largest_digits(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells in the larger half of the digit counts tested (4-5 of the paper's 2-5)."""
    digits = sorted(frame["col_digits"].dropna().astype(int).unique())
    top = digits[len(digits) - max(1, len(digits) // 2) :]
    return frame[frame["col_digits"].isin(top)]


def _mean(frame: pd.DataFrame) -> float:
    return float(frame["accuracy"].mean())


def _digits(frame: pd.DataFrame) -> str:
    digits = sorted(frame["col_digits"].dropna().astype(int).unique())
    return f"{digits[0]}-{digits[-1]}" if len(digits) > 1 else str(digits[0])


def _verdict(held: bool, evidence: str) -> tuple[str, str]:
    return (HELD if held else NOT_HELD), evidence


def _untestable(why: str) -> tuple[str, str]:
    return NOT_TESTABLE, why


# ---------------------------------------------------------------------------------------------------------
# The claims
# ---------------------------------------------------------------------------------------------------------


def padding_reverse_beats_basic(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    cells = cells[cells["data.augment"] == "none"]
    evidence, verdicts = [], []
    for max_digits, by_n in cells.groupby("data.max_digits"):
        large = by_n[by_n["row_digits"].astype(float) + by_n["col_digits"].astype(float) > max_digits]
        keys = ["row_digits", "col_digits"]
        basic = large[large["data.format"] == "basic"].groupby(keys)["accuracy"].mean()
        padded = large[large["data.format"] == "padding_reverse"].groupby(keys)["accuracy"].mean()
        both = pd.concat({"basic": basic, "padded": padded}, axis=1).dropna()
        if both.empty:
            continue
        worst = (both["padded"] - both["basic"]).idxmin()
        held = bool((both["padded"] >= both["basic"]).all() and both["padded"].mean() > both["basic"].mean())
        verdicts.append(held)
        evidence.append(
            f"max_digits={max_digits}: {len(both)} cells with more than {max_digits} digits in total, "
            f"padding_reverse {both['padded'].mean():.2f} vs basic {both['basic'].mean():.2f} on average; "
            f"closest cell (b={worst[0]}, a={worst[1]}): {both.loc[worst, 'padded']:.2f} vs "
            f"{both.loc[worst, 'basic']:.2f}"
        )
    if not verdicts:
        return _untestable("needs basic and padding_reverse trials with the same max_digits and large cells")
    return _verdict(all(verdicts), "; ".join(evidence))


def lower_one_digit_weight_hurts(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    by_weight = cells.groupby("data.one_digit_weight")["accuracy"].mean().sort_index()
    if len(by_weight) < 2:
        return _untestable("needs trials with at least two 1-digit weights")
    listed = ", ".join(f"weight {w:g}: {a:.2f}" for w, a in by_weight.items())
    return _verdict(
        bool(by_weight.iloc[0] < by_weight.iloc[-1]),
        f"mean accuracy over all {len(cells[['row_digits', 'col_digits']].drop_duplicates())} cells: "
        f"{listed}",
    )


def first_step_beats_n_times_1(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    evidence, verdicts = [], []
    for max_digits, by_n in cells.groupby("data.max_digits"):
        means = by_n.groupby("data.augment")["accuracy"].mean()
        if not {"first_step", "n_times_1"} <= set(means.index):
            continue
        verdicts.append(bool(means["first_step"] > means["n_times_1"]))
        evidence.append(
            f"max_digits={max_digits}: first_step {means['first_step']:.2f} vs n_times_1 "
            f"{means['n_times_1']:.2f} mean over the grid"
        )
    if not verdicts:
        return _untestable("needs first_step and n_times_1 trials with the same max_digits")
    return _verdict(all(verdicts), "; ".join(evidence))


def scratchpad_extrapolation_order(frame: pd.DataFrame) -> tuple[str, str]:
    cells = beyond_training(measured(frame))
    if (cells["model.init"] == "pretrained").any():
        cells = cells[cells["model.init"] == "pretrained"]  # the paper's setting for this table
    recursive = cells[cells["data.format"] == "recursive_scratchpad"]
    if (~recursive["data.reverse_addends"].astype(bool)).any():
        recursive = recursive[~recursive["data.reverse_addends"].astype(bool)]  # as printed in the table
    basic = cells[cells["data.format"] == "basic"]
    spaced = cells[cells["data.format"] == "random_space"]
    if basic.empty or spaced.empty or recursive.empty:
        return _untestable(
            "needs basic, random_space and recursive_scratchpad cells beyond the training length"
        )
    b, s, r = _mean(basic), _mean(spaced), _mean(recursive)
    held = basic["accuracy"].max() <= NO_EXTRAPOLATION and b < s < r
    return _verdict(
        held,
        f"{_digits(cells)} digits (beyond training, init={cells['model.init'].iloc[0]}): basic {b:.2f} "
        f"(best cell {basic['accuracy'].max():.2f}, 'no extrapolation' = at most {NO_EXTRAPOLATION}), "
        f"random_space {s:.2f}, recursive_scratchpad {r:.2f}",
    )


def _position_means(cells: pd.DataFrame) -> pd.Series:
    return cells.groupby("model.position")["accuracy"].mean()


def no_position_generalises_further(frame: pd.DataFrame) -> tuple[str, str]:
    cells = beyond_training(measured(frame))
    cells = cells[cells["context"] == "regular"]
    evidence, verdicts = [], []
    for init, by_init in cells.groupby("model.init"):
        means = _position_means(by_init)
        if not {"none", "learned"} <= set(means.index):
            continue
        verdicts.append(bool(means["none"] > means["learned"]))
        evidence.append(
            f"init={init}, regular data, {_digits(by_init)} digits: none {means['none']:.2f} vs "
            f"learned {means['learned']:.2f}"
        )
    if not verdicts:
        return _untestable("needs learned and none trials with regular test cells beyond the training length")
    return _verdict(all(verdicts), "; ".join(evidence))


def random_embed_fixes_repetitive(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    cells = cells[(cells["context"] == "repetitive") & (cells["model.init"] == "random")]
    means = _position_means(cells)
    if not {"none", "random_embed"} <= set(means.index):
        return _untestable("needs none and random_embed trials from random init with repetitive test cells")
    return _verdict(
        bool(means["random_embed"] > means["none"]),
        f"repetitive data, init=random, {_digits(cells)} digits: random_embed {means['random_embed']:.2f} "
        f"vs none {means['none']:.2f}",
    )


def random_embed_extrapolates_addition(frame: pd.DataFrame) -> tuple[str, str]:
    cells = beyond_training(measured(frame))
    means = _position_means(cells)
    if not {"random_embed", "learned", "none"} <= set(means.index):
        return _untestable("needs learned, none and random_embed cells beyond the training length")
    return _verdict(
        bool(means["random_embed"] > max(means["learned"], means["none"])),
        f"{_digits(cells)} digits (beyond training): random_embed {means['random_embed']:.2f}, "
        f"learned {means['learned']:.2f}, none {means['none']:.2f}",
    )


def _nl_mix_means(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(mean accuracy on the largest dialogue-context sums by position x mix_format, the cells used)."""
    cells = measured(frame)
    cells = largest_digits(cells[cells["context"] == "dialogue"])
    return cells.groupby(["model.position", "data.mix_format"])["accuracy"].mean().unstack(), cells


def _nl_pair(frame: pd.DataFrame, position: str, better: str, worse: str) -> tuple[str, str]:
    means, cells = _nl_mix_means(frame)
    if position not in means.index or not {better, worse} <= set(means.columns):
        return _untestable(
            f"needs {position} trials with mix_format {better} and {worse} in the dialogue context"
        )
    a, b = means.loc[position, better], means.loc[position, worse]
    if pd.isna(a) or pd.isna(b):
        return _untestable(f"no dialogue cells for {position} with both {better} and {worse}")
    return _verdict(
        bool(a > b),
        f"position={position}, dialogue context, {_digits(cells)}-digit sums: dia+{better} {a:.2f} vs "
        f"{'dia' if worse == 'none' else 'dia+' + worse} {b:.2f}",
    )


def random_space_beats_dialogue_alone(frame: pd.DataFrame) -> tuple[str, str]:
    return _nl_pair(frame, "learned", "random_space", "none")


def random_space_beats_basic_with_learned(frame: pd.DataFrame) -> tuple[str, str]:
    return _nl_pair(frame, "learned", "random_space", "basic")


def positions_close_the_gap(frame: pd.DataFrame) -> tuple[str, str]:
    means, cells = _nl_mix_means(frame)
    needed = {"learned", "none", "random_embed"}
    if not needed <= set(means.index) or not {"random_space", "basic"} <= set(means.columns):
        return _untestable("needs learned, none and random_embed trials with dia+basic and dia+random_space")
    gap = (means["random_space"] - means["basic"]).dropna()
    if not needed <= set(gap.index):
        return _untestable("missing dialogue cells for some position scheme")
    held = bool(gap["none"] < gap["learned"] and gap["random_embed"] < gap["learned"])
    listed = ", ".join(f"{p} {gap[p]:+.2f}" for p in ("learned", "none", "random_embed"))
    return _verdict(
        held, f"dialogue context, {_digits(cells)}-digit sums, dia+random_space minus dia+basic: {listed}"
    )


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "mul_format",
        "padding + reversed product beats basic on every cell with more digits in total than the training "
        "max_digits (>= on each, > on average)",
        "tb:basic-5 vs tb:padding-5",
        padding_reverse_beats_basic,
    ),
    Claim(
        "mul_one_digit_weight",
        "a lower 1-digit weight hurts: the lowest weight's mean accuracy is below the highest weight's",
        "tb:padding_10_ratio",
        lower_one_digit_weight_hurts,
    ),
    Claim(
        "mul_simple_case",
        "first-step % augmentation helps more than n x 1 augmentation (mean accuracy, same max_digits)",
        "tb:onedigit_5-6a-d",
        first_step_beats_n_times_1,
    ),
    Claim(
        "add_length",
        "beyond the training length basic does not extrapolate; random space a little; "
        "recursive scratchpad most",
        "tb:acc_dataformat",
        scratchpad_extrapolation_order,
    ),
    Claim(
        "reverse_posembed",
        "on reversal, no position embedding generalises further than learned (regular data, beyond training)",
        "fig:testacc_rev",
        no_position_generalises_further,
    ),
    Claim(
        "reverse_posembed",
        "random embedding fixes repetitive data for models trained from scratch (random_embed beats none)",
        "fig:randembed",
        random_embed_fixes_repetitive,
    ),
    Claim(
        "add_posembed",
        "random embedding extrapolates addition further than learned or no position embedding",
        "fig:acc_add_rand",
        random_embed_extrapolates_addition,
    ),
    Claim(
        "nl_mix",
        "with learned positions, dialogue + random-space data beats dialogue alone on the largest sums "
        "(dialogue context)",
        "tb:acc_nldia_a",
        random_space_beats_dialogue_alone,
    ),
    Claim(
        "nl_mix",
        "with learned positions, dia+random_space beats dia+basic on the largest sums (dialogue context)",
        "tb:acc_nldia_a",
        random_space_beats_basic_with_learned,
    ),
    Claim(
        "nl_mix",
        "no position embedding and random embedding close that gap (dia+random_space minus dia+basic is "
        "smaller than with learned)",
        "tb:acc_nldia_a",
        positions_close_the_gap,
    ),
)


def evaluate_findings(frame: pd.DataFrame, grid: str) -> list[Finding]:
    """Every claim the grid tests, checked on the frame (paper-attached, see analysis.paper)."""
    return [Finding(grid, f"{c.text} [{c.source}]", *c.check(frame)) for c in CLAIMS if c.grid == grid]


def findings_frame(findings: list[Finding]) -> pd.DataFrame:
    return pd.DataFrame([f.__dict__ for f in findings], columns=["grid", "claim", "status", "evidence"])


def render_findings(findings: list[Finding], fmt: str, grid: str) -> str:
    if not findings:
        return f"No claim of the paper is tested by grid {grid!r}.\n"
    frame = findings_frame(findings).drop(columns="grid")
    if fmt == "csv":
        return frame.to_csv(index=False)
    if fmt == "html":
        return frame.to_html(index=False)
    if fmt == "latex":
        return frame.to_latex(
            index=False, caption="Claims of the paper on this sweep", label="tab:findings", escape=True
        )
    lines = ["| claim | status | evidence |", "|---|---|---|"]
    lines += [f"| {f.claim} | **{f.status}** | {f.evidence} |" for f in findings]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------
# The demo grid (`make demo`): the answer's format on short addition, judged by the rule of verdicts that
# need seeds: testable when the better format learns the training range (>= LEARNED on its cells); held or
# not held with >= MIN_SEEDS seeds, held when the mean difference exceeds 2 standard errors; fewer seeds
# only "suggest". The standard error of a mean over cells is bounded by the mean of the cells' standard
# errors (the standard deviation of a mean is at most the mean of the standard deviations), so 2 SE here
# is a conservative margin.
# ---------------------------------------------------------------------------------------------------------

#: "learned the training range": mean accuracy on the in-range cells at least this
LEARNED = 0.9
#: seeds a held / not held verdict needs; fewer give "suggests held" / "suggests not held"
MIN_SEEDS = 3


def _mean_and_se(cells: pd.DataFrame) -> tuple[float, float]:
    """Mean accuracy over cells (seed means) and a bound on its standard error over seeds."""
    se = cells["accuracy_std"].fillna(0.0) / cells["seeds"].clip(lower=1) ** 0.5
    return _mean(cells), float(se.mean())


def padded_reversed_answer_beats_plain(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    cells = cells[cells["col_digits"].astype(float) <= cells["data.max_digits"].astype(float)]
    padded = cells[cells["data.format"] == "padding_reverse"]
    basic = cells[cells["data.format"] == "basic"]
    if padded.empty or basic.empty:
        return _untestable("needs padding_reverse and basic trials with cells in the training range")
    (p, p_se), (b, b_se) = _mean_and_se(padded), _mean_and_se(basic)
    if max(p, b) < LEARNED:
        return _untestable(
            f"neither format learned the training range (padding_reverse {p:.2f}, basic {b:.2f})"
        )
    seeds = int(min(padded["seeds"].min(), basic["seeds"].min()))
    margin = 2 * (p_se**2 + b_se**2) ** 0.5
    evidence = (
        f"{_digits(cells)}-digit sums (training range), mean of {seeds} seed(s): padding_reverse {p:.2f} vs "
        f"basic {b:.2f}, difference {p - b:+.2f}, 2 SE {margin:.2f}"
    )
    status, _ = _verdict(p - b > margin, evidence)
    return (status if seeds >= MIN_SEEDS else f"suggests {status}"), evidence


CLAIMS += (
    Claim(
        "demo",
        "a padded answer written least significant digit first is learned where the plain answer is not "
        "(the paper's padding + reversed product finding for multiplication, on <=3-digit addition)",
        "tb:basic-5 vs tb:padding-5",
        padded_reversed_answer_beats_plain,
    ),
)
