"""The paper's claims, each stated once, judged on a sweep's per-seed numbers, each verdict with its reason.

Verdicts (`Finding.status`, machine-readable):

- **not testable**: a model the claim compares did not learn the task inside its training range (mean
  accuracy below the claim's `learned` threshold on its in-range cells), the sweep lacks the runs the claim
  needs (e.g. the paper's claim is about fine-tuned GPT-2 and the sweep has only random-init runs), or
  with >= 3 seeds the difference lies within two standard errors of zero (the seeds cannot tell);
- **held** / **not held** (>= `MIN_SEEDS` seeds on every compared point): the claim's difference (the
  better side's mean accuracy minus the worse side's; a claim of several comparisons needs them all) is
  more than `STANDARD_ERRORS` standard errors above zero / its upper end (difference + 2 SE) is at or
  below zero. The standard error is over trials: each trial's mean over the compared cells is one sample,
  the two sides' variances added (Welch);
- **suggests held** / **suggests not held** (fewer seeds): the sign of the difference only.

Claims are written over relative notions, not the paper's digit counts, so that they read the same at
every scale: "beyond the training length" is a digit count above the trial's `data.max_digits`; "the
largest cells" are the larger half of the digit counts the sweep tested. Every check reads each trial's
last evaluation and reports the numbers it compared.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

HELD, NOT_HELD, NOT_TESTABLE = "held", "not held", "not testable"
SUGGESTS_HELD, SUGGESTS_NOT_HELD = "suggests held", "suggests not held"
VERDICTS = (HELD, NOT_HELD, SUGGESTS_HELD, SUGGESTS_NOT_HELD, NOT_TESTABLE)
#: seeds every compared point needs for held / not held; fewer say at most "suggests"
MIN_SEEDS = 3
#: a difference must exceed this many standard errors
STANDARD_ERRORS = 2.0
#: "learned the task": mean accuracy on the in-range cells at least this (every claim uses it)
LEARNED = 0.9
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
    """One claim of the paper, the grid that tests it, which cells show a compared model learned the task,
    and the check that reads the claim off the numbers."""

    grid: str
    text: str
    source: str
    #: the in-range cells on which each compared model must reach LEARNED
    learned_on: str
    check: Callable[[pd.DataFrame], tuple[str, str]]


# ---------------------------------------------------------------------------------------------------------
# Cells: the per-seed frame (analysis.load.Sweep.cells), each trial's last evaluation
# ---------------------------------------------------------------------------------------------------------


def measured(frame: pd.DataFrame) -> pd.DataFrame:
    """Each trial's cells at its last evaluation (leaving out cells only the paper has)."""
    if frame.empty:
        return frame
    final = frame["final"] if "final" in frame else frame["epoch"] == frame["final_epoch"]
    return frame[final.astype(bool) & frame["accuracy"].notna()]


