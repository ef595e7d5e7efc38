"""Nothing lost, nothing overwritten: a sweep archived again further on reaches a store that holds its
first part, an edited archive is refused, `--out` never replaces another sweep's archive, `arith.ask` says
where an imported trial's weights are (and reads them when kept), and the analysis never writes to a
store it only reads. Real MLflow stores (SQLite) throughout; the end-to-end test runs real offline
trials at smoke scale."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.__main__ import main as analysis_main
from arith.ask import main as ask_main
from arith.tracking import archive, store
from arith.tracking.archive import SOURCE_TAG, import_archive, read_archive, write_records
from arith.tracking.archive import main as archive_main
from arith.tracking.recorder import run_record
from lab.report import main as lab_report
from sweeps.offline import main as offline_main
from sweeps.offline_archive import archive_work

ROOT = Path(__file__).resolve().parent.parent
CELLS = (
    "epoch,context,row_digits,col_digits,n,correct,accuracy,seen_in_train,n_seen,accuracy_seen,accuracy_unseen\n"
    "1,,1,1,4,2,0.5,0,0,,0.5\n"
)
#: a fast smoke grid: 2 trials of 3-digit addition, seconds each
FAST = ["--set", "train.max_steps=12", "--set", "data.test_per_cell=2"]


def _trial(i: int, status: str, steps: int, parent: str = "p" * 32) -> dict:
    run = run_record(f"{i:032d}", f"trial-{i}", parent, {"train.seed": str(i)}, {"seed": str(i)}, 1000 + i)
    history = [[step, 1000 + step, 1.0 / step] for step in range(1, steps + 1)]
    end = 2000 + steps if status != "RUNNING" else None
    return (
        run
        | {"status": status, "end_time": end, "metrics": {"train/loss": history}}
        | {"artifacts": {"eval/cells.csv": CELLS}}
    )


def _archive(path: Path, trials: list[dict], status: str = "FINISHED") -> Path:
    """A sealed archive (as the executor and `export` write it) of a demo sweep with these trials."""
    parent = run_record("p" * 32, "demo-smoke", None, {}, {"sweep": "1", "grid": "demo", "trials": "2"}, 1000)
    write_records(path, "demo", [parent | {"status": status, "end_time": 3000}, *trials])
    return path


def _store(tmp_path: Path, empty_store: Path) -> str:
    shutil.copy(empty_store, tmp_path / "mlflow.db")
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


def _sweep(uri: str) -> tuple[object, dict[str, object]]:
    """The store's one active sweep parent run and its trial runs by name."""
    client = store.client(uri)
    runs = store.search_runs(client, store.experiment_ids(client))
    (parent,) = [r for r in runs if r.data.tags.get("sweep") == "1"]
    trials = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(runs) == 1 + len(trials), "no run outside the sweep"
    return parent, {r.info.run_name: r for r in trials}


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err, err
    return err


# ---------------------------------------------------------------------------------------------------------
# The import compares the store's copy with the archive, trial by trial
# ---------------------------------------------------------------------------------------------------------


def test_an_archive_written_further_on_brings_the_store_up_to_it(tmp_path, empty_store, capsys):
    """The first archive of a sweep stopped at a deadline (one trial finished, one KILLED half-way), then
    the archive of its resumed run (the KILLED trial continued from its checkpoint, its points after it
    logged again at new times, and a third trial): the second import adds and continues what is new,
    the parent ends FINISHED, nothing is doubled; the same archive again is a no-op."""
    uri = _store(tmp_path, empty_store)
    first = _archive(tmp_path / "first.jsonl", [_trial(0, "FINISHED", 6), _trial(1, "KILLED", 3)], "KILLED")
    assert archive_main(["import", str(first), "--tracking-uri", uri]) == 0
    assert "imported as sweep" in capsys.readouterr().out
    parent, trials = _sweep(uri)
    assert parent.info.status == "KILLED" and sorted(trials) == ["trial-0", "trial-1"]

    resumed = _trial(1, "FINISHED", 6)
    resumed["metrics"]["train/loss"][:2] = _trial(1, "KILLED", 3)["metrics"]["train/loss"][:2]  # before
    resumed["metrics"]["train/loss"][2][1] += 500  # step 3 logged again, after the resume
    later = _archive(tmp_path / "later.jsonl", [_trial(0, "FINISHED", 6), resumed, _trial(2, "FINISHED", 6)])
    assert archive_main(["import", str(later), "--tracking-uri", uri]) == 0
    said = capsys.readouterr().out
    assert "brought up to the archive: 1 trial(s) added, 1 continued, 1 kept" in said, said
    parent, trials = _sweep(uri)
    assert parent.info.status == "FINISHED" and sorted(trials) == ["trial-0", "trial-1", "trial-2"]
    assert {t.info.status for t in trials.values()} == {"FINISHED"}
    client = store.client(uri)
    steps = [m.step for m in client.get_metric_history(trials["trial-1"].info.run_id, "train/loss")]
    assert sorted(steps) == [1, 2, 3, 4, 5, 6]  # each step once
    assert trials["trial-1"].data.tags[SOURCE_TAG] == "0" * 31 + "1"

    assert archive_main(["import", str(later), "--tracking-uri", uri]) == 0
    assert "already in the store" in capsys.readouterr().out
    assert _sweep(uri)[0].info.run_id == parent.info.run_id


