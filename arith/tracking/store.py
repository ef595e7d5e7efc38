"""The MLflow tracking store: the one module that opens clients and reads store URIs, and the schema's
shared calls (experiments by name, the sweep's parent run, run status, paged search). In `arith` because
the trainer, `sweeps` and `analysis` all need it. mlflow is imported inside the functions, so `arith`
trains without it (`tracking.enabled=False`). Stores: `sqlite:///path` (the local default), `http(s)://`
(a tracking server) or a database URI (`postgresql://...`) opened directly.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import sqlite3
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from arith.tracking import schema

SQLITE = "sqlite:///"
#: the schemes that name a database MLflow opens directly (no server in between)
DATABASE_SCHEMES = ("postgresql", "mysql", "mssql")


class StoreError(RuntimeError):
    """The store cannot be used; the message names it and says what to do."""


def sqlite_path(uri: str) -> Path | None:
    """The database file of a `sqlite:///` store URI; None for any other store."""
    return Path(uri[len(SQLITE) :]) if uri.startswith(SQLITE) else None


def absolute_uri(uri: str) -> str:
    """Trials run in other folders (Ray's trial dirs, other machines): make a local SQLite path absolute."""
    db = sqlite_path(uri)
    if db is not None and not db.is_absolute():
        return SQLITE + str(db.resolve())
    if "://" not in uri:  # a bare path is a file store folder
        return str(Path(uri).resolve())
    return uri


def display(uri: str) -> str:
    """The URI with any password replaced by `***`, for messages and logs."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.password:
        return uri.replace(f":{parsed.password}@", ":***@")
    return uri


def default_artifact_location(uri: str) -> str | None:
    """`<dir of the db>/mlartifacts` for a SQLite store (not under the working directory); else None."""
    db = sqlite_path(uri)
    return None if db is None else (db.resolve().parent / "mlartifacts").as_uri()


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Serialise opening a SQLite store: two processes opening a new one at once both run its schema
    migrations and one fails ("duplicate column name"), so they take turns on a lock file beside it."""
    db = sqlite_path(uri)
    if db is None:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{db}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def client(uri: str):
    """An `MlflowClient` for `uri`. A request gives up after one retry, not MLflow's 7 (minutes in all):
    a trial keeps its metrics and retries itself (`arith.tracking.outbox`)."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one bar per trial is noise
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def open_client(uri: str):
    """A client whose store is open (created and migrated, for a new SQLite file)."""
    with store_lock(uri):
        opened = client(uri)
        opened.search_experiments(max_results=1)  # opens the store: runs the migrations of a new one
    return opened


def check_reachable(uri: str, timeout_s: float = 5.0, must_exist: bool = True) -> None:
    """Raise StoreError naming the store when a server does not answer or (with `must_exist`) a SQLite or
    file store is not there (MLflow would create an empty one)."""
    parsed = urllib.parse.urlparse(uri)
    scheme = parsed.scheme.partition("+")[0]  # postgresql+psycopg2: the driver after the +
    if scheme in ("http", "https") or scheme in DATABASE_SCHEMES:
        default_port = {"https": 443, "http": 80, "postgresql": 5432, "mysql": 3306}.get(scheme, 1433)
        address = (parsed.hostname or "localhost", parsed.port or default_port)
        try:
            socket.create_connection(address, timeout_s).close()
        except OSError as err:
            raise StoreError(
                f"cannot reach the MLflow tracking server at {display(uri)} ({err.strerror or err}); "
                "start it or pass --tracking-uri"
            ) from err
        return
    if parsed.scheme == "sqlite":
        path = uri[len(SQLITE) :]
        if must_exist and path and path != ":memory:" and (problem := _not_a_store(Path(path))):
            raise StoreError(f"no MLflow store at {uri}: {problem}")
        return
    if parsed.scheme in ("", "file"):
        path = parsed.path if parsed.scheme == "file" else uri
        if must_exist and not Path(path).exists():
            raise StoreError(f"no MLflow store at {uri}: the folder does not exist")
        return
    if parsed.scheme == "databricks":
        return
    raise StoreError(
        f"tracking URI {uri!r} is not one MLflow reads (sqlite:///, http(s)://, postgresql://, file:)"
    )


def _not_a_store(path: Path) -> str:
    """Why the SQLite file at `path` holds no MLflow store ('' when it does), read without writing."""
    if not path.exists():
        return f"{path.resolve()} does not exist"
    if path.stat().st_size == 0:
        return f"{path} is an empty file"
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as err:
        return f"{path} is not an SQLite database ({err})"
    missing = sorted({"experiments", "runs"} - tables)
    return f"{path} is an SQLite database without MLflow's tables ({', '.join(missing)})" if missing else ""


def check_usable(uri: str) -> None:
    """Before a sweep starts: the store answers (and a new SQLite store is created once, here)."""
    check_reachable(uri, timeout_s=10, must_exist=False)
    try:
        open_client(uri)
    except Exception as err:
        raise StoreError(f"MLflow tracking store {display(uri)} is not usable: {err}") from err


def is_unreachable(err: BaseException) -> bool:
    """True for the errors of a store that is down or busy (worth retrying), False for a request it refused
    (a bad value, a missing run)."""
    from mlflow.exceptions import MlflowException

    if isinstance(err, (OSError, TimeoutError)):
        return True
    if isinstance(err, MlflowException):
        markers = ("Max retries", "Connection", "timed out", "database is locked", "could not connect")
        busy = ("TEMPORARILY_UNAVAILABLE", "INTERNAL_ERROR", "REQUEST_LIMIT_EXCEEDED")
        return getattr(err, "error_code", "") in busy or any(marker in str(err) for marker in markers)
    return type(err).__name__ in ("OperationalError", "ConnectionError", "Timeout", "ReadTimeout")


def experiment_id(mlflow_client, name: str, uri: str) -> str:
    """The experiment's id, created if missing, tagged as a model-training one (`schema.EXPERIMENT_KIND`)."""
    from mlflow.exceptions import MlflowException

    kind = {schema.EXPERIMENT_KIND_TAG: schema.EXPERIMENT_KIND}
    found = mlflow_client.get_experiment_by_name(name)
    if found is None:
        try:
            return mlflow_client.create_experiment(
                name, artifact_location=default_artifact_location(uri), tags=kind
            )
        except MlflowException:  # another process created it first
            found = mlflow_client.get_experiment_by_name(name)
    if found.tags.get(schema.EXPERIMENT_KIND_TAG) != schema.EXPERIMENT_KIND:  # created before the tag
        mlflow_client.set_experiment_tag(found.experiment_id, *kind.popitem())
    return found.experiment_id


def open_parent_run(uri: str, experiment: str, run_name: str, tags: dict[str, str]) -> str:
    """Create a sweep's parent run (its experiment too, if new); return its id."""
    mlflow_client = client(uri)
    run = mlflow_client.create_run(
        experiment_id(mlflow_client, experiment, uri), run_name=run_name, tags=tags
    )
    return run.info.run_id


def set_run_status(uri: str, run_id: str, status: str) -> None:
    """RUNNING re-opens a run (a resumed sweep or trial); FINISHED, FAILED, KILLED end it."""
    mlflow_client = client(uri)
    if status == "RUNNING":
        mlflow_client.update_run(run_id, status="RUNNING")
    else:
        mlflow_client.set_terminated(run_id, status=status)


def _all_pages(search, *args, **kwargs) -> list[Any]:
    """Every result of an MLflow search, all pages (it returns at most 1000 a call)."""
    out: list[Any] = []
    token = None
    while True:
        page = search(*args, max_results=1000, page_token=token, **kwargs)
        out.extend(page)
        token = page.token
        if not token:
            return out


def experiment_ids(mlflow_client, names: list[str] | None = None) -> list[str]:
    """The ids of the named experiments that exist, or of every experiment."""
    if names is not None:
        found = (mlflow_client.get_experiment_by_name(name) for name in sorted(set(names)))
        return [e.experiment_id for e in found if e is not None]
    return [e.experiment_id for e in _all_pages(mlflow_client.search_experiments)]


def search_runs(
    mlflow_client, experiment_ids: list[str], filter_string: str = "", order_by: list[str] | None = None
) -> list[Any]:
    """Every run matching the filter, all pages."""
    if not experiment_ids:
        return []
    return _all_pages(mlflow_client.search_runs, experiment_ids, filter_string, order_by=order_by)


def sweep_runs(mlflow_client, grid: str | None = None) -> list[Any]:
    """Every sweep parent run in the store (of `grid` when given), latest first."""
    query = f"tags.`{schema.SWEEP_TAG}` = '1'"
    runs = search_runs(mlflow_client, experiment_ids(mlflow_client), query, ["attributes.start_time DESC"])
    return [run for run in runs if grid is None or run.data.tags.get(schema.GRID_TAG) == grid]


def trials_filter(parent_run_id: str) -> str:
    """The search filter of the trial runs nested under a sweep's parent run."""
    return f"tags.`{schema.PARENT_RUN_TAG}` = '{parent_run_id}'"


def trial_runs(
    uri: str, experiments: list[str], parent_run_id: str, run_name: str | None = None
) -> list[Any]:
    """The trial runs nested under a sweep's parent run (only those named `run_name`, when given)."""
    mlflow_client = client(uri)
    query = trials_filter(parent_run_id)
    if run_name is not None:
        query += f" and tags.mlflow.runName = '{run_name}'"
    return search_runs(mlflow_client, experiment_ids(mlflow_client, experiments), query)


def end_stopped_trials(mlflow_client, parent_run_id: str) -> tuple[int, int]:
    """End the trial runs a stopped sweep left RUNNING (stopped before their trainer could end them): KILLED
    at their last logged loss, so that their minutes stay their own, or deleted where they logged none.
    Call it only once no process trains them. Returns (ended, deleted)."""
    parent = mlflow_client.get_run(parent_run_id)
    ended = deleted = 0
    for run in search_runs(mlflow_client, [parent.info.experiment_id], trials_filter(parent_run_id)):
        if run.info.status != "RUNNING":
            continue
        logged = [m.timestamp for m in mlflow_client.get_metric_history(run.info.run_id, schema.LOSS_METRIC)]
        if logged:
            mlflow_client.set_terminated(run.info.run_id, "KILLED", max(logged))
            ended += 1
        else:
            mlflow_client.delete_run(run.info.run_id)
            deleted += 1
    return ended, deleted
