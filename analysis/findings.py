"""The paper's claims, each stated once, judged on a sweep's per-seed numbers, each verdict with its reason.

`CLAIMS` is the catalogue: each claim names the grid that tests it, the paper label it comes from, the
in-range cells on which its compared models must have learned, and the check (in `analysis.checks`) that
reads it off the numbers by the rules of `analysis.verdicts` (held, not held, the seeds cannot tell, not
testable: see there). A claim whose grid's budget a pre-search chose is judged only on other seeds: the
sweep's parent-run tag `presearch_seeds`, else the claim's own declaration (`Claim.presearch_seeds`, for the
sweeps archived before the tag; their archives are left as they ran). Claims are written over relative
notions, not the paper's digit counts, so that they read the same at every scale.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

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
    CANNOT_TELL,
    HELD,
    LEARNED,
    NOT_HELD,
    NOT_TESTABLE,
    VERDICTS,
    Outcome,
    PooledConfigurations,
    decide_family,
    untestable,
)

#: the parent-run tag of a sweep whose budget or setting a pre-search chose: that pre-search's seeds (JSON)
PRESEARCH_TAG = "presearch_seeds"


@dataclass(frozen=True)
class Finding:
    grid: str
    claim: str
    status: str
    evidence: str
    #: the claim's contrasts as the analysis read them (Holm's correction is over a report's findings)
    outcome: Outcome = field(default_factory=Outcome, repr=False, compare=False)
    #: Holm-adjusted one-sided p over the claims judged in the same report (NaN: not judged)
    p_holm: float = math.nan

    @property
    def numbers(self) -> dict[str, str]:
        """effect, 95% CI, one-sided p, Holm-adjusted p and seeds of the claim's weakest contrast."""
        contrasts = self.outcome.contrasts
        if not contrasts or self.outcome.untestable:
            return {"effect": "", "95% CI": "", "p": "", "p (Holm)": "", "seeds": ""}
        i = max((c.interval for c in contrasts), key=lambda i: (math.isnan(i.p), i.p))
        ci = "" if math.isnan(i.low) else f"[{i.low:+.3f}, {i.high:+.3f}]"
        return {
            "effect": f"{i.effect:+.3f}",
            "95% CI": ci,
            "p": "" if math.isnan(i.p) else f"{i.p:.2g}",
            "p (Holm)": "" if math.isnan(self.p_holm) else f"{self.p_holm:.2g}",
            "seeds": ", ".join(map(str, i.seeds)) + (" (paired)" if i.paired else " (Welch)"),
        }


@dataclass(frozen=True)
class Claim:
    """One claim of the paper, the grid that tests it, which cells show a compared model learned the task,
    and the check that reads the claim off the numbers."""

    grid: str
    text: str
    source: str
    #: the cells each compared model must have learned where the paper has no table for it
    learned_on: str
    check: Callable[[pd.DataFrame, dict[int, int] | None], Outcome]
    #: the seeds of the pre-search that chose the grid's budget, for sweeps archived before they recorded
    #: it (parent run tag `presearch_seeds`, which wins when present); only other seeds judge the claim
    presearch_seeds: tuple[int, ...] = ()
    #: where that pre-search is recorded
    presearch: str = ""
    #: which accuracy the check reads, gate and contrast alike: `accuracy` (every test problem, as the
    #: paper's tables: seen in training or not) or `accuracy_unseen` (only the test problems that are not
    #: training problems: what a model generalised to)
    reads: str = "accuracy"


#: mul_format_long's 12,000 steps: a GPU pre-search on seeds 0-2 (mul_simple_case_long took the same budget)
MUL_BUDGET_PRESEARCH = "docs/presearch/mul_format_steps.jsonl"


@dataclass(frozen=True)
class ArchivedVariant:
    """A variant whose sweeps were archived before a sweep recorded its parent grid (tag `variant_of`) and
    its pre-search's seeds (tag `presearch_seeds`): what those tags would say. A new variant needs no
    entry."""

    parent: str
    presearch_seeds: tuple[int, ...]
    presearch: str


#: the budget variants of sweeps.grids whose archives (docs/results/sweeps/) predate the tags
ARCHIVED_VARIANTS: dict[str, ArchivedVariant] = {
    "mul_format_long": ArchivedVariant("mul_format", (0, 1, 2), MUL_BUDGET_PRESEARCH),
    "mul_simple_case_long": ArchivedVariant("mul_simple_case", (0, 1, 2), MUL_BUDGET_PRESEARCH),
}

