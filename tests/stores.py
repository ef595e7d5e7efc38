"""Real tracking stores for the tests: a PostgreSQL server in a temporary folder and an MLflow tracking
server in front of it (or of SQLite), each started and stopped by the test that uses it, by its own pid.

PostgreSQL comes from the system (`apt-get install postgresql`, which scripts/install.sh does on a fresh
machine); as root its commands run as the `postgres` user (`runuser`), which owns the data folder."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

PG_BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin(name: str) -> str:
    for directory in PG_BIN_DIRS:
        if (directory / name).exists():
            return str(directory / name)
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"PostgreSQL's {name} not found: run scripts/install.sh (it installs postgresql)")
    return found


def _as_owner(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def postgres() -> Iterator[str]:
    """A fresh PostgreSQL on a free loopback port with database `mlflow`; yields its SQLAlchemy URI."""
    folder = Path(tempfile.mkdtemp(prefix="pg", dir="/tmp"))
    data, port = folder / "data", free_port()
    data.mkdir()
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        shutil.chown(data, "postgres")
    run = lambda cmd: subprocess.run(_as_owner(cmd), check=True, capture_output=True, text=True)  # noqa: E731
    pg_ctl = [_pg_bin("pg_ctl"), "-D", str(data)]
    try:
        run([_pg_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"])
        options = f"-p {port} -k {folder} -h 127.0.0.1 -c fsync=off"
        run([*pg_ctl, "-o", options, "-l", str(folder / "log"), "-w", "start"])
        run([_pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "mlflow"])
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/mlflow"
    finally:
        with suppress(subprocess.CalledProcessError):
            run([*pg_ctl, "-m", "immediate", "-w", "stop"])
        shutil.rmtree(folder, ignore_errors=True)


class MlflowServer:
    """`mlflow server` over a backend store, in its own process session; stop() and start() again."""

    def __init__(self, backend_uri: str, artifacts: Path, log: Path) -> None:
        self.backend_uri, self.artifacts, self.log = backend_uri, artifacts, log
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120) -> None:
        cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", self.backend_uri]
        cmd += ["--artifacts-destination", str(self.artifacts), "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--workers", "1"]
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with self.log.open("a") as log:
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with suppress(OSError):
                urllib.request.urlopen(self.uri + "/health", timeout=2)
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.3)
        self.stop()
        pytest.fail(f"mlflow server did not start:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None


@contextmanager
def mlflow_server(backend_uri: str, folder: Path) -> Iterator[MlflowServer]:
    server = MlflowServer(backend_uri, folder / "artifacts", folder / "mlflow_server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()
