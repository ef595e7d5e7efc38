"""The report from a real SQLite store written following the schema: its tables, heatmaps and HTML page, the
command line's answers to bad input, and what a store must hold to be read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from synthetic import (
    REPO,
    present_block,
    write_store,
)
from test_analysis import stand_in_value

import lab  # noqa: F401  (registers the lab's grids these tests read)
from analysis import AnalysisError, analyse, render, report
from analysis.findings import (
    NOT_TESTABLE,
)
from analysis.load import (
    FINISHED,
    read_sweep,
)
from analysis.report import VERDICTS_HEADING, VERDICTS_TAG
from analysis.sweep import aggregate_seeds
from arith.tracking import schema, store
from arith.tracking.schema import RUN_DESCRIPTION_TAG
from sweeps.grids import GRIDS
from sweeps.storage import digit_map


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
    sweep = read_sweep("add_posembed", uri)
    parent = sweep.parent_run_id
    # the paper labels are values in the record read back, and the CSVs write the tag as it is stored
    runs = client.search_runs([client.get_run(parent).info.experiment_id])
    tags = {r.info.run_id: r.data.tags["paper_table"] for r in runs if "paper_table" in r.data.tags}
    assert (
        set(tags) == set(sweep.trials["run_id"])
        and all(
            labels == schema.paper_labels(tags[run_id])
            for run_id, labels in zip(sweep.trials["run_id"], sweep.trials["paper_table"], strict=True)
        )
        and all(isinstance(labels, tuple) for labels in sweep.cells["paper_table"])
    )
    written = pd.read_csv(out / "trials.csv", keep_default_na=False)
    assert dict(zip(written["run_id"], written["paper_table"], strict=True)) == tags
    logged = {a.path for a in client.list_artifacts(parent, "analysis")}
    assert {
        "analysis/report.md",
        "analysis/tables.csv",
        "analysis/findings.csv",
        "analysis/heatmaps",
    } <= logged
    # the verdict where the MLflow UI shows it: after the run's description, and a tag the runs table shows
    tags = client.get_run(parent).data.tags
    assert tags[VERDICTS_TAG] == "random_embed_extrapolates_addition: not testable"
    assert tags["claim.random_embed_extrapolates_addition"] == "not testable"
    assert tags[RUN_DESCRIPTION_TAG].endswith(
        f"{VERDICTS_HEADING}\n- random embedding extrapolates addition further than learned or no position "
        "embedding [fig:acc_add_rand]: **not testable**"
    )
    command = "`python sweeps/run.py --grid add_posembed`"
    client.set_tag(parent, RUN_DESCRIPTION_TAG, f"{command}\n\n{VERDICTS_HEADING}\n- old")
    report("add_posembed", uri)  # analysed again: the verdicts replaced, the command kept
    again = client.get_run(parent).data.tags[RUN_DESCRIPTION_TAG]
    assert again.startswith(f"{command}\n\n{VERDICTS_HEADING}\n- random") and again.count("Verdicts") == 1
    assert "old" not in again


def test_multiplication_sweep_beside_the_paper_from_a_real_store(tmp_path: Path, empty_store: Path) -> None:
    """Smoke-scale mul_simple_case (max_digits 5, 6 -> 2, 3): this sweep's 2x2 / 3x3 grids beside the paper
    cells each cell stands for (the parent run has no digit_map tag: the scale's map), the finding, and a
    UI view."""
    from mlflow import MlflowClient

    from analysis.ui_view import VIEW_TAG, logged_metrics, metric_sections, share_view

    uri = write_store(tmp_path, empty_store, grid="mul_simple_case")
    sweep = read_sweep("mul_simple_case", uri)
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
        # smoke digit counts stand for the paper's (2 -> 5, 3 -> 6): only those paper cells, labelled
        assert present_block(table.ours).shape == table.paper.shape == (n, n)
        for row in table.ours.index:
            for col in table.ours.columns:
                expected = 0.5 - stand_in_value(table, table.paper_sources[0], row, col)  # ours: 0.5
                assert abs(table.diff.loc[row, col] - expected) < 1e-9
    (finding,) = analysis.findings
    # 0.50 everywhere, also on the small products: the models did not learn, so the claim is not tested
    assert finding.status == NOT_TESTABLE and "first_step not learned: seed 0 0.50 on 1x1" in finding.evidence

    link = share_view(sweep, "http://127.0.0.1:5000")
    key = link.split("viewStateShareKey=")[1]
    experiment = MlflowClient(uri).get_experiment(link.split("/experiments/")[1].split("/")[0])
    view = json.loads(experiment.tags[VIEW_TAG + key])
    assert (
        "params.`data.augment`" in view["selectedColumns"] and "metrics.`test_acc`" in view["selectedColumns"]
    )
    # the axes first, beside the run names (the UI puts metrics before params), every name shown whole
    assert view["columnOrder"] == ["duration", *view["selectedColumns"]]
    widths = view["columnWidths"]
    assert set(widths) == set(view["selectedColumns"]) and min(widths.values()) >= 140
    assert widths["params.`data.augment`"] >= 8 * len("data.augment")
    # the sweep's trials only: its parent run is no group of its own
    client = MlflowClient(uri)
    shown = client.search_runs([experiment.experiment_id], view["searchFilter"])
    assert sorted(r.info.run_id for r in shown) == sorted(sweep.trials["run_id"])
    # grouped by every axis the sweep varies, as the tables are
    assert view["groupBy"]["groupByKeys"] == [
        {"mode": "param", "groupByData": "data.max_digits"},
        {"mode": "param", "groupByData": "data.augment"},
    ]
    # in the UI's training workflow, not its GenAI one
    assert "?workflowType=machine_learning&" in link
    # the chart view opens on a section of bar charts of the accuracies, a bar per trial in its point's
    # colour (a run's colour is a tag; a group's is the UI's hash of its name)
    assert view["useGroupedValuesInCharts"] is False
    section, *by_prefix = view["compareRunSections"]
    charts = view["compareRunCharts"]
    assert {c["metricSectionId"] for c in charts} == {section["uuid"]} and section["display"]
    assert [(c["type"], c["metricKey"]) for c in charts] == [("BAR", "test_acc")]
    # every trial drawn and compared, not the UI's first 10; MLflow's own charts in sections of the
    # view's order, one per prefix the trials logged, the evaluation's throughput last
    assert view["runsHiddenMode"] == "SHOW_ALL" and {c["runsCountToCompare"] for c in charts} == {100}
    # this store's trials log cells, no metrics: the sections are those of the accuracies the cells imply
    assert logged_metrics(sweep) == [] and view["isAccordionReordered"] is True
    assert by_prefix == metric_sections(["test_acc"]) and [s["name"] for s in by_prefix] == ["Model metrics"]


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

    sweep = read_sweep("add_posembed", uri, [first, second])
    assert sweep.parent_run_ids == (first, second) and sweep.parent_run_id == first
    assert sorted(sweep.trials["seed"].value_counts().to_dict().items()) == [(0, 3), (1, 3)]
    assert any(
        "3 run(s) of a (point, seed) that another run holds were left out" in note for note in sweep.notes
    )
    means = aggregate_seeds(sweep.cells, sweep.axes)
    assert (means["seeds"] == 2).all() and (means["accuracy"] - 0.5).abs().max() < 1e-9

    # seed 0 now from the later sweep
    swapped = read_sweep("add_posembed", uri, [second, first])
    assert (aggregate_seeds(swapped.cells, swapped.axes)["accuracy"] - 0.75).abs().max() < 1e-9
    assert "combines 2 sweeps" in report("add_posembed", uri, [first, second], log_artifacts=False)
    assert read_sweep("add_posembed", uri).parent_run_id == second  # no ids: the latest sweep alone


def test_the_sweep_records_its_axes_and_digit_map_and_the_analysis_reads_them(
    tmp_path: Path, empty_store: Path
) -> None:
    """The parent run `sweeps/run.py` opens records the grid's axes and the scale's digit map; the analysis
    reads both from the store. A declared axis that this sweep holds at one value (`--only
    data.max_digits=3`) stays an axis; a sweep without the tags is refused, naming its parent run."""
    from sweeps.scales import SCALES

    only = {"data.max_digits": "3"}  # the paper's 6 at smoke scale
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    uri = write_store(
        recorded, empty_store, grid="mul_simple_case", fail_first=False, recorded=True, only=only
    )
    sweep = read_sweep("mul_simple_case", uri)
    assert sweep.declared_axes == ("data.max_digits", "data.augment")
    assert sweep.axes == ["data.max_digits", "data.augment"]
    assert json.loads(sweep.digit_map_tag) == {
        str(k): v for k, v in digit_map(GRIDS["mul_simple_case"], SCALES["smoke"]).items()
    }
    assert not any("declared axes" in note for note in sweep.notes)
    titles = ["mul: augment=first_step", "mul: augment=n_times_1"]  # a one-value axis splits nothing
    assert [t.title for t in analyse(sweep).tables] == titles

    older = tmp_path / "older"
    older.mkdir()
    uri = write_store(older, empty_store, grid="mul_simple_case", fail_first=False, only=only, recorded=False)
    with pytest.raises(AnalysisError, match=r"sweep parent run\(s\) \w+ record no digit map"):
        read_sweep("mul_simple_case", uri)


def test_the_analysis_does_not_import_the_sweep_driver(tmp_path: Path, empty_store: Path) -> None:
    """`import analysis` and a report from a real store load neither `sweeps` nor Ray: what the sweep
    declared is read from the store."""
    uri = write_store(tmp_path, empty_store, recorded=True)
    code = (
        "import sys, analysis\n"
        "text = analysis.report('add_posembed', sys.argv[1], log_artifacts=False)\n"
        "assert 'position=none' in text, text\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sweeps', 'ray')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, uri], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


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


def test_grid_without_a_sweep_names_the_grids_there_are(tmp_path: Path, empty_store: Path) -> None:
    uri = write_store(tmp_path, empty_store)
    with pytest.raises(AnalysisError, match=r"no sweep of grid 'nl_mix'.*add_posembed"):
        report("nl_mix", uri)


def test_unknown_grid_lists_the_grids(tmp_path: Path, empty_store: Path) -> None:
    # the analysis knows the grids from the store (it does not import sweeps/grids.py)
    uri = write_store(tmp_path, empty_store)
    with pytest.raises(AnalysisError, match=r"no sweep of grid 'nl_mixx'.*grid\(s\): add_posembed"):
        report("nl_mixx", uri)


def test_unknown_parent_run(tmp_path: Path, empty_store: Path) -> None:
    uri = write_store(tmp_path, empty_store)
    with pytest.raises(AnalysisError, match="no run 'nope'"):
        report("add_posembed", uri, parent_run_id="nope")


def test_missing_store_is_not_created(tmp_path: Path) -> None:
    db = tmp_path / "absent.db"
    with pytest.raises(AnalysisError, match="does not exist"):
        report("nl_mix", f"sqlite:///{db}")
    assert not db.exists()


def test_runs_lacking_a_param_are_refused(tmp_path: Path, empty_store: Path) -> None:
    """A trial run this trainer did not log (it lacks a param every trial logs) is refused, naming it: every
    committed archive holds today's record (`python -m lab.archives migrate`)."""
    uri = write_store(tmp_path, empty_store, drop_param="model.position")
    with pytest.raises(AnalysisError, match=r"lack params .*model\.position.*not logged by this trainer"):
        report("add_posembed", uri)
    other = tmp_path / "other"
    other.mkdir()
    uri = write_store(other, empty_store, drop_param="data.augment")
    with pytest.raises(AnalysisError, match=r"lack params .*data\.augment"):
        report("add_posembed", uri, log_artifacts=False)


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


def test_html_report_is_one_self_contained_page(tmp_path: Path, empty_store: Path) -> None:
    """The HTML report on a real store: inline CSS and PNGs only, the verdicts with their reasons, the
    tables, and accuracy by epoch drawn from the MLflow metric history the trials logged."""
    from mlflow import MlflowClient

    from analysis.html import metric_histories

    uri = write_store(tmp_path, empty_store, seeds=2)
    trials = read_sweep("add_posembed", uri).trials
    client = MlflowClient(uri)
    finished = trials.loc[trials["status"] == FINISHED, "run_id"].tolist()
    for run_id in finished:
        for epoch, value in ((1, 0.1), (2, 0.4)):
            client.log_metric(run_id, "test_acc/in_range", value, step=epoch)
    sweep = read_sweep("add_posembed", uri)
    # the sweep is read in one call: its histories come with it, the store is not read again
    db = store.sqlite_path(uri)
    db.rename(db.with_suffix(".moved"))
    history = metric_histories(sweep)
    assert len(history) == 2 * len(finished) and set(history["metric"]) == {"test_acc/in_range"}

    page = render(analyse(sweep), "html")
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page
    # one heatmap per table, accuracy by digit count, the seeds' spread, the learning curves, by epoch
    assert page.count('src="data:image/png;base64,') == 1 + 4
    assert (
        "Accuracy by digit count" in page
        and "Learning curves" in page
        and "Test accuracy by epoch" in page
        and "not testable" in page
        and "position=none" in page
    )


def test_a_sweep_whose_budget_a_presearch_chose_records_its_seeds_and_is_judged_on_others(
    tmp_path: Path, empty_store: Path
) -> None:
    """mul_format_long's 12,000 steps came from a pre-search on seeds 0-2: its sweeps tag their parent run
    `presearch_seeds`, and the analysis reads the tag (its seeds 0-2 alone are not testable)."""
    uri = write_store(tmp_path, empty_store, grid="mul_format_long", fail_first=False, recorded=True)
    sweep = read_sweep("mul_format_long", uri)
    assert json.loads(sweep.presearch_seeds_tag) == [0, 1, 2]
    (found,) = analyse(sweep).findings
    assert found.status == NOT_TESTABLE and "judged on the seeds that chose its budget" in found.evidence


def test_out_naming_a_file_is_refused_before_the_analysis(tmp_path: Path, capsys) -> None:
    """`python -m analysis --out FILE` is refused before the analysis runs, not after it (FileExistsError)."""
    from analysis.__main__ import main as analysis_main

    taken = tmp_path / "report.md"
    taken.write_text("mine")
    for out in (taken, taken / "sub"):
        argv = ["--grid", "demo", "--tracking-uri", f"sqlite:///{tmp_path}/none.db", "--out", str(out)]
        assert analysis_main(argv) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and f"{taken} is a file" in lines[0], lines
    assert taken.read_text() == "mine" and not (tmp_path / "none.db").exists()