CLAIMS: tuple[Claim, ...] = (
    Claim(
        "mul_format",
        "padding + reversed product beats basic on the cells the paper's tables contrast (mean accuracy)",
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
    Claim(
        "demo",
        "a padded answer written least significant digit first is learned where the plain answer is not "
        "(the paper's padding + reversed product finding for multiplication, on <=3-digit addition)",
        "no table: the paper shows it on multiplication (tb:basic-5 vs tb:padding-5), not on addition",
        "the padded reversed answer's cells in the training range (the plain answer's failure there is "
        "the claim)",
        padded_reversed_answer_beats_plain,
    ),
)


def claims_for(grid: str, variant_of: str = "") -> list[Claim]:
    """The claims a sweep of `grid` is judged by: its own, and its parent's when it is a variant (the
    sweep's `variant_of` tag, else `ARCHIVED_VARIANTS`). A claim is written once, on the parent."""
    archived = ARCHIVED_VARIANTS.get(grid)
    parent = variant_of or (archived.parent if archived else "")
    return [c for c in CLAIMS if c.grid == grid or (parent and c.grid == parent)]


def presearch_seeds_of(claim: Claim, tag: str | None, grid: str = "") -> tuple[int, ...]:
    """The seeds of the pre-search that chose the claim's budget: the sweep's `presearch_seeds` tag (JSON
    list) when it has one, else the declaration for sweeps archived before the tag (`ARCHIVED_VARIANTS`,
    or the claim's own)."""
    if tag:
        try:
            return tuple(int(s) for s in json.loads(tag))
        except (ValueError, TypeError):
            pass
    archived = ARCHIVED_VARIANTS.get(grid)
    return archived.presearch_seeds if archived else claim.presearch_seeds


def outcome_of(
    claim: Claim, frame: pd.DataFrame, digit_map=None, presearch_tag: str | None = None, grid: str = ""
) -> Outcome:
    """The claim read off the per-seed cells of a sweep of `grid` (the claim's own or a variant of it):
    seeds that chose its budget left out, pooled sides refused."""
    chose = presearch_seeds_of(claim, presearch_tag, grid)
    if chose and not frame.empty:
        fresh = frame[~frame["seed"].isin(chose)]
        if fresh.empty:
            seeds = ", ".join(map(str, sorted(frame["seed"].dropna().astype(int).unique())))
            archived = ARCHIVED_VARIANTS.get(grid)
            source = claim.presearch or (
                archived.presearch if archived else "the sweep's presearch_seeds tag"
            )
            why = (
                f"judged on the seeds that chose its budget: seeds {seeds}, and the pre-search ({source}) "
                f"ran seeds {', '.join(map(str, chose))}; fresh seeds are needed"
            )
            return untestable(why, [f"for reference, not a verdict: {_as_read(claim, frame, digit_map)}"])
        frame = fresh
    if claim.reads != "accuracy" and not frame.empty:
        if claim.reads not in frame or frame[claim.reads].isna().all():
            return untestable(f"the claim reads {claim.reads}, which the sweep's trials did not record")
        frame = frame.assign(accuracy=frame[claim.reads])
    try:
        return claim.check(frame, digit_map)
    except PooledConfigurations as err:
        return untestable(str(err))


def _as_read(claim: Claim, frame: pd.DataFrame, digit_map) -> str:
    """What the check reads on the given seeds (a claim's own pre-search seeds, shown for reference)."""
    try:
        outcome = claim.check(frame, digit_map)
    except PooledConfigurations as err:
        return str(err)
    if outcome.untestable:
        return outcome.untestable
    return "; ".join(c.describe() for c in outcome.contrasts)


def judged(grid: str, claims: list[tuple[Claim, Outcome]]) -> list[Finding]:
    """Findings of one report, Holm-corrected together (`analysis.verdicts.decide_family`)."""
    verdicts = decide_family([o for _, o in claims])
    return [
        Finding(grid or c.grid, f"{c.text} [{c.source}]", status, evidence, o, p)
        for (c, o), (status, evidence, p) in zip(claims, verdicts, strict=True)
    ]


def evaluate_findings(
    frame: pd.DataFrame,
    grid: str,
    digit_map: dict[int, int] | None = None,
    presearch_tag: str | None = None,
    variant_of: str = "",
) -> list[Finding]:
    """Every claim the grid tests (its parent's too, for a variant), judged on the per-seed cells
    (`analysis.load.Sweep.cells`), Holm's correction over the grid's claims (a report of several grids:
    `rejudge`)."""
    claims = [(c, outcome_of(c, frame, digit_map, presearch_tag, grid)) for c in claims_for(grid, variant_of)]
    return judged(grid, claims)


def rejudge(findings: list[Finding]) -> list[Finding]:
    """The findings of several sweeps judged as one report: Holm's correction over all of them."""
    verdicts = decide_family([f.outcome for f in findings])
    return [
        Finding(f.grid, f.claim, status, evidence, f.outcome, p)
        for f, (status, evidence, p) in zip(findings, verdicts, strict=True)
    ]


FINDING_COLUMNS = ["grid", "claim", "status", "effect", "95% CI", "p", "p (Holm)", "seeds", "evidence"]


def findings_frame(findings: list[Finding]) -> pd.DataFrame:
    rows = [
        {"grid": f.grid, "claim": f.claim, "status": f.status, **f.numbers, "evidence": f.evidence}
        for f in findings
    ]
    return pd.DataFrame(rows, columns=FINDING_COLUMNS)


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
    lines = [
        "| claim | status | effect | 95% CI | p | p (Holm) | seeds | evidence |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {f.claim} | **{f.status}** | " + " | ".join(f.numbers.values()) + f" | {f.evidence} |"
        for f in findings
    ]
    return "\n".join(lines) + "\n"
