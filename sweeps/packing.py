"""How many paper-scale trials share one GPU: chosen from a measurement, never guessed.

One GPT2-small trial leaves most of a GPU idle, so several on one GPU may finish more steps an hour:
`scripts/gpu_bench.sh` measures whether they do and fit, and its `MEASUREMENT_FILE` sets the paper scale's
default `--gpus-per-trial` (without one, one trial per GPU).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from sweeps.errors import SweepError

#: where a measurement from scripts/gpu_bench.sh is kept for the sweeps to read (absent until measured)
MEASUREMENT_FILE = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "gpu_packing.json"
#: share of the device's memory the packed trials may take together (the rest: fragmentation, spikes)
MEMORY_HEADROOM = 0.9
#: a larger packing is chosen only when it adds at least this much aggregate throughput
MIN_GAIN = 1.1


@dataclass(frozen=True)
class PackingMeasurement:
    """Trials side by side on one device: their aggregate steps/s and what one trial takes of memory."""

    device: str
    device_memory_bytes: int
    #: one trial's device memory, measured alone (CUDA context and the allocator's reserve included)
    trial_memory_bytes: int
    #: trials per GPU -> optimiser steps per second of all of them together
    steps_per_s: dict[int, float]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> PackingMeasurement:
        raw = json.loads(text)
        raw["steps_per_s"] = {int(k): float(v) for k, v in raw["steps_per_s"].items()}
        return cls(**raw)

    def speedup(self, trials: int) -> float:
        """Aggregate throughput of `trials` packed trials over one trial alone."""
        return self.steps_per_s[trials] / self.steps_per_s[1]


def fits(trials: int, trial_memory_bytes: int, device_memory_bytes: int) -> bool:
    """Whether `trials` trials of this size fit on the device together, with headroom."""
    return trials * trial_memory_bytes <= MEMORY_HEADROOM * device_memory_bytes


def choose_trials_per_gpu(m: PackingMeasurement) -> int:
    """The packing to use: among the measured ones that fit in memory, the largest whose aggregate
    throughput beats every smaller fitting one by at least MIN_GAIN (1 when nothing else qualifies)."""
    if 1 not in m.steps_per_s:
        raise ValueError("a packing measurement needs the one-trial baseline (steps_per_s[1])")
    best = 1
    for trials in sorted(k for k in m.steps_per_s if k > 1):
        if not fits(trials, m.trial_memory_bytes, m.device_memory_bytes):
            break
        if m.steps_per_s[trials] >= MIN_GAIN * m.steps_per_s[best]:
            best = trials
    return best


def load_measurement(path: str | Path = MEASUREMENT_FILE) -> PackingMeasurement | None:
    path = Path(path)
    return PackingMeasurement.from_json(path.read_text()) if path.exists() else None


def default_gpus_per_trial(path: str | Path = MEASUREMENT_FILE) -> float:
    """The paper scale's default `--gpus-per-trial`: 1 / the kept measurement's packing, else 1."""
    m = load_measurement(path)
    return 1.0 / choose_trials_per_gpu(m) if m is not None else 1.0


def check_packing(gpus_per_trial: float, path: str | Path = MEASUREMENT_FILE) -> None:
    """Refuse a fractional `--gpus-per-trial` whose trials the kept measurement says do not fit in one
    GPU's memory together (nothing to check without a measurement, or at a whole GPU per trial)."""
    m = load_measurement(path)
    if m is None or not 0 < gpus_per_trial < 1:
        return
    trials = int(1 / gpus_per_trial + 1e-9)
    most = max(1, int(MEMORY_HEADROOM * m.device_memory_bytes // m.trial_memory_bytes))
    if not fits(trials, m.trial_memory_bytes, m.device_memory_bytes):
        raise SweepError(
            f"--gpus-per-trial {gpus_per_trial:g} packs {trials} trials on a GPU, but one trial took "
            f"{m.trial_memory_bytes / 2**30:.1f} GiB of the {m.device_memory_bytes / 2**30:.0f} GiB "
            f"{m.device} measured in {path}; use at least {1 / most:g}"
        )
