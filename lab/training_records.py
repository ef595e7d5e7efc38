"""Reading back what a trial's training recorded, for the lab's cost tables: the sessions its run's tag
holds (`arith.training.sessions` writes them), the machine of any step, and the steps a run has taken
at the end of an epoch."""

from __future__ import annotations

import json

from arith.training.epochs import capped_steps
from arith.training.sessions import NOT_RECORDED, Session


def read_sessions(tag: str | None) -> list[Session]:
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


def steps_after(
    epochs: int, lines: int, batch_size: int, epochs_per_pass: int = 1, max_steps: int = 0
) -> int:
    """Optimiser steps a run over `lines` training lines has taken at the end of epoch `epochs`, where it
    evaluates and reports, capped by `max_steps` (0: none): a step count compares across machines where
    core-minutes do not."""
    return capped_steps(epochs, -(-lines // batch_size), epochs_per_pass, max_steps)
