"""End to end: real `smoke` sweeps (Ray Tune, the real trainer, a real SQLite MLflow store), then the
analysis of them: the report `sweeps/run.py` prints, `python -m analysis`, tables, findings, heatmaps and
the artifacts logged on the sweep's parent run."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
#: nl_mix: dialogue tables per context and evaluation epoch, three findings (the multiplication tables are
#: checked on a real store in test_analysis.py, and tests/test_run_sweep.py sweeps mul_simple_case)
GRIDS_UNDER_TEST = ("nl_mix",)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, dict[str, str]]:
    """One store holding a smoke sweep of each grid under test; returns (uri, folder, sweep stdout)."""
    folder = tmp_path_factory.mktemp("sweeps")
    uri = f"sqlite:///{folder}/mlflow.db"
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Unix socket paths stay short
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")}
    outputs = {}
    try:
        for grid in GRIDS_UNDER_TEST:
            cmd = [
                sys.executable, str(ROOT / "sweeps" / "run.py"), "--grid", grid, "--scale", "smoke",
                "--cpus-per-trial", "1", "--max-concurrent", "2", "--tracking-uri", uri,
                "--storage-path", str(folder / "ray_results"), "--ray-temp-dir", ray_tmp,
            ]  # fmt: skip
            # cwd: anything the sweep writes beside itself lands in the test's folder
            done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
            outputs[grid] = done.stdout
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    return uri, folder, outputs


@pytest.mark.slow
def test_sweep_ends_with_its_trials_verdicts_and_the_comparison_written_beside_the_store(swept) -> None:
    """The end of a sweep, as Tune users expect it: a row per trial, a verdict line per claim of the grid,
    then the report, whose HTML holds the comparison with the paper (its claims and its tables)."""
    from analysis import analyse, read_sweep

    uri, folder, outputs = swept
    for grid, stdout in outputs.items():
        trials = int(re.search(rf"sweep {grid}-smoke-\S+: (\d+) trials", stdout).group(1))
        rows = [line for line in stdout.splitlines() if line.rstrip().endswith(" FINISHED")]
        assert len(rows) == trials, stdout[-3000:]
        verdicts = [line for line in stdout.splitlines() if line.startswith("verdict  ")]
        assert verdicts and len(verdicts) == len(analyse(read_sweep(grid, uri)).findings), stdout[-3000:]
        report = folder / "reports" / grid / "report.html"
        assert f"report   {report}" in stdout
        page = report.read_text()
        assert f"<h1>Sweep analysis: {grid}</h1>" in page
        assert "The paper&#x27;s claims" in page or "The paper's claims" in page
        assert "Tables beside the paper" in page


@pytest.mark.slow
def test_tables_findings_and_heatmaps_from_the_smoke_sweeps(swept) -> None:
    from mlflow import MlflowClient

    from analysis import analyse, read_sweep
    from analysis.findings import NOT_TESTABLE, VERDICTS
    from experiments.registry import claims_for

    uri, folder, _ = swept
    client = MlflowClient(uri)
    for grid in GRIDS_UNDER_TEST:
        sweep = read_sweep(grid, uri)
        children = client.search_runs(
            [client.get_run(sweep.parent_run_id).info.experiment_id],
            f"tags.mlflow.parentRunId = '{sweep.parent_run_id}'",
        )
        assert len(sweep.trials) == len(children) and (sweep.trials["status"] == "FINISHED").all()
        analysis = analyse(sweep)

        # one row per trial x evaluation x cell; this sweep's numbers are the trainer's
        for run in children:
            cells = sweep.cells[sweep.cells["run_id"] == run.info.run_id]
            final = cells[cells["epoch"] == cells["epoch"].max()]
            assert final["accuracy"].mean() == pytest.approx(run.data.metrics["test_acc"], abs=1e-6)

        # per context (dialogue, pure_addition) x evaluation (standing for the paper's 50 and 100 epochs)
        assert [t.paper_sources for t in analysis.tables] == [
            ["tb:acc_nldia_b"], ["tb:acc_nldia_a"], ["tb:acc_nldia_d"], ["tb:acc_nldia_c"],
        ]  # fmt: skip
        for table in analysis.tables:
            assert table.ours.shape == table.paper.shape == (3, 12)  # as tb:acc_nldia_a, b
            assert table.ours.notna().to_numpy().all()
            both = table.ours.notna() & table.paper.notna()
            assert both.to_numpy().sum() == (36 if "dialogue" in table.title else 24)  # c, d: no "dia" row
            assert ((table.ours - table.paper - table.diff)[both].abs().max().max()) < 1e-9
        statuses = [f.status for f in analysis.findings]
        assert len(statuses) == len(claims_for(grid)) > 0
        assert set(statuses) <= set(VERDICTS)
        assert all(any(ch.isdigit() for ch in f.evidence) for f in analysis.findings)
        # smoke models train for seconds and learn nothing: no claim is testable on them, each says why
        assert statuses == [NOT_TESTABLE] * len(statuses)
        assert all("not learned: seed" in f.evidence for f in analysis.findings)

        # the CLI writes the report, the CSVs and one heatmap per table, and logs them on the parent run
        out = folder / f"out_{grid}"
        done = subprocess.run(
            [sys.executable, "-m", "analysis", "--grid", grid, "--tracking-uri", uri, "--format", "html",
             "--out", str(out)],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        page = (out / "report.html").read_text()
        assert page.startswith("<!DOCTYPE html>") and f"<h1>Sweep analysis: {grid}</h1>" in page
        # self-contained: inline CSS, every figure an inline PNG (heatmaps, seeds, curves, digits, epochs)
        assert "<script" not in page and '<link rel="stylesheet"' not in page and 'src="http' not in page
        # ... and under each table, one digit-error figure per point with wrong answers kept
        digit_figures = page.count('<img alt="digit errors: ')
        assert digit_figures > 0
        # accuracy by digit count: for a grid whose cells are one digit count each (not multiplication's)
        by_digits = int(sweep.cells["row_digits"].isna().all())
        assert page.count("<h2>Accuracy by digit count</h2>") == by_digits
        figures = len(analysis.tables) + 3 + by_digits + digit_figures
        assert page.count('src="data:image/png;base64,') == figures
        assert "Test accuracy by epoch" in page and "Spread over seeds" in page and "Learning curves" in page
        assert all(f.status in page and html.escape(f.evidence) in page for f in analysis.findings)
        assert "HTML report:" in done.stdout and str(out / "report.html") in done.stdout
        heatmaps = sorted((out / "heatmaps").glob("*.png"))
        assert len(heatmaps) == len(analysis.tables)
        assert all(p.stat().st_size > 5000 for p in heatmaps)
        tables = pd.read_csv(out / "tables.csv")
        assert tables["paper_accuracy"].notna().any() and tables["accuracy"].notna().any()
        assert len(pd.read_csv(out / "findings.csv")) == len(analysis.findings)
        logged = {a.path for a in client.list_artifacts(sweep.parent_run_id, "analysis/heatmaps")}
        assert {f"analysis/heatmaps/{p.name}" for p in heatmaps} <= logged
