"""Analysis: tidy frames, the paper match, table shapes for every grid, findings, formats, bad input.

Sweeps are built two ways: as frames from the grids' own configs (`sweeps.grids.points`), with the
cells each task's test protocol gives, and as a real MLflow SQLite store populated with the mlflow
client following the schema in docs/DESIGN.md (parent run tagged sweep=1, nested trial runs with params,
tags and an eval/cells.csv artifact).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis import AnalysisError, analyse, render, report
from analysis.findings import HELD, NOT_HELD, NOT_TESTABLE, evaluate_findings
from analysis.load import (
    CELL_COLUMNS,
    FINISHED,
    Sweep,
    TrialRun,
    aggregate_seeds,
    load_sweep,
    tidy_cells,
    trials_frame,
)
from analysis.paper import PAPER_TASK, paper_cells, paper_reading, paper_tables
from analysis.report import FORMATS
from arith.config import ExperimentConfig
from sweeps.grids import GRIDS, points

REPO = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------------------------------------
# Building sweeps from the grids' configs
# ---------------------------------------------------------------------------------------------------------


def protocol_cells(cfg: ExperimentConfig) -> list[tuple[str, int | None, int]]:
    """The test cells of a trial, as the evaluator writes them (docs/DESIGN.md, Cells)."""
    d = cfg.data
    digits = d.test_digits or list(range(d.min_digits, d.max_digits + 1))
    if d.task == "mul":
        digits = d.test_digits or list(range(1, d.max_digits + 1))
        return [("main", b, a) for b in digits for a in digits]
    contexts = {"reverse": ("regular", "repetitive"), "dialogue": ("dialogue", "pure_addition")}
    return [(c, None, n) for c in contexts.get(d.task, ("main",)) for n in digits]


def params_of(cfg: ExperimentConfig) -> dict[str, str]:
    """Params as the tracker logs them: strings, lists as JSON."""
    return {k: json.dumps(v) if isinstance(v, (list, dict)) else str(v) for k, v in cfg.flat().items()}


def paper_or(default: float):
    """Accuracy: the paper's number for the cell where it has one, else `default`."""

    cache: dict[tuple[str, int], dict] = {}

    def accuracy(cfg: ExperimentConfig, epoch: int, epochs: list[int], cell) -> float:
        key = (cfg.tracking.run_name, epoch)
        if key not in cache:
            point = {**cfg.flat(), "paper_table": cfg.tracking.tags.get("paper_table", "")}
            reading = paper_reading(epoch, epochs, cfg.tracking.tags.get("paper_epochs", ""))
            theirs = paper_cells(point, reading, final=epoch == max(epochs))
            cache[key] = {
                (c, None if pd.isna(r) else int(r), int(n)): float(acc)
                for c, r, n, acc in theirs[["context", "row_digits", "col_digits", "accuracy"]].itertuples(
                    index=False
                )
            }
        return cache[key].get(cell, default)

    return accuracy


def synthetic_sweep(
    grid: str, accuracy, scale: str = "paper", seeds: int | tuple[int, ...] = 1, failed: int = 0
) -> Sweep:
    """A Sweep of `grid` whose trials are the grid's configs and whose cells come from `accuracy`."""
    configs = points(grid, scale, seeds)
    runs, cells_by_run = [], {}
    for i, cfg in enumerate(configs):
        status = "FAILED" if i < failed else FINISHED
        run = TrialRun(f"run{i}", cfg.tracking.run_name, status, params_of(cfg), dict(cfg.tracking.tags))
        runs.append(run)
        epochs = sorted({*cfg.train.eval_epochs, cfg.train.epochs})
        rows = []
        for epoch in epochs:
            for cell in protocol_cells(cfg):
                correct = round(100 * accuracy(cfg, epoch, epochs, cell))
                rows.append(
                    dict(zip(CELL_COLUMNS, [epoch, *cell, 100, correct, correct / 100, 0.0], strict=True))
                )
        if status == FINISHED:
            cells_by_run[run.run_id] = pd.DataFrame(rows)
    trials, axes, _notes = trials_frame(runs, grid)
    return Sweep(
        grid, "parent", "sqlite:///unused.db", scale, trials, tidy_cells(trials, cells_by_run, axes), axes
    )


