"""The verdict rules (experiments/verdicts.py) on known inputs: paired and Welch t intervals and Holm's
correction against scipy.stats, one point a side, the per-seed competence gate, cells read through their paper
counterparts, and claims judged on the seeds that chose their budget."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from synthetic import paper_or, synthetic_sweep

import lab  # noqa: F401  (registers the lab's grids these tests read)
from analysis.findings import NOT_TESTABLE, Finding, evaluate_findings, outcome_of
from experiments.claim import Claim
from experiments.decide import decide_family
from experiments.intervals import holm, paired_interval, welch_interval
from experiments.paper import digit_map_of
from experiments.registry import EXPERIMENTS, claims_for
from experiments.verdicts import (
    CANNOT_TELL,
    HELD,
    NOT_HELD,
    Contrast,
    PooledConfigurations,
    Side,
    compared,
    compared_cells,
    competence,
    difference,
    untestable,
)
from sweeps.grids import GRIDS
from sweeps.scales import get_scale
from sweeps.storage import digit_map as scale_map

BETTER = [0.61, 0.55, 0.72, 0.58, 0.66]
WORSE = [0.50, 0.52, 0.60, 0.49, 0.63]


def side_frame(values: list[float], seeds: list[int] | None = None, **config) -> pd.DataFrame:
    """One cell per seed of one point (`config`: its axes)."""
    seeds = seeds if seeds is not None else list(range(len(values)))
    frame = pd.DataFrame({"seed": seeds, "accuracy": values, "run_id": [f"r{s}" for s in seeds]})
    for key, value in {"data.format": "basic", "train.lr": 1e-3, **config}.items():
        frame[key] = value
    return frame


def test_the_paired_interval_is_scipys_ttest_rel() -> None:
    ours = paired_interval(np.subtract(BETTER, WORSE), range(5))
    theirs = stats.ttest_rel(BETTER, WORSE, alternative="greater")
    ci = stats.ttest_rel(BETTER, WORSE).confidence_interval(0.95)
    assert ours.p == pytest.approx(theirs.pvalue) and ours.df == theirs.df == 4
    assert (ours.low, ours.high) == pytest.approx((ci.low, ci.high))


def test_the_welch_interval_is_scipys_unequal_variance_ttest() -> None:
    better, worse = BETTER, [*WORSE[:3], 0.3]  # 5 against 4 seeds
    ours = welch_interval([(1.0, better), (-1.0, worse)])
    theirs = stats.ttest_ind(better, worse, equal_var=False, alternative="greater")
    ci = stats.ttest_ind(better, worse, equal_var=False).confidence_interval(0.95)
    assert ours.p == pytest.approx(theirs.pvalue) and ours.df == pytest.approx(theirs.df)
    assert (ours.low, ours.high) == pytest.approx((ci.low, ci.high))


def test_sides_sharing_their_seeds_are_paired_others_welch() -> None:
    paired = difference(Side.of("a", side_frame(BETTER)), Side.of("b", side_frame(WORSE)))
    assert paired.paired and paired.interval.p == pytest.approx(
        stats.ttest_rel(BETTER, WORSE, alternative="greater").pvalue
    )
    apart = difference(Side.of("a", side_frame(BETTER)), Side.of("b", side_frame(WORSE, [5, 6, 7, 8, 9])))
    assert not apart.paired and apart.interval.p == pytest.approx(
        stats.ttest_ind(BETTER, WORSE, equal_var=False, alternative="greater").pvalue
    )


def test_holm_is_the_step_down_adjustment_of_scipys_p_values() -> None:
    """Three claims' one-sided p from scipy, adjusted by hand: sorted p times (m - rank), kept monotone."""
    samples = [(BETTER, WORSE), ([0.9, 0.8, 0.85], [0.5, 0.6, 0.55]), ([0.5, 0.6, 0.4], [0.45, 0.5, 0.5])]
    p = [stats.ttest_rel(a, b, alternative="greater").pvalue for a, b in samples]
    order = np.argsort(p)
    expected = [0.0] * 3
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * p[i]))
        expected[i] = running
    assert holm([*p, math.nan]) == pytest.approx([*expected, math.nan], nan_ok=True)


