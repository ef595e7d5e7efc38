"""The seen/unseen backfill of archived runs: exact where every wrong answer was kept, NaN elsewhere.

A tiny trial is faked with the evaluator's own scoring (`_score_cells`, `errors_frame`) and the tracker's
own CSV writing, then archived without the split columns: the backfill must give back what the evaluator
would have logged."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from arith.config import DataConfig, ExperimentConfig
from arith.data.datasets import test_examples, train_examples
from arith.data.tasks import problem_id, problem_ids
from arith.tracking.archive import FORMAT, VERSION, read_archive
from arith.tracking.backfill import backfill_archive, backfill_cells, config_from_params
from arith.tracking.runs import param_value
from arith.tracking.schema import SPLIT_COLUMNS
from arith.training.evaluate import EvalResult, _first_per_cell, _pick_failures, _score_cells

DATA = DataConfig(task="mul", format="basic", min_digits=1, max_digits=2, train_samples=150, test_per_cell=12)


def _config() -> ExperimentConfig:
    return ExperimentConfig(data=DATA).with_overrides({"tracking.tags": {"seed": "0"}})


def _trial(errors_per_cell: int) -> tuple[dict, pd.DataFrame]:
    """(an archived trial record without the split, the cells frame the evaluator logs with it): two
    evaluations, the last one's wrong answers kept up to `errors_per_cell` a cell."""
    cfg = _config()
    test = test_examples(cfg.data)
    train = problem_ids(train_examples(cfg.data))
    seen = [problem_id(e) in train for e in test]
    frames = []
    for epoch, every in ((1, 2), (2, 3)):  # a wrong answer every 2nd, then every 3rd problem and the last
        correct = [i % every != 0 and i != len(test) - 1 for i in range(len(test))]
        frame = EvalResult(cells=_score_cells(test, correct, seen), failures=[], seconds=1.0).to_frame()
        frame.insert(0, "epoch", epoch)
        frames.append(frame)
    generated = ["0" if ok else "1 2" for ok in correct]
    kept = _first_per_cell(_pick_failures(test, generated, correct, errors_per_cell), errors_per_cell)
    errors = EvalResult(cells=[], failures=[], seconds=1.0, errors=kept).errors_frame()
    errors.insert(0, "epoch", 2)
    cells = pd.concat(frames, ignore_index=True)
    archived = cells.drop(columns=list(SPLIT_COLUMNS)).to_csv(index=False)
    record = {
        "run_id": "r1",
        "run_name": "trial",
        "parent_run_id": "p0",
        "status": "FINISHED",
        "start_time": 1,
        "end_time": 2,
        "params": {key: param_value(value) for key, value in cfg.flat().items()},
        "tags": {},
        "metrics": {},
        "artifacts": {"eval/cells.csv": archived, "eval/errors.csv": errors.to_csv(index=False)},
    }
    return record, cells


def _split(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


def test_the_params_give_back_the_config() -> None:
    record, _ = _trial(100)
    assert config_from_params(record["params"]) == _config()


def test_every_wrong_answer_kept_gives_the_evaluators_split_on_the_last_epoch() -> None:
    record, expected = _trial(100)
    text, n_exact = backfill_cells(record)
    got = _split(text)
    assert n_exact == 4 and list(got.columns) == list(expected.columns)
    last = got["epoch"] == 2
    pd.testing.assert_frame_equal(got[last], expected[last])
    assert got.loc[~last, list(SPLIT_COLUMNS)].isna().all().all()  # no errors kept for epoch 1
    assert expected.loc[last, "n_seen"].between(1, 11).any()  # both parts hold problems somewhere
    original = record["artifacts"]["eval/cells.csv"].splitlines()
    assert [line.rsplit(",", 3)[0] for line in text.splitlines()[1:]] == original[1:]  # old fields kept


def test_cells_whose_errors_were_cut_stay_nan() -> None:
    record, expected = _trial(4)
    final = expected[expected["epoch"] == 2]
    cut = (final["n"] - final["correct"]) > 4
    assert cut.any() and not cut.all()
    got = _split(backfill_cells(record)[0])
    got = got[got["epoch"] == 2]
    assert got.loc[cut.to_numpy(), list(SPLIT_COLUMNS)].isna().all().all()
    pd.testing.assert_frame_equal(got[~cut.to_numpy()], final[~cut])


def test_the_archive_is_rewritten_once_and_only_that_run(tmp_path: Path) -> None:
    record, _ = _trial(100)
    other, _ = _trial(100)
    other["params"]["data.test_per_cell"] = "11"  # its test set no longer has the archived counts
    other["run_name"] = "other"
    header = {"format": FORMAT, "version": VERSION, "experiment": "x", "trials": 2}
    parent = {**record, "run_id": "p0", "parent_run_id": None, "artifacts": {}}
    path = tmp_path / "sweep.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (header, parent, record, other)))
    before = path.read_text()
    report = backfill_archive(path)
    assert report.backfilled == ["trial"] and "other" in report.skipped
    assert "test set has 11 problems" in report.skipped["other"]
    after = path.read_text()
    changed = [
        i for i, (a, b) in enumerate(zip(before.split("\n"), after.split("\n"), strict=True)) if a != b
    ]
    assert changed == [2]
    _, runs = read_archive(path)
    assert "n_seen" in runs[1]["artifacts"]["eval/cells.csv"]
    again = backfill_archive(path)
    assert again.backfilled == [] and again.unchanged == ["trial"] and path.read_text() == after


def test_a_seen_fraction_that_disagrees_skips_the_run() -> None:
    record, _ = _trial(100)
    lines = record["artifacts"]["eval/cells.csv"].splitlines()
    fields = lines[1].split(",")
    fields[-1] = repr(min(1.0, float(fields[-1]) + 0.25)) if float(fields[-1]) < 0.75 else "0.0"
    record["artifacts"]["eval/cells.csv"] = "\n".join([lines[0], ",".join(fields), *lines[2:]]) + "\n"
    with pytest.raises(Exception, match="seen_in_train"):
        backfill_cells(record)


def test_the_backfill_loads_no_torch() -> None:
    code = "import sys, arith.tracking.backfill; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
