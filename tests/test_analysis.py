"""Analysis: tidy frames, the paper match, table shapes for every grid, findings, formats, bad input.

Sweeps are built two ways: as frames from the grids' own configs (`sweeps.grids.points`), with the
cells each task's test protocol gives, and as a real MLflow SQLite store populated with the mlflow
client following the schema in docs/DESIGN.md (parent run tagged sweep=1, nested trial runs with params,
tags and an eval/cells.csv artifact).
"""

from __future__ import annotations

import dataclasses
import json
import re

import pandas as pd
import pytest
from synthetic import (
    paper_or,
    paper_shape,
    params_of,
    present_block,
    scale_digit_map,
    synthetic_sweep,
)

import lab  # noqa: F401  (registers the lab's grids these tests read)
from analysis import analyse, render
from analysis.axes import varying
from analysis.load import (
    FINISHED,
    TrialRun,
    one_run_per_trial,
    trials_frame,
)
from analysis.report import FORMATS
from analysis.sweep import aggregate_seeds
from arith.data.tasks import TASKS
from arith.tracking import schema
from experiments.paper import (
    digit_map_of,
    paper_tables,
    stand_in,
)
from sweeps.grids import GRIDS, points

# ---------------------------------------------------------------------------------------------------------
# Building sweeps from the grids' configs
# ---------------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Table shapes for every grid (paper scale: the paper's digit ranges)
# ---------------------------------------------------------------------------------------------------------

#: grid -> (number of tables, shape of this sweep's grids); None = shape checked per table below
EXPECTED_TABLES = {
    "mul_format": 10,
    # mul_format's 5-digit (3 at cpu) basic and padding_reverse, one table each
    "mul_format_long": 2,
    "mul_one_digit_weight": 4,
    "mul_simple_case": 4,
    # mul_simple_case's 5-digit (3 at cpu) n x 1 and first-step points, one table each
    "mul_simple_case_long": 2,
    "mul_simple_case_40k": 2,
    "mul_simple_case_8k": 2,
    "add_length": 1,
    "reverse_posembed": 2,
    # reverse_posembed's random-init points at the cpu_recipe scale
    "reverse_posembed_recipe": 2,
    # fig:randembed's two points of it on fresh seeds: one table per test context (regular, repetitive)
    "reverse_posembed_replication": 2,
    # add_posembed's three schemes at the cpu_recipe scale, at twice its step budget and at four times
    "add_posembed_recipe": 1,
    "add_posembed_recipe_long": 1,
    "add_posembed_recipe_24k": 1,
    "add_posembed": 1,
    "nl_mix": 4,
    # add (basic and padded-reversed rows), mul under six schemes
    "position_schemes": 7,
    # length generalisation beyond the paper: one table of the six schemes by operand length
    "length_gen": 1,
    "length_gen_papers": 1,
    "length_gen_18k": 1,
    # the sweeps that tuned the cpu preset: one table per point (mul) or per test context (reverse)
    "cpu_tune_reverse": 2,
    "cpu_tune_mul": 6,
    "cpu_tune_steps": 9,
    "cpu_tune_hash": 2,
    "cpu_tune_plain_add": 1,
    # make demo: one addition table, rows the two answer formats
    "demo": 1,
}


@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_table_shapes_match_the_paper(grid: str) -> None:
    assert grid in EXPECTED_TABLES, f"new grid {grid}: add its expected table count"
    # grids that tune a scale's own settings (tag widths of a tiny model) exist at that scale only; one
    # that reproduces a paper table at another budget (mul_format_long) is read at paper scale, where
    # each cell stands for the paper cell of its own digit count
    scale = "cpu" if GRIDS[grid].over_scale and not GRIDS[grid].paper_tables else "paper"
    analysis = analyse(synthetic_sweep(grid, paper_or(0.5), scale=scale))
    assert len(analysis.tables) == EXPECTED_TABLES[grid]
    for table in analysis.tables:
        assert table.ours.shape == table.paper.shape == table.diff.shape
        for row, values in table.ours.iterrows():
            # every cell of the sweep is shown: all of them, or the row's own test digits where rows differ
            tested = re.search(r"test_digits=\(([^)]*)\)", str(row))
            cells = {int(d) for d in tested.group(1).split(",")} if tested else set(table.ours.columns)
            assert set(table.ours.columns[values.notna()]) == cells, f"{table.title}: every cell is shown"
        if all(label.startswith("fig:") for label in GRIDS[grid].paper_tables):  # figures or no paper
            assert not table.has_paper, f"{table.title}: the paper has no table here, nothing invented"
            continue
        paper_task = {name: task.paper_name for name, task in TASKS.items() if task.paper_name}
        task = next(t for t, paper in paper_task.items() if table.title.startswith(paper))
        assert table.has_paper, f"{table.title}: {grid} reproduces a paper table"
        block = present_block(table.paper)
        for label in table.paper_sources:
            if task == "dialogue":
                assert block.shape == paper_shape(label, "nl_mix"), (table.title, label)
            elif task == "add_scratchpad":
                assert block.shape == paper_shape(label, task)
            else:
                rows, cols = table.ours.shape
                assert block.shape == (rows, cols) and (rows, cols) <= paper_shape(label, task)
        # paper numbers were used as this sweep's numbers wherever the paper has the cell
        assert (table.diff.dropna().abs() < 1e-9).all().all()