def test_a_claim_held_alone_cannot_be_told_beside_others() -> None:
    """p = 0.0086 alone is held (< 0.025); Holm over three such claims makes it 3 x 0.0086 = 0.026."""
    one = compared([difference(Side.of("a", side_frame(BETTER)), Side.of("b", side_frame(WORSE)))])
    assert one.p == pytest.approx(0.0086, abs=1e-4)
    assert decide_family([one])[0][0] == HELD
    assert [v[0] for v in decide_family([one, one, one])] == [CANNOT_TELL] * 3
    assert "seeds per side would" in decide_family([one, one, one])[0][1]


def test_a_pooled_pair_of_configurations_is_refused() -> None:
    pooled = pd.concat(
        [side_frame([0.8, 0.9, 0.7]), side_frame([0.6, 0.5, 0.7], [3, 4, 5], **{"train.lr": 1e-5})]
    )
    with pytest.raises(PooledConfigurations, match=r"train\.lr"):
        Side.of("none", pooled)
    claim = Claim("a beats b", "tb:x", lambda f, _: compared([difference(Side.of("a", f), Side.of("b", f))]))
    outcome = outcome_of(claim, pooled)
    assert outcome.untestable.startswith("a pools 2 configurations")


def test_one_seed_below_the_gate_makes_a_claim_not_testable_though_the_mean_is_above() -> None:
    cells = side_frame([1.0, 1.0, 0.85])  # mean 0.95
    cells = cells.assign(context="main", row_digits=pd.NA, col_digits=2)
    why, _on = competence({"basic": cells}, None, lambda c: c, "every cell")
    assert why.startswith("basic not learned: seed 2 0.85 on 2 digits (1 of 3 seeds below 0.9")
    assert (
        competence(
            {"basic": side_frame([1.0, 0.9, 0.9]).assign(context="main", row_digits=pd.NA, col_digits=2)},
            None,
            lambda c: c,
            "",
        )[0]
        == ""
    )


def test_cells_are_gated_and_compared_by_their_paper_counterparts() -> None:
    """At cpu scale (5 digits -> 3) cpu 2x2 stands for the paper's 2x2, which the paper's basic-5 model
    learned (0.99): it is gated, not compared; cpu 3x3 stands for the paper's 5x5."""
    sweep = synthetic_sweep("mul_format_long", paper_or(0.0), "cpu", seeds=(3,))
    cells = sweep.cells[sweep.cells["epoch"] == sweep.cells["final_epoch"]]
    digit_map = digit_map_of(json.dumps(scale_map(GRIDS["mul_format_long"], get_scale("cpu"))))
    basic, padded = (cells[cells["data.format"] == f] for f in ("basic", "padding_reverse"))
    _why, on = competence({"basic": basic}, digit_map, lambda c: c, "")
    gate = "1x1, 1x2, 1x3 (paper 1x5), 2x1, 2x2, 3x1 (paper 5x1)"
    assert on == f"gated on basic: {gate}, where the paper's model reached 0.9"
    better, worse, which = compared_cells(padded, basic, digit_map, lambda c: c, "")
    assert (
        which
        == "cells 2x3 (paper 2x5), 3x2 (paper 5x2), 3x3 (paper 5x5), where the paper's table contrasts them"
    )
    assert len(better) == len(worse) == 3


