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

from analysis.findings import VERDICTS
from arith.ask import main as ask_main
from arith.tracking import schema

ROOT = Path(__file__).resolve().parent.parent
#: the sweep's printed output, kept in its folder
SWEEP_OUTPUT = "sweep.out"
#: the UI's query parameter of its model-training view
TRAINING = "workflowType=machine_learning"


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
        (folder / SWEEP_OUTPUT).write_text(done.stdout)  # its end: the trials' table, the links
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
    # each model named by its trial's point and seed, its weights stored once (in the pickled module)
    named = {t.info.run_id: f"{t.data.params['data.format']}-seed{t.data.tags['seed']}" for t in trials}
    assert {m.source_run_id: m.name for m in models} == named
    artifacts = [a.path for a in client.list_logged_model_artifacts(models[0].model_id)]
    extra = [a.path for a in client.list_logged_model_artifacts(models[0].model_id, "extra_files")]
    assert "data" in artifacts and not any(p.endswith((".safetensors", ".pt")) for p in extra), extra
    # the UI draws each trial in its point's colour: both seeds of a format alike, the two formats apart
    colours: dict[str, set[str]] = {}
    for t in trials:
        colours.setdefault(t.data.params["data.format"], set()).add(t.data.tags[schema.RUN_COLOR_TAG])
    assert sorted(map(len, colours.values())) == [1, 1] and len(set.union(*colours.values())) == 2
    padded = next(t for t in trials if t.data.params["data.format"] == "padding_reverse")
    with mlflow.tracking._tracking_service.utils._use_tracking_uri(uri):
        model = mlflow.pytorch.load_model(f"runs:/{padded.info.run_id}/{named[padded.info.run_id]}")
    assert sum(p.numel() for p in model.parameters()) > 0
    assert ask_main([padded.info.run_id, "12+7", "--tracking-uri", uri]) == 0
    out = capsys.readouterr().out
    assert "expected: 9 1 0 0  (= 19)" in out and "reply:" in out
    # by grid, point and seed (the latest sweep), as the same answer
    seed = padded.data.tags["seed"]
    asked = ["--grid", "demo", "--point", "padding_reverse", "--seed", seed, "12+7", "--tracking-uri", uri]
    assert ask_main(asked) == 0 and capsys.readouterr().out.splitlines()[1:] == out.splitlines()[1:]
    # the sweep's parent run is its summary: params, each point's seed means, a verdict tag by claim id
    (parent,) = client.search_runs([experiment.experiment_id], "tags.sweep = '1'")
    assert {k: parent.data.params[k] for k in ("grid", "scale", "axes", "seeds")} == {
        "grid": "demo", "scale": "smoke", "axes": "data.format", "seeds": "0, 1",
    }  # fmt: skip
    assert parent.data.params["command"].startswith("python sweeps/run.py --grid demo --scale smoke")
    for fmt in ("basic", "padding_reverse"):
        accs = [t.data.metrics["test_acc"] for t in trials if t.data.params["data.format"] == fmt]
        assert parent.data.metrics[f"{fmt}/test_acc"] == pytest.approx(sum(accs) / len(accs))
        assert parent.data.metrics[f"{fmt}/test_acc/ci95_low"] <= sum(accs) / len(accs)
    assert parent.data.tags["claim.padded_reverse_beats_plain"] in VERDICTS
    assert "analysis/report.html" in [a.path for a in client.list_artifacts(parent.info.run_id, "analysis")]
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


def page_text(dom: str) -> str:
    """What a reader sees of a page's DOM: its text, one ' | ' between elements."""
    text = re.sub(r"<(style|script|svg)\b.*?</\1>", "", dom, flags=re.S)
    return html.unescape(re.sub(r"(\s*\|\s*)+", " | ", re.sub(r"<[^>]+>", " | ", text)))


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_ui_in_a_browser_shows_the_trials_grouped_the_named_models_and_the_sweeps(demo, tmp_path) -> None:
    """The MLflow UI as a reader meets it, in headless Chromium on `mlflow server` over the demo's store:
    the view the sweep printed groups the trials by the grid's axis with their accuracies; the Models page
    lists a model a trial by its name; the grid's sweeps side by side show the sweep's params and its points'
    means; the HTML report links to the same view. Its screenshot is README's picture (`make screenshots`)."""
    import time

    import mlflow

    from analysis.screenshots import Shot, browser, dump_dom, free_port, mlflow_server, shoot

    uri, folder, _ = demo
    started = time.monotonic()
    printed = (folder / SWEEP_OUTPUT).read_text()
    view, sweeps = re.findall(r"(http://127\.0\.0\.1:5000/#/experiments/\S+)", printed)
    report = (folder / "reports" / "demo" / "report.html").read_text()  # the report the sweep wrote
    (linked,) = re.findall(r'<a id="mlflow-view" href="([^"]+)"', report)
    assert html.unescape(linked) == view  # the report leads to the view the sweep printed
    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("demo")
    trials = client.search_runs([experiment.experiment_id], "tags.sweep IS NULL")
    chromium = browser()
    with mlflow_server(uri, free_port()) as url:
        local = lambda link: link.replace("http://127.0.0.1:5000", url)  # noqa: E731
        table = page_text(dump_dom(chromium, local(html.unescape(linked)), 12000))
        assert "Group by: data.format" in table
        assert "Group: basic" in table and "Group: padding_reverse" in table
        for trial in trials:  # each trial by name, with its accuracy as the UI writes it
            assert trial.info.run_name in table and f"{trial.data.metrics['test_acc']:.6g}" in table
        exp = experiment.experiment_id
        models = page_text(dump_dom(chromium, f"{url}/#/experiments/{exp}/models?{TRAINING}", 8000))
        for trial in trials:
            assert f"{trial.data.params['data.format']}-seed{trial.data.tags['seed']}" in models
        side_by_side = page_text(dump_dom(chromium, local(sweeps), 8000))
        assert (
            "padding_reverse/test_acc" in side_by_side and "python sweeps/run.py --grid demo" in side_by_side
        )
        # MLflow 3.17 opens the plain experiment address in its GenAI view whatever the experiment's kind
        # tag (README says so beside `make ui`); the printed link opens the training view
        plain = page_text(dump_dom(chromium, f"{url}/#/experiments/{exp}", 8000))
        assert experiment.tags[schema.EXPERIMENT_KIND_TAG] == schema.EXPERIMENT_KIND
        assert "Training runs" in plain and "Group by: data.format" not in plain
        picture = shoot(chromium, Shot("mlflow_runs.png", local(view), (1900, 760)), tmp_path, 12000)
    assert picture.stat().st_size > 20_000  # drawn, not blank
    assert time.monotonic() - started < 90, "the browser checks must stay quick"
