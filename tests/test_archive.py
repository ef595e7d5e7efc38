"""arith/tracking/archive.py: a sweep written to one file and imported into another real MLflow store reads
the same to the analysis; imports are idempotent; reproduce_cpu restores the archives before its report."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_analysis import empty_store, write_store  # noqa: F401  (the fixture and the store writer)

from analysis import plan as reproduction
from analysis import report
from analysis.load import load_sweep
from arith.tracking.archive import SOURCE_TAG, ArchiveError, export_sweep, import_sweep, read_archive
from arith.tracking.archive import main as archive_main


def _sweep_with_curves(tmp_path: Path, empty_store: Path) -> tuple[str, str]:  # noqa: F811
    """A recorded smoke sweep of add_posembed (one FAILED trial) whose trials also log a metric history."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    tmp_path.mkdir()
    uri = write_store(tmp_path, empty_store, recorded=True, seeds=2)
    client = MlflowClient(uri)
    sweep = load_sweep("add_posembed", uri)
    for i, run_id in enumerate(sweep.trials["run_id"]):
        history = [Metric("test_acc", 0.1 * step + 0.01 * i, 1_000 + step, step) for step in (1, 2, 3)]
        client.log_batch(run_id, metrics=history)
    return uri, sweep.parent_run_id


def _runs(uri: str, parent_id: str) -> dict[str, tuple]:
    """name -> (status, params, tags less the nesting and archive tags, test_acc history) of each trial."""
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    out = {}
    for run_id in load_sweep("add_posembed", uri, parent_id).trials["run_id"]:
        run = client.get_run(run_id)
        tags = {k: v for k, v in run.data.tags.items() if k not in ("mlflow.parentRunId", SOURCE_TAG)}
        history = [(m.step, m.timestamp, m.value) for m in client.get_metric_history(run_id, "test_acc")]
        out[run.info.run_name] = (run.info.status, run.data.params, tags, history)
    return out


def test_an_archived_sweep_reads_the_same_in_another_store(tmp_path: Path, empty_store: Path) -> None:  # noqa: F811
    from mlflow import MlflowClient

    uri, parent = _sweep_with_curves(tmp_path / "a", empty_store)
    archive = tmp_path / "sweep.jsonl"
    assert export_sweep(MlflowClient(uri), parent, archive) == 6
    header, records = read_archive(archive)
    assert header["experiment"] == "add_posembed" and len(records) == 7

    (tmp_path / "b").mkdir()
    shutil.copy(empty_store, tmp_path / "b" / "mlflow.db")
    other = f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}"
    new_id, imported = import_sweep(other, archive)
    assert imported and new_id != parent
    assert _runs(other, new_id) == _runs(uri, parent)  # statuses, params, tags and curves, FAILED one too

    def body(text: str) -> str:  # the report less its first lines, which name the run id and the store
        return text.split("numbers are from finished trials only.", 1)[1]

    first = report("add_posembed", uri, parent, log_artifacts=False)
    assert body(report("add_posembed", other, new_id, log_artifacts=False)) == body(first)
    assert "| position=none | 0.50 | 0.50 |" in first

    # idempotent: again into the new store, or back into the store it came from, adds no run
    assert import_sweep(other, archive) == (new_id, False)
    assert import_sweep(uri, archive) == (parent, False)


def test_a_file_that_is_not_an_archive_is_refused_by_name(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"point": "x"}\n')
    with pytest.raises(ArchiveError, match=r"notes\.jsonl is not a sweep archive"):
        read_archive(bad)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert archive_main(["import", str(bad), "--tracking-uri", uri]) == 2
    assert "is not a sweep archive" in capsys.readouterr().err


def test_reproduce_cpu_restores_the_archived_parts_before_its_report(
    tmp_path: Path,
    empty_store: Path,  # noqa: F811
) -> None:
    """A part's sweep, tagged as reproduce_cpu tags it and archived, is found by part_runs in a fresh store
    once the archives are restored; restoring twice adds nothing."""
    from mlflow import MlflowClient

    uri, parent = _sweep_with_curves(tmp_path / "a", empty_store)
    plan = next(p for p in reproduction.PLAN if p.grid == "add_posembed")
    client = MlflowClient(uri)
    client.set_tag(parent, "grid", "add_posembed")
    client.set_tag(parent, reproduction.TAG_COMMAND, "python " + " ".join(plan.command("sqlite:///x", "r")))
    folder = tmp_path / "archives"
    export_sweep(client, parent, folder / plan.archive_name)
    assert plan.archive_name == "add_posembed__seed-0.jsonl"

    (tmp_path / "b").mkdir()
    shutil.copy(empty_store, tmp_path / "b" / "mlflow.db")
    fresh = f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}"
    assert reproduction.restore_archives(fresh, folder) == [plan.archive_name]
    assert reproduction.restore_archives(fresh, folder) == []
    found = dict(reproduction.part_runs(MlflowClient(fresh), "add_posembed"))
    assert found[plan].data.tags[SOURCE_TAG] == parent
