"""The `gpu` scale's section of docs/RESULTS.md (lab.gpu_section), read off the batches really banked from
lent GPUs: a claim whose compared models ran as separate parts of one batch is judged on both together, parts
at different settings are never pooled, a pre-search's seeds judge nothing, and a judged claim reaches the
findings at a glance."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.findings import NOT_TESTABLE
from lab.gpu_plan import load_gpu_plan
from lab.gpu_section import (
    fewer_digits_note,
    gpu_results,
    gpu_section,
    judged_findings,
    setting_key,
    summary_rows,
)
from lab.results.grids import GPU_BANK

JUDGED = "b3_mul_format_3digit_judged"
PRESEARCH = "a2_mul_presearch_batch512"
CLAIM = "[tb:basic-5 vs tb:padding-5]"


@pytest.fixture(scope="module")
def banked(tmp_path_factory: pytest.TempPathFactory):
    plan = [b for b in load_gpu_plan() if b.name in (PRESEARCH, JUDGED)]
    assert all((GPU_BANK / b.name).is_dir() for b in plan) and len(plan) == 2
    uri = f"sqlite:///{tmp_path_factory.mktemp('gpu')}/gpu.db"
    return {r.batch.name: r for r in gpu_results(GPU_BANK, plan, uri)}


def test_the_formats_of_a_judged_batch_are_read_together_and_judged_on_its_fresh_seeds(banked) -> None:
    b3 = banked[JUDGED]
    assert len(b3.parts) == 2 and len({p.setting for p in b3.parts}) == 1  # basic and padding_reverse
    (finding,) = [f for f in b3.findings if f.claim.endswith(CLAIM)]
    assert finding in judged_findings(b3) and finding.status != NOT_TESTABLE
    assert finding.numbers["seeds"] == "0, 1, 2, 3, 4 (paired)"  # both formats, seed by seed
    assert b3.seeds == [0, 1, 2, 3, 4]
    # what the archives hold: padding + reversed product 1.00 on 3-digit factors, basic far below on the
    # cells the paper contrasts (2x3, 3x2, 3x3): held, at any Holm family size of this page
    assert finding.status == "held" and float(finding.numbers["effect"]) > 0.5


def test_parts_at_different_settings_are_never_pooled_and_a_presearch_judges_nothing(banked) -> None:
    a2 = banked[PRESEARCH]
    settings = {p.name: p.setting for p in a2.parts}
    assert settings["mul_format_3_basic_b512"] == settings["mul_format_3_padding_reverse_b512"]
    assert settings["mul_format_5_padding_reverse_b512"] != settings["mul_format_3_basic_b512"]
    assert not judged_findings(a2)  # seeds 100-101 chose the budget
    assert all(f.status == NOT_TESTABLE for f in a2.findings)


def test_a_setting_is_grid_scale_and_sets_not_the_points_picked() -> None:
    (b3,) = [b for b in load_gpu_plan() if b.name == JUDGED]
    basic, padded = b3.parts
    assert basic.only != padded.only and setting_key(basic) == setting_key(padded)


def test_the_verdict_reaches_the_section_and_the_findings_at_a_glance(banked) -> None:
    results = [banked[PRESEARCH], banked[JUDGED]]
    text = gpu_section(results)
    assert f"### {JUDGED}" in text and f"### {PRESEARCH}" in text
    # the judged batch shows its cells beside the paper's, unseen problems apart; a pre-search does not
    judged_part = text.split(f"### {JUDGED}", 1)[1].split("### Claims", 1)[0]
    assert "#### mul: format=basic" in judged_part and "#### mul: format=padding_reverse" in judged_part
    assert "**unseen problems only (not in the training set)**" in judged_part and "**paper**" in judged_part
    assert "#### mul:" not in text.split(f"### {PRESEARCH}", 1)[1].split(f"### {JUDGED}", 1)[0]
    claims = text.split("### Claims at the `gpu` scale", 1)[1]
    assert "1 verdict reached" in claims and "**held**" in claims and JUDGED in claims
    assert "over every verdict of this page" in claims
    (row,) = summary_rows(results)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == f"mul_format (gpu: {JUDGED})" and cells[2] == "**held**"
    assert cells[-2] == "0, 1, 2, 3, 4" and float(cells[-1]) > 0  # finished seeds, wall minutes
    assert len(cells) == 10  # the findings-at-a-glance table's columns


def test_no_banked_batch_says_so(tmp_path: Path) -> None:
    assert gpu_results(tmp_path, load_gpu_plan(), f"sqlite:///{tmp_path}/gpu.db") == []
    assert "No batch is banked yet." in gpu_section([])


def test_a_part_of_fewer_digits_is_said_to_be_read_through_the_map_its_tables_use(banked) -> None:
    """The section's account of the 3-digit parts is the digit map the analysis reads them through: 3
    stands for the paper's 5 (its training maximum), as the judged batch's own tables label it."""
    text = gpu_section([banked[JUDGED]])
    assert fewer_digits_note() in text and "the paper ran no 3-digit model" not in text
    assert "its 1, 2, 3 digits stand for the paper's 1, 2, 5" in fewer_digits_note()
    assert "read its 3 x 3 cell beside the paper's 5-digit model's 5 x 5" in fewer_digits_note()
    assert "| 3 (paper 5) |" in text  # the tables the note describes
