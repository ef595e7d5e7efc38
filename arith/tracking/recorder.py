"""A trial's run recorded into a file in the sweep-archive schema, for machines without an MLflow store.

The lent GPU machines have PyTorch and transformers but no MLflow. There a trial logs through a
`RunRecorder` instead of `arith.tracking.runs.MlflowTracker`: the same calls (params from the config,
tags, metric histories, the evaluation's `eval/cells.csv` and `eval/errors.csv`, the run's status and
times) build one run record exactly as `arith.tracking.archive` exports it from a store, written to a JSON
file after every evaluation and at the end. `sweeps.offline` gathers the records of a grid's trials under
a parent record into one archive, which `python -m arith.tracking.archive import` brings into any MLflow
store, where `python -m analysis` judges it with the same code as a Ray Tune sweep.

Run ids are fresh UUIDs in MLflow's form (32 hex digits): an archive's runs keep them as their source id,
so importing the same archive twice is a no-op, as for an exported sweep. The trained model is kept only
when asked (`weights`, a folder: `sweeps.offline --keep-weights`), beside the archive, not in it.
"""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import pandas as pd

from arith.config import ExperimentConfig
from arith.tracking.archive import ARTIFACTS
from arith.tracking.runs import NullTracker, param_value
from arith.tracking.schema import CELLS_ARTIFACT, EPOCH_COLUMN, ERRORS_ARTIFACT, MODEL_ARTIFACT
from arith.tracking.schema import PARENT_RUN_TAG as PARENT_TAG

#: the tag that nests a trial under its sweep (MLflow's own), kept apart as `parent_run_id` in a record


def new_run_id() -> str:
    """A run id in MLflow's form."""
    return uuid.uuid4().hex


def now_ms() -> int:
    return int(time.time() * 1000)


def run_record(
    run_id: str,
    run_name: str,
    parent_run_id: str | None,
    params: dict[str, str],
    tags: dict[str, str],
    start_time: int | None = None,
) -> dict[str, Any]:
    """An empty run record (status RUNNING) in the schema of `arith.tracking.archive`."""
    return {
        "run_id": run_id,
        "run_name": run_name,
        "parent_run_id": parent_run_id,
        "status": "RUNNING",
        "start_time": start_time if start_time is not None else now_ms(),
        "end_time": None,
        "params": params,
        "tags": tags,
        "metrics": {},
        "artifacts": {},
    }


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write atomically: a reader (the executor gathering a killed trial) never sees half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload))
    os.replace(tmp, path)


class RunRecorder(NullTracker):
    """The tracker of a trial on a machine without MLflow: one run record, rewritten to `path`."""

    def __init__(
        self,
        cfg: ExperimentConfig,
        path: str | Path,
        resume: dict[str, Any] | None = None,
        weights: str | Path | None = None,
        restart: dict[str, Any] | None = None,
    ) -> None:
        """`resume`: the record as a checkpoint saved it (`unsent()`), continued from there: what was
        logged after that checkpoint is logged again by the resumed trainer, so it is dropped here.
        `weights`: the folder to keep the trained model in (`log_model`); None keeps none. `restart`:
        the record of an attempt that left no checkpoint, trained again from scratch: the run keeps its
        id and start (one run a trial, which an archive written further on continues)."""
        self.cfg = cfg
        self.path = Path(path)
        self.weights = Path(weights) if weights else None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._cells: list[pd.DataFrame] = []
        if resume is not None:
            self.record = {**copy.deepcopy(resume), "status": "RUNNING", "end_time": None}
            self.run_id = self.record["run_id"]
            cells = self.record["artifacts"].get(CELLS_ARTIFACT)
            if cells:
                self._cells.append(pd.read_csv(io.StringIO(cells)))
        else:
            self.run_id = restart["run_id"] if restart else new_run_id()
            tags = {k: str(v) for k, v in cfg.tracking.tags.items()}
            params = {key: param_value(value) for key, value in cfg.flat().items()}
            parent = cfg.tracking.parent_run_id or None
            start = restart["start_time"] if restart else None
            self.record = run_record(self.run_id, cfg.tracking.run_name, parent, params, tags, start)
        self._save()

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        stamp = now_ms()
        for key, value in metrics.items():
            self.record["metrics"].setdefault(key, []).append([int(step), stamp, float(value)])

    def set_tags(self, tags: dict[str, str]) -> None:
        self.record["tags"].update({k: str(v) for k, v in tags.items() if k != PARENT_TAG})
        self._save()

    def log_text(self, text: str, artifact_file: str) -> None:
        if artifact_file in ARTIFACTS:  # what an exported archive carries, nothing more
            self.record["artifacts"][artifact_file] = text
            self._save()

    def log_evaluation(self, cells: pd.DataFrame, failures: pd.DataFrame | list[dict], epoch: int) -> None:
        """Append one evaluation to `eval/cells.csv`, as the MLflow tracker does."""
        cells = cells.copy()
        cells.insert(0, EPOCH_COLUMN, epoch)
        self._cells.append(cells)
        self.log_text(pd.concat(self._cells, ignore_index=True).to_csv(index=False), CELLS_ARTIFACT)

    def log_errors(self, errors: pd.DataFrame, epoch: int) -> None:
        """The latest evaluation's kept wrong answers as `eval/errors.csv`, as the MLflow tracker keeps
        them (the trained model is not recorded: an archive holds text, not weights)."""
        errors = errors.copy()
        errors.insert(0, EPOCH_COLUMN, epoch)
        self.log_text(errors.to_csv(index=False), ERRORS_ARTIFACT)

    def log_artifacts(self, folder: str | Path, artifact_path: str) -> None:
        """The trained model (`model/`) into the `weights` folder, whole or not at all: copied beside it,
        then renamed into place. Other folders, and the model without `weights`, are not kept."""
        if self.weights is None or artifact_path != MODEL_ARTIFACT:
            return
        staged = self.weights.with_name(self.weights.name + ".tmp")
        shutil.rmtree(staged, ignore_errors=True)
        shutil.copytree(folder, staged)
        shutil.rmtree(self.weights, ignore_errors=True)
        os.replace(staged, self.weights)

    def flush(self) -> bool:
        """Before a checkpoint: the file has every value logged so far."""
        self._save()
        return True

    def unsent(self) -> dict[str, Any]:
        """The record as of the checkpoint being saved: it rides in the checkpoint (`resume`)."""
        return {"record": copy.deepcopy(self.record)}

    def finish(self, status: str = "FINISHED") -> None:
        self.record["status"] = status
        self.record["end_time"] = now_ms()
        self._save()

    def _save(self) -> None:
        write_json(self.path, self.record)
