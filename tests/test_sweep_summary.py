"""A sweep as a researcher finds it in MLflow: claims by a stable id, the parent run's summary (params, the
points' seed means with their intervals, a verdict tag a claim), trials and models by point and seed, the
end-of-sweep table, and the command that starts the UI. On a real SQLite MLflow store."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest
from mlflow.utils.validation import _validate_logged_model_name
from scipy import stats

from analysis.findings import Finding
from analysis.summary import VERDICTS_TAG, claim_tags, point_metrics, seed_mean
from analysis.ui_view import ROOT, ui_command
from arith.config import ExperimentConfig
from arith.tracking import logged_model, models
from arith.tracking.schema import MODEL_ARTIFACT, POINT_TAG, SEED_TAG, model_name, point_label
from arith.tracking.trial_lookup import TrialNotFound, trial_run_id
from experiments.registry import EXPERIMENTS
from sweeps.end_table import register_best, table_text, trial_rows
from sweeps.errors import SweepError
from sweeps.storage import sweep_params


def test_every_claim_has_a_stable_id_unique_in_the_catalogue() -> None:
    claims = {id(c): c for e in EXPERIMENTS.values() for c in e.claims}.values()
    ids = [c.id for c in claims]
    assert all(re.fullmatch(r"[a-z][a-z0-9_]{5,59}", i) for i in ids), ids
    assert len(set(ids)) == len(ids)
    assert EXPERIMENTS["demo"].claims[0].id == "padded_reverse_beats_plain"


def test_a_claims_tag_is_keyed_by_its_id_and_holds_its_verdict() -> None:
    claims = EXPERIMENTS["mul_format"].claims + EXPERIMENTS["demo"].claims
    statuses = ("held", "not held")
    findings = [Finding("g", f"{c.text} [{c.source}]", s, "") for c, s in zip(claims, statuses, strict=True)]
    tags = claim_tags(findings, claims)
    assert tags == {
        "claim.padding_reverse_beats_basic": "held",
        "claim.padded_reverse_beats_plain": "not held",
        VERDICTS_TAG: "padding_reverse_beats_basic: held; padded_reverse_beats_plain: not held",
    }


def test_a_points_seed_mean_has_the_t_intervals_ends_clipped_to_an_accuracy() -> None:
    values = [0.8, 0.9, 0.95]
    mean, low, high = seed_mean(values)
    t_low, t_high = stats.t.interval(0.95, 2, loc=mean, scale=stats.sem(values))
    assert (mean, low, high) == pytest.approx((0.8833333, t_low, min(1.0, t_high)))
    assert high == 1.0 < t_high  # clipped
    one = seed_mean([0.5])
    assert one[0] == 0.5 and math.isnan(one[1]) and math.isnan(one[2])


def test_the_parent_runs_metrics_name_each_point_by_its_label() -> None:
    trials = [
        ("format=basic", {"test_acc": 0.01, "test_acc/in_range": 0.02, "train/loss": 3.0}),
        ("format=basic", {"test_acc": 0.03, "test_acc/in_range": 0.04}),
        ("format=padding_reverse", {"test_acc": 1.0, "test_acc/unseen": 1.0}),
    ]
    metrics = point_metrics(trials)
    assert metrics["basic/test_acc"] == pytest.approx(0.02)
    assert metrics["basic/test_acc/ci95_low"] == 0.0 and metrics["basic/test_acc/ci95_high"] > 0.02
    assert metrics["padding_reverse/test_acc"] == 1.0 and "padding_reverse/test_acc/ci95_low" not in metrics
    assert not any("loss" in key for key in metrics)  # the headline accuracies only


def test_point_labels_and_model_names() -> None:
    assert point_label("format=padding_reverse") == "padding_reverse"
    assert point_label("position=none,init=random,epochs=25") == "none_random_25"
    assert model_name("format=padding_reverse", 0) == "padding_reverse-seed0"
    # a search's point names its learning rate: MLflow refuses a '.' in a logged model's name
    assert model_name("lr=0.003,format=basic", 100) == "0p003_basic-seed100"
    _validate_logged_model_name(model_name("lr=0.003,format=basic", 100))


def test_the_sweeps_params() -> None:
    configs = {f"p|seed={s}": ExperimentConfig().with_overrides({"train.seed": s}) for s in (0, 1, 2, 5)}
    params = sweep_params("demo", "cpu", ["data.format"], configs, ["--grid", "demo", "--seeds", "3"])
    assert params == {
        "grid": "demo",
        "scale": "cpu",
        "axes": "data.format",
        "seeds": "0, 1, 2, 5",
        "command": "python sweeps/run.py --grid demo --seeds 3",
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    """A real SQLite MLflow store holding two sweeps of `demo` (the second the latest), each two trials."""
    import mlflow

    tmp_path = tmp_path_factory.mktemp("store")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("demo", artifact_location=(tmp_path / "art").as_uri())
    sweeps = []
    for n in range(2):
        parent = client.create_run(
            experiment, run_name=f"demo-cpu-{n}", tags={"sweep": "1"}, start_time=1000 + n
        )
        runs = {}
        for point, seed, acc in (("format=basic", 0, 0.01), ("format=padding_reverse", 0, 1.0)):
            tags = {"mlflow.parentRunId": parent.info.run_id, POINT_TAG: point, SEED_TAG: str(seed)}
            run = client.create_run(experiment, run_name=f"{point},seed={seed}", tags=tags)
            client.log_metric(run.info.run_id, "test_acc", acc)
            client.set_terminated(run.info.run_id)
            runs[point] = run.info.run_id
        sweeps.append((parent.info.run_id, runs))
    return uri, client, sweeps


def test_a_trial_is_found_by_grid_point_and_seed_in_the_latest_sweep(store) -> None:
    uri, _, sweeps = store
    latest = sweeps[-1][1]
    assert trial_run_id(uri, "demo", "padding_reverse", 0) == latest["format=padding_reverse"]
    assert trial_run_id(uri, "demo", "format=basic", 0) == latest["format=basic"]
    first, runs = sweeps[0]
    assert trial_run_id(uri, "demo", "basic", 0, sweep=first) == runs["format=basic"]
    with pytest.raises(TrialNotFound, match="its points: basic, padding_reverse"):
        trial_run_id(uri, "demo", "reverse", 0)
    with pytest.raises(TrialNotFound, match="seeds: 0"):
        trial_run_id(uri, "demo", "basic", 3)
    with pytest.raises(TrialNotFound, match="no experiment 'nl_mix'"):
        trial_run_id(uri, "nl_mix", "basic", 0)


def test_a_runs_model_uri_leads_to_its_logged_model_by_name(store) -> None:
    _, client, sweeps = store
    run_id = sweeps[-1][1]["format=padding_reverse"]
    run = client.get_run(run_id)
    assert logged_model.name_of(run.data.tags) == "padding_reverse-seed0"
    assert models.run_model_uri(client, f"runs:/{run_id}/{MODEL_ARTIFACT}") == f"runs:/{run_id}/model"
    created = client.create_logged_model(
        run.info.experiment_id, name="padding_reverse-seed0", source_run_id=run_id
    )
    resolved = models.run_model_uri(client, f"runs:/{run_id}/{MODEL_ARTIFACT}/MLmodel")
    assert resolved == f"models:/{created.model_id}/MLmodel"
    assert models.run_model_uri(client, "models:/m-1") == "models:/m-1"


def test_the_end_of_sweep_table_has_a_row_a_trial(store) -> None:
    _, client, sweeps = store
    _, runs = sweeps[-1]
    rows = trial_rows([client.get_run(r) for r in runs.values()])
    assert list(rows.columns) == [
        "trial",
        POINT_TAG,
        SEED_TAG,
        "test_acc",
        "in_range",
        "unseen",
        "wall",
        "status",
    ]
    assert list(rows[POINT_TAG]) == ["basic", "padding_reverse"] and set(rows["status"]) == {"FINISHED"}
    assert rows["trial"][0] == runs["format=basic"][:8]
    lines = table_text(rows).splitlines()
    assert lines[1].split()[3:6] == ["0.01", "-", "-"]  # what a trial did not log: a dash


def test_the_ui_command_is_make_ui_at_the_projects_root_else_the_venvs_mlflow(tmp_path: Path) -> None:
    assert ui_command(f"sqlite:///{ROOT}/mlflow.db", 5000, cwd=ROOT) == "make ui"
    elsewhere = ui_command(f"sqlite:///{tmp_path}/mlflow.db", 5000, cwd=tmp_path)
    assert elsewhere.startswith(str(Path(sys.executable).with_name("mlflow"))) and "--port 5000" in elsewhere


def test_register_puts_the_best_trials_model_in_the_model_registry(store) -> None:
    uri, client, sweeps = store
    parent, runs = sweeps[-1]
    experiment = client.get_run(parent).info.experiment_id
    for point, run_id in runs.items():  # each trial's logged model, as the trainer names it
        client.create_logged_model(experiment, name=model_name(point, 0), source_run_id=run_id)
    line = register_best(uri, parent, "demo-adder")
    assert line == "registered padding_reverse-seed0 (test_acc 1.00) as model 'demo-adder', version 1"
    (version,) = client.search_model_versions("name = 'demo-adder'")
    assert version.run_id == runs["format=padding_reverse"]
    with pytest.raises(SweepError, match="logged no model"):  # the first sweep's trials logged none
        register_best(uri, sweeps[0][0], "demo-adder")
