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
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from arith.tracking import store
from arith.tracking.archive_checks import RecordError, check_archive
from arith.tracking.schema import CELLS_ARTIFACT, ERRORS_ARTIFACT, SWEEP_TAG
from arith.tracking.schema import PARENT_RUN_TAG as PARENT_TAG

FORMAT = "arith-sweep-archive"
VERSION = 1
#: the artifacts carried along: what the analysis reads of a trial (analysis/load.py)
ARTIFACTS = (CELLS_ARTIFACT, ERRORS_ARTIFACT)
#: the tag an imported run carries: the id of the run it was archived from (imports are idempotent)
SOURCE_TAG = "archive.source_run_id"
#: on an imported parent run until all its trial runs are in (a killed import leaves it, to be redone)
INCOMPLETE_TAG = "archive.incomplete"
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
        "tags": {k: v for k, v in data.tags.items() if k != PARENT_TAG},
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
    header = {"format": FORMAT, "version": VERSION, "experiment": experiment, "trials": len(children)}
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps(header) + "\n")
        handle.write(json.dumps(_run_record(mlflow_client, parent, None)) + "\n")
        for run in children:
            handle.write(json.dumps(_run_record(mlflow_client, run, parent_run_id)) + "\n")
    return len(children)


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
    if lines[0].get("version") != VERSION:
        raise ArchiveError(f"{path}: archive version {lines[0].get('version')}, this code reads {VERSION}")
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
    for child in store.search_runs(mlflow_client, [experiment_id], f"tags.`{PARENT_TAG}` = '{run_id}'"):
        mlflow_client.delete_run(child.info.run_id)
    mlflow_client.delete_run(run_id)


def import_sweep(uri: str, path: Path) -> tuple[str, bool]:
    """Create the archived sweep's runs in the store at `uri` (its experiment too, if new). Returns (the
    parent run's id in this store, whether it was imported now); a sweep imported before is left as it is.

    All or nothing: the whole archive is checked first (`archive_checks`); the parent is created tagged
    INCOMPLETE_TAG and without the `sweep` tag the analysis finds sweeps by, which it gets only once every
    trial run is in. An import that fails is deleted; one that was killed is deleted by the next import,
    which then imports the archive whole."""
    header, records = read_archive(path)
    try:
        check_archive(header, records)
    except RecordError as err:
        raise ArchiveError(f"{path}: {err}; nothing was imported") from None
    mlflow_client = store.open_client(uri)
    experiment_id = store.experiment_id(mlflow_client, header["experiment"], uri)
    parent, children = records[0], records[1:]
    if _has_run(mlflow_client, parent["run_id"]):  # the store it was archived from
        return parent["run_id"], False
    done = store.search_runs(mlflow_client, [experiment_id], f"tags.`{SOURCE_TAG}` = '{parent['run_id']}'")
    for run in done:
        if INCOMPLETE_TAG not in run.data.tags:
            return run.info.run_id, False
        _discard(mlflow_client, experiment_id, run.info.run_id)
    tags = dict(parent["tags"])
    sweep = tags.pop(SWEEP_TAG, None)
    staged = {**parent, "tags": {**tags, INCOMPLETE_TAG: "1"}}
    parent_id = _log_run(mlflow_client, experiment_id, staged, None, finish=False)
    try:
        for record in children:
            _log_run(mlflow_client, experiment_id, record, parent_id)
        if sweep is not None:
            mlflow_client.set_tag(parent_id, SWEEP_TAG, sweep)
        mlflow_client.delete_tag(parent_id, INCOMPLETE_TAG)
        mlflow_client.set_terminated(parent_id, status=parent["status"], end_time=parent["end_time"])
    except BaseException as err:
        _discard(mlflow_client, experiment_id, parent_id)
        if isinstance(err, Exception) and type(err).__name__ == "MlflowException":
            reason = str(err).strip().splitlines()[0][:300]
            raise ArchiveError(f"{path}: the store refused a run ({reason}); nothing was imported") from err
        raise
    return parent_id, True


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
                run_id, new = import_sweep(args.tracking_uri, path)
                print(f"{path}: {'imported as' if new else 'already in the store as'} sweep {run_id}")
    except (ArchiveError, store.StoreError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
