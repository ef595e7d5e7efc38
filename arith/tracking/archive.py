"""A finished sweep as one small portable file, and back into any MLflow store.

A sweep's runs live in the store it logged to: a SQLite file on the machine that ran it, or a cluster's
PostgreSQL. To read them elsewhere (the laptop after `ray down`, a fresh clone that rebuilds
docs/RESULTS.md) the sweep is archived: its parent run and every trial run, with params, tags, each
metric's full history, status and times, and the text artifacts the analysis reads (`eval/cells.csv`,
and the kept wrong answers `eval/errors.csv`),
as JSON lines (one run a line: plain text a repository stores compactly and a reader can grep).
Importing it creates the same runs, nested the same way, in another store, where `python -m analysis`
reads them like any sweep. The trials' figures (heatmaps, curves) are not archived: the report draws its
own from the cells and the wrong answers. Nor are the trained models (`model/`, up to 0.5 GB a trial).

    python -m arith.tracking.archive export --tracking-uri sqlite:///mlflow.db --run PARENT_ID --out
    sweep.jsonl
    python -m arith.tracking.archive import sweep.jsonl --tracking-uri sqlite:///other.db

(mlflow-export-import, MLflow's own tool for this, writes a folder per run with every artifact and in its
1.2.0 release does not install the modules it imports; one file per sweep is what a repository can hold.)

The header carries the sha256 of the content (`archive_checks.content_digest`), which the import checks.
The same sweep may be archived again further on (an
offline sweep resumed after a deadline): importing it brings the store's copy up to it (`import_archive`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arith.tracking import store
from arith.tracking.archive_checks import DIGEST_FIELD, RecordError, check_archive, content_digest
from arith.tracking.archive_compare import Changes, ConflictError, compare, same_run
from arith.tracking.schema import CELLS_ARTIFACT, ERRORS_ARTIFACT, SWEEP_TAG
from arith.tracking.schema import PARENT_RUN_TAG as PARENT_TAG

FORMAT = "arith-sweep-archive"
VERSION = 2
#: the versions this code reads (the committed archives were rewritten into this one: `lab.archives`)
READABLE = (VERSION,)
#: the artifacts carried along: what the analysis reads of a trial (analysis/load.py)
ARTIFACTS = (CELLS_ARTIFACT, ERRORS_ARTIFACT)
#: the tag an imported run carries: the id of the run it was archived from (imports are idempotent)
SOURCE_TAG = "archive.source_run_id"
#: on an imported parent run until all its trial runs are in (a killed import leaves it, to be redone)
INCOMPLETE_TAG = "archive.incomplete"
#: on an imported parent run: the digest of the archive's content (the same archive again is a no-op)
CONTENT_TAG = "archive.content_sha256"
#: on a staged parent run: the parent of the store's earlier copy of the sweep, which it replaces
REPLACES_TAG = "archive.replaces"
#: on an imported parent run: the archive file it was last imported from (kept weights lie beside it)
FILE_TAG = "archive.file"
#: the tags an import keeps its own account with, which an export leaves behind
BOOKKEEPING_TAGS = (INCOMPLETE_TAG, CONTENT_TAG, REPLACES_TAG, FILE_TAG)
#: the tags an import adds to a run, which its record does not hold
IMPORT_TAGS = (SOURCE_TAG, *BOOKKEEPING_TAGS)
#: MLflow's limits on one log_batch call
_MAX_METRICS, _MAX_PARAMS, _MAX_TAGS = 1000, 100, 100


class ArchiveError(RuntimeError):
    """The archive cannot be written or read; the message says which file and why."""


def _run_record(mlflow_client, run, parent_id: str | None) -> dict[str, Any]:
    info, data = run.info, run.data
    metrics = {
        key: [[m.step, m.timestamp, m.value] for m in mlflow_client.get_metric_history(info.run_id, key)]
        for key in sorted(data.metrics)
    }
    artifacts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ARTIFACTS:
            try:
                path = mlflow_client.download_artifacts(info.run_id, name, tmp)
            except Exception:  # a trial stopped before its first evaluation has none
                continue
            artifacts[name] = Path(path).read_text()
    return {
        "run_id": info.run_id,
        "run_name": info.run_name or "",
        "parent_run_id": parent_id,
        "status": info.status,
        "start_time": info.start_time,
        "end_time": info.end_time,
        "params": dict(data.params),
        "tags": {k: v for k, v in data.tags.items() if k != PARENT_TAG and k not in BOOKKEEPING_TAGS},
        "metrics": metrics,
        "artifacts": artifacts,
    }


def export_sweep(mlflow_client, parent_run_id: str, out: Path) -> int:
    """Write the sweep under `parent_run_id` (the parent and its trial runs) to `out`; return the number
    of trial runs written."""
    parent = mlflow_client.get_run(parent_run_id)
    experiment = mlflow_client.get_experiment(parent.info.experiment_id).name
    children = store.search_runs(
        mlflow_client, [parent.info.experiment_id], f"tags.{PARENT_TAG} = '{parent_run_id}'"
    )
    children.sort(key=lambda run: (run.info.start_time or 0, run.info.run_name or ""))
    records = [_run_record(mlflow_client, parent, None)]
    records += [_run_record(mlflow_client, run, parent_run_id) for run in children]
    write_records(out, experiment, records)
    return len(children)


def write_records(path: Path, experiment: str, records: list[dict[str, Any]]) -> None:
    """Write a sweep archive: its header, with the digest of the content, then the run records (the parent
    first). Atomically: a reader never sees half a file, and a write that fails leaves the old one."""
    header = {"format": FORMAT, "version": VERSION, "experiment": experiment, "trials": len(records) - 1}
    header[DIGEST_FIELD] = content_digest(header, records)
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(path.name + ".tmp")
    with staged.open("w", encoding="utf-8") as handle:
        for line in (header, *records):
            handle.write(json.dumps(line) + "\n")
    os.replace(staged, path)


def archived_id(run) -> str:
    """The id a run ran under: for a run imported from an archive, the one it was archived from (its import
    got a new one), else its own. A report names runs by it, so that every clone's rebuild reads alike."""
    return run.data.tags.get(SOURCE_TAG, run.info.run_id)


