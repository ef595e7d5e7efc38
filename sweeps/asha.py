"""Ray Tune's ASHA scheduler with rungs that outlive a stopped sweep.

Tune pickles the scheduler once, when a sweep starts (the experiment's `tuner.pkl`), and `Tuner.restore`
brings back that fresh copy: whatever ASHA recorded (which trial reached which rung, with what metric) is
gone after a `--resume`, and the first trials to report afterwards pass every rung unopposed, so a search
spread over several sessions would prune less and spend more than one run straight through. Tune never
calls a scheduler's own `save` / `restore`. `ResumableAsha` calls them: it writes its state beside the
sweep whenever a trial reports or ends, and reads it back when Tune unpickles it on a restore.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

import pyarrow.fs
from ray.tune.schedulers import ASHAScheduler

#: the file, in the sweep's folder, that holds ASHA's rungs between sessions
ASHA_STATE_FILE = "asha_state.pkl"


class ResumableAsha(ASHAScheduler):
    """`ASHAScheduler` that keeps its state (its brackets' rungs, the trials' brackets, how many it stopped)
    at `state_uri` (a local path or a URI pyarrow opens, as the sweep's storage is)."""

    def __init__(self, state_uri: str, **asha: Any) -> None:
        super().__init__(**asha)
        self._state_uri = state_uri

    def on_trial_result(self, tune_controller, trial, result: dict) -> str:
        action = super().on_trial_result(tune_controller, trial, result)
        self._keep()
        return action

    def on_trial_complete(self, tune_controller, trial, result: dict) -> None:
        super().on_trial_complete(tune_controller, trial, result)
        self._keep()

    def _keep(self) -> None:
        """Write the state through a temporary file, so a kill mid-write leaves the last whole one."""
        fs, path = pyarrow.fs.FileSystem.from_uri(self._state_uri)
        local = isinstance(fs, pyarrow.fs.LocalFileSystem)
        target = f"{path}.tmp" if local else path
        self.save_to(fs, target)
        if local:
            os.replace(target, path)

    def save_to(self, fs: pyarrow.fs.FileSystem, path: str) -> None:
        with fs.open_output_stream(path) as out:
            out.write(pickle.dumps(self.__dict__))

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickled (Tune restoring the sweep): the rungs kept beside it, when there are any."""
        self.__dict__.update(state)
        fs, path = pyarrow.fs.FileSystem.from_uri(self._state_uri)
        if fs.get_file_info(path).type == pyarrow.fs.FileType.File:
            with fs.open_input_stream(path) as src:
                self.__dict__.update(pickle.loads(src.read()))
