"""The committed pre-search records (docs/presearch/): `python -m lab.presearch summary|budget` and how
the results report renders them. (The runner that wrote them is gone: `sweeps.offline` replaced it.)"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from lab.presearch import presearch_records, presearch_tables

ROOT = Path(__file__).resolve().parent.parent


def presearch(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "lab.presearch", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_committed_presearch_records_render():
    table = presearch_tables(presearch_records())
    assert "### cpu_tune_steps" in table and "### cpu_tune_hash" in table
    assert "task=mul,max_steps=3000" in table and "NVIDIA H200" in table
    assert "| dialogue: all | pure_addition: all |" in table  # nl_mix tests within its trained lengths


def test_summary_gives_each_point_its_mean_and_standard_error_over_seeds(tmp_path):
    def record(point, seed, accuracies, row_digits=None):
        cells = [
            {"context": "regular", "row_digits": row_digits, "col_digits": d, "accuracy": a}
            for d, a in accuracies.items()
        ]
        return {"point": point, "seed": seed, "test_acc": sum(accuracies.values()) / 2, "cells": cells}

    records = [
        record("position=learned", 0, {2: 1.0, 3: 0.5}),
        record("position=learned", 1, {2: 1.0, 3: 0.7}),
        record("position=learned", 2, {2: 1.0, 3: 0.9}),
        record("position=coupling", 0, {2: 0.4, 3: 0.2}),
        {"point": "position=coupling", "seed": 1, "error": "Traceback ..."},
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = subprocess.run(
        [sys.executable, "-m", "lab.presearch", "summary", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "| point | seeds | test_acc | 2 digits | 3 digits |"
    # 3 digits over seeds 0.5, 0.7, 0.9: mean 0.70, standard error 0.2 / sqrt(3) = 0.115...
    assert lines[2] == "| position=learned | 3 (0,1,2) | 0.85 ± 0.06 | 1.00 ± 0.00 | 0.70 ± 0.12 |"
    assert lines[3] == "| position=coupling | 1 (0) | 0.30 | 0.40 | 0.20 |"  # one seed: no spread
    assert "1 failed trial(s) left out." in done.stdout


def test_budget_fit_follows_a_logistic_curve_and_refuses_a_flat_one() -> None:
    """The fit recovers the budget of an exact log-odds-linear curve; a curve that does not rise gives no
    estimate; fewer than two budgets give no fit."""
    from lab.budget import fit_budgets

    def curve(steps: int) -> float:  # log-odds = -12 + 1.5 ln(steps): 0.9 at exp((ln 9 + 12) / 1.5)
        return 1 / (1 + math.exp(-(-12 + 1.5 * math.log(steps))))

    fit = fit_budgets([(s, curve(s)) for s in (1000, 2000, 4000)])
    assert fit is not None and fit.steps_to(0.9) == pytest.approx(
        math.exp((math.log(9) + 12) / 1.5), rel=1e-6
    )
    assert fit_budgets([(1000, 0.3), (3000, 0.2)]).steps_to(0.9) is None
    assert fit_budgets([(3000, 0.3)]) is None


def test_budget_table_reads_in_range_cells_and_marks_what_was_measured() -> None:
    """From the committed pre-search records: multiplication reads its small products, a point that
    reached 0.9 says so as a measurement, and points at one budget are left out."""
    from lab.budget import budget_table

    records = [
        json.loads(line)
        for path in sorted((ROOT / "docs" / "presearch").glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    table = budget_table(records).set_index("point")
    assert set(table.index) == {
        "format=basic,max_digits=5",  # mul_format_steps: 6,000 and 12,000 steps at the preset's rate
        "task=mul",
        "task=mul_basic",
        "task=add_scratchpad",
        "task=reverse_random_embed",
        "curriculum=0.0",
        "curriculum=0.5",
    }
    assert (
        table.loc["task=reverse_random_embed", "steps to 0.90 on every gated cell"]
        == "reached at 3,000 (measured)"
    )
    # the gate's reading: the lowest accuracy on the cells whose paper counterpart the paper's model learned
    # (cpu_tune_steps has no paper table: the cells in range, products of at most 5 digits together)
    assert table.loc["task=mul", "steps to 0.90 on every gated cell"].startswith("~210,000 (71x")
    assert table.loc["task=mul", "grid"] == "cpu_tune_steps"
    mul = next(r for r in records if r["point"] == "task=mul,max_steps=6000")
    cells = pd.DataFrame(mul["cells"])
    lowest = cells[cells["row_digits"] + cells["col_digits"] <= 5]["accuracy"].min()
    assert f"6,000: {lowest:.2f}" in table.loc["task=mul", "lowest gated-cell accuracy at steps"]


def test_budget_command_prints_the_table_of_points_run_at_several_budgets() -> None:
    done = presearch("budget", str(ROOT / "docs" / "presearch" / "cpu_tune_steps.jsonl"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(
        "| grid | point | seed | lowest gated-cell accuracy at steps | steps to 0.90 on every gated cell"
    )
    assert sum(line.startswith("| cpu_tune_steps |") for line in lines) == 4


def test_other_settings_make_another_point_and_one_budget_says_reached_or_not() -> None:
    """mul_format_steps ran basic at 6,000 and 12,000 steps, and at 6,000 with two other learning rates:
    the rates are points of their own (not points of the preset's budget series), and with `single` each
    point at one budget says whether it reached 0.9 in range, measured, with no extrapolation."""
    from lab.budget import budget_table, gate_accuracy

    records = [
        json.loads(line)
        for line in (ROOT / "docs" / "presearch" / "mul_format_steps.jsonl").read_text().splitlines()
    ]
    preset = [
        r
        for r in records
        if r["seed"] == 0 and r["config"]["data.format"] == "basic" and "train.lr" not in r["set"]
    ]
    expected = ", ".join(
        f"{r['steps']:,}: {gate_accuracy(pd.DataFrame(r['cells']), r['config'], r['scale'], r['grid']):.2f}"
        for r in sorted(preset, key=lambda r: r["steps"])
    )
    fitted = budget_table(records)
    assert set(fitted["point"]) == {"format=basic,max_digits=5"}  # the only point run at two budgets
    row = fitted[fitted["seed"] == 0].iloc[0]
    # the gate reads the paper's learned cells (2x2 among them): basic misses them at both budgets
    assert row["lowest gated-cell accuracy at steps"] == expected == "6,000: 0.20, 12,000: 0.35"
    assert row["steps to 0.90 on every gated cell"].startswith("~150,000")

    every = budget_table(records, single=True).set_index(["point", "seed"])
    assert ("format=basic,max_digits=5,train.lr=0.002", 0) in every.index
    assert ("format=padding_reverse,max_digits=5,train.lr=0.004", 2) in every.index
    for (point, _seed), found in every.iterrows():
        if "train.lr=" in point:  # one budget each: 6,000 steps
            assert found["lowest gated-cell accuracy at steps"].startswith("6,000: ")
        if point == "format=basic,max_digits=5,train.lr=0.004":  # below the gate
            assert (
                found["steps to 0.90 on every gated cell"]
                == "not reached at 6,000 (measured; one budget, no extrapolation)"
            )