def read_archive(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, run records: the parent first) of an archive file."""
    try:
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ArchiveError(f"{path} is not a sweep archive ({err})") from err
    if not lines or not isinstance(lines[0], dict) or lines[0].get("format") != FORMAT:
        raise ArchiveError(f"{path} is not a sweep archive (no {FORMAT!r} header)")
    if lines[0].get("version") not in READABLE:
        raise ArchiveError(
            f"{path}: archive version {lines[0].get('version')}, this code reads versions "
            f"{', '.join(map(str, READABLE))}"
        )
    if len(lines) < 2 or lines[1].get("parent_run_id") is not None:
        raise ArchiveError(f"{path}: the sweep's parent run is missing")
    return lines[0], lines[1:]


def _log_run(
    mlflow_client, experiment_id: str, record: dict[str, Any], parent_id: str | None, finish: bool = True
) -> str:
    """Create one run from its record; `finish=False` leaves it RUNNING (its status set later)."""
    from mlflow.entities import Metric, Param

    tags = {**record["tags"], SOURCE_TAG: record["run_id"]}
    if parent_id is not None:
        tags[PARENT_TAG] = parent_id
    run = mlflow_client.create_run(
        experiment_id, start_time=record["start_time"], tags=tags, run_name=record["run_name"] or None
    )
    run_id = run.info.run_id
    params = [Param(k, v) for k, v in record["params"].items()]
    for i in range(0, len(params), _MAX_PARAMS):
        mlflow_client.log_batch(run_id, params=params[i : i + _MAX_PARAMS])
    metrics = [
        Metric(key, value, timestamp, step)
        for key, history in record["metrics"].items()
        for step, timestamp, value in history
    ]
    for i in range(0, len(metrics), _MAX_METRICS):
        mlflow_client.log_batch(run_id, metrics=metrics[i : i + _MAX_METRICS])
    for name, text in record["artifacts"].items():
        mlflow_client.log_text(run_id, text, name)
    if finish:
        mlflow_client.set_terminated(run_id, status=record["status"], end_time=record["end_time"])
    return run_id


def _has_run(mlflow_client, run_id: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        mlflow_client.get_run(run_id)
    except MlflowException:
        return False
    return True


def _discard(mlflow_client, experiment_id: str, run_id: str) -> None:
    """Delete a partial import: the parent run and every trial run created under it."""
    _discard_children(mlflow_client, experiment_id, run_id)
    mlflow_client.delete_run(run_id)


def _retire(mlflow_client, experiment_id: str, run) -> None:
    """End what a killed import left: a staged copy is deleted (with the trial runs of the copy it was
    to replace, when that one was deleted already: the archive holds all of them); a promoted copy loses
    the trial runs of the copy it replaced."""
    replaced = run.data.tags.get(REPLACES_TAG)
    if INCOMPLETE_TAG in run.data.tags:
        _discard(mlflow_client, experiment_id, run.info.run_id)
        if replaced and _has_run(mlflow_client, replaced) and not _active(mlflow_client, replaced):
            _discard_children(mlflow_client, experiment_id, replaced)
    elif replaced:
        _discard_children(mlflow_client, experiment_id, replaced)
        mlflow_client.delete_tag(run.info.run_id, REPLACES_TAG)


def _active(mlflow_client, run_id: str) -> bool:
    return mlflow_client.get_run(run_id).info.lifecycle_stage == "active"


def _discard_children(mlflow_client, experiment_id: str, run_id: str) -> None:
    for child in store.search_runs(mlflow_client, [experiment_id], f"tags.`{PARENT_TAG}` = '{run_id}'"):
        mlflow_client.delete_run(child.info.run_id)


def _stored_record(mlflow_client, run, parent_id: str) -> dict[str, Any]:
    """A trial run of an earlier import read back as the record it came from (its import's tags off)."""
    record = _run_record(mlflow_client, run, parent_id)
    record["run_id"] = archived_id(run)
    record["tags"] = {k: v for k, v in record["tags"].items() if k not in IMPORT_TAGS}
    return record


def _changes(mlflow_client, experiment_id: str, copy, records: list[dict[str, Any]]) -> Changes:
    """How the archive's records differ from the store's copy of the sweep (`copy`: its parent run)."""
    parent = records[0]
    query = f"tags.`{PARENT_TAG}` = '{copy.info.run_id}'"
    runs = {archived_id(run): run for run in store.search_runs(mlflow_client, [experiment_id], query)}
    return compare(
        records[1:],
        set(runs),
        lambda run_id: _stored_record(mlflow_client, runs[run_id], parent["run_id"]),
        same_run(_stored_record(mlflow_client, copy, None), parent),
    )


@dataclass(frozen=True)
class Imported:
    """An import's outcome: the sweep's parent run in the store, and what changed there."""

    run_id: str
    #: None: the store held the archive already (or is the store it was archived from); else its changes
    changes: Changes | None
    #: whether the store held an earlier copy of the sweep (then `changes` says what it gained)
    updated: bool = False

    def describe(self, path: Path) -> str:
        if self.changes is None:
            return f"{path}: already in the store as sweep {self.run_id}"
        if self.updated:
            return f"{path}: sweep {self.run_id} brought up to the archive: {self.changes.describe()}"
        return f"{path}: imported as sweep {self.run_id} ({len(self.changes.added)} trial runs)"


def import_sweep(uri: str, path: Path) -> tuple[str, bool]:
    """`import_archive`: (the sweep's parent run id in the store, whether the store changed)."""
    imported = import_archive(uri, path)
    return imported.run_id, imported.changes is not None


def import_archive(uri: str, path: Path) -> Imported:
    """Bring the store at `uri` up to the archived sweep (its experiment too, if new).

    The whole archive is checked first (`archive_checks`: its digest included). A sweep the store holds
    already is compared trial by trial (`archive_compare`): an identical one is left as it is, one that
    contradicts it is refused naming the trial, and one the archive carries further (a resumed offline
    sweep: trials added, unfinished ones continued, the parent's status moved on) is imported whole as a
    new copy that replaces the old. All or nothing: a copy is staged, tagged INCOMPLETE_TAG and without
    the `sweep` tag the analysis finds sweeps by, and takes the old copy's place only once every trial run
    is in. A failed import leaves the store as it was; what a killed one left is cleared by the next."""
    header, records = read_archive(path)
    try:
        check_archive(header, records)
    except RecordError as err:
        raise ArchiveError(f"{path}: {err}; nothing was imported") from None
    mlflow_client = store.open_client(uri)
    experiment_id = store.experiment_id(mlflow_client, header["experiment"], uri)
    parent = records[0]
    if _has_run(mlflow_client, parent["run_id"]):  # the store it was archived from
        return Imported(parent["run_id"], None)
    current = None
    query = f"tags.`{SOURCE_TAG}` = '{parent['run_id']}'"
    for run in store.search_runs(mlflow_client, [experiment_id], query):
        _retire(mlflow_client, experiment_id, run)
        if INCOMPLETE_TAG not in run.data.tags:
            current = run
    digest = content_digest(header, records)
    if current is None:
        changes = Changes(added=[r["run_name"] for r in records[1:]])
    elif current.data.tags.get(CONTENT_TAG) == digest:  # this very archive, perhaps moved
        if current.data.tags.get(FILE_TAG) != str(path.resolve()):
            mlflow_client.set_tag(current.info.run_id, FILE_TAG, str(path.resolve()))
        return Imported(current.info.run_id, None)
    else:
        try:
            changes = _changes(mlflow_client, experiment_id, current, records)
        except ConflictError as err:
            raise ArchiveError(f"{path}: {err}; nothing was imported") from None
        if not changes:  # the same content, written again: named, so that the next import needs no compare
            for tag, value in ((CONTENT_TAG, digest), (FILE_TAG, str(path.resolve()))):
                mlflow_client.set_tag(current.info.run_id, tag, value)
            return Imported(current.info.run_id, None)
    run_id = _stage(mlflow_client, experiment_id, records, path, current, digest)
    return Imported(run_id, changes, current is not None)


def _stage(
    mlflow_client, experiment_id: str, records: list[dict[str, Any]], path: Path, current, digest: str
) -> str:
    """Create the sweep's runs as a staged copy, then let it take the place of `current` (the store's
    earlier copy, if any): the old parent deleted, the new one given its `sweep` tag and status, then the
    old trial runs deleted. Returns the new parent run's id."""
    parent, children = records[0], records[1:]
    tags = dict(parent["tags"])
    sweep = tags.pop(SWEEP_TAG, None)
    tags |= {INCOMPLETE_TAG: "1", CONTENT_TAG: digest, FILE_TAG: str(path.resolve())}
    if current is not None:
        tags[REPLACES_TAG] = current.info.run_id
    parent_id = _log_run(mlflow_client, experiment_id, {**parent, "tags": tags}, None, finish=False)
    try:
        for record in children:
            _log_run(mlflow_client, experiment_id, record, parent_id)
    except BaseException as err:
        _discard(mlflow_client, experiment_id, parent_id)
        if isinstance(err, Exception) and type(err).__name__ == "MlflowException":
            reason = str(err).strip().splitlines()[0][:300]
            raise ArchiveError(f"{path}: the store refused a run ({reason}); nothing was imported") from err
        raise
    # the switch: the old copy leaves the analysis's sight before the new one enters it; a kill in between
    # leaves the staged copy, which the next import deletes before importing the archive whole
    if current is not None:
        mlflow_client.delete_run(current.info.run_id)
    if sweep is not None:
        mlflow_client.set_tag(parent_id, SWEEP_TAG, sweep)
    mlflow_client.delete_tag(parent_id, INCOMPLETE_TAG)
    mlflow_client.set_terminated(parent_id, status=parent["status"], end_time=parent["end_time"])
    if current is not None:
        _retire(mlflow_client, experiment_id, mlflow_client.get_run(parent_id))
    return parent_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m arith.tracking.archive", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    out = sub.add_parser("export", help="write one sweep (its parent run and trial runs) to a file")
    out.add_argument("--tracking-uri", required=True)
    out.add_argument("--run", required=True, help="the sweep's parent run id")
    out.add_argument("--out", required=True, type=Path)
    into = sub.add_parser("import", help="create an archived sweep's runs in a store")
    into.add_argument("archives", nargs="+", type=Path)
    into.add_argument("--tracking-uri", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "export":
            store.check_reachable(args.tracking_uri)
            n = export_sweep(store.client(args.tracking_uri), args.run, args.out)
            print(f"wrote {args.out}: the sweep {args.run} and its {n} trial runs")
        else:
            for path in args.archives:
                print(import_archive(args.tracking_uri, path).describe(path))
    except (ArchiveError, store.StoreError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
