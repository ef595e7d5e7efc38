"""Checkpoints of a training run: RNG states, atomic save and load in a folder, and the check that a
checkpoint resumes only the config that wrote it. `train` takes any `Checkpoints`: a folder, or Ray Tune's."""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from arith.config import ConfigError, ExperimentConfig

CHECKPOINT_FILE = "trainer_state.pt"


def rng_state(device: torch.device) -> dict[str, Any]:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if device.type == "cuda" else None,
    }


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def weights_digest(model: torch.nn.Module) -> str:
    """One sha256 of `model`'s state dict (names, dtypes, shapes, bytes): equal digests mean equal weights
    to the last bit, which metrics stored to 6 significant digits cannot say."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)};".encode())
        digest.update(tensor.detach().reshape(-1).contiguous().view(torch.uint8).cpu().numpy().tobytes())
    return digest.hexdigest()


def save_checkpoint(directory: str | Path, state: dict[str, Any]) -> Path:
    """Write `state` into `directory` atomically (a crash mid-write leaves the previous checkpoint)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / (CHECKPOINT_FILE + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, directory / CHECKPOINT_FILE)
    return directory


def load_checkpoint(directory: str | Path) -> dict[str, Any] | None:
    path = Path(directory) / CHECKPOINT_FILE
    if not path.exists():
        return None
    return torch.load(path, map_location="cpu", weights_only=False)


def check_same_config(saved: dict[str, Any], cfg: ExperimentConfig) -> None:
    """A checkpoint resumes only the trial that wrote it: data, model and training settings must match."""
    ignore = ("tracking.", "train.checkpoint_dir", "train.device", "train.num_threads", "train.log_every")
    ignore += ("train.compile",)  # compiled or not, a step computes the same
    now = cfg.flat()
    before = ExperimentConfig.from_dict(saved).flat()
    diff = [k for k in now if not k.startswith(ignore) and now[k] != before.get(k)]
    if diff:
        raise ConfigError(
            "the checkpoint in train.checkpoint_dir was written by a different config "
            f"({', '.join(f'{k}: {before.get(k)!r} -> {now[k]!r}' for k in diff)}); "
            "use a fresh train.checkpoint_dir"
        )


class Checkpoints(Protocol):
    """Where a trial's checkpoints live: `load` the latest (None: start fresh), `save` a new one."""

    def load(self) -> dict[str, Any] | None: ...

    def save(self, state: dict[str, Any]) -> Path: ...


class CheckpointFolder:
    """Checkpoints in one folder (`train.checkpoint_dir`), each replacing the previous one atomically."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def load(self) -> dict[str, Any] | None:
        return load_checkpoint(self.directory)

    def save(self, state: dict[str, Any]) -> Path:
        return save_checkpoint(self.directory, state)
