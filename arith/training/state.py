"""A trial's state between steps: what its checkpoints keep and a resumed trial restores."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TrainState:
    """Where training stands: with the weights, optimiser, scheduler and RNG states it is the checkpoint."""

    epoch: int = 0
    step: int = 0
    tokens: int = 0
    train_seconds: float = 0.0
    #: CPU time of the trial's process (setup, steps, evaluations; every thread), summed across restores:
    #: core-seconds that contention for the machine does not inflate, the clock a recipe search reads
    cpu_seconds: float = 0.0
    seconds_to_target: float | None = None
    #: why training ended: "epochs" (not yet, or all done), "max_steps" or "target_accuracy"
    stopped: str = "epochs"
    run_id: str = ""
    #: each process that trained it: its machine, steps and CPU time (`arith.training.sessions`)
    sessions: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, saved: dict[str, Any]) -> TrainState:
        """The state a checkpoint saved (one from before a counter existed starts that counter at 0)."""
        return cls(**{k: saved[k] for k in cls.__dataclass_fields__ if k in saved})
