"""One trial of an offline sweep in its own process (`python -m sweeps.offline trial CONFIG RECORD
[WEIGHTS]`, which the executor starts): trained from its last checkpoint, if any, and recorded to its
record file with `arith.tracking.recorder`, ending FAILED with its error's last line when it raises."""

from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Any

from arith.config import ExperimentConfig
from arith.tracking.recorder import RunRecorder, now_ms
from arith.training.checkpoints import CheckpointFolder, load_checkpoint
from arith.training.train import train


def fail_record(record: dict[str, Any], message: str) -> None:
    """Mark a run record FAILED with why (the `failure_message` tag the trainer sets on a NaN loss)."""
    record["status"], record["end_time"] = "FAILED", now_ms()
    record["tags"].setdefault("failure", "error")
    record["tags"]["failure_message"] = message


class ResumeFolder(CheckpointFolder):
    """A trial's checkpoint folder, read once: its recorder and its trainer both start from it."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.saved = load_checkpoint(directory)

    def load(self) -> dict[str, Any] | None:
        saved, self.saved = self.saved, None
        return saved


def checkpoint_dir(record_path: Path) -> Path:
    """A trial's checkpoint folder, beside its record."""
    return record_path.with_suffix("").with_suffix(".ckpt")


def record_trial(config_path: Path, record_path: Path, weights: Path | None = None) -> int:
    """One trial in this process, recorded to `record_path` (what `run_parts` starts per trial). It
    continues from its last checkpoint (beside the record) with the record as that checkpoint saved it,
    so a resumed trial logs no step twice and misses none. An error ends it FAILED with the error's last
    line, and exit code 1. `weights`: the folder to keep its trained model in."""
    cfg = ExperimentConfig.from_dict(json.loads(config_path.read_text()))
    checkpoints = ResumeFolder(checkpoint_dir(record_path))
    resume = checkpoints.saved["unsent"].get("record") if checkpoints.saved else None
    # an attempt stopped before its first checkpoint starts over, as the same run
    restart = json.loads(record_path.read_text()) if resume is None and record_path.exists() else None
    recorder = RunRecorder(cfg, record_path, resume, weights, restart)
    try:
        train(cfg, tracker=recorder, checkpoints=checkpoints)
    except Exception as err:
        traceback.print_exc()
        lines = str(err).strip().splitlines()
        fail_record(recorder.record, f"{type(err).__name__}: {lines[-1] if lines else ''}".rstrip(": "))
        recorder.finish("FAILED")
        return 1
    return 0
