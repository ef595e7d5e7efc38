"""Settings that cannot train are refused before anything starts: one line, exit 2, no MLflow store, no
Ray, no work folder. An integer setting given a fraction; a line, or a prompt with its reply, longer than
the trial's position scheme places (for every scheme of `arith.model.schemes`, each stating its own bound);
and a setting only a worker can refuse (a device its node lacks) fails its trial once, not retried."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

from arith.config import ConfigError, ExperimentConfig
from arith.data.datasets import validate_data
from arith.model.schemes import POSITION_SCHEMES
from arith.tracking import store
from arith.training.train import train
from arith.validation import validate
from sweeps.grids import points
from sweeps.offline import main as offline_main
from sweeps.prelaunch import check_before_launch
from sweeps.run import main as sweep_main
from sweeps.tuner import DeletedCheckpoint

ROOT = Path(__file__).resolve().parent.parent
#: the issue's fourth case: a learned model of 64 positions asked 30-digit test problems
LINE_TOO_LONG = [
    "--grid",
    "add_posembed",
    "--scale",
    "smoke",
    "--only",
    "model.position=learned",
    "--set",
    "model.n_positions=64",
    "--set",
    "data.test_digits=2,30",
]


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


def _tune_args(tmp_path: Path) -> list[str]:
    """Where a Tune sweep would write: none of it may exist after a refusal."""
    return [
        "--tracking-uri",
        f"sqlite:///{tmp_path / 'mlflow.db'}",
        "--storage-path",
        str(tmp_path / "ray_results"),
        "--ray-temp-dir",
        str(tmp_path / "ray"),
    ]


@pytest.mark.parametrize("executor", ["tune", "offline"])
def test_a_fraction_for_an_integer_setting_is_refused(tmp_path, capsys, executor):
    """The issue's third case: `--set model.n_layer=2.5` trained a 2-layer model."""
    sets = ["--grid", "demo", "--scale", "smoke", "--set", "model.n_layer=2.5"]
    if executor == "tune":
        assert sweep_main([*sets, *_tune_args(tmp_path)]) == 2
    else:
        assert offline_main([*sets, "--out", str(tmp_path / "out" / "demo.jsonl")]) == 2
    err = _one_line_error(capsys)
    assert "model.n_layer: cannot read '2.5' as int" in err, err
    assert not list(tmp_path.iterdir())  # nothing written
    assert (
        ExperimentConfig().with_overrides({"model.n_layer": "2.0", "train.max_steps": "1e3"}).model.n_layer
        == 2
    )
    with pytest.raises(ConfigError, match=r"train\.epochs"):
        ExperimentConfig().with_overrides({"train.epochs": 1.5})


@pytest.mark.parametrize("executor", ["tune", "offline"])
def test_a_line_longer_than_the_positions_is_refused_before_launch(tmp_path, capsys, executor):
    """The issue's fourth case: the trial failed three times inside Ray (retried), printed ~140 lines of
    tracebacks and left a FAILED parent run that became the grid's latest sweep."""
    if executor == "tune":
        assert sweep_main([*LINE_TOO_LONG, *_tune_args(tmp_path)]) == 2
    else:
        assert offline_main([*LINE_TOO_LONG, "--out", str(tmp_path / "out" / "add.jsonl")]) == 2
    err = _one_line_error(capsys)
    assert "position=learned,seed=0" in err and "more than model.n_positions=64" in err, err
    assert not list(tmp_path.iterdir())  # no store, no Ray, no work folder


def _config(scheme: str, **sets: str) -> ExperimentConfig:
    """The position_schemes grid's 30-digit reversed addition (its coupling point needs a reversed answer)
    with this scheme, validated as a sweep validates its trials."""
    (cfg,) = [
        c for c in points("position_schemes", "smoke") if c.tracking.run_name.startswith("task=add_reverse,")
    ][:1]
    cfg = cfg.with_overrides(
        {"model.position": scheme, "data.max_digits": "30", "data.test_digits": "2,30", **sets}
    )
    validate_data(validate(cfg).data)
    return cfg


@pytest.mark.parametrize("scheme", POSITION_SCHEMES)
def test_every_scheme_states_its_bound_and_the_data_is_held_to_it(scheme):
    """A 30+30-digit line is 94 tokens: refused at 90 positions, for every scheme, by the one check
    before launch; at 200 it fits."""
    with pytest.raises(
        ConfigError, match=r"training data: the longest line is 94 tokens, more than model\.n_positions=90"
    ):
        check_before_launch([_config(scheme, **{"model.n_positions": "90"})])
    check_before_launch([_config(scheme, **{"model.n_positions": "200"})])


