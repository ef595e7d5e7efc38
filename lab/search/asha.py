"""Ray Tune's ASHA as a recipe search needs it: one ASHA per compared point, a trial that passed the gate
ended there, and rungs that outlive a stopped sweep.

- **One ASHA per compared point.** A claim's recipe must serve every format it compares, and the formats do
  not learn alike: one ASHA over all trials would keep the top third of a rung where the easy format's
  trials read high and the hard one's low, every one of them easy, and stop the harder format everywhere
  at its first rung: the search would say nothing about the format that decides. So each compared point
  (`groups`: a trial's point name -> its compared point, such as `format=basic,max_digits=5`) has its own
  `ASHAScheduler`, and a configuration is measured against the configurations of its own point only.
- **A trial that passed the gate ends there** (`stop_at`: the gate's threshold): its cost to the gate is
  known, and the rest of its budget would buy nothing the cost table reads.
- **Rungs kept beside the sweep.** Tune pickles the scheduler once, when a sweep starts (the experiment's
  `tuner.pkl`), and `Tuner.restore` brings back that fresh copy: whatever ASHA recorded would be gone after
  a `--resume`, and the first trials to report afterwards would pass every rung unopposed. Tune never calls
  a scheduler's own `save` / `restore`, so `SearchAsha` writes its state beside the sweep whenever a trial
  reports or ends, and reads it back when Tune unpickles it on a restore.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping
from typing import Any

import pyarrow.fs
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, TrialScheduler

from arith.tracking.schema import POINT_TAG

#: the file, in the sweep's folder, that holds the rungs between sessions. Not a .json or .pkl: on a
#: restore Tune copies every such file of the experiment's folder into its driver staging folder and
#: uploads them back at each sync, which would put the copy from the session before over this one
ASHA_STATE_FILE = "asha_state.rungs"


class SearchAsha(FIFOScheduler):
    """One `ASHAScheduler` (`asha`: its arguments, metric and mode among them) per group of trials, a
    trial's group read from `groups` by its point's name; a trial whose metric reached `stop_at` is
    stopped; the state is kept at `state_uri` (a local path or a URI pyarrow opens, as the sweep's
    storage is)."""

    def __init__(
        self, state_uri: str, groups: Mapping[str, str], stop_at: float | None = None, **asha: Any
    ) -> None:
        super().__init__()
        ASHAScheduler(**asha)  # its arguments checked now, not at the first trial
        self._state_uri = state_uri
        self._point_groups = dict(groups)
        self._stop_at = stop_at
        self._asha = dict(asha)
        self._metric = asha["metric"]
        self._groups: dict[str, ASHAScheduler] = {}
        self._group_of: dict[str, str] = {}
        #: trials stopped because they reached `stop_at`
        self.passed: set[str] = set()

    def group(self, trial: Any) -> str:
        """The compared point a trial belongs to, looked up by its point's name: the one value of its
        param space a restore keeps (the axes, `tune.sample_from` of the point, come back from Tune's
        restore as placeholders, `('__fn_ph', ...)`)."""
        return self._point_groups.get(str(trial.config.get(POINT_TAG)), "")

    def _scheduler(self, tune_controller: Any, trial: Any) -> ASHAScheduler:
        """The trial's group's ASHA, the trial added to it on first use."""
        if trial.trial_id not in self._group_of:
            group = self._group_of[trial.trial_id] = self.group(trial)
            if group not in self._groups:
                self._groups[group] = ASHAScheduler(**self._asha)
            self._groups[group].on_trial_add(tune_controller, trial)
        return self._groups[self._group_of[trial.trial_id]]

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        action = self._scheduler(tune_controller, trial).on_trial_result(tune_controller, trial, result)
        value = result.get(self._metric)
        if self._stop_at is not None and value is not None and value >= self._stop_at:
            self.passed.add(trial.trial_id)
            action = TrialScheduler.STOP
        self._keep()
        return action

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict) -> None:
        self._scheduler(tune_controller, trial).on_trial_complete(tune_controller, trial, result)
        self._keep()

    def on_trial_remove(self, tune_controller: Any, trial: Any) -> None:
        if trial.trial_id in self._group_of:  # a trial that never reported is in no ASHA
            self._groups[self._group_of[trial.trial_id]].on_trial_remove(tune_controller, trial)
            self._keep()

    def debug_string(self) -> str:
        groups = "; ".join(f"{g or 'all'}: {s.debug_string()}" for g, s in self._groups.items())
        return f"SearchAsha ({len(self.passed)} passed); {groups}"

    def _keep(self) -> None:
        """Write the state through a temporary file, so a kill mid-write leaves the last whole one."""
        fs, path = pyarrow.fs.FileSystem.from_uri(self._state_uri)
        local = isinstance(fs, pyarrow.fs.LocalFileSystem)
        target = f"{path}.tmp" if local else path
        with fs.open_output_stream(target) as out:
            out.write(pickle.dumps(self.__dict__))
        if local:
            os.replace(target, path)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickled (Tune restoring the sweep): the rungs kept beside it, when there are any."""
        self.__dict__.update(state)
        fs, path = pyarrow.fs.FileSystem.from_uri(self._state_uri)
        if fs.get_file_info(path).type == pyarrow.fs.FileType.File:
            with fs.open_input_stream(path) as src:
                self.__dict__.update(pickle.loads(src.read()))