def test_nl_mix_tables_are_per_context_and_epoch_with_the_papers_readings() -> None:
    analysis = analyse(synthetic_sweep("nl_mix", paper_or(0.5)))
    titles = [t.title for t in analysis.tables]
    assert titles == [
        "nl_mix: dialogue, epoch 50 of 100, paper's 50 of 100",
        "nl_mix: dialogue, epoch 100 of 100, paper's 100 of 100",
        "nl_mix: pure_addition, epoch 50 of 100, paper's 50 of 100",
        "nl_mix: pure_addition, epoch 100 of 100, paper's 100 of 100",
    ]
    dialogue_100 = analysis.tables[1]
    assert dialogue_100.paper_sources == ["tb:acc_nldia_a"]
    assert list(dialogue_100.ours.index) == ["position=learned", "position=none", "position=random_embed"]
    assert dialogue_100.paper.loc["position=learned", ("dia+random_space", 5)] == 0.82  # tb:acc_nldia_a
    pure = analysis.tables[3]
    assert pure.paper[("dia", 2)].isna().all(), "the paper has no dia row in the pure-addition context"


def stand_in_value(table, label: str, row: str, col: str) -> float:
    """The paper's accuracy at the cell a scaled cell's labels ("2 (paper 5)") name."""
    paper = paper_tables()[paper_tables()["table"] == label]
    b, a = (int(x.split("(paper ")[1].rstrip(")")) for x in (row, col))
    return float(paper[(paper["row_digits"] == b) & (paper["col_digits"] == a)]["accuracy"].iloc[0])


def test_scaled_sweep_subtracts_only_the_paper_cell_each_cell_stands_for() -> None:
    """At smoke scale (paper 2-5 digits -> 2, 6 -> 3) each cell is labelled with the paper cell it stands
    for, the paper block holds just those cells, and no difference is taken between unlike cells."""
    analysis = analyse(synthetic_sweep("mul_simple_case", lambda *_: 0.5, scale="smoke"))
    for table in analysis.tables:
        n = len(present_block(table.ours))
        assert table.paper.shape == table.ours.shape == (n, n) and table.diff.notna().all().all()
        assert list(table.ours.index)[-1] == f"{n} (paper {5 if n == 2 else 6})"
        (label,) = table.paper_sources
        for row in table.ours.index:
            for col in table.ours.columns:
                expected = 0.5 - stand_in_value(table, label, row, col)
                assert abs(table.diff.loc[row, col] - expected) < 1e-9


def test_stand_ins_follow_the_training_range_and_the_recorded_digit_map() -> None:
    cpu = digit_map_of(json.dumps(scale_digit_map("mul_format", "cpu")))  # the tag a cpu sweep records
    assert [cpu[n] for n in (1, 2, 3, 5, 6, 10, 11, 12)] == [1, 2, 3, 3, 4, 5, 5, 6]
    assert stand_in(3, [1, 2, 3, 4, 5], cpu, 5) == 5  # cpu 3 digits stands for the paper's 5
    assert stand_in(5, list(range(1, 11)), cpu, 10) == 10  # cpu 5 for the paper's 10 (not 11)
    assert stand_in(6, list(range(9, 14)), cpu, 10) == 12  # beyond training: the first paper count there
    assert stand_in(3, [2, 3, 4, 5], cpu, float("nan")) == 5
    assert scale_digit_map("nl_mix", "cpu")[5] == 5  # nl_mix keeps the paper's digit counts
    assert digit_map_of('{"5": 4}') == {5: 4}  # the parent run's tag is the map
    assert digit_map_of("")[5] == 5  # cells made by hand, at the paper's digit counts


