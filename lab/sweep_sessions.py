"""A plan part's sweep folder across sessions: the stopped sweep a session resumes, and each session's wall
time, machine and commit (`lab.run_part`), kept beside the folder: Tune, resuming a sweep, uploads a staged
copy of the folder over it as it runs, which undid a note made inside it meanwhile."""

from __future__ import annotations

import json
from typing import Any

from sweeps.errors import SweepError
from sweeps.storage import SweepStorage

#: a sweep's sessions (wall time, machine, commit), beside its folder
SESSIONS_SUFFIX = ".sessions.json"


class PartStorage(SweepStorage):
    """`SweepStorage` with the sessions of each sweep noted."""

    def stopped(self, grid: str, scale: str, args: list[str]) -> str | None:
        """The latest sweep of `grid` at `scale` started with `args` (`sweep_identity`), even where a sweep
        of another part started after it; None when there is none. Whether it finished is the tracking
        store's to say (its parent run), not the folder's."""
        try:
            return self.latest(grid, scale, args)
        except SweepError:
            return None

    def add_session(
        self, name: str, wall_s: float, machine: str, commit: str = "", session: str = ""
    ) -> tuple[float, str, str]:
        """Note one session of the sweep; returns `sessions(name)`. `session` names a session noted more
        than once as it runs (its entry replaced each time), so that one whose machine stops without
        warning keeps the time it had run until its last note."""
        entry = {
            "wall_s": round(wall_s, 1),
            "machine": machine,
            **({"commit": commit} if commit else {}),
            **({"session": session} if session else {}),
        }
        others = [s for s in self._noted_sessions(name) if not session or s.get("session") != session]
        self._write(self._sessions_path(name), [*others, entry])
        return self.sessions(name)

    def session_entries(self, name: str) -> list[dict[str, Any]]:
        """The sessions noted of a sweep, in order: those its sweep.json holds (where they were noted
        first), then those in `<name>.sessions.json` beside its folder."""
        return [*self.state(name).get("sessions", []), *self._noted_sessions(name)]

    def sessions(self, name: str) -> tuple[float, str, str]:
        """Every session's wall time together, their machines and their commits (each once, in order)."""
        sessions = self.session_entries(name)
        machines = dict.fromkeys(s["machine"] for s in sessions)
        commits = dict.fromkeys(s["commit"] for s in sessions if s.get("commit"))
        return sum(s["wall_s"] for s in sessions), "; ".join(machines), "; ".join(commits)

    def _sessions_path(self, name: str) -> str:
        return f"{self.root}/{name}{SESSIONS_SUFFIX}"

    def _noted_sessions(self, name: str) -> list[dict[str, Any]]:
        path = self._sessions_path(name)
        if not self.fs.get_file_info(path).is_file:
            return []
        with self.fs.open_input_stream(path) as src:
            return json.loads(src.read().decode())
