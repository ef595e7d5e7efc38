"""Where a trial trained: one record for each process that trained it (its start, each resume), kept in its
checkpoint and on its run. The processor changes from session to session, and a bf16 trial's speed with it,
so a rate per step is read per machine. A session holds what the checkpoint holds: steps redone after a
restore count once. Plain dicts, as a checkpoint and a JSON tag carry them.
"""

from __future__ import annotations

import json
from typing import Any

from arith.tracking.schema import SESSIONS_TAG, TRAINED_ON_TAG

Session = dict[str, Any]

#: the machine of steps a checkpoint from before this record existed had already computed
NOT_RECORDED = "not recorded"
#: the CPU seconds from which a machine's line gives hours, not minutes
_HOUR = 3600.0
_KERNELS = {"fp32 kernels": " (bf16 on fp32 kernels)", "native": " (bf16 native)"}


def opened(sessions: list[Session], step: int, machine: str, kernels: str) -> list[Session]:
    """The record with this process's session opened at `step`. Steps of a checkpoint from before the record
    existed are one session of `NOT_RECORDED`; a session that computed no step is dropped."""
    out = [dict(session) for session in sessions if session["to_step"] > session["from_step"]]
    if not out and step > 0:
        out.append(_session(NOT_RECORDED, "", 0, step))
    out.append(_session(machine, kernels, step, step))
    return out


def advanced(sessions: list[Session], step: int, cpu_seconds: float, train_seconds: float) -> None:
    """The open (last) session has reached `step`, spending `cpu_seconds` and `train_seconds` more."""
    last = sessions[-1]
    last["to_step"] = step
    last["cpu_seconds"] = round(last["cpu_seconds"] + cpu_seconds, 3)
    last["train_seconds"] = round(last["train_seconds"] + train_seconds, 3)


def tags(sessions: list[Session]) -> dict[str, str]:
    """The run's tags that carry the record."""
    return {SESSIONS_TAG: json.dumps(sessions), TRAINED_ON_TAG: trained_on_line(sessions)}


def trained_on_line(sessions: list[Session]) -> str:
    """One line of each machine's steps and CPU time, consecutive sessions on one machine together: "steps
    0-2,360 on CPU A, 2 CPU cores, Linux (bf16 on fp32 kernels), 1.9 CPU-h; steps 2,360-8,000 on ..."."""
    merged: list[Session] = []
    for session in sessions:
        kernels = session.get("kernels", "")
        if merged and (merged[-1]["machine"], merged[-1]["kernels"]) == (session["machine"], kernels):
            last = merged[-1]
            last["to_step"] = session["to_step"]
            last["cpu_seconds"] += session.get("cpu_seconds", 0.0)
            last["count"] += session["to_step"] > session["from_step"]  # one just opened: not yet
        else:
            merged.append({**session, "kernels": kernels, "cpu_seconds": session.get("cpu_seconds", 0.0)})
            merged[-1]["count"] = 1
    return "; ".join(_line(m) for m in merged)


def _line(merged: Session) -> str:
    kernels = _KERNELS.get(merged["kernels"], "")
    text = f"steps {merged['from_step']:,}-{merged['to_step']:,} on {merged['machine']}{kernels}"
    if merged["machine"] == NOT_RECORDED:
        return text
    cpu = merged["cpu_seconds"]
    text += f", {cpu / _HOUR:.1f} CPU-h" if cpu >= _HOUR else f", {cpu / 60:.0f} CPU-min"
    return text + (f" in {merged['count']} sessions" if merged["count"] > 1 else "")


def _session(machine: str, kernels: str, from_step: int, to_step: int) -> Session:
    times = {"cpu_seconds": 0.0, "train_seconds": 0.0}
    return {"machine": machine, "kernels": kernels, "from_step": from_step, "to_step": to_step, **times}