def test_a_trial_started_over_as_a_new_run_replaces_its_stopped_attempt(tmp_path, empty_store):
    """A Tune trial stopped before its first checkpoint starts over as a new run: its later archive holds
    that run, not the stopped one, which the import replaces rather than calling the archive older."""
    uri = _store(tmp_path, empty_store)
    import_archive(uri, _archive(tmp_path / "a.jsonl", [_trial(0, "KILLED", 2)], "KILLED"))
    again = _trial(0, "FINISHED", 6) | {"run_id": "a" * 32}
    imported = import_archive(uri, _archive(tmp_path / "b.jsonl", [again]))
    assert imported.updated and imported.changes.continued == ["trial-0"] and not imported.changes.added
    _, trials = _sweep(uri)
    assert [(t.info.status, t.data.tags[SOURCE_TAG]) for t in trials.values()] == [("FINISHED", "a" * 32)]


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ("finished", "trial 'trial-0' (run 00000000000000000000000000000000) has another history"),
        ("older", "the archive is older than the store's copy"),
        ("lacks", "which this archive lacks"),
    ],
)
def test_an_archive_that_contradicts_the_store_is_refused_naming_the_trial(
    tmp_path,
    empty_store,
    capsys,
    changed,
    message,
):
    uri = _store(tmp_path, empty_store)
    held = [_trial(0, "FINISHED", 6), _trial(1, "FINISHED", 6)]
    assert archive_main(["import", str(_archive(tmp_path / "a.jsonl", held)), "--tracking-uri", uri]) == 0
    capsys.readouterr()
    before = {name: run.info.run_id for name, run in _sweep(uri)[1].items()}
    other = {
        "finished": [_trial(0, "FINISHED", 5), _trial(1, "FINISHED", 6)],  # a finished trial, another history
        "older": [_trial(0, "FINISHED", 6), _trial(1, "KILLED", 3)],  # the store has it further on
        "lacks": [_trial(0, "FINISHED", 6)],
    }[changed]
    path = _archive(tmp_path / "b.jsonl", other)
    assert archive_main(["import", str(path), "--tracking-uri", uri]) == 2
    err = _one_line_error(capsys)
    assert message in err and "nothing was imported" in err, err
    assert {name: run.info.run_id for name, run in _sweep(uri)[1].items()} == before


def test_an_import_killed_while_it_switched_copies_is_finished_by_the_next(tmp_path, empty_store):
    """Killed after the store's old copy was deleted, before the staged one took its place: the next
    import finds no copy in sight, clears the staged one and the old trial runs, and imports whole."""
    uri = _store(tmp_path, empty_store)
    import_archive(uri, _archive(tmp_path / "a.jsonl", [_trial(0, "KILLED", 2)], "KILLED"))
    old, _ = _sweep(uri)
    later = _archive(tmp_path / "b.jsonl", [_trial(0, "FINISHED", 6), _trial(1, "FINISHED", 6)])
    client = store.client(uri)
    _, records = read_archive(later)
    tags = {**records[0]["tags"], archive.INCOMPLETE_TAG: "1", archive.REPLACES_TAG: old.info.run_id}
    del tags["sweep"]
    staged = archive._log_run(client, old.info.experiment_id, {**records[0], "tags": tags}, None, False)
    for record in records[1:]:
        archive._log_run(client, old.info.experiment_id, record, staged)
    client.delete_run(old.info.run_id)  # the switch's first step, then the kill
    imported = import_archive(uri, later)
    assert imported.changes is not None and not imported.updated
    parent, trials = _sweep(uri)
    assert parent.info.run_id == imported.run_id and sorted(trials) == ["trial-0", "trial-1"]


