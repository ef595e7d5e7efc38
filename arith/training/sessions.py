"""Where a trial trained: one record for each process that trained it (its start, each resume), kept in its
checkpoint and on its run, so that a trial of a sweep that spans sessions says which of its steps each
machine computed and what they cost, not only the last session's machine.

The processor changes from session to session (a CPU that emulates bf16 runs a bf16 trial at about fp32
speed, one with bf16 hardware 1.5-1.9x faster), so a rate per step read off a trial that ran on two is
a mix of both unless its steps and CPU time are counted per machine. A session holds what the trial's
checkpoint holds: steps a stopped process computed after its last checkpoint are redone by the next one
and counted there, once. Plain dicts, as a checkpoint and a JSON tag carry them.
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


def opened(sessions: list[Session], step: int, machine: str, kernels: str) -> list[Session]:
    """The record with this process's session opened at `step` (where its checkpoint left the trial).
    A checkpoint from before the record existed (none recorded, `step` > 0) had its first steps computed
    on a machine no one noted: they are one session of `NOT_RECORDED`. A session that computed no step
    (a finished trial evaluated again) is dropped."""
    out = [dict(session) for session in sessions if session["to_step"] > session["from_step"]]
    if not out and step > 0:
        out.append(_session(NOT_RECORDED, "", 0, step))
    out.append(_session(machine, kernels, step, step))
    return out


def advanced(sessions: list[Session], step: int, cpu_seconds: float, train_seconds: float) -> None:
    """The open (last) session has reached `step`, spending `cpu_seconds` of the process's CPU time and
    `train_seconds` of training wall time more."""
    last = sessions[-1]
    last["to_step"] = step
    last["cpu_seconds"] = round(last["cpu_seconds"] + cpu_seconds, 3)
    last["train_seconds"] = round(last["train_seconds"] + train_seconds, 3)


def tags(sessions: list[Session]) -> dict[str, str]:
    """The run's tags that carry the record."""
    return {SESSIONS_TAG: json.dumps(sessions), TRAINED_ON_TAG: trained_on_line(sessions)}


def read(tag: str | None) -> list[Session]:
    """The sessions a run's tag holds ([] for a run from before the record, or an unreadable tag)."""
    try:
        sessions = json.loads(tag or "[]")
    except json.JSONDecodeError:
        return []
    return [s for s in sessions if isinstance(s, dict) and {"machine", "from_step", "to_step"} <= s.keys()]


def machine_at(sessions: list[Session], step: int) -> str:
    """The machine that computed optimiser step `step` ("" where no session recorded it)."""
    for session in reversed(sessions):
        if session["from_step"] < step <= session["to_step"] and session["machine"] != NOT_RECORDED:
            return session["machine"]
    return ""


def trained_on_line(sessions: list[Session]) -> str:
    """One line: each machine's steps and CPU time, consecutive sessions on one machine together, e.g.
    "steps 0-2,360 on CPU A (...), 2 CPU cores, Linux (bf16 on fp32 kernels), 1.9 CPU-h; steps
    2,360-8,000 on ... (native bf16), 3.1 CPU-h"."""
    merged: list[Session] = []
    for session in sessions:
        if merged and (merged[-1]["machine"], merged[-1]["kernels"]) == (
            session["machine"],
            session.get("kernels", ""),
        ):
            merged[-1] = {**merged[-1], "to_step": session["to_step"]}
            merged[-1]["cpu_seconds"] += session.get("cpu_seconds", 0.0)
            merged[-1]["count"] += session["to_step"] > session["from_step"]  # one just opened: not yet
        else:
            merged.append(
                {
                    "machine": session["machine"],
                    "kernels": session.get("kernels", ""),
                    "from_step": session["from_step"],
                    "to_step": session["to_step"],
                    "cpu_seconds": session.get("cpu_seconds", 0.0),
                    "count": 1,
                }
            )
    return "; ".join(_line(m) for m in merged)


def _line(merged: Session) -> str:
    kernels = {"fp32 kernels": " (bf16 on fp32 kernels)", "native": " (bf16 native)"}.get(
        merged["kernels"], ""
    )
    text = f"steps {merged['from_step']:,}-{merged['to_step']:,} on {merged['machine']}{kernels}"
    if merged["machine"] == NOT_RECORDED:
        return text
    cpu = merged["cpu_seconds"]
    text += f", {cpu / _HOUR:.1f} CPU-h" if cpu >= _HOUR else f", {cpu / 60:.0f} CPU-min"
    return text + (f" in {merged['count']} sessions" if merged["count"] > 1 else "")


def _session(machine: str, kernels: str, from_step: int, to_step: int) -> Session:
    return {
        "machine": machine,
        "kernels": kernels,
        "from_step": from_step,
        "to_step": to_step,
        "cpu_seconds": 0.0,
        "train_seconds": 0.0,
    }
