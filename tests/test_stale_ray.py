"""A killed sweep driver's local Ray is stopped by the next sweep, and only a killed one's: a driver that
runs on (a script, a notebook or a test process, whose command line names no sweep) keeps its Ray.
Real processes stand in for a Ray session's: each holds a file of its session folder open, as Ray's
agents hold their logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sweeps import cluster

HOLD_OPEN = "import sys, time; f = open(sys.argv[1], 'a'); time.sleep(600)"


@contextmanager
def session_process(session: Path) -> Iterator[subprocess.Popen]:
    """A process of the Ray session in folder `session`: it holds the session's log open."""
    (session / "logs").mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", HOLD_OPEN, str(session / "logs" / "agent.log")])
    try:
        deadline = time.monotonic() + 30
        while not cluster._in_session(proc.pid, str(session)) and time.monotonic() < deadline:
            time.sleep(0.05)
        yield proc
    finally:
        proc.kill()
        proc.wait()


def write_note(folder: Path, pid: int, session: Path, started: int | None) -> Path:
    note = folder / f"posdesc-driver-{pid}.json"
    note.write_text(json.dumps({"driver_pid": pid, "driver_started": started, "session_dir": str(session)}))
    return note


def test_a_running_drivers_ray_is_kept_though_its_command_names_no_sweep(tmp_path):
    """This test's own process is the driver: alive, its command line pytest's."""
    session = tmp_path / "session_a"
    with session_process(session) as proc:
        note = write_note(tmp_path, os.getpid(), session, cluster._start_time(os.getpid()))
        assert cluster.stop_stale_ray(tmp_path) == 0
        assert proc.poll() is None, "a running driver's Ray was stopped"
        assert note.exists()


def test_a_gone_drivers_ray_is_stopped_even_where_its_pid_was_reused(tmp_path):
    """The note names this process's pid with another start time: the pid is reused, the driver gone."""
    session = tmp_path / "session_b"
    started = cluster._start_time(os.getpid())
    assert started is not None
    with session_process(session) as proc:
        note = write_note(tmp_path, os.getpid(), session, started - 1)
        assert cluster.stop_stale_ray(tmp_path) == 1
        assert proc.wait(timeout=30) == -9
        assert not note.exists()


def test_a_note_names_its_driver_by_pid_and_start_time():
    pid = os.getpid()
    assert cluster._driver_running({"driver_pid": pid, "driver_started": cluster._start_time(pid)})
    assert not cluster._driver_running({"driver_pid": pid, "driver_started": None})
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    assert not cluster._driver_running({"driver_pid": int(gone.stdout), "driver_started": 1})