def beyond_training(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells whose operands are longer than the trial was trained on."""
    return frame[frame["col_digits"].astype(float) > frame["data.max_digits"].astype(float)]


def within_training(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells whose operands have a digit count the trial was trained on."""
    digits = frame["col_digits"].astype(float)
    lowest = frame["data.min_digits"].astype(float) if "data.min_digits" in frame else 1.0
    return frame[(digits >= lowest) & (digits <= frame["data.max_digits"].astype(float))]


def small_products(frame: pd.DataFrame) -> pd.DataFrame:
    """Multiplication cells with at most max_digits digits in both factors together (the easy half)."""
    total = frame["row_digits"].astype(float) + frame["col_digits"].astype(float)
    return frame[total <= frame["data.max_digits"].astype(float)]


def large_products(frame: pd.DataFrame) -> pd.DataFrame:
    total = frame["row_digits"].astype(float) + frame["col_digits"].astype(float)
    return frame[total > frame["data.max_digits"].astype(float)]


def _digit_half(frame: pd.DataFrame, upper: bool) -> pd.DataFrame:
    digits = sorted(frame["col_digits"].dropna().astype(int).unique())
    if not digits:
        return frame
    top = digits[len(digits) - max(1, len(digits) // 2) :]
    chosen = top if upper else ([d for d in digits if d not in top] or digits[:1])
    return frame[frame["col_digits"].isin(chosen)]


def largest_digits(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells in the larger half of the digit counts tested (4-5 of the paper's 2-5)."""
    return _digit_half(frame, upper=True)


def smaller_digits(frame: pd.DataFrame) -> pd.DataFrame:
    """Cells in the smaller half of the digit counts tested (2-3 of the paper's 2-5)."""
    return _digit_half(frame, upper=False)


def _digits(frame: pd.DataFrame) -> str:
    digits = sorted(frame["col_digits"].dropna().astype(int).unique())
    if not digits:
        return "no"
    return f"{digits[0]}-{digits[-1]}" if len(digits) > 1 else str(digits[0])


# ---------------------------------------------------------------------------------------------------------
# Statistics: one sample per trial, Welch standard errors, the verdict rule
# ---------------------------------------------------------------------------------------------------------


def trial_means(cells: pd.DataFrame) -> pd.Series:
    """Each trial's mean accuracy over `cells` (a trial: its run id, else its point and seed)."""
    if "run_id" in cells:
        keys = ["run_id"]
    else:
        keys = [c for c in cells.columns if c.startswith(("data.", "model.", "train."))] + ["seed"]
        keys = [k for k in keys if k in cells]
    return cells.groupby(keys, dropna=False)["accuracy"].mean()


def seeds_of(cells: pd.DataFrame) -> int:
    return int(cells["seed"].nunique()) if "seed" in cells else 1


@dataclass(frozen=True)
class Side:
    """One compared model (or pooled points): its trial means over the compared cells."""

    name: str
    samples: pd.Series
    seeds: int

    @classmethod
    def of(cls, name: str, cells: pd.DataFrame) -> Side:
        return cls(name, trial_means(cells), seeds_of(cells))

    @property
    def mean(self) -> float:
        return float(self.samples.mean()) if len(self.samples) else math.nan

    @property
    def variance_of_mean(self) -> float:
        n = len(self.samples)
        return float(self.samples.var(ddof=1)) / n if n > 1 else math.nan


@dataclass(frozen=True)
class Contrast:
    """sum(weight * mean) over sides, e.g. better - worse, or (a - b) - (c - d); positive = the claim."""

    terms: tuple[tuple[float, Side], ...]
    label: str

    @property
    def value(self) -> float:
        return round(sum(w * s.mean for w, s in self.terms), 9)  # equal means give 0, not float noise

    @property
    def standard_error(self) -> float:
        return round(math.sqrt(sum(w * w * s.variance_of_mean for w, s in self.terms)), 9)

    @property
    def seeds(self) -> int:
        return min(s.seeds for _, s in self.terms)

    def describe(self) -> str:
        se = self.standard_error
        spread = f" ± {se:.2f} SE" if not math.isnan(se) else ""
        return f"{self.label}: difference {self.value:+.2f}{spread} ({self.seeds} seed(s))"


def difference(better: Side, worse: Side, where: str = "") -> Contrast:
    """better - worse, labelled "where: better 0.90 vs worse 0.10"."""
    label = f"{better.name} {better.mean:.2f} vs {worse.name} {worse.mean:.2f}"
    return Contrast(((1.0, better), (-1.0, worse)), f"{where}: {label}" if where else label)


def judge(contrasts: Sequence[Contrast], extra_not_held: str = "") -> tuple[str, str]:
    """The verdict of a claim made of `contrasts` (each must be positive), with its evidence.

    `extra_not_held`: a reason the claim fails whatever the seeds say (e.g. basic extrapolates)."""
    evidence = "; ".join(c.describe() for c in contrasts)
    if extra_not_held:
        evidence = f"{extra_not_held}; {evidence}"
    seeds = min(c.seeds for c in contrasts)
    if seeds < MIN_SEEDS:
        held = not extra_not_held and all(c.value > 0 for c in contrasts)
        why = f"fewer than {MIN_SEEDS} seeds: the sign of the difference only"
        return (SUGGESTS_HELD if held else SUGGESTS_NOT_HELD), f"{why}; {evidence}"
    z = STANDARD_ERRORS
    if extra_not_held or any(c.value + z * c.standard_error <= 0 for c in contrasts):
        return NOT_HELD, f"a difference is at most 0 even {z:g} SE up; {evidence}"
    if all(c.value - z * c.standard_error > 0 for c in contrasts):
        return HELD, f"every difference exceeds {z:g} SE; {evidence}"
    return NOT_TESTABLE, f"the seeds cannot tell: a difference lies within {z:g} SE of 0; {evidence}"


def _untestable(why: str) -> tuple[str, str]:
    return NOT_TESTABLE, why


def unlearned(sides: dict[str, pd.DataFrame], where: str) -> str:
    """'' when every side reached LEARNED on its in-range cells, else the reason (with the numbers)."""
    means = {name: float(cells["accuracy"].mean()) for name, cells in sides.items()}
    missing = [name for name, mean in means.items() if math.isnan(mean)]
    if missing:
        return f"no in-range cells ({where}) for {', '.join(missing)}"
    low = {name: mean for name, mean in means.items() if mean < LEARNED}
    if not low:
        return ""
    listed = ", ".join(f"{name} {mean:.2f}" for name, mean in low.items())
    return f"not learned in range: {listed} on {where}"


# ---------------------------------------------------------------------------------------------------------
# The claims
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
        return _untestable("; ".join(skipped) or needs)
    status, evidence = judge(contrasts)
    return status, "; ".join([evidence, *skipped])


def lower_one_digit_weight_hurts(frame: pd.DataFrame) -> tuple[str, str]:
    """The lowest 1-digit weight whose model learned against the highest; weights whose models did not
    learn in range (the paper's weight 0 fails its 1-digit cells) are left out, and listed."""
    cells = measured(frame)
    by_weight = {float(w): c for w, c in cells.groupby("data.one_digit_weight")}
    if len(by_weight) < 2:
        return _untestable("needs trials with at least two 1-digit weights")
    learned, skipped = [], []
    for weight, chosen in sorted(by_weight.items()):
        why = unlearned({f"weight {weight:g}": small_products(chosen)}, MUL_IN_RANGE)
        (skipped if why else learned).append(why or weight)
    if len(learned) < 2 or learned[-1] != max(by_weight):
        return _untestable("; ".join(skipped) or "needs two weights whose models learned")
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
        return _untestable(
            "the paper's claim (tb:acc_dataformat) is about GPT-2 fine-tuned from its pretrained weights; "
            "this sweep has only random-init runs, which cannot test it"
        )
    cells = cells[cells["model.init"] == "pretrained"]
    reversed_addends = cells["data.reverse_addends"].astype(str).str.lower().isin(["true", "1"])
    recursive = cells[(cells["data.format"] == "recursive_scratchpad") & reversed_addends]
    basic = cells[cells["data.format"] == "basic"]
    spaced = cells[cells["data.format"] == "random_space"]
    if basic.empty or spaced.empty or recursive.empty or beyond_training(cells).empty:
        return _untestable(
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
        return _untestable(why)
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
    where = f"{_digits(beyond_training(cells))} digits (beyond training, init=pretrained)"
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
            return _untestable(f"init={init}: {why}")
        none, learned = (Side.of(p, beyond_training(positions[p])) for p in ("none", "learned"))
        label = f"init={init}, regular data, {_digits(beyond_training(by_init))} digits"
        contrasts.append(difference(none, learned, label))
    if not contrasts:
        return _untestable("needs learned and none trials with regular test cells beyond the training length")
    return judge(contrasts)


def random_embed_fixes_repetitive(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    cells = cells[cells["model.init"] == "random"]
    positions = _by_position(cells)
    if not {"none", "random_embed"} <= set(positions):
        return _untestable("needs none and random_embed trials from random init with repetitive test cells")
    regular = {
        p: within_training(positions[p][positions[p]["context"] == "regular"])
        for p in ("none", "random_embed")
    }
    why = unlearned(regular, "regular data in range")
    if why:
        return _untestable(why)
    repetitive = {p: positions[p][positions[p]["context"] == "repetitive"] for p in ("none", "random_embed")}
    if any(c.empty for c in repetitive.values()):
        return _untestable("needs repetitive test cells for none and random_embed")
    tags, none = Side.of("random_embed", repetitive["random_embed"]), Side.of("none", repetitive["none"])
    label = f"repetitive data, init=random, {_digits(repetitive['none'])} digits"
    return judge([difference(tags, none, label)])


def random_embed_extrapolates_addition(frame: pd.DataFrame) -> tuple[str, str]:
    cells = measured(frame)
    positions = _by_position(cells)
    if not {"random_embed", "learned", "none"} <= set(positions) or beyond_training(cells).empty:
        return _untestable("needs learned, none and random_embed cells beyond the training length")
    # the paper: without a position embedding the model "does not perform well" even in range, so only
    # random_embed and learned must have learned; none is compared as it is
    why = unlearned(
        {p: within_training(positions[p]) for p in ("random_embed", "learned")}, "the digit counts trained on"
    )
    if why:
        return _untestable(why)
    tags, learned, none = (
        Side.of(p, beyond_training(positions[p])) for p in ("random_embed", "learned", "none")
    )
    where = f"{_digits(beyond_training(cells))} digits (beyond training)"
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
        return _untestable(why)
    a, b = (
        Side.of(_mix_name(better), sides[(position, better)]),
        Side.of(_mix_name(worse), sides[(position, worse)]),
    )
    label = f"position={position}, dialogue context, {_digits(largest_digits(cells))}-digit sums"
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
        return _untestable(why)
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
    sums = _digits(largest_digits(cells))
    where = f"dialogue context, {sums}-digit sums, dia+random_space minus dia+basic: {listed}"
    return status, f"{where}; {evidence}"


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "mul_format",
        "padding + reversed product beats basic on the cells with more digits in total than the training "
        "max_digits (mean accuracy)",
        "tb:basic-5 vs tb:padding-5",
        MUL_IN_RANGE,
        padding_reverse_beats_basic,
    ),
    Claim(
        "mul_one_digit_weight",
        "a lower 1-digit weight hurts: the lowest weight's mean accuracy is below the highest weight's",
        "tb:padding_10_ratio",
        MUL_IN_RANGE + " (a weight whose model did not learn is left out; the lowest left is compared)",
        lower_one_digit_weight_hurts,
    ),
    Claim(
        "mul_simple_case",
        "first-step % augmentation helps more than n x 1 augmentation (mean accuracy, same max_digits)",
        "tb:onedigit_5-6a-d",
        MUL_IN_RANGE,
        first_step_beats_n_times_1,
    ),
    Claim(
        "add_length",
        "fine-tuned GPT-2, beyond the training length: basic does not extrapolate; random space a little; "
        "recursive scratchpad (reversed addends) most",
        "tb:acc_dataformat",
        "the digit counts trained on",
        scratchpad_extrapolation_order,
    ),
    Claim(
        "reverse_posembed",
        "on reversal, no position embedding generalises further than learned (regular data, beyond training)",
        "fig:testacc_rev",
        "regular data of the digit counts trained on",
        no_position_generalises_further,
    ),
    Claim(
        "reverse_posembed",
        "random embedding fixes repetitive data for models trained from scratch (random_embed beats none)",
        "fig:randembed",
        "regular data of the digit counts trained on",
        random_embed_fixes_repetitive,
    ),
    Claim(
        "add_posembed",
        "random embedding extrapolates addition further than learned or no position embedding",
        "fig:acc_add_rand",
        "the digit counts trained on (random_embed and learned; the paper's none fails there)",
        random_embed_extrapolates_addition,
    ),
    Claim(
        "nl_mix",
        "with learned positions, dialogue + random-space data beats dialogue alone on the largest sums "
        "(dialogue context)",
        "tb:acc_nldia_a",
        NL_IN_RANGE,
        random_space_beats_dialogue_alone,
    ),
    Claim(
        "nl_mix",
        "with learned positions, dia+random_space beats dia+basic on the largest sums (dialogue context)",
        "tb:acc_nldia_a",
        NL_IN_RANGE,
        random_space_beats_basic_with_learned,
    ),
    Claim(
        "nl_mix",
        "no position embedding and random embedding close that gap (dia+random_space minus dia+basic is "
        "smaller than with learned)",
        "tb:acc_nldia_a",
        NL_IN_RANGE,
        positions_close_the_gap,
    ),
)


def evaluate_findings(frame: pd.DataFrame, grid: str) -> list[Finding]:
    """Every claim the grid tests, judged on the per-seed cells (`analysis.load.Sweep.cells`)."""
    out = []
    for claim in (c for c in CLAIMS if c.grid == grid):
        status, evidence = claim.check(frame)
        threshold = f"learned = mean >= {LEARNED:g} on {claim.learned_on}"
        out.append(Finding(grid, f"{claim.text} [{claim.source}]", status, f"{evidence} ({threshold})"))
    return out


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
# The demo grid (`make demo`): the answer's format on short addition. The claim is about learning inside the
# training range itself (the plain answer is not learned in the budget where the padded, reversed one is),
# so the competence gate is on the better side only: the task must be learnable at this budget.
# ---------------------------------------------------------------------------------------------------------


def padded_reversed_answer_beats_plain(frame: pd.DataFrame) -> tuple[str, str]:
    cells = within_training(measured(frame))
    padded = cells[cells["data.format"] == "padding_reverse"]
    basic = cells[cells["data.format"] == "basic"]
    if padded.empty or basic.empty:
        return _untestable("needs padding_reverse and basic trials with cells in the training range")
    why = unlearned({"padding_reverse": padded}, "the training range")
    if why:
        return _untestable(why)
    where = f"{_digits(cells)}-digit sums (training range)"
    return judge([difference(Side.of("padding_reverse", padded), Side.of("basic", basic), where)])


CLAIMS += (
    Claim(
        "demo",
        "a padded answer written least significant digit first is learned where the plain answer is not "
        "(the paper's padding + reversed product finding for multiplication, on <=3-digit addition)",
        "tb:basic-5 vs tb:padding-5",
        "the padded reversed answer's cells in the training range (the plain answer's failure there is "
        "the claim)",
        padded_reversed_answer_beats_plain,
    ),
)