@pytest.mark.parametrize(
    ("scheme", "sets", "message"),
    [
        (
            "learned",
            {"model.n_positions": "96"},
            r"a decoding batch spans 98 columns .* model\.n_positions=96",
        ),
        (
            "randomized",
            {"model.randomized_max_position": "96"},
            r"a decoding batch spans 98 columns .* model\.randomized_max_position=96",
        ),
        (
            "none",
            {"model.n_positions": "95", "train.bucket_lengths": "32,48"},
            r"94 tokens \(padded to 96 by train\.bucket_lengths\), more than model\.n_positions=95",
        ),
    ],
)
def test_decoding_and_padding_are_held_to_the_bound_too(scheme, sets, message):
    """Lines that fit, but not a prompt with the reply decoded after it (randomized draws ids for every
    column of its batch), or not once a bucket pads them."""
    with pytest.raises(ConfigError, match=message):
        check_before_launch([_config(scheme, **sets)])


def test_the_trial_refuses_what_the_check_before_launch_refuses(tmp_path):
    """The same check in the trial's setup, as a ConfigError (not the scheme's ValueError or IndexError)."""
    cfg = _config("randomized", **{"model.randomized_max_position": "60", "tracking.enabled": "false"})
    with pytest.raises(ConfigError, match=r"model\.randomized_max_position=60"):
        train(cfg)
    with pytest.raises(ConfigError, match=r"must be in 0\.\.model\.n_positions=512"):
        _config("randomized", **{"model.randomized_max_position": "600"})


def test_a_deleted_checkpoint_on_resume_is_one_line_not_a_traceback():
    """Tune's state after a driver killed between deleting a checkpoint and its next snapshot names one
    that is gone; its traceback on resume (twice, data intact) becomes one line."""
    try:
        raise FileNotFoundError("Path not found: (<LocalFileSystem>, /r/sweep/e0d5b_00001/checkpoint_000027)")
    except FileNotFoundError:
        record = logging.LogRecord(
            "ray.tune.execution.tune_controller",
            logging.ERROR,
            __file__,
            1,
            "Trial %s: Error handling checkpoint %s",
            ("run_trial_e0d5b_00001", "TrainingResult(...)"),
            sys.exc_info(),
        )
    assert DeletedCheckpoint().filter(record)
    line = logging.Formatter().format(record)
    assert line.startswith(
        "run_trial_e0d5b_00001: checkpoint_000027, deleted by Tune before the sweep stopped"
    )
    assert "\n" not in line and "Traceback" not in line
    assert record.levelno == logging.INFO


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="the refused setting asks for CUDA where there is none")
def test_a_setting_a_worker_refuses_fails_its_trial_once_not_retried(tmp_path):
    """`train.device=cuda` on a worker without CUDA: a ConfigError, the same on every retry. The trial
    ends FAILED at once (its run tagged why), Tune retries nothing, the sweep exits 1."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")}
    command = [
        sys.executable,
        "sweeps/run.py",
        "--grid",
        "demo",
        "--scale",
        "smoke",
        "--only",
        "data.format=basic",
    ]
    command += ["--set", "train.device=cuda", "--set", "train.max_steps=12", "--tracking-uri", uri]
    command += ["--storage-path", str(tmp_path / "ray"), "--ray-temp-dir", temp_dir, "--quiet"]
    try:
        proc = subprocess.run(
            command,
            cwd=ROOT,
            env={**env, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        subprocess.run(["rm", "-rf", temp_dir], check=False)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    client = store.client(uri)
    (experiment,) = store.experiment_ids(client, ["demo"])
    runs = [r for r in store.search_runs(client, [experiment]) if r.data.tags.get("sweep") != "1"]
    assert [(r.info.status, r.data.tags.get("failure")) for r in runs] == [("FAILED", "config_error")]
    assert "train.device='cuda'" in runs[0].data.tags["failure_message"]
    (state_file,) = (tmp_path / "ray").glob("*/experiment_state-*.json")
    state = json.loads(state_file.read_text())
    assert [json.loads(runtime)["num_failures"] for _, runtime in state["trial_data"]] == [0]  # no retry