def test_a_claim_judged_on_its_presearch_seeds_is_not_testable() -> None:
    """A sweep's `presearch_seeds` tag names the seeds that chose its budget (mul_format_long's: 0-2, as
    its sweeps record them): those seeds judge nothing."""
    sweep = synthetic_sweep("mul_format_long", paper_or(0.0), "cpu", seeds=3)  # seeds 0, 1, 2
    cpu = digit_map_of(json.dumps(scale_map(GRIDS["mul_format"], get_scale("cpu"))))
    chose = json.dumps(list(GRIDS["mul_format_long"].presearch_seeds))
    (found,) = evaluate_findings(sweep.cells, "mul_format_long", cpu, chose)
    assert found.status == NOT_TESTABLE and "judged on the seeds that chose its budget" in found.evidence
    # the tag says which seeds chose it
    (found,) = evaluate_findings(sweep.cells, "mul_format_long", cpu, "[7]")
    # (judged: the synthetic seeds agree exactly, so 3 seeds' exact sign test, 0.125, cannot tell)
    assert found.status == CANNOT_TELL and found.numbers["seeds"] == "0, 1, 2 (paired)"
    assert "zero spread" in found.evidence
    # seeds beside the pre-search's: only the fresh ones are judged
    sweep = synthetic_sweep("mul_format_long", paper_or(0.0), "cpu", seeds=(1, 2, 3, 4, 5))
    (found,) = evaluate_findings(sweep.cells, "mul_format_long", cpu, chose)
    assert found.numbers["seeds"] == "3, 4, 5 (paired)"
    # the variants declare their pre-search (their archives predate the tag): the same seeds, no tag needed
    assert EXPERIMENTS["mul_format_long"].grid.presearch_seeds == (0, 1, 2)
    assert EXPERIMENTS["mul_simple_case_long"].grid.presearch_seeds == (0, 1, 2)
    # a claim is written once, on the parent experiment, and its variants hold the same objects
    assert claims_for("mul_format_long") is EXPERIMENTS["mul_format"].claims
    assert claims_for("any_new_variant", variant_of="mul_simple_case") is claims_for("mul_simple_case")


def test_the_gate_meets_a_threshold_within_float_rounding() -> None:
    """A mean of 8.1/9 prints 0.90 and is stored 0.8999999999999999: it has met 0.9."""
    value = 8.1 / 9
    cells = side_frame([value]).assign(context="main", row_digits=pd.NA, col_digits=2)
    assert value < 0.9 and competence({"x": cells}, None, lambda c: c, "")[0] == ""


def test_a_contrast_of_four_sides_pairs_over_their_shared_seeds() -> None:
    a, b, c, d = (
        Side.of(n, side_frame(v)) for n, v in zip("abcd", [BETTER, WORSE, WORSE, BETTER], strict=True)
    )
    contrast = Contrast(((1.0, a), (-1.0, b), (-1.0, c), (1.0, d)), "gap")
    diffs = 2 * (np.array(BETTER) - np.array(WORSE))
    assert contrast.interval.p == pytest.approx(stats.ttest_1samp(diffs, 0, alternative="greater").pvalue)


def test_a_claim_is_one_check_plus_one_entry(monkeypatch) -> None:
    """docs/DESIGN.md's claim recipe: a check and one Claim in its experiment's module
    (experiments/catalog/); the experiment's sweeps and its budget variants' are then judged by it, a
    variant this checkout does not declare too (its sweep's `variant_of` tag), nothing else registered."""
    from analysis import findings
    from experiments import registry
    from experiments.verdicts import untestable

    def check_needs_more(frame: pd.DataFrame, digit_map=None):
        return untestable(f"{len(frame)} cells: a recipe's check")

    claim = Claim("a claim written once", "tb:none", check_needs_more)
    experiment = dataclasses.replace(registry.EXPERIMENTS["position_schemes"], claims=(claim,))
    longer = experiment.variant("position_schemes_long", "longer", {"train.max_steps": 9_000}, scale="cpu")
    monkeypatch.setitem(registry.EXPERIMENTS, "position_schemes", experiment)
    monkeypatch.setitem(registry.EXPERIMENTS, longer.name, longer)
    for grid, variant_of in (
        ("position_schemes", ""),
        ("position_schemes_long", "position_schemes"),
        ("position_schemes_elsewhere", "position_schemes"),
    ):
        judged = findings.evaluate_findings(pd.DataFrame(), grid, variant_of=variant_of)
        (mine,) = [f for f in judged if f.claim.startswith("a claim written once")]
        assert mine.status == findings.NOT_TESTABLE and "a recipe's check" in mine.evidence