def test_seeds_are_aggregated_to_mean_std_count() -> None:
    def by_seed(cfg, epoch, epochs, cell):
        return 0.2 + 0.4 * (cfg.train.seed % 2)

    sweep = synthetic_sweep("add_posembed", by_seed, scale="smoke", seeds=2)
    agg = aggregate_seeds(sweep.cells, sweep.axes)
    assert (agg["seeds"] == 2).all()
    assert agg["accuracy"].round(6).eq(0.4).all()
    assert agg["accuracy_std"].round(4).eq(round(pd.Series([0.2, 0.6]).std(), 4)).all()
    table = analyse(sweep).tables[0]
    assert table.min_seeds == 2 and "std over seeds" in render(analyse(sweep), "markdown")


def test_a_table_whose_rows_hold_different_seed_counts_says_so() -> None:
    """A grid read from several plan parts can hold one seed of a point and two of another: the caption
    gives the range, not the fewest as if it were every row's, and the spread is still shown."""
    sweep = synthetic_sweep("add_posembed", paper_or(0.5), scale="smoke", seeds=2, jitter=True)
    one = sweep.trials[sweep.trials["seed"] == 1]["run_id"].iloc[:1]  # one point loses its seed 1
    sweep = dataclasses.replace(sweep, cells=sweep.cells[~sweep.cells["run_id"].isin(one)])
    (table,) = analyse(sweep).tables
    assert (table.min_seeds, table.max_seeds) == (1, 2)
    page = render(analyse(sweep), "markdown")
    assert "this sweep: mean of 1-2 seeds by row" in page and "std over seeds" in page
    assert "this sweep: one seed" not in page


def test_typed_axes_from_param_strings() -> None:
    sweep = synthetic_sweep("add_length", paper_or(0.5), scale="smoke")
    assert {"data.format", "model.init", "data.reverse_addends"} <= set(sweep.axes)
    assert sweep.cells["data.reverse_addends"].map(type).eq(bool).all()
    assert sweep.cells["data.max_digits"].map(type).eq(int).all()
    assert sweep.cells["data.one_digit_weight"].map(type).eq(float).all()


def test_failed_trials_are_counted_and_shown_not_dropped() -> None:
    analysis = analyse(synthetic_sweep("add_posembed", paper_or(0.5), scale="smoke", failed=1))
    text = render(analysis, "markdown")
    assert "3 trials (1 FAILED, 2 FINISHED)" in text
    assert "## Unfinished trials" in text and "FAILED" in text.split("## Unfinished trials")[1]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_renders_tables_and_findings(fmt: str) -> None:
    analysis = analyse(synthetic_sweep("mul_simple_case", paper_or(0.5)))
    text = render(analysis, fmt)
    assert "0.97" in text or "0.98" in text  # paper numbers of tb:onedigit_5-6
    assert "first-step" in text  # the finding
    if fmt == "csv":
        body = text.split("# tables\n")[1].split("# findings")[0]
        frame = pd.read_csv(pd.io.common.StringIO(body))
        assert {"table", "row", "column", "accuracy", "paper_accuracy", "diff"} <= set(frame.columns)
        assert len(frame) == 25 + 36 + 25 + 36
    if fmt == "latex":
        assert "\\begin{tabular}" in text
    if fmt == "html":
        assert "<table" in text
        # the corner (rows \\ columns) heads the header row; no row of its own with empty cells under it
        head = text.split("<h4>this sweep</h4>")[1].split("</thead>")[0]
        assert head.count("<tr") == 1 and "<th>digits of b \\ digits of a</th>" in head, head


# ---------------------------------------------------------------------------------------------------------
# Findings: held on the paper's own numbers, not held when the numbers say otherwise
# ---------------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------------
# A real MLflow SQLite store written with the mlflow client, following the schema
# ---------------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Bad input: a clear message, never a stack trace or an empty table
# ---------------------------------------------------------------------------------------------------------


