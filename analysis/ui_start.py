"""The command that starts the MLflow UI over a local store, as a reader can type it where they stand: `make
ui` from the project's root over its own `mlflow.db`, else the virtual environment's `mlflow` by its path
(a bare `mlflow` is not on PATH outside the activated environment)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from arith.tracking.store import sqlite_path

ROOT = Path(__file__).resolve().parent.parent
#: the store `make ui` serves, relative to the project's root
MAKE_UI_STORE = "mlflow.db"
MAKE_UI_PORT = 5000


def ui_command(uri: str, port: int = MAKE_UI_PORT, cwd: Path | None = None) -> str:
    """`make ui` where it serves this store on this port from `cwd`, else the venv's `mlflow ui ...`."""
    here = Path(cwd or os.getcwd()).resolve()
    db = sqlite_path(uri)
    if here == ROOT and db is not None and db.resolve() == ROOT / MAKE_UI_STORE and port == MAKE_UI_PORT:
        return "make ui"
    mlflow = Path(sys.executable).with_name("mlflow")
    try:
        shown = str(mlflow.relative_to(here))
    except ValueError:
        shown = str(mlflow)
    return shlex.join([shown, "ui", "--backend-store-uri", uri, "--port", str(port)])
