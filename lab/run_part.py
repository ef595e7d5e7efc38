"""One part of the cpu reproduction's plan (docs/results/plan.yaml) run as a sweep, across sessions: the
part's sweep is `sweeps/run.py` with the part's arguments, into the reproduction's store; a session that
stops (Ctrl-C, a machine shut down) leaves its sweep folder, and the next session's run of the same part
finds it by the command line it recorded (`PartStorage.stopped`) and resumes it (`--resume`: ended trials
kept, the others continued from their last checkpoint, into the same MLflow runs), never starting a second
sweep of the part. When the sweep ends its parent run is tagged with its command, every session's machine
and wall time, and archived (arith/tracking/archive.py). A part the plan says was ended early (`ended_early`:
its remaining trials cannot change what it can show) is not resumed: its stopped sweep is recorded and
archived as it stands, its finished trials counted, the others marked KILLED.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from analysis.load import find_parent
from arith.tracking import store
from arith.tracking.archive import export_sweep
from arith.tracking.schema import COMMIT_TAG
from arith.tracking.store import client as store_client
from arith.training.hardware import machine
from lab.plan import (
    ARCHIVES,
    ROOT,
    TAG_COMMAND,
    TAG_COMMITS,
    TAG_ENDED_EARLY,
    TAG_MACHINE,
    TAG_WALL,
    Planned,
    repo_relative,
)
from lab.sweep_sessions import PartStorage
from sweeps.errors import SweepError
from sweeps.storage import git_commit

#: sweeps/run.py's exit code after a Ctrl+C (128 + SIGINT): Tune's state saved, the sweep resumable
INTERRUPTED = 130
#: seconds between notes of a running session's wall time (`PartStorage.add_session`): a machine stopped
#: without warning (no Ctrl+C, no finally) loses at most this much of the sweep's recorded wall time
NOTE_EVERY_S = 60.0


class SweepInterrupted(Exception):
    """A part's sweep was stopped (Ctrl+C, a signal) after saving its state: the same command resumes it."""


def run_part(plan: Planned, uri: str, storage: str, archives: Path = ARCHIVES) -> None:
    """One sweep via sweeps/run.py, or the rest of the one a stopped session left of this part (`--resume`:
    its ended trials kept, the others continued from their last checkpoint); on success its parent run is
    tagged with command, machine and wall time (every session's: its sweep.json keeps them)."""
    folders = PartStorage(storage)
    stopped = folders.stopped(plan.grid, plan.scale, plan.sweep_args())
    cmd = plan.command(uri, storage)
    shown = repo_relative("python " + shlex.join(cmd))
    print(f"\n=== {plan.grid}: {shown}" + (" --resume (a stopped session's)" if stopped else ""), flush=True)
    start, here, commit = time.perf_counter(), machine()[0], git_commit()
    session = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}"
    sweep = subprocess.Popen([sys.executable, *cmd, *(["--resume"] if stopped else [])], cwd=ROOT)
    name, noted = stopped, None

    def note_session() -> None:
        """This session's wall time so far, on the sweep's record once sweeps/run.py has made its folder."""
        nonlocal name, noted
        name = name or folders.stopped(plan.grid, plan.scale, plan.sweep_args())
        if name:
            noted = folders.add_session(name, time.perf_counter() - start, here, commit, session)

    try:
        try:
            code = wait_noting(sweep, note_session, NOTE_EVERY_S)
        except KeyboardInterrupt:  # Ctrl-C reached the sweep too: let Tune save its state and stop
            sweep.wait()
            raise SweepInterrupted(f"{plan.grid}: stopped, its trials' checkpoints kept") from None
    finally:
        note_session()
    if code == INTERRUPTED or code == -signal.SIGINT:
        raise SweepInterrupted(f"{plan.grid}: stopped, its trials' checkpoints kept")
    if code:
        raise subprocess.CalledProcessError(code, cmd)
    if noted is None:
        raise SweepError(f"{plan.grid}: its sweep ended without leaving a sweep folder to record")
    wall, machines, commits = noted
    client = store_client(uri)
    # this part's own parent run, as its sweep folder recorded it: the store's latest sweep of the grid may
    # be another part's (one started later, or imported from another machine's archive)
    parent = find_parent(client, plan.grid, folders.state(name)["parent_run_id"])
    record(client, parent, plan, shown, wall, machines, commits, archives)


def wait_noting(sweep: subprocess.Popen, note: Callable[[], None], every_s: float) -> int:
    """The sweep's exit code, calling `note` every `every_s` seconds while it runs."""
    while True:
        try:
            return sweep.wait(timeout=every_s)
        except subprocess.TimeoutExpired:
            note()


def end_part(plan: Planned, uri: str, storage: str, archives: Path = ARCHIVES) -> None:
    """A part the plan ended early: its stopped sweep recorded and archived as it stands (not resumed); its
    trial runs a stopped session left RUNNING marked KILLED, so that the report counts them unfinished, or
    deleted where they logged nothing (as `sweeps.trainable.discard_lost_attempts` does on a restart)."""
    folders = PartStorage(storage)
    name = folders.stopped(plan.grid, plan.scale, plan.sweep_args())
    if name is None:
        print(f"=== {plan.grid}: ended early ({plan.ended_early}); no stopped sweep of it to archive")
        return
    client = store_client(uri)
    parent = find_parent(client, plan.grid, folders.state(name)["parent_run_id"])
    store.end_stopped_trials(client, parent.info.run_id)
    if parent.info.status == "RUNNING":
        client.set_terminated(parent.info.run_id, "KILLED")
    client.set_tag(parent.info.run_id, TAG_ENDED_EARLY, plan.ended_early)
    wall, machines, commits = folders.sessions(name)
    print(f"=== {plan.grid}: ended early ({plan.ended_early}): archived as it stands", flush=True)
    shown = repo_relative("python " + shlex.join(plan.command(uri, storage)))
    record(client, client.get_run(parent.info.run_id), plan, shown, wall, machines, commits, archives)


def record(
    client, parent, plan: Planned, shown: str, wall: float, machines: str, commits: str, archives: Path
) -> None:
    """Tag a part's parent run with its command (`shown`), machines, wall time and commits, then archive
    it."""
    client.set_tag(parent.info.run_id, TAG_COMMAND, shown)
    client.set_tag(parent.info.run_id, TAG_MACHINE, machines)
    client.set_tag(parent.info.run_id, TAG_WALL, f"{wall:.0f}")
    # the commit the sweep started under, then each session's: a trial resumed in a later session trained on
    # under that session's code
    every = [parent.data.tags.get(COMMIT_TAG, ""), *commits.split("; ")]
    client.set_tag(parent.info.run_id, TAG_COMMITS, "; ".join(dict.fromkeys(filter(None, every))))
    archive = archives / plan.archive_name
    export_sweep(client, parent.info.run_id, archive)
    print(f"=== {plan.grid}: archived in {archive}", flush=True)
