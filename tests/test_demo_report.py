"""The demo's report as a reader opens it, built from a real sweep: `sweeps/run.py --grid demo --scale smoke
--seeds 2` (real Ray Tune, the real trainer, a real SQLite MLflow store), then `python -m analysis --format
html`. Two seeds, as `make demo` runs three: the wrong answers were once lost whenever a sweep had more
than one seed, and tests whose frames were built by hand did not see it."""

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
    # the wrong answers: each format's digit-error figure and a few wrong answers of its cells
    assert "What the trials wrote when wrong: add" in page
    for point in ("format=basic", "format=padding_reverse"):
        assert f'alt="digit errors: {html.escape(point)}"' in page, point
    assert page.count('class="wrong-answers"') == 2 and "(expected <code>" in page
    assert len(list((folder / "report" / "digit_errors").glob("*.png"))) == 2
    assert "Spread over seeds" in page and "Learning curves" in page and "Test accuracy by epoch" in page
