"""A run's logged model found in a local SQLite store by reading the store's tables, without MLflow.

`arith.ask` answers one problem. Through MLflow, reaching `runs:/<run id>/model` costs importing mlflow and
opening its SQLAlchemy store (6-10 s on a busy 2-core machine) and copying the model, where the model is a
folder on this disk: the store names it in `logged_models.artifact_location`. This reads that row with
the standard library's sqlite3, read-only, and answers None whenever it cannot be sure it finds what
MLflow would (another store, another table layout, several models of the name, files of the name among
the run's own artifacts, a location that is no local folder): the caller then downloads through MLflow.
"""

from __future__ import annotations

import re
import sqlite3
import urllib.parse
import urllib.request
from contextlib import closing
from pathlib import Path

from arith.tracking.store import sqlite_path

_RUNS_URI = re.compile(r"^runs:/([0-9a-f]{32})/([^/]+)/?$")

#: the run's artifact folder and each active logged model of the name in its experiment that it logged
#: (MLflow's `RunsArtifactRepository` finds a run's model among its experiment's models by name and run)
_QUERY = """
SELECT r.artifact_uri, m.artifact_location
FROM runs AS r JOIN logged_models AS m
  ON m.source_run_id = r.run_uuid AND m.experiment_id = r.experiment_id
WHERE r.run_uuid = ? AND m.name = ? AND m.lifecycle_stage = 'active'
"""


def local_path(uri: str) -> Path | None:
    """The local path a `file://` URI names; None for any other URI."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return Path(urllib.request.url2pathname(parsed.path))


def logged_model_folder(uri: str, tracking_uri: str) -> Path | None:
    """The local folder of the logged model `runs:/<run id>/<name>` names in the SQLite store at
    `tracking_uri`, or None where MLflow must be asked (see the module's docstring)."""
    match, db = _RUNS_URI.match(uri), sqlite_path(tracking_uri)
    if match is None or db is None or not db.is_file():
        return None
    run_id, name = match.groups()
    try:
        with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as connection:
            rows = connection.execute(_QUERY, (run_id, name)).fetchall()
    except sqlite3.Error:  # not an MLflow store, or one whose tables are laid out otherwise
        return None
    if len(rows) != 1:
        return None
    run_artifacts, location = (local_path(uri) for uri in rows[0])
    if run_artifacts is None or (run_artifacts / name).exists():  # MLflow would merge the run's own files in
        return None
    return location if location is not None and location.is_dir() else None