def test_an_edited_archive_is_refused_and_imports_nothing(tmp_path, empty_store, capsys):
    """A trial's line removed with the header's count fixed, or a metric history cut short: every other
    check passes, the digest written with the archive does not."""
    uri = _store(tmp_path, empty_store)
    path = _archive(tmp_path / "sweep.jsonl", [_trial(0, "FINISHED", 6), _trial(1, "FINISHED", 6)])
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    removed = tmp_path / "removed.jsonl"
    removed.write_text("\n".join([json.dumps(header | {"trials": 1}), *lines[1:3]]) + "\n")
    trial = json.loads(lines[2])
    trial["metrics"]["train/loss"] = trial["metrics"]["train/loss"][:3]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join([*lines[:2], json.dumps(trial), lines[3]]) + "\n")
    for edited in (removed, cut):
        assert archive_main(["import", str(edited), "--tracking-uri", uri]) == 2
        err = _one_line_error(capsys)
        assert "does not match its content" in err and "nothing was imported" in err, err
    client = store.client(uri)
    assert not store.search_runs(client, store.experiment_ids(client))


# ---------------------------------------------------------------------------------------------------------
# `--out` and the work folder
# ---------------------------------------------------------------------------------------------------------


def _offline(out: Path, grid: str = "demo", *extra: str) -> list[str]:
    """The executor's command line, stopped before any trial starts (a deadline already past)."""
    return ["--grid", grid, "--scale", "smoke", "--procs", "1", *FAST, *extra, "--out", str(out)]


def test_out_never_replaces_a_file_this_sweep_did_not_write(tmp_path, capsys):
    """The issue's second case: an add_posembed archive, then another plan's command writing to it."""
    out = tmp_path / "out"
    elsewhere = tmp_path / "elsewhere" / "add.jsonl"
    assert offline_main([*_offline(elsewhere, "add_posembed"), "--deadline-min", "0.0001"]) == 0
    out.mkdir()
    shutil.copy(elsewhere, out / "add.jsonl")
    archive = (out / "add.jsonl").read_text()
    capsys.readouterr()
    assert offline_main([*_offline(out / "add.jsonl"), "--deadline-min", "0.0001"]) == 2
    err = _one_line_error(capsys)
    assert "add.jsonl holds sweep" in err and "'add_posembed' (0 trials)" in err and "did not write" in err
    assert (out / "add.jsonl").read_text() == archive
    assert sorted(p.name for p in out.iterdir()) == ["add.jsonl"]  # nothing written
    # the work folder of an archive holds its plan: another plan into it is refused too, naming it
    assert offline_main([*_offline(elsewhere), "--deadline-min", "0.0001"]) == 2
    assert "add.trials holds the trials of another plan" in _one_line_error(capsys)
    # a file that is no archive at all
    (out / "notes.jsonl").write_text("my notes\n")
    assert offline_main(_offline(out / "notes.jsonl", "demo", "--deadline-min", "0.0001")) == 2
    assert "is not an archive of this sweep" in _one_line_error(capsys)
    assert (out / "notes.jsonl").read_text() == "my notes\n"
    # the same command again rewrites its own archive; two archives in a folder have a work folder each
    again = [*_offline(elsewhere, "add_posembed"), "--deadline-min", "0.0001"]
    assert offline_main(again) == 0 and elsewhere.read_text() == archive
    assert offline_main([*_offline(elsewhere.with_name("demo.jsonl")), "--deadline-min", "0.0001"]) == 0
    assert sorted(p.name for p in elsewhere.parent.iterdir()) == [
        "add.jsonl",
        "add.trials",
        "demo.jsonl",
        "demo.trials",
    ]


def test_a_sweep_begun_in_the_shared_work_folder_resumes_there(tmp_path):
    """Archives written before each had its own work folder resume where they began."""
    out = tmp_path / "add.jsonl"
    assert archive_work(out) == tmp_path / "add.trials"
    (tmp_path / "trials").mkdir()
    (tmp_path / "trials" / "plan.json").write_text(json.dumps({"plan": [{"name": "add", "trials": []}]}))
    assert archive_work(out) == tmp_path / "trials"
    assert archive_work(tmp_path / "other.jsonl") == tmp_path / "other.trials"


