"""The offline executor's folder: the one plan it belongs to, and each trial's files named by its config.

A sweep of many hours on a lent machine is stopped at a deadline and run again later with the same
command. For the rerun to resume it, and never to mix in another run's trials, the folder is owned by a
plan: `plan.json` names the plan's parts and, for each, its parent run and the keys of its trials (a hash
of each trial's full config). A trial's config, record, log and checkpoint are found by that key alone, so
a record that is not this plan's is never read, and a rerun with another plan is refused.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import time
from pathlib import Path
from typing import IO, Any

from arith.config import ExperimentConfig
from arith.tracking.recorder import write_json
from sweeps.errors import SweepError

PLAN_FILE = "plan.json"
LOCK_FILE = "executor.lock"
#: seconds to wait for a stale trial process to be gone
STOP_WAIT_S = 10.0


def config_key(cfg: ExperimentConfig) -> str:
    """A trial's key: the hash of its full config (as the plan resolves it, before its sweep's link)."""
    text = json.dumps(cfg.to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def plan_of(parts: list[tuple[str, list[str]]]) -> list[dict[str, Any]]:
    """The plan's identity: each part's archive name and its trials' keys, in order."""
    return [{"name": name, "trials": keys} for name, keys in parts]


def held_plan(work: Path, plan: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The folder's stored state when it holds `plan` (a resume), None when it holds no plan; reads only.
    Raises SweepError when the folder holds another plan's trials."""
    path = work / PLAN_FILE
    if not path.exists():
        return None
    try:
        stored = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise SweepError(f"{path} cannot be read ({err}); use a fresh --out folder") from err
    if stored.get("plan") != plan:
        raise SweepError(
            f"{work} holds the trials of another plan ({_describe(stored.get('plan'))}); rerun that "
            "command to resume it, or name another --out"
        )
    return stored


def claim(work: Path, plan: list[dict[str, Any]], new: dict[str, Any]) -> dict[str, Any]:
    """The folder's state for `plan`: the stored one when the folder holds this plan (a resume), else
    `new` written now (a first run). Raises SweepError when the folder holds another plan's trials."""
    stored = held_plan(work, plan)
    if stored is not None:
        return stored
    leftovers = sorted(p.name for p in work.glob("*.run.json"))
    if leftovers:
        raise SweepError(
            f"{work} holds trial records of no known plan ({leftovers[0]}, ...); use a fresh --out folder"
        )
    work.mkdir(parents=True, exist_ok=True)
    state = {**new, "plan": plan}
    write_json(work / PLAN_FILE, state)
    return state


def _describe(plan: Any) -> str:
    if not isinstance(plan, list):
        return "unreadable"
    parts = [p for p in plan if isinstance(p, dict)]
    return ", ".join(f"{p.get('name')}: {len(p.get('trials', []))} trials" for p in parts)


def lock(work: Path) -> IO[str]:
    """Hold the folder for this executor while it runs (the lock goes with its process, however it
    ends); a second executor on the same folder is refused. Keep the returned file open."""
    work.mkdir(parents=True, exist_ok=True)
    handle = (work / LOCK_FILE).open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as err:
        handle.close()
        raise SweepError(f"{work} is in use by another sweeps.offline executor; wait for it to end") from err
    return handle


def stop_stale(pid_file: Path, marker: str) -> None:
    """Stop the process group a killed executor left running for a trial (its pid in `pid_file`), so a
    resumed trial never runs twice at once. Only a process whose command line holds `marker` (the
    trial's config file) is stopped: a pid reused by another program is left alone."""
    try:
        pid = int(pid_file.read_text())
        alive = marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return
    if not alive:
        return
    print(f"stopping trial process {pid}, left running by an executor that was killed", flush=True)
    # SIGKILL: it resumes from its last checkpoint (written atomically) whatever it was doing
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
