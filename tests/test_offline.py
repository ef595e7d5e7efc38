"""The executor for machines without Ray or MLflow (sweeps.offline) and the GPU plan (lab.bank).

The executor's archive must import and judge like a Ray Tune sweep's: the slow test runs one smoke grid
both ways (a real local Ray and SQLite MLflow store for Tune; plain processes for the executor), imports
both into one store and compares runs, params, metrics and verdicts."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from analysis.load import read_sweep
from analysis.report import analyse
from arith.tracking import archive, store
from arith.tracking.archive import export_sweep, import_sweep, read_archive
from arith.tracking.recorder import RunRecorder
from arith.tracking.schema import PRESEARCH_SEEDS_TAG, WEIGHTS_DIGEST_TAG
from arith.training.train import train
from lab.bank import Batch, archive_summary, load_batches, next_batch, run_next, status
from sweeps import offline
from sweeps.errors import SweepError
from sweeps.grids import GRIDS
from sweeps.offline import SweepPart, run_parts
from sweeps.scales import SCALES
from sweeps.storage import sweep_tags

ROOT = Path(__file__).resolve().parent.parent
#: a fast smoke grid: 2 points of 3-digit addition, seconds a trial
GRID = "demo"
FAST = {"train.max_steps": "12", "data.test_per_cell": "2"}
#: metrics that time a run, not what it learned
TIMINGS = ("seconds", "per_s", "tokens_per_s")


def _deterministic(key: str) -> bool:
    return not any(word in key for word in TIMINGS)


def test_recorder_keeps_a_trial_in_the_archive_schema(tmp_path):
    part = SweepPart(GRID, "smoke", 1, {"data.format": "padding_reverse"}, FAST)
    (cfg,) = part.configs()
    path = tmp_path / "trial.run.json"
    result = train(cfg, tracker=RunRecorder(cfg, path))
    record = json.loads(path.read_text())
    assert record["status"] == "FINISHED" and record["end_time"] >= record["start_time"]
    assert record["run_name"] == cfg.tracking.run_name and len(record["run_id"]) == 32
    assert record["params"]["train.seed"] == "0" and record["params"]["data.format"] == "padding_reverse"
    assert json.loads(record["params"]["data.test_digits"]) == cfg.data.test_digits  # lists as JSON
    assert record["tags"]["point"] == cfg.tracking.tags["point"] and record["tags"]["device"] == "cpu"
    assert record["metrics"]["test_acc"][-1][2] == pytest.approx(result.test_acc)
    cells = pd.read_csv(pd.io.common.StringIO(record["artifacts"]["eval/cells.csv"]))
    assert len(cells) == len(result.cells) and set(cells["epoch"]) == {result.epochs_done}
    errors = pd.read_csv(pd.io.common.StringIO(record["artifacts"]["eval/errors.csv"]))
    wrong = int((cells["n"] - cells["correct"]).sum())
    assert len(errors) == wrong  # every wrong answer of this small grid is kept
    assert set(record["artifacts"]) <= set(archive.ARTIFACTS)


def test_a_presearch_draws_its_seeds_from_100_up(tmp_path):
    part = SweepPart(GRID, "smoke", (0, 1), sets=FAST, presearch_seeds=(0, 1))
    with pytest.raises(SweepError, match="from 100 up"):
        run_parts([part], tmp_path, procs=1)


def test_only_picks_points_before_set_moves_them():
    part = SweepPart("mul_format", "gpu", (100,), {"data.max_digits": "5"}, {"data.max_digits": "3"})
    configs = part.configs()
    assert {c.data.max_digits for c in configs} == {3}
    assert len(configs) == 4  # the 5-digit points of the four formats, moved to 3 digits
    assert "max_digits=5" in configs[0].tracking.tags["point"]


def test_gpu_scale_keeps_the_papers_digits_and_records_its_presearch_seeds():
    (cfg,) = SweepPart("mul_format", "gpu", 1, {"data.max_digits": "5", "data.format": "basic"}).configs()
    assert (cfg.data.max_digits, cfg.data.train_samples, cfg.data.test_per_cell) == (5, 300_000, 100)
    assert cfg.model.preset == "gpt2-mini" and cfg.train.max_steps == 8000
    tags = sweep_tags(GRIDS["mul_format"], SCALES["gpu"], 1, "abc")
    assert json.loads(tags[PRESEARCH_SEEDS_TAG]) == [100, 101]
    assert json.loads(tags["digit_map"])["5"] == 5


def test_plan_is_valid_and_banked_batches_have_their_archives():
    batches = load_batches()
    assert batches and all(len(b.parts) <= 6 for b in batches)
    for batch in batches:
        for part in batch.parts:
            assert part.configs(), part.name  # every part resolves to trials
            if batch.banked():
                _, records = read_archive(batch.archive(part))
                parent = records[0]
                assert parent["tags"]["grid"] == part.grid and parent["tags"]["executor"] == "sweeps.offline"
                assert json.loads(parent["tags"][PRESEARCH_SEEDS_TAG]) == sorted(part.presearch_seeds)
                assert len(records) - 1 == int(parent["tags"]["trials"])
    chosen = [b for b in batches if b.chosen_by]
    assert all(all(s >= 100 for p in b.parts for s in p.presearch_seeds) for b in chosen)
    assert "banked" in status(batches)


def test_next_batch_passes_over_a_batch_whose_parts_are_not_written(tmp_path):
    part = SweepPart("demo", "smoke", (100,), presearch_seeds=(100,), label="p")
    waiting = Batch("b_waits", "parts from a's results", 5.0, 2, ())
    ready = Batch("c_ready", "independent", 5.0, 2, (part,))
    assert next_batch([waiting, ready], bank=tmp_path) == ready
    (tmp_path / "c_ready").mkdir()
    (tmp_path / "c_ready" / "p.jsonl").write_text("")
    assert ready.banked(tmp_path) and next_batch([waiting, ready], bank=tmp_path) is None
    assert "b_waits: parts to write" in status([waiting, ready], bank=tmp_path)


#: a plan of the test's own (the committed one runs out as its batches are banked): a banked pre-search,
#: then the batch `next` runs, two parts (the gpu scale's default, and a smoke part) whose budget it chose
FIXED_PLAN = [
    {
        "batch": "a_presearch",
        "what": "a pre-search, banked",
        "minutes": 1.0,
        "procs": 2,
        "parts": [{"grid": GRID, "scale": "smoke", "label": "searched", "seeds": [100], "presearch": True}],
    },
    {
        "batch": "b_next",
        "what": "the batch to run",
        "minutes": 5.0,
        "procs": 2,
        "chosen_by": "a_presearch",
        "parts": [
            {
                "grid": "mul_format",
                "label": "mul_format_3",
                "seeds": [0],
                "only": {"data.max_digits": 5, "data.format": "padding_reverse"},
                "set": {"data.max_digits": 3},
            },
            {
                "grid": GRID,
                "scale": "smoke",
                "label": "demo_basic",
                "seeds": [0],
                "only": {"data.format": "basic"},
            },
        ],
    },
]


def test_next_batch_runs_on_a_cpu_at_a_tiny_budget(tmp_path):
    """The next batch of a fixed plan end to end on this machine (no GPU): the path the device command
    takes, past a banked batch, with the pre-search seeds of the batch that chose its budget."""
    plan, bank = tmp_path / "plan.yaml", tmp_path / "bank"
    plan.write_text(yaml.safe_dump(FIXED_PLAN))
    (bank / "a_presearch").mkdir(parents=True)
    (bank / "a_presearch" / "searched.jsonl").write_text("")
    batches = load_batches(plan)
    assert batches[0].banked(bank) and next_batch(batches, bank) == batches[1]
    paths = run_next(tmp_path / "out", tiny=True, bank=bank, plan=plan)
    assert [p.name for p in paths] == ["mul_format_3.jsonl", "demo_basic.jsonl"]
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    for path in paths:
        _, records = read_archive(path)
        parent, trials = records[0], records[1:]
        assert parent["tags"]["executor"] == "sweeps.offline" and json.loads(
            parent["tags"][PRESEARCH_SEEDS_TAG]
        ) == [100]
        assert len(trials) == 1 and {r["status"] for r in trials} == {"FINISHED"}
        assert trials[0]["params"]["model.preset"] == "nano"  # the tiny budget
        import_sweep(uri, path)
    assert not read_sweep("mul_format", uri).cells.empty and not read_sweep(GRID, uri).cells.empty


def test_deadline_stops_running_trials_and_keeps_what_they_logged(tmp_path):
    """A trial still running at the deadline is stopped and archived KILLED with what it logged. The
    deadline leaves a slow, busy CPU time to start the trial and log (20 s did not, on a 2-core Zen 3
    beside a sweep), and the trial logs every step. Its epochs are raised with its steps: the smoke scale's
    12 epochs alone end the trial in ~36 s on a Zen 5, inside the deadline."""
    sets = {"train.max_steps": "100000", "train.epochs": "100000", "train.log_every_steps": "1"}
    part = SweepPart(GRID, "smoke", 1, {"data.format": "basic"}, sets)
    (path,) = run_parts([part], tmp_path, procs=1, deadline_s=45)
    _, records = read_archive(path)
    parent, trials = records[0], records[1:]
    assert parent["status"] == "KILLED"
    assert [t["status"] for t in trials] == ["KILLED"] and trials[0]["end_time"]
    assert trials[0]["params"]["train.max_steps"] == "100000"
    # the lease's summary says how far a stopped trial got (it has no epochs_done), not "0 steps"
    last_step = trials[0]["metrics"]["train/loss"][-1][0]
    assert last_step > 0 and f"KILLED, {last_step} steps" in archive_summary(path)


def test_next_batch_takes_a_shorter_deadline_than_its_plan(tmp_path):
    """A lease with less time left than the batch asks for: `minutes` stops the trials in time to write
    the archives (the same call again resumes them from the work folder, as any deadline's)."""
    plan, bank = tmp_path / "plan.yaml", tmp_path / "bank"
    endless = {
        "grid": GRID,
        "scale": "smoke",
        "seeds": [0],
        "set": {"train.max_steps": 100000, "train.epochs": 100000},
    }
    plan.write_text(
        yaml.safe_dump([{"batch": "long", "what": "w", "minutes": 60.0, "procs": 1, "parts": [endless]}])
    )
    started = time.monotonic()
    (path,) = run_next(tmp_path / "out", bank=bank, plan=plan, minutes=0.3)
    assert time.monotonic() - started < 120
    assert [t["status"] for t in read_archive(path)[1][1:]] == ["KILLED"]


@pytest.mark.slow
def test_offline_archive_imports_and_judges_like_a_tune_sweep(tmp_path):
    """The same smoke grid through Ray Tune and through the executor: same runs, params, metrics and
    verdicts once both are in an MLflow store."""
    tune_uri = f"sqlite:///{tmp_path}/tune.db"
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")}
    sets = [arg for k, v in FAST.items() for arg in ("--set", f"{k}={v}")]
    command = [sys.executable, "sweeps/run.py", "--grid", GRID, "--scale", "smoke", "--seeds", "2"]
    command += [*sets, "--tracking-uri", tune_uri, "--storage-path", str(tmp_path / "ray")]
    command += ["--ray-temp-dir", temp_dir, "--cpus-per-trial", "1", "--quiet"]
    try:
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    client = store.client(tune_uri)
    tune_parent = read_sweep(GRID, tune_uri).parent_run_id
    export_sweep(client, tune_parent, tmp_path / "tune.jsonl")

    (offline,) = run_parts([SweepPart(GRID, "smoke", 2, sets=FAST)], tmp_path / "offline", procs=2)
    uri = f"sqlite:///{tmp_path}/both.db"
    runs = {}
    for name, path in (("tune", tmp_path / "tune.jsonl"), ("offline", offline)):
        parent_id, new = import_sweep(uri, path)
        assert new
        sweep = read_sweep(GRID, uri, parent_id)
        runs[name] = (sweep, read_archive(path)[1])

    (tune_sweep, tune_records), (off_sweep, off_records) = runs["tune"], runs["offline"]
    by_name = {
        name: {r["run_name"]: r for r in records[1:]}
        for name, records in (("tune", tune_records), ("offline", off_records))
    }
    assert set(by_name["tune"]) == set(by_name["offline"]) and len(by_name["tune"]) == 4
    for run_name, tune_run in by_name["tune"].items():
        off_run = by_name["offline"][run_name]
        assert off_run["status"] == tune_run["status"] == "FINISHED"
        differ = {k for k in tune_run["params"] if tune_run["params"][k] != off_run["params"].get(k)}
        assert differ <= {"tracking.tracking_uri", "tracking.parent_run_id", "tracking.tags"}, differ
        assert set(off_run["metrics"]) == set(tune_run["metrics"])
        for key in filter(_deterministic, tune_run["metrics"]):
            tune_steps, tune_values = zip(*[(s, v) for s, _, v in tune_run["metrics"][key]], strict=True)
            off_steps, off_values = zip(*[(s, v) for s, _, v in off_run["metrics"][key]], strict=True)
            assert off_steps == tune_steps, key
            assert off_values == pytest.approx(tune_values, rel=1e-5, abs=1e-6), key
        assert off_run["artifacts"]["eval/cells.csv"] == tune_run["artifacts"]["eval/cells.csv"]
        assert off_run["tags"][WEIGHTS_DIGEST_TAG] == tune_run["tags"][WEIGHTS_DIGEST_TAG]  # to the last bit
    assert len(off_sweep.cells) == len(tune_sweep.cells)
    tune_findings = [(f.claim, f.status, f.numbers) for f in analyse(tune_sweep).findings]
    off_findings = [(f.claim, f.status, f.numbers) for f in analyse(off_sweep).findings]
    assert tune_findings == off_findings and tune_findings


def test_a_rerun_keeps_its_plans_trials_and_refuses_another_plan(tmp_path):
    """A second run into the same folder with other `--only`/`--set` values put the first
    run's trial into its archive. The folder is the plan's: the same plan resumes (the finished trial
    kept as it is, nothing rerun), another plan is refused before anything is written."""
    first = SweepPart(GRID, "smoke", 1, {"data.format": "padding_reverse"}, FAST, label="demo")
    (path,) = run_parts([first], tmp_path, procs=1)
    (before,) = read_archive(path)[1][1:]
    (again,) = run_parts([first], tmp_path, procs=1)
    (after,) = read_archive(again)[1][1:]
    assert after == before  # kept, not rerun
    assert read_archive(again)[1][0]["run_id"] == read_archive(path)[1][0]["run_id"]

    other = SweepPart(GRID, "smoke", 1, sets={**FAST, "train.lr": "1e-3"}, label="demo")
    archive_text = path.read_text()
    with pytest.raises(SweepError, match="holds the trials of another plan"):
        run_parts([other], tmp_path, procs=1)
    assert path.read_text() == archive_text


def test_a_folder_with_records_of_no_plan_is_refused(tmp_path):
    (tmp_path / "demo.trials").mkdir()  # the work folder of the archive demo.jsonl
    (tmp_path / "demo.trials" / "00-format-basic_seed-0.run.json").write_text("{}")
    part = SweepPart(GRID, "smoke", 1, {"data.format": "basic"}, FAST)
    with pytest.raises(SweepError, match="no known plan"):
        run_parts([part], tmp_path, procs=1)
    assert not (tmp_path / "demo.jsonl").exists()


@pytest.mark.parametrize(
    "value",
    ["train.lr=nan", "train.lr=inf", "model.n_head=0", "model.n_positions=0", "train.log_every_steps=0"],
)
def test_bad_set_values_are_refused_in_one_line(tmp_path, capsys, value):
    out = tmp_path / "sweep" / "demo.jsonl"
    argv = ["--grid", GRID, "--scale", "smoke", "--set", value, "--out", str(out)]
    assert offline.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and value.split("=")[0] in err
    assert not out.parent.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the crash is asking for CUDA where there is none")
def test_a_crashed_trial_is_failed_with_its_error_and_the_exit_code_says_so(tmp_path):
    """A trial that raised was archived KILLED and the executor exited 0."""
    out = tmp_path / "demo.jsonl"
    sets = [arg for k, v in {**FAST, "train.device": "cuda"}.items() for arg in ("--set", f"{k}={v}")]
    command = [sys.executable, "-m", "sweeps.offline", "--grid", GRID, "--scale", "smoke", "--procs", "1"]
    command += ["--only", "data.format=basic", *sets, "--out", str(out)]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 trial(s) FAILED" in proc.stderr
    (record,) = read_archive(out)[1][1:]
    assert record["status"] == "FAILED" and read_archive(out)[1][0]["status"] == "FAILED"
    assert record["tags"]["failure_message"].startswith("ConfigError: train.device='cuda'")


def _history(record: dict) -> dict[str, list[tuple[int, float]]]:
    return {k: [(s, v) for s, _, v in h] for k, h in record["metrics"].items() if _deterministic(k)}


@pytest.mark.slow
def test_a_killed_executor_rerun_resumes_each_trial_once_with_its_whole_history(tmp_path):
    """The executor killed (SIGKILL, its trial left running) after a checkpoint,
    then the same command again: the trial continues from its checkpoint, and its record is the record of
    a run never stopped (every metric at the same steps with the same values: none twice, none missing)."""
    sets = {
        "data.train_samples": "640",  # 5 steps an epoch, a checkpoint after each
        "data.test_per_cell": "2",
        "train.log_every_steps": "5",
        "train.checkpoint_every": "1",
    }
    part = SweepPart(GRID, "smoke", 1, {"data.format": "basic"}, sets, label="demo")
    (whole,) = run_parts([part], tmp_path / "whole", procs=1)
    (reference,) = read_archive(whole)[1][1:]

    out = tmp_path / "cut" / "demo.jsonl"
    command = [sys.executable, "-m", "sweeps.offline", "--grid", GRID, "--scale", "smoke", "--procs", "1"]
    command += ["--only", "data.format=basic", "--out", str(out)]
    command += [arg for k, v in sets.items() for arg in ("--set", f"{k}={v}")]
    driver = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    records = out.parent / "demo.trials"  # the archive's own work folder
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # until the evaluation after epoch 3: checkpoints 1 to 3 saved
            saved = [json.loads(p.read_text()) for p in records.glob("*.run.json")]
            if saved and len(saved[0]["metrics"].get("test_acc", [])) >= 2:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the trial evaluated nothing in 300 s")
        # paused, so that it cannot end on its own before the rerun; a killed driver's trial runs on
        trial_pid = int(next(records.glob("*.pid")).read_text())
        os.kill(trial_pid, signal.SIGSTOP)
    finally:
        driver.kill()  # kill -9
        driver.wait()
    assert driver.returncode == -signal.SIGKILL

    try:
        (path,) = run_parts([part], out.parent, procs=1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(trial_pid, signal.SIGKILL)  # the rerun stopped it; this only cleans up a failure
    (resumed,) = read_archive(path)[1][1:]
    assert "resumed from epoch" in next(records.glob("*.log")).read_text()
    assert resumed["status"] == "FINISHED" and read_archive(path)[1][0]["status"] == "FINISHED"
    got, want = _history(resumed), _history(reference)
    assert set(got) == set(want)
    for key in want:
        assert [s for s, _ in got[key]] == [s for s, _ in want[key]], key
        assert [v for _, v in got[key]] == pytest.approx([v for _, v in want[key]], rel=1e-5, abs=1e-6), key
    assert resumed["artifacts"]["eval/cells.csv"] == reference["artifacts"]["eval/cells.csv"]
    assert not list(records.glob("*.ckpt"))  # an ended trial's checkpoint is removed