# ---------------------------------------------------------------------------------------------------------
# ask on an imported trial; the analysis on a file that holds no store
# ---------------------------------------------------------------------------------------------------------


def test_ask_on_a_trial_imported_without_weights_says_so_in_one_line(tmp_path, empty_store, capsys):
    uri = _store(tmp_path, empty_store)
    path = _archive(tmp_path / "sweep.jsonl", [_trial(0, "FINISHED", 6)])
    imported = import_archive(uri, path)
    (trial,) = _sweep(uri)[1].values()
    assert ask_main([f"runs:/{trial.info.run_id}", "12+34", "--tracking-uri", uri]) == 2
    err = _one_line_error(capsys)
    assert f"imported from the archive {path.resolve()}, which carries no weights" in err, err
    assert "--keep-weights" in err and "Failed to download" not in err
    assert imported.run_id != trial.info.run_id


def test_the_analysis_refuses_a_file_that_holds_no_store_and_writes_nothing(tmp_path, capsys):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    commands = (
        (analysis_main, ["--grid", "add_posembed"]),
        (lab_report, ["--grid", "add_posembed", "--plan"]),
    )
    for command, argv in commands:
        assert command([*argv, "--tracking-uri", f"sqlite:///{empty}"]) == 2
        assert "empty.db is an empty file" in _one_line_error(capsys)
        assert empty.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]  # no lock file, no artifacts either


# ---------------------------------------------------------------------------------------------------------
# End to end: an offline sweep stopped at a deadline, imported, resumed, imported again
# ---------------------------------------------------------------------------------------------------------


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.mark.slow
def test_a_resumed_offline_sweep_reaches_its_store_whole_and_ask_reads_its_kept_weights(tmp_path):
    """The issue's first case, at smoke scale: a deadline stops the sweep with part of it recorded; it is
    imported; the same command without the deadline finishes it; importing again brings the store up to
    the whole sweep (before, the store kept its first part under a KILLED parent, "already in the
    store"). The trials' kept weights are read by `arith.ask` through the store."""
    uri = f"sqlite:///{tmp_path / 's.db'}"
    command = ["-m", "sweeps.offline", *_offline(Path("out/demo.jsonl")), "--keep-weights"]
    stopped = _run(*command, "--deadline-min", "0.12", cwd=tmp_path)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    first = [r["status"] for r in read_archive(tmp_path / "out/demo.jsonl")[1][1:]]
    assert first.count("FINISHED") < 2, first  # the deadline left part of the sweep undone
    imported = _run(
        "-m", "arith.tracking.archive", "import", "out/demo.jsonl", "--tracking-uri", uri, cwd=tmp_path
    )
    assert imported.returncode == 0 and "imported as sweep" in imported.stdout, imported.stderr

    finished = _run(*command, cwd=tmp_path)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    again = _run(
        "-m", "arith.tracking.archive", "import", "out/demo.jsonl", "--tracking-uri", uri, cwd=tmp_path
    )
    assert again.returncode == 0 and "brought up to the archive" in again.stdout, again.stdout + again.stderr
    parent, trials = _sweep(uri)
    assert parent.info.status == "FINISHED" and len(trials) == 2
    assert {t.info.status for t in trials.values()} == {"FINISHED"}
    client = store.client(uri)
    for trial in trials.values():  # every logged step once
        for key in trial.data.metrics:
            steps = [m.step for m in client.get_metric_history(trial.info.run_id, key)]
            assert len(steps) == len(set(steps)), (key, steps)
        assert trial.data.metrics["test_acc"] >= 0

    trial = next(t for t in trials.values() if "weights_folder" in t.data.tags)
    asked = _run(
        "-m", "arith.ask", f"runs:/{trial.info.run_id}", "12+34", "--tracking-uri", uri, cwd=tmp_path
    )
    assert asked.returncode == 0 and "expected:" in asked.stdout, asked.stderr
    shutil.rmtree(tmp_path / "out" / "demo.weights")
    asked = _run(
        "-m", "arith.ask", f"runs:/{trial.info.run_id}", "12+34", "--tracking-uri", uri, cwd=tmp_path
    )
    assert asked.returncode == 2 and "which is not there" in asked.stderr and asked.stderr.count("\n") == 1
