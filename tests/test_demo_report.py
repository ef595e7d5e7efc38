"""The demo as a user meets it, from a real sweep: `sweeps/run.py --grid demo --scale smoke --seeds 2` (real
Ray Tune, the real trainer, a real SQLite MLflow store), then `python -m analysis --format html`. Two
seeds, as `make demo` runs three: the wrong answers were once lost whenever a sweep had more than one
seed, and tests whose frames were built by hand did not see it. Then MLflow as its users expect it: a
training experiment whose trials' models are logged models, loaded by MLflow's loader and by arith.ask,
and whose trials carry their point's colour.
The demo's 600 steps a trial take minutes on a shared 2-core machine: hence the longer timeout."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from arith.ask import main as ask_main
from arith.tracking import schema

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, str]:
    """A 2-seed smoke sweep of the demo grid and its HTML report; returns (uri, folder, report page)."""
    folder = tmp_path_factory.mktemp("demo")
    uri = f"sqlite:///{folder}/mlflow.db"
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Unix socket paths stay short
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")}
    try:
        cmd = [
            sys.executable, str(ROOT / "sweeps" / "run.py"), "--grid", "demo", "--scale", "smoke",
            "--seeds", "2", "--cpus-per-trial", "1", "--max-concurrent", "2", "--tracking-uri", uri,
            "--storage-path", str(folder / "ray_results"), "--ray-temp-dir", ray_tmp, "--quiet",
        ]  # fmt: skip
        done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    out = folder / "report"
    done = subprocess.run(
        [sys.executable, "-m", "analysis", "--grid", "demo", "--tracking-uri", uri, "--format", "html",
         "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return uri, folder, (out / "report.html").read_text()


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_demo_report_shows_what_a_reader_must_see(demo) -> None:
    _, folder, page = demo
    assert "<h1>Sweep analysis: demo</h1>" in page and "4 trials (4 FINISHED)" in page
    # the verdict, with its 95% interval kept inside what a difference of accuracies can be
    verdicts = re.findall(r'<span class="verdict [a-z-]+">([^<]+)</span>', page)
    assert len(verdicts) == 1
    cis = [(float(lo), float(hi)) for lo, hi in re.findall(r"95% CI \[([-+.\d]+), ([-+.\d]+)\]", page)]
    assert cis and all(-1.0 <= lo <= hi <= 1.0 for lo, hi in cis)
    # the table beside the paper's (no paper table for addition here), its unseen-problems block
    assert "<h3>add</h3>" in page and "<h4>this sweep</h4>" in page
    assert "<h4>unseen problems only (not in the training set)</h4>" in page
    assert 'alt="heatmap: add"' in page
    # the wrong answers: each format's digit-error figure and a few wrong answers of its cells, or, for
    # a format that answered every test problem right (the padded one often does), a line that says so
    assert "What the trials wrote when wrong: add" in page
    points = ["format=basic", "format=padding_reverse"]
    drawn = [p for p in points if f'alt="digit errors: {html.escape(p)}"' in page]
    clean = [p for p in points if f"<strong>{html.escape(p)}</strong>: no wrong answers" in page]
    assert "format=basic" in drawn and sorted(drawn + clean) == points, (drawn, clean)
    assert page.count('class="wrong-answers"') == len(drawn) and "(expected <code>" in page
    assert len(list((folder / "report" / "digit_errors").glob("*.png"))) == len(drawn)
    assert "Spread over seeds" in page and "Learning curves" in page and "Test accuracy by epoch" in page


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_demo_is_a_training_experiment_whose_models_mlflow_and_ask_load(demo, capsys) -> None:
    import mlflow
    import mlflow.pytorch

    uri, folder, _ = demo
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("demo")
    assert experiment.tags[schema.EXPERIMENT_KIND_TAG] == schema.EXPERIMENT_KIND
    trials = client.search_runs([experiment.experiment_id], "tags.sweep IS NULL")
    models = client.search_logged_models([experiment.experiment_id])
    assert len(trials) == 4 and sorted(m.source_run_id for m in models) == sorted(
        t.info.run_id for t in trials
    )
    assert {m.name for m in models} == {schema.MODEL_ARTIFACT}
    # the UI draws each trial in its point's colour: both seeds of a format alike, the two formats apart
    colours: dict[str, set[str]] = {}
    for t in trials:
        colours.setdefault(t.data.params["data.format"], set()).add(t.data.tags[schema.RUN_COLOR_TAG])
    assert sorted(map(len, colours.values())) == [1, 1] and len(set.union(*colours.values())) == 2
    padded = next(t for t in trials if t.data.params["data.format"] == "padding_reverse")
    with mlflow.tracking._tracking_service.utils._use_tracking_uri(uri):
        model = mlflow.pytorch.load_model(f"runs:/{padded.info.run_id}/model")
    assert sum(p.numel() for p in model.parameters()) > 0
    assert ask_main([padded.info.run_id, "12+7", "--tracking-uri", uri]) == 0
    out = capsys.readouterr().out
    assert "expected: 9 1 0 0  (= 19)" in out and "reply:" in out
    # nothing was written to a default store beside the sweep
    assert not (folder / "mlruns").exists()


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_demo_heatmap_titles_fit_their_figure(demo) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from analysis import analyse, read_sweep
    from analysis.plots import heatmap

    uri, _, _ = demo
    (table,) = analyse(read_sweep("demo", uri)).tables
    figure = heatmap(table)
    renderer = FigureCanvasAgg(figure).get_renderer()
    width = figure.get_figwidth() * figure.dpi
    titles = [ax.title for ax in figure.axes if ax.get_title()]
    assert len(titles) == 2 and "unseen" in titles[1].get_text()  # the second panel: unseen problems only
    assert all(
        t.get_window_extent(renderer).x0 >= 0 and t.get_window_extent(renderer).x1 <= width for t in titles
    )