def paper_shape(label: str, task: str) -> tuple[int, int]:
    """The shape of a paper table as printed: mul (b digits x a digits), add (format x digits), nl_mix
    (position x data-and-digits)."""
    cells = paper_tables()[paper_tables()["table"] == label]
    if task == "mul":
        return cells["row_digits"].nunique(), cells["col_digits"].nunique()
    if task == "add_scratchpad":
        return cells["format"].nunique(), cells["col_digits"].nunique()
    return cells["position"].nunique(), cells[["format", "col_digits"]].drop_duplicates().shape[0]


def present_block(grid: pd.DataFrame) -> pd.DataFrame:
    return grid.dropna(how="all").dropna(axis=1, how="all")


# ---------------------------------------------------------------------------------------------------------
# Table shapes for every grid (paper scale: the paper's digit ranges)
# ---------------------------------------------------------------------------------------------------------

#: grid -> (number of tables, shape of this sweep's grids); None = shape checked per table below
EXPECTED_TABLES = {
    "mul_format": 10,
    "mul_one_digit_weight": 4,
    "mul_simple_case": 4,
    "add_length": 1,
    "reverse_posembed": 2,
    "add_posembed": 1,
    "nl_mix": 4,
    "position_schemes": 6,
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
    # grids that tune a scale's own settings (tag widths of a tiny model) exist at that scale only
    scale = "cpu" if GRIDS[grid].over_scale else "paper"
    analysis = analyse(synthetic_sweep(grid, paper_or(0.5), scale=scale))
    assert len(analysis.tables) == EXPECTED_TABLES[grid]
    for table in analysis.tables:
        assert table.ours.shape == table.paper.shape == table.diff.shape
        assert table.ours.notna().to_numpy().all(), f"{table.title}: every cell of the sweep is shown"
        if all(label.startswith("fig:") for label in GRIDS[grid].paper_tables):  # figures or no paper
            assert not table.has_paper, f"{table.title}: the paper has no table here, nothing invented"
            continue
        task = next(t for t in PAPER_TASK if table.title.startswith(t if t != "dialogue" else "nl_mix"))
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


def test_scaled_sweep_shows_cells_only_one_side_has_as_missing() -> None:
    """At smoke scale max_digits shrinks: the paper's larger cells are shown, ours missing there."""
    analysis = analyse(synthetic_sweep("mul_simple_case", paper_or(0.5), scale="smoke"))
    for table in analysis.tables:
        ours, paper = present_block(table.ours), present_block(table.paper)
        assert ours.shape[0] < paper.shape[0] and ours.shape[1] < paper.shape[1]
        assert table.ours.isna().to_numpy().any() and table.diff.notna().to_numpy().any()


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


# ---------------------------------------------------------------------------------------------------------
# Findings: held on the paper's own numbers, not held when the numbers say otherwise
# ---------------------------------------------------------------------------------------------------------


def statuses(grid: str, accuracy, scale: str = "paper") -> list[str]:
    return [f.status for f in analyse(synthetic_sweep(grid, accuracy, scale)).findings]


@pytest.mark.parametrize(
    "grid", ["mul_format", "mul_one_digit_weight", "mul_simple_case", "add_length", "nl_mix"]
)
def test_claims_hold_on_the_papers_own_numbers(grid: str) -> None:
    """Where the paper printed the numbers, its claims must hold on them (the checks read them right)."""

    assert set(statuses(grid, paper_or(0.0))) == {HELD}


def test_claims_not_held_when_the_numbers_contradict_them() -> None:
    def flat(value):
        return lambda cfg, epoch, epochs, cell: value

    def basic_best(cfg, epoch, epochs, cell):
        return 0.9 if cfg.data.format == "basic" else 0.3

    assert statuses("mul_format", basic_best) == [NOT_HELD]
    assert statuses("mul_one_digit_weight", lambda cfg, *_: 1 - cfg.data.one_digit_weight / 2) == [NOT_HELD]
    assert statuses("mul_simple_case", lambda cfg, *_: 0.8 if cfg.data.augment == "n_times_1" else 0.4) == [
        NOT_HELD
    ]
    assert statuses("add_length", basic_best) == [NOT_HELD]
    assert statuses("nl_mix", flat(0.5)) == [NOT_HELD] * 3


def test_reversal_and_position_claims_on_constructed_numbers() -> None:
    def reversal(cfg, epoch, epochs, cell):
        context, _, digits = cell
        beyond = digits > cfg.data.max_digits
        if context == "regular":
            return {"learned": 0.0, "none": 0.6, "random_embed": 0.7}[cfg.model.position] if beyond else 1.0
        return {"learned": 1.0, "none": 0.1, "random_embed": 0.9}[cfg.model.position]

    assert statuses("reverse_posembed", reversal) == [HELD, HELD]
    assert statuses("reverse_posembed", lambda *_: 0.5) == [NOT_HELD, NOT_HELD]

    def addition(cfg, epoch, epochs, cell):
        return {"learned": 0.0, "none": 0.1, "random_embed": 0.6}[cfg.model.position]

    assert statuses("add_posembed", addition) == [HELD]
    assert statuses("add_posembed", lambda *_: 0.5) == [NOT_HELD]


def test_claims_adapt_to_the_scale_or_say_not_testable() -> None:
    # smoke scale: add_length tests 3-4 digits after training on up to 4: nothing beyond training
    assert statuses("add_length", paper_or(0.0), scale="smoke") == [NOT_TESTABLE]
    # smoke multiplication still has cells with more digits than max_digits in total
    assert statuses(
        "mul_format", lambda cfg, *_: 0.9 if cfg.data.format == "padding_reverse" else 0.2, "smoke"
    ) == [HELD]
    assert evaluate_findings(pd.DataFrame(), "position_schemes") == []


# ---------------------------------------------------------------------------------------------------------
# A real MLflow SQLite store written with the mlflow client, following the schema
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An initialised, empty SQLite store (creating MLflow's tables takes seconds: done once, copied)."""
    from mlflow import MlflowClient

    db = tmp_path_factory.mktemp("template") / "mlflow.db"
    MlflowClient(f"sqlite:///{db}").search_experiments()
    return db


def write_store(
    tmp_path: Path,
    empty_store: Path,
    grid: str = "add_posembed",
    drop_param: str = "",
    drop_cell_column: str = "",
    fail_first: bool = True,
    seeds: int | tuple[int, ...] = 1,
    accuracy: float | None = None,
) -> str:
    """A store with one smoke-scale sweep of `grid`: parent run + trial runs (the first FAILED); a store
    already in tmp_path gets one more sweep. Every cell's accuracy is `accuracy`, else 0.5 for position
    none and 0.25 for the others."""
    from mlflow import MlflowClient
    from mlflow.entities import Param

    if not (tmp_path / "mlflow.db").exists():
        shutil.copy(empty_store, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    existing = client.get_experiment_by_name(grid)
    experiment = (
        existing.experiment_id
        if existing
        else client.create_experiment(grid, artifact_location=(tmp_path / "mlartifacts").as_uri())
    )
    parent = client.create_run(
        experiment, tags={"sweep": "1", "grid": grid, "scale": "smoke"}, run_name="sweep"
    )
    sweep = synthetic_sweep(
        grid,
        lambda cfg, *_: (
            accuracy if accuracy is not None else 0.25 * (1 + ["learned", "none"].count(cfg.model.position))
        ),
        "smoke",
        seeds,
    )
    for i, cfg in enumerate(points(grid, "smoke", seeds)):
        tags = {**cfg.tracking.tags, "mlflow.parentRunId": parent.info.run_id}
        run = client.create_run(experiment, tags=tags, run_name=cfg.tracking.run_name)
        params = {k: v for k, v in params_of(cfg).items() if k != drop_param}
        items = [Param(k, v) for k, v in params.items()]
        for j in range(0, len(items), 100):
            client.log_batch(run.info.run_id, params=items[j : j + 100])
        if fail_first and i == 0:
            client.set_terminated(run.info.run_id, "FAILED")
            continue
        cells = sweep.cells[sweep.cells["run_id"] == f"run{i}"][
            ["epoch", "context", "row_digits", "col_digits", "n", "correct", "accuracy", "seen_in_train"]
        ]
        client.log_text(
            run.info.run_id, cells.drop(columns=drop_cell_column or []).to_csv(index=False), "eval/cells.csv"
        )
        client.set_terminated(run.info.run_id, "FINISHED")
    client.set_terminated(parent.info.run_id, "FINISHED")
    return uri


def test_report_from_a_real_store_writes_and_logs_tables_and_heatmaps(
    tmp_path: Path, empty_store: Path
) -> None:
    from mlflow import MlflowClient

    uri = write_store(tmp_path, empty_store)
    text = report("add_posembed", uri, out_dir=tmp_path / "out")
    assert "3 trials (1 FAILED, 2 FINISHED)" in text
    assert "| position=none | 0.50 | 0.50 |" in text  # none: 0.5 on each cell
    assert "not testable" in text  # learned failed: the claim lacks one of its three schemes
    out = tmp_path / "out"
    assert (out / "report.md").read_text() == text.split("\ncould not log")[0]
    assert sorted(p.name for p in (out / "heatmaps").iterdir()) == ["add_scratchpad.png"]
    assert len(pd.read_csv(out / "cells.csv")) == 2 * 2  # 2 finished trials x 2 digit cells
    client = MlflowClient(uri)
    parent = load_sweep("add_posembed", uri).parent_run_id
    logged = {a.path for a in client.list_artifacts(parent, "analysis")}
    assert {
        "analysis/report.md",
        "analysis/tables.csv",
        "analysis/findings.csv",
        "analysis/heatmaps",
    } <= logged


def test_multiplication_sweep_beside_the_paper_from_a_real_store(tmp_path: Path, empty_store: Path) -> None:
    """Smoke-scale mul_simple_case (max_digits 5, 6 -> 2, 3): this sweep's 2x2 / 3x3 corner of the paper's
    5x5 / 6x6 tables, the difference where both have the cell, the finding, and a UI view."""
    from mlflow import MlflowClient

    from analysis.ui_view import VIEW_TAG, share_view

    uri = write_store(tmp_path, empty_store, grid="mul_simple_case")
    sweep = load_sweep("mul_simple_case", uri)
    analysis = analyse(sweep)
    assert sweep.status_counts == {"FINISHED": 3, "FAILED": 1}
    assert len(sweep.cells) == 4 + 9 + 9  # the failed (5, n_times_1) point has no cells
    assert [t.title for t in analysis.tables] == [
        "mul: max_digits=2, augment=first_step",
        "mul: max_digits=3, augment=first_step",
        "mul: max_digits=3, augment=n_times_1",
    ]
    for table, label, n in zip(analysis.tables, ["c", "d", "b"], [2, 3, 3], strict=True):
        assert table.paper_sources == [f"tb:onedigit_5-6{label}"]
        assert present_block(table.ours).shape == (n, n)
        assert table.paper.shape == paper_shape(table.paper_sources[0], "mul")
        expected = 0.5 - table.paper.iloc[:n, :n]  # every cell of this sweep is 0.5
        assert (table.diff.iloc[:n, :n] - expected).abs().max().max() < 1e-9
        assert table.diff.iloc[n:, n:].isna().all().all()
    (finding,) = analysis.findings
    assert finding.status == NOT_HELD and "first_step 0.50 vs n_times_1 0.50" in finding.evidence

    link = share_view(sweep, "http://127.0.0.1:5000")
    key = link.split("viewStateShareKey=")[1]
    experiment = MlflowClient(uri).get_experiment(link.split("/experiments/")[1].split("/")[0])
    view = json.loads(experiment.tags[VIEW_TAG + key])
    assert (
        "params.`data.augment`" in view["selectedColumns"] and "metrics.`test_acc`" in view["selectedColumns"]
    )
    # grouped by every axis the sweep varies, as the tables are
    assert view["groupBy"]["groupByKeys"] == [
        {"mode": "param", "groupByData": "data.max_digits"},
        {"mode": "param", "groupByData": "data.augment"},
    ]


def test_sweeps_run_apart_are_read_as_one(tmp_path: Path, empty_store: Path) -> None:
    """Seed 0 in one sweep, seeds 1 and 0 again in a later one: read together, every point has two seeds
    and the repeated trial comes from the sweep listed first."""
    from mlflow import MlflowClient

    write_store(tmp_path, empty_store, fail_first=False, seeds=1, accuracy=0.25)
    uri = write_store(tmp_path, empty_store, fail_first=False, seeds=(1, 0), accuracy=0.75)
    client = MlflowClient(uri)
    (experiment,) = [e.experiment_id for e in client.search_experiments() if e.name == "add_posembed"]
    parents = client.search_runs([experiment], "tags.sweep = '1'", order_by=["attributes.start_time ASC"])
    first, second = (run.info.run_id for run in parents)

    sweep = load_sweep("add_posembed", uri, [first, second])
    assert sweep.parent_run_ids == (first, second) and sweep.parent_run_id == first
    assert sorted(sweep.trials["seed"].value_counts().to_dict().items()) == [(0, 3), (1, 3)]
    assert any("3 trial(s) repeated" in note for note in sweep.notes)
    means = aggregate_seeds(sweep.cells, sweep.axes)
    assert (means["seeds"] == 2).all() and (means["accuracy"] - 0.5).abs().max() < 1e-9

    # seed 0 now from the later sweep
    swapped = load_sweep("add_posembed", uri, [second, first])
    assert (aggregate_seeds(swapped.cells, swapped.axes)["accuracy"] - 0.75).abs().max() < 1e-9
    assert "combines 2 sweeps" in report("add_posembed", uri, [first, second], log_artifacts=False)
    assert load_sweep("add_posembed", uri).parent_run_id == second  # no ids: the latest sweep alone


def test_cli_prints_the_report_and_exits_zero(tmp_path: Path, empty_store: Path) -> None:
    uri = write_store(tmp_path, empty_store, fail_first=False)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "analysis",
            "--grid",
            "add_posembed",
            "--tracking-uri",
            uri,
            "--format",
            "csv",
            "--no-log",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "# tables" in done.stdout and "random_embed" in done.stdout


# ---------------------------------------------------------------------------------------------------------
# Bad input: a clear message, never a stack trace or an empty table
# ---------------------------------------------------------------------------------------------------------


def test_grid_without_a_sweep_names_the_grids_there_are(tmp_path: Path, empty_store: Path) -> None:
    uri = write_store(tmp_path, empty_store)
    with pytest.raises(AnalysisError, match=r"no sweep of grid 'nl_mix'.*add_posembed"):
        report("nl_mix", uri)


def test_unknown_grid_lists_the_grids() -> None:
    with pytest.raises(AnalysisError, match=r"unknown grid 'nl_mixx'; choose one of: .*nl_mix"):
        report("nl_mixx", "sqlite:///unused.db")


def test_unknown_parent_run(tmp_path: Path, empty_store: Path) -> None:
    uri = write_store(tmp_path, empty_store)
    with pytest.raises(AnalysisError, match="no run 'nope'"):
        report("add_posembed", uri, parent_run_id="nope")


def test_missing_store_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "absent.db"
    with pytest.raises(AnalysisError, match="does not exist"):
        report("nl_mix", f"sqlite:///{db}")
    assert not db.exists()


def test_runs_lacking_a_param_from_an_older_config(tmp_path: Path, empty_store: Path) -> None:
    uri = write_store(tmp_path, empty_store, drop_param="model.position")
    with pytest.raises(AnalysisError, match=r"lack params .*model\.position.*older config"):
        report("add_posembed", uri)


def test_runs_lacking_an_identity_param_are_read_with_a_note(tmp_path: Path, empty_store: Path) -> None:
    uri = write_store(tmp_path, empty_store, drop_param="data.augment")
    text = report("add_posembed", uri, log_artifacts=False)
    assert "lack param data.augment (older config); read as its default 'none'" in text


def test_cells_lacking_a_column(tmp_path: Path, empty_store: Path) -> None:
    uri = write_store(tmp_path, empty_store, drop_cell_column="seen_in_train")
    with pytest.raises(AnalysisError, match=r"lacks column.*seen_in_train"):
        report("add_posembed", uri)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--tracking-uri", "http://127.0.0.1:9"],
            "cannot reach the MLflow tracking server at http://127.0.0.1:9",
        ),
        (["--tracking-uri", "sqlite:////nonexistent/dir/mlflow.db"], "no MLflow store at"),
    ],
)
def test_cli_bad_input_exits_nonzero_without_a_traceback(args: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "--grid", "nl_mix", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


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
    _trials, axes, _notes = trials_frame(runs, "mul_simple_case")
    assert "data.mix_samples" not in axes and "data.augment" in axes
    # the dialogue task reads it: there it stays an axis when it varies
    dialogue = [c for c in points("nl_mix", "cpu") if c.data.mix_format == "basic"]
    runs = [
        TrialRun(f"d{i}", c.tracking.run_name, FINISHED, {**params_of(c), "data.mix_samples": str(n)}, {})
        for i, (c, n) in enumerate(zip(dialogue, (4000, 120_000, 4000), strict=True))
    ]
    assert "data.mix_samples" in trials_frame(runs, "nl_mix")[1]


def test_a_setting_older_runs_lack_is_no_axis_while_it_is_at_its_default() -> None:
    # seed 0 logged before train.curriculum existed, seeds 1-2 after, at its default: one table, not two
    configs = points("mul_simple_case", "cpu", seeds=3)
    runs = []
    for i, cfg in enumerate(configs):
        params = params_of(cfg)
        if cfg.train.seed == 0:
            params.pop("train.curriculum")
        runs.append(TrialRun(f"run{i}", cfg.tracking.run_name, FINISHED, params, dict(cfg.tracking.tags)))
    assert "train.curriculum" not in trials_frame(runs, "mul_simple_case")[1]
    # set to something else in some runs, it is an axis
    runs[-1].params["train.curriculum"] = "0.5"
    assert "train.curriculum" in trials_frame(runs, "mul_simple_case")[1]


def test_html_report_is_one_self_contained_page(tmp_path: Path, empty_store: Path) -> None:
    """The HTML report on a real store: inline CSS and PNGs only, the verdicts with their reasons, the
    tables, and accuracy by epoch drawn from the MLflow metric history the trials logged."""
    from mlflow import MlflowClient

    from analysis.html import metric_histories

    uri = write_store(tmp_path, empty_store, seeds=2)
    sweep = load_sweep("add_posembed", uri)
    client = MlflowClient(uri)
    finished = sweep.trials.loc[sweep.trials["status"] == FINISHED, "run_id"].tolist()
    for run_id in finished:
        for epoch, value in ((1, 0.1), (2, 0.4)):
            client.log_metric(run_id, "test_acc/in_range", value, step=epoch)
    history = metric_histories(sweep)
    assert len(history) == 2 * len(finished) and set(history["metric"]) == {"test_acc/in_range"}

    page = render(analyse(sweep), "html")
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page
    # one heatmap per table, the seeds' spread, accuracy by epoch
    assert page.count('src="data:image/png;base64,') == 1 + 2
    assert "Test accuracy by epoch" in page and "not testable" in page and "position=none" in page
