"""benchmarks/bench_paper.py and scripts/gpu_bench.sh on a CPU with the tiny preset: a test of the
benchmark's code path (schedules, widths, tables, packing), not a cost. Ray and MLflow are blocked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arith.training.batching import batches_per_epoch
from sweeps.packing import PackingMeasurement
from sweeps.scales import PAPER_BUCKET_LENGTHS

ROOT = Path(__file__).resolve().parents[1]
#: run a script with `import ray` and `import mlflow` failing, as on a GPU box that has neither
BLOCKED = "import runpy, sys; sys.modules['ray'] = sys.modules['mlflow'] = None; sys.argv = sys.argv[1:]; "
TINY = ["--device", "cpu", "--preset", "tiny", "--probe", "200", "--warmup", "1"]


def run_blocked(script: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    code = BLOCKED + f"runpy.run_path({script!r}, run_name='__main__')"
    return subprocess.run(
        [sys.executable, "-c", code, script, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", **(env or {})},
        timeout=900,
    )


def test_widths_measured_are_the_needed_few_or_a_stride_over_many() -> None:
    from benchmarks.bench_paper import widths_to_measure

    assert widths_to_measure({48, 16, 32}) == [16, 32, 48]
    many = widths_to_measure(set(range(13, 84)))
    assert many[0] == 13 and many[-1] == 83 and all(w % 8 == 0 for w in many[1:-1]) and len(many) == 11


def test_table_extrapolates_each_point_to_its_schedule_without_ray_or_mlflow(tmp_path) -> None:
    from benchmarks.bench_paper import main

    args = [*TINY, "--set", "train.compile=false", "--grids", "mul_simple_case", "--steps", "2"]
    args += ["--eval-samples", "8", "--out", str(tmp_path)]
    assert main(["table", "--mode", "before", *args]) == 0
    done = run_blocked("benchmarks/bench_paper.py", "table", "--mode", "after", *args)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| mul_simple_case | 4 |" in done.stdout and "price: g5.2xlarge" in done.stdout
    before = json.loads((tmp_path / "paper_gpu_hours_before.json").read_text())
    after = json.loads((tmp_path / "paper_gpu_hours_after.json").read_text())
    for result in (before, after):
        assert result["device"] == "cpu" and result["preset"] == "tiny" and len(result["points"]) == 4
        for row in result["points"]:
            # 300,000 samples x 300 epochs at batch 32, one evaluation (the last epoch)
            assert row["steps"] == 300 * batches_per_epoch(300_000, 32) and row["evaluations"] == 1
            assert row["gpu_hours"] > row["train_hours"] > 0 and row["eval_hours"] > 0
        assert result["gpu_hours"] == pytest.approx(sum(r["GPU-hours"] for r in result["grids"]))
    # before: batches as long as their longest line; after: bucket widths only
    assert any(int(w) not in PAPER_BUCKET_LENGTHS for r in before["points"] for w in r["widths"])
    assert all(int(w) in PAPER_BUCKET_LENGTHS for r in after["points"] for w in r["widths"])


@pytest.mark.slow
@pytest.mark.timeout(2400)  # seven Python processes; on a shared, loaded 2-core machine over 15 minutes
def test_gpu_bench_dry_run_writes_every_result(tmp_path) -> None:
    """The GPU script's whole path (steps before/after, packing 1 and 2 processes, both tables) on a CPU."""
    done = subprocess.run(
        ["bash", "scripts/gpu_bench.sh", "--dry"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "OUT": str(tmp_path),
            "PYTHON": sys.executable,
            "OMP_NUM_THREADS": "1",
            "GPU_BENCH_SECONDS": "1800",
        },
        timeout=2400,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    steps = [json.loads(line) for line in (tmp_path / "step_batch32.jsonl").read_text().splitlines()]
    assert [s["mode"] for s in steps] == ["before", "after"] and all(s["batch_size"] == 32 for s in steps)
    packing = PackingMeasurement.from_json((tmp_path / "gpu_packing.json").read_text())
    assert set(packing.steps_per_s) == {1, 2} and packing.trial_memory_bytes > 0
    for mode in ("before", "after"):
        assert (tmp_path / f"paper_gpu_hours_{mode}.md").read_text().startswith("Measured on cpu")
    summary = (tmp_path / "summary.md").read_text()
    assert "failed" not in summary and "skipped" not in summary and "GPU-hours, after" in summary