def test_a_list_setting_newer_than_some_trials_is_no_axis_at_its_default() -> None:
    """Trials logged before `train.gate_cells` existed lack it, a later trial logs its default `[]`: one
    setting, no axis (it split add_posembed_recipe_long's tables and failed the seed means)."""
    params = pd.DataFrame(
        {"model.position": ["learned", "none"], "train.gate_cells": [None, "[]"], "train.lr": ["1e-3"] * 2}
    )
    assert varying(params) == ["model.position"]
    params["train.gate_cells"] = [None, '["main:3x3"]']
    assert varying(params) == ["model.position", "train.gate_cells"]


def test_a_step_budget_does_not_split_the_tables_by_its_derived_epochs() -> None:
    # at cpu scale the dialogue-only points have ~10x the epochs of the mixed ones (same steps, less data):
    # the tables still follow the paper's two readings, and epochs/checkpoints are not made axes
    analysis = analyse(synthetic_sweep("nl_mix", paper_or(0.5), scale="cpu"))
    titles = [t.title for t in analysis.tables]
    assert len(titles) == 4
    assert all("paper's 50 of 100" in t or "paper's 100 of 100" in t for t in titles)
    assert " / " in titles[0]  # read at different epochs of their own
    assert not {"train.epochs", "train.checkpoint_every"} & set(analysis.sweep.axes)


def test_dialogue_data_of_sweeps_run_apart_does_not_split_other_tasks_tables() -> None:
    # two parts of a multiplication study run with scales that set the (unread) dialogue counts differently
    configs = points("mul_simple_case", "cpu")
    runs = []
    for i, cfg in enumerate(configs):
        params = params_of(cfg)
        params["data.mix_samples"] = str(4000 if i % 2 else 120_000)
        runs.append(TrialRun(f"run{i}", cfg.tracking.run_name, FINISHED, params, dict(cfg.tracking.tags)))
    _trials, axes = trials_frame(runs, GRIDS["mul_simple_case"].declared_axes())
    assert "data.mix_samples" not in axes and "data.augment" in axes
    # the dialogue task reads it: there it stays an axis when it varies
    dialogue = [c for c in points("nl_mix", "cpu") if c.data.mix_format == "basic"]
    runs = [
        TrialRun(f"d{i}", c.tracking.run_name, FINISHED, {**params_of(c), "data.mix_samples": str(n)}, {})
        for i, (c, n) in enumerate(zip(dialogue, (4000, 120_000, 4000), strict=True))
    ]
    assert "data.mix_samples" in trials_frame(runs, GRIDS["nl_mix"].declared_axes())[1]


def test_a_setting_older_runs_lack_is_no_axis_while_it_is_at_its_default() -> None:
    # seed 0 logged before train.curriculum existed, seeds 1-2 after, at its default: one table, not two
    configs = points("mul_simple_case", "cpu", seeds=3)
    runs = []
    for i, cfg in enumerate(configs):
        params = params_of(cfg)
        if cfg.train.seed == 0:
            params.pop("train.curriculum")
        runs.append(TrialRun(f"run{i}", cfg.tracking.run_name, FINISHED, params, dict(cfg.tracking.tags)))
    assert "train.curriculum" not in trials_frame(runs, GRIDS["mul_simple_case"].declared_axes())[1]
    # set to something else in some runs, it is an axis
    runs[-1].params["train.curriculum"] = "0.5"
    assert "train.curriculum" in trials_frame(runs, GRIDS["mul_simple_case"].declared_axes())[1]


def test_a_trial_with_several_runs_is_read_from_one_its_finished_one_first() -> None:
    """A (point, seed) run twice (a part listed first killed part-way and finished by a later part, or a
    trial run again from scratch within one sweep) counts once: a finished run before an unfinished one,
    then the first listed; distinct trials are all kept, in their order."""
    trials = pd.DataFrame(
        {
            schema.RUN_ID_COLUMN: ["a", "b", "c", "d", "e"],
            schema.POINT_COLUMN: ["p", "p", "q", "q", "r"],
            schema.SEED_COLUMN: ["0", "0", "0", "0", "0"],
            "status": ["KILLED", "FINISHED", "FINISHED", "FINISHED", "KILLED"],
        }
    )
    kept, left_out = one_run_per_trial(trials)
    assert list(kept[schema.RUN_ID_COLUMN]) == ["b", "c", "e"] and left_out == 2
    alone = trials.iloc[[2, 4]]
    assert one_run_per_trial(alone)[0][schema.RUN_ID_COLUMN].tolist() == ["c", "e"]  # nothing repeated
    assert one_run_per_trial(alone)[1] == 0