def test_a_difference_with_no_spread_gets_an_exact_test_not_p_zero() -> None:
    """Every seed 1.00 vs 0.00: the t statistic is undefined. Paired, the exact sign test gives 0.5^n;
    two sides of different seeds, Mann-Whitney's 1 / C(n1 + n2, n1); the evidence says 'zero spread'."""
    ones, zeros = [1.0] * 5, [0.0] * 5
    paired = paired_interval(np.subtract(ones, zeros), range(5))
    assert paired.zero_spread and paired.p == pytest.approx(0.5**5) and math.isnan(paired.low)
    assert paired.p == pytest.approx(stats.binomtest(5, 5, 0.5, alternative="greater").pvalue)
    assert "zero spread" in paired.describe() and "p = 0.031" in paired.describe()
    apart = welch_interval([(1.0, ones), (-1.0, zeros)])
    assert apart.zero_spread and apart.p == pytest.approx(1 / math.comb(10, 5))
    # five seeds with no spread: 0.031 is not below 0.025, so the seeds cannot tell, and say how many would
    outcome = compared([difference(Side.of("a", side_frame(ones)), Side.of("b", side_frame(zeros)))])
    status, evidence, _p = decide_family([outcome])[0]
    assert status == CANNOT_TELL and "exact test needs about 6 seeds per side" in evidence
    six = compared([difference(Side.of("a", side_frame([1.0] * 6)), Side.of("b", side_frame([0.0] * 6)))])
    assert decide_family([six])[0][0] == HELD


def test_no_verdict_on_fewer_than_three_seeds_a_side() -> None:
    two = compared([difference(Side.of("a", side_frame([0.9, 0.95])), Side.of("b", side_frame([0.1, 0.2])))])
    status, evidence, p = decide_family([two])[0]
    assert status == NOT_TESTABLE and "a verdict needs at least 3 seeds a side" in evidence
    assert math.isnan(p) and math.isnan(two.p)
    assert not Finding("g", "c", status, evidence, two).judged  # its contrasts are for reference only
    three = compared(
        [difference(Side.of("a", side_frame([0.9, 0.95, 0.9])), Side.of("b", side_frame([0.1] * 3)))]
    )
    assert Finding("g", "c", *decide_family([three])[0][:2], three).judged


def test_held_and_not_held_read_the_same_holm_adjusted_level() -> None:
    """A claim against the paper's direction at one-sided p 0.0086 is not held alone; beside two other
    such claims Holm makes it 0.026: the seeds cannot tell, as for held in the mirror case."""
    against = compared([difference(Side.of("b", side_frame(WORSE)), Side.of("a", side_frame(BETTER)))])
    assert against.p_against == pytest.approx(0.0086, abs=1e-4)
    assert decide_family([against])[0][0] == NOT_HELD
    assert [v[0] for v in decide_family([against] * 3)] == [CANNOT_TELL] * 3


def test_a_model_right_only_on_its_training_problems_is_named_memorised() -> None:
    """Gated cell 2x2 at 0.30 overall, 0.98 on the test problems seen in training, 0.17 on the unseen."""
    cells = side_frame([0.3, 0.3, 0.3]).assign(
        context="main",
        row_digits=2,
        col_digits=2,
        n=100,
        n_seen=20.0,
        accuracy_seen=0.98,
        accuracy_unseen=0.17,
    )
    why, _on = competence({"basic": cells}, None, lambda c: c, "")
    assert "memorised: seed 0 on 2x2 is 0.98 on the test problems it was trained on and 0.17" in why
    assert "(20 of 100 seen)" in why
    learned_unseen = cells.assign(accuracy_seen=0.5, accuracy_unseen=0.25)
    assert "memorised" not in competence({"basic": learned_unseen}, None, lambda c: c, "")[0]


