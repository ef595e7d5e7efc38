"""What an archive adds to the copy of its sweep that a store already holds, trial by trial.

A sweep is archived more than once: an offline executor stopped at a deadline writes what it has, and the
same command run again resumes the sweep and writes it whole (the same parent run, the same trial runs,
carried further). Its import brings the store up to the archive without losing or doubling anything: a
trial the store lacks is added; a trial the store holds unfinished (KILLED, RUNNING) that the archive
carries further, or started over as a new run (an attempt stopped before its first checkpoint), is
continued; an identical trial is kept. Anything else is a conflict, named in one line:
the same trial with another history (a work folder copied and run on two machines), or an archive older
than what the store holds.

A trial continues another when it is that run carried on from one of its checkpoints: the same name,
start, params and, per metric, the same steps as far as the store's copy goes. The points logged after
that checkpoint were logged again on resume, at new times, so only a point logged at the same time must
hold the same value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arith.tracking.archive_checks import canonical

Record = dict[str, Any]
#: what a run's own status says of it: it may go on (a resumed sweep continues it) or it has ended
UNFINISHED = ("RUNNING", "SCHEDULED", "KILLED")


class ConflictError(ValueError):
    """The store holds a trial of this sweep that the archive contradicts; the message names it."""


@dataclass
class Changes:
    """How an archive differs from the store's copy of its sweep, by trial name."""

    added: list[str] = field(default_factory=list)
    continued: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    #: the parent run's record differs (its status, end or tags: a resumed sweep ends FINISHED)
    parent: bool = False

    def __bool__(self) -> bool:
        return bool(self.added or self.continued or self.parent)

    def describe(self) -> str:
        parts = [f"{len(self.added)} trial(s) added", f"{len(self.continued)} continued"]
        return ", ".join(parts) + f", {len(self.kept)} kept as they were"


def compare(
    archived: list[Record], stored: set[str], load: Callable[[str], Record], parent_same: bool
) -> Changes:
    """The changes of `archived` (the archive's trial records) over the store's copy of the sweep:
    `stored` holds the ids its trials were archived under, `load(id)` reads one back as a record.
    Raises ConflictError for the first trial the two disagree on."""
    changes = Changes(parent=not parent_same)
    ids = {record["run_id"] for record in archived}
    names = {record["run_name"] for record in archived}
    restarted = set()
    for run_id in sorted(set(stored) - ids):
        lacked = load(run_id)
        if lacked["status"] in UNFINISHED and lacked["run_name"] in names:
            restarted.add(lacked["run_name"])  # an attempt without a checkpoint, started over as a new run
            continue
        raise ConflictError(
            f"the store holds trial {_name(lacked)}, which this archive lacks: the archive is older than "
            "the store's copy of the sweep"
        )
    for record in archived:
        run_id = record["run_id"]
        if run_id not in stored:
            (changes.continued if record["run_name"] in restarted else changes.added).append(
                record["run_name"]
            )
        else:
            held = load(run_id)
            if same_run(held, record):
                changes.kept.append(record["run_name"])
            elif continues(held, record):
                changes.continued.append(record["run_name"])
            elif continues(record, held):
                raise ConflictError(
                    f"trial {_name(record)} is {record['status']} in this archive but "
                    f"{held['status']} further on in the store: the archive is older than the store's copy"
                )
            else:
                raise ConflictError(
                    f"trial {_name(record)} has another history in this archive than in the store "
                    f"({_difference(held, record)})"
                )
    return changes


def same_run(held: Record, record: Record) -> bool:
    """Whether the store's run is the archive's record: its run and its history (params, status and
    times, metrics, evaluation tables) equal. Tags are not compared: a store's are written after the
    import too (the analysis's verdicts, the UI's colours, a note)."""
    plain = ("run_name", "status", "start_time", "end_time", "params", "artifacts")
    return all(held.get(key) == record.get(key) for key in plain) and _histories(held) == _histories(record)


def continues(earlier: Record, later: Record) -> bool:
    """Whether `later` is the run `earlier` carried on: `earlier` unfinished, the same run and config,
    and each of its metrics' steps the start of `later`'s (its points logged at the same time alike)."""
    if earlier["status"] not in UNFINISHED:
        return False
    if any(earlier.get(key) != later.get(key) for key in ("run_name", "start_time", "params")):
        return False
    after = _histories(later)
    for key, points in _histories(earlier).items():
        further = after.get(key, [])
        if len(points) > len(further):
            return False
        for (step, stamp, value), (step2, stamp2, value2) in zip(points, further, strict=False):
            if step != step2 or (stamp == stamp2 and value != value2):
                return False
    return True


def _histories(record: Record) -> dict[str, list[tuple[int, int, bytes]]]:
    """Each metric's points, in step order (a store returns them in its own order); values compared as
    JSON, so that a NaN equals a NaN."""
    return {
        key: sorted((int(step), int(stamp), canonical(value)) for step, stamp, value in points)
        for key, points in record["metrics"].items()
        if points
    }


def _difference(held: Record, record: Record) -> str:
    """The first field the two records disagree on, for the conflict's message."""
    for key in ("run_name", "start_time", "params", "status", "end_time"):
        if held.get(key) != record.get(key):
            return f"{key}: {_short(held.get(key))} in the store, {_short(record.get(key))} here"
    ours, theirs = _histories(held), _histories(record)
    for key in sorted(set(ours) | set(theirs)):
        if ours.get(key) != theirs.get(key):
            return (
                f"metric {key}: {len(ours.get(key, []))} points in the store, {len(theirs.get(key, []))} here"
            )
    return "its evaluation tables"


def _name(record: Record) -> str:
    return f"{record['run_name']!r} (run {record['run_id']})"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
