"""The paper's claims, each stated once, judged on a sweep's per-seed numbers, each verdict with its reason.

`CLAIMS` is the catalogue: each claim names the grid that tests it, the paper label it comes from, the
in-range cells on which its compared models must have learned, and the check (in `analysis.checks`) that
reads it off the numbers by the rule of `analysis.verdicts` (held, not held, suggests, not testable: see
there). Claims are written over relative notions, not the paper's digit counts, so that they read the same
at every scale.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from analysis.checks import (
    MUL_IN_RANGE,
    NL_IN_RANGE,
    first_step_beats_n_times_1,
    lower_one_digit_weight_hurts,
    no_position_generalises_further,
    padded_reversed_answer_beats_plain,
    padding_reverse_beats_basic,
    positions_close_the_gap,
    random_embed_extrapolates_addition,
    random_embed_fixes_repetitive,
    random_space_beats_basic_with_learned,
    random_space_beats_dialogue_alone,
    scratchpad_extrapolation_order,
)
from analysis.verdicts import (  # noqa: F401  (the verdicts are re-exported: tests and scripts read them here)
    HELD,
    LEARNED,
    NOT_HELD,
    NOT_TESTABLE,
    SUGGESTS_HELD,
    SUGGESTS_NOT_HELD,
    VERDICTS,
)


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
        "mul_format_long",
        "padding + reversed product beats basic on the cells with more digits in total than the training "
        "max_digits (mean accuracy), at the budget where both learn",
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
        "mul_simple_case_long",
        "first-step % augmentation helps more than n x 1 augmentation (mean accuracy, same max_digits), at "
        "mul_format_long's budget",
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