def test_a_claim_may_read_the_unseen_problems_only() -> None:
    """The same sweep judged on every test problem and on the unseen ones: a memorising 'better' side wins
    on the first and is not learned on the second; a sweep without the split cannot be read so."""
    better = side_frame([0.95, 0.96, 0.97], **{"data.format": "padding_reverse"})
    worse = side_frame([0.5, 0.52, 0.48])
    cells = pd.concat([better, worse], ignore_index=True)
    cells = cells.assign(context="main", row_digits=pd.NA, col_digits=2)
    cells["accuracy_unseen"] = [0.3, 0.35, 0.32, 0.5, 0.52, 0.48]

    def check(frame: pd.DataFrame, _map=None):
        sides = {f: frame[frame["data.format"] == f] for f in ("padding_reverse", "basic")}
        why, _on = competence({"better": sides["padding_reverse"]}, None, lambda c: c, "")
        if why:
            return untestable(why)
        return compared([difference(Side.of("a", sides["padding_reverse"]), Side.of("b", sides["basic"]))])

    every = Claim("a beats b", "tb:x", check)
    unseen = Claim("a beats b on unseen problems", "tb:x", check, reads="accuracy_unseen")
    assert outcome_of(every, cells).contrasts
    assert outcome_of(unseen, cells).untestable.startswith("better not learned: seed 0 0.30")
    assert "did not record" in outcome_of(unseen, cells.drop(columns="accuracy_unseen")).untestable


def test_a_p_value_below_what_the_text_rounds_to_reads_as_an_inequality() -> None:
    from experiments.intervals import p_is

    assert p_is(0.0044) == "p = 0.0044" and p_is(4.4e-6) == "p < 0.0001"
    paired = paired_interval(
        np.subtract([0.9, 0.95, 1.0, 0.97, 0.99], [0.01, 0.02, 0.0, 0.03, 0.01]), range(5)
    )
    assert "one-sided p < 0.0001" in paired.describe() and "= <" not in paired.describe()


def test_the_holm_family_is_named_by_its_verdicts_as_the_glance_counts_claims_apart() -> None:
    """Holm's family is one member per verdict reached (a claim judged in two grids is two): the evidence
    says "over N verdicts", not claims, so it reads beside the glance's count of claims judged once."""
    one = compared([difference(Side.of("a", side_frame(BETTER)), Side.of("b", side_frame(WORSE)))])
    assert "Holm-adjusted p = 0.0086 over 1 verdict;" in decide_family([one])[0][1]
    told = decide_family([one, one, one])[0][1]
    assert "over 3 verdicts;" in told and "claim(s)" not in told


def test_seeds_that_would_tell_an_effect_against_the_paper_say_they_would_tell_it_against() -> None:
    """The weakest contrast running against the paper's direction: more seeds would make the claim not
    held, and the evidence says so; an effect the paper's way keeps the plain sentence."""
    against = compared([difference(Side.of("b", side_frame(WORSE)), Side.of("a", side_frame(BETTER)))])
    status, evidence, _p = decide_family([against] * 3)[0]
    assert status == CANNOT_TELL
    assert re.search(
        r"about \d+ seeds per side would tell, in the direction against the paper's, at the observed mean "
        r"and spread; ",
        evidence,
    )
    mirror = compared([difference(Side.of("a", side_frame(BETTER)), Side.of("b", side_frame(WORSE)))])
    plain = decide_family([mirror] * 3)[0][1]
    assert re.search(r"at the observed mean and spread about \d+ seeds per side would; ", plain)
    assert "against the paper's" not in plain
    # the count is the same either way: the spread is, and the interval is put clear of 0 on its own side
    assert against.contrasts[0].seeds_to_tell(0.01) == mirror.contrasts[0].seeds_to_tell(0.01)
