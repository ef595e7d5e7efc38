"""arith/tracking/archive.py: a sweep written to one file and imported into another real MLflow store reads
the same to the analysis; imports are idempotent; reproduce_cpu restores the archives before its report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from synthetic import write_store

from analysis import report
from analysis.load import AnalysisError, read_sweep
from arith.tracking import archive
from arith.tracking.archive import SOURCE_TAG, ArchiveError, export_sweep, import_sweep, read_archive
from arith.tracking.archive import main as archive_main
from arith.tracking.archive_checks import check_archive
from arith.tracking.recorder import run_record
from lab import plan as reproduction


def _sweep_with_curves(tmp_path: Path, empty_store: Path) -> tuple[str, str]:
    """A recorded smoke sweep of add_posembed (one FAILED trial) whose trials also log a metric history."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    tmp_path.mkdir()
    uri = write_store(tmp_path, empty_store, recorded=True, seeds=2)
    client = MlflowClient(uri)
    sweep = read_sweep("add_posembed", uri)
    for i, run_id in enumerate(sweep.trials["run_id"]):
        history = [Metric("test_acc", 0.1 * step + 0.01 * i, 1_000 + step, step) for step in (1, 2, 3)]
        client.log_batch(run_id, metrics=history)
    return uri, sweep.parent_run_id


def _runs(uri: str, parent_id: str) -> dict[str, tuple]:
    """name -> (status, params, tags less the nesting and archive tags, test_acc history) of each trial."""
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    out = {}
    for run_id in read_sweep("add_posembed", uri, parent_id).trials["run_id"]:
        run = client.get_run(run_id)
        tags = {k: v for k, v in run.data.tags.items() if k not in ("mlflow.parentRunId", SOURCE_TAG)}
        history = [(m.step, m.timestamp, m.value) for m in client.get_metric_history(run_id, "test_acc")]
        out[run.info.run_name] = (run.info.status, run.data.params, tags, history)
    return out


def test_an_archived_sweep_reads_the_same_in_another_store(tmp_path: Path, empty_store: Path) -> None:
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
    empty_store: Path,
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


CELLS = (
    "epoch,context,row_digits,col_digits,n,correct,accuracy,seen_in_train,n_seen,accuracy_seen,accuracy_unseen\n"
    "1,,1,1,4,2,0.5,0,0,,0.5\n"
)


def _archive(path: Path, trials: int = 3, **changes) -> Path:
    """A small valid archive of `trials` trial runs; `changes` replace fields of the first trial."""
    parent = run_record("p" * 32, "demo-smoke", None, {}, {"sweep": "1", "grid": "demo"}, 1000)
    parent |= {"status": "FINISHED", "end_time": 2000}
    records = [parent]
    for i in range(trials):
        run = run_record(f"{i:032d}", f"trial-{i}", parent["run_id"], {"train.seed": str(i)}, {}, 1000 + i)
        run |= {"status": "FINISHED", "end_time": 2000, "metrics": {"test_acc": [[1, 1500, 0.5]]}}
        run["artifacts"] = {"eval/cells.csv": CELLS}
        records.append(run)
    records[1] = {k: v for k, v in {**records[1], **changes}.items() if v is not None}
    header = {"format": archive.FORMAT, "version": archive.VERSION, "experiment": "demo", "trials": trials}
    path.write_text("".join(json.dumps(line) + "\n" for line in (header, *records)))
    return path


def _active_runs(uri: str) -> int:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    return len(client.search_runs([e.experiment_id for e in client.search_experiments()]))


@pytest.mark.parametrize(
    ("fault", "changes", "lines", "message"),
    [
        ("cut at a line boundary", {}, 3, "header counts 3 trial runs but the file holds 1"),
        ("a record without metrics", {"metrics": None}, None, "trial record 1 (trial-0): no metrics"),
        (
            "a non-numeric accuracy",
            {"artifacts": {"eval/cells.csv": CELLS.replace("0.5", "high")}},
            None,
            "'accuracy' holds 'high'",
        ),
        (
            "a step that is no number",
            {"metrics": {"test_acc": [["one", 1500, 0.5]]}},
            None,
            "metric 'test_acc'",
        ),
    ],
)
def test_a_faulty_archive_is_refused_in_one_line_and_imports_nothing(
    tmp_path: Path,
    empty_store: Path,
    capsys,
    fault,
    changes,
    lines,
    message,
) -> None:
    """A record without metrics imported half a sweep (rc 1, KeyError) that blocked every later
    import; an archive cut short imported as a smaller sweep; a non-numeric accuracy imported."""
    path = _archive(tmp_path / "sweep.jsonl", **changes)
    if lines:
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:lines]))
    shutil.copy(empty_store, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert archive_main(["import", str(path), "--tracking-uri", uri]) == 2, fault
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "nothing was imported" in err
    assert _active_runs(uri) == 0


def test_a_killed_import_is_redone_whole_and_a_failed_one_leaves_nothing(
    tmp_path: Path,
    empty_store: Path,
) -> None:
    """An import killed after its parent run existed left a sweep stuck RUNNING, and every
    later import of the whole archive was refused as "already in the store"."""
    from mlflow import MlflowClient

    uri, parent = _sweep_with_curves(tmp_path / "a", empty_store)
    path = tmp_path / "sweep.jsonl"
    export_sweep(MlflowClient(uri), parent, path)
    header, records = read_archive(path)
    (tmp_path / "b").mkdir()
    shutil.copy(empty_store, tmp_path / "b" / "mlflow.db")
    other = f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}"

    # what a killed import leaves: the staged parent and the first trial run
    client = MlflowClient(other)
    experiment_id = client.create_experiment(header["experiment"])
    staged = {**records[0], "tags": {**records[0]["tags"], archive.INCOMPLETE_TAG: "1"}}
    del staged["tags"]["sweep"]
    partial = archive._log_run(client, experiment_id, staged, None, finish=False)
    archive._log_run(client, experiment_id, records[1], partial)
    with pytest.raises(AnalysisError, match="no sweep"):
        read_sweep("add_posembed", other)  # the analysis does not see it

    new_id, imported = import_sweep(other, path)
    assert imported and new_id != partial
    assert client.get_run(partial).info.lifecycle_stage == "deleted"
    assert _runs(other, new_id) == _runs(uri, parent)
    assert read_sweep("add_posembed", other).parent_run_id == new_id
    assert client.get_run(new_id).info.status == records[0]["status"]

    # a store that refuses a trial run half-way (a param name longer than MLflow takes): nothing is left
    (tmp_path / "c").mkdir()
    shutil.copy(empty_store, tmp_path / "c" / "mlflow.db")
    third = f"sqlite:///{tmp_path / 'c' / 'mlflow.db'}"
    records[-1]["params"]["x" * 300] = "1"
    archive.write_records(path, header["experiment"], records)  # sealed again: the store refuses it
    with pytest.raises(ArchiveError, match=r"the store refused a run .*; nothing was imported"):
        import_sweep(third, path)
    assert _active_runs(third) == 0


def test_the_banked_archives_pass_the_import_checks() -> None:
    folder = Path(__file__).resolve().parent.parent / "docs" / "results"
    paths = sorted(folder.rglob("*.jsonl"))
    assert paths
    for path in paths:
        check_archive(*read_archive(path))
