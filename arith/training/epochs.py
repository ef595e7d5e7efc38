"""An epoch as a share of a pass over the training lines (`train.epochs_per_pass`). An epoch is where the
trainer evaluates, checkpoints and reports; in the paper it is one pass. ASHA acts only when a trial reports,
so a recipe search cuts each pass into k slices: the same steps in the same order, read k times as often.
Plain integer arithmetic, no torch: `sweeps.scales` fits a step budget's epochs with it.
"""

from __future__ import annotations


def pass_of(epoch: int, epochs_per_pass: int) -> tuple[int, int]:
    """The pass (1-based) an epoch (1-based) belongs to, and which of its slices it is (0-based)."""
    check_epochs_per_pass(epochs_per_pass)
    return (epoch - 1) // epochs_per_pass + 1, (epoch - 1) % epochs_per_pass


def slice_bounds(batches_per_pass: int, epochs_per_pass: int, part: int) -> tuple[int, int]:
    """The batches [start, stop) of a pass that its slice `part` (0-based) holds, the longer slices last."""
    return part * batches_per_pass // epochs_per_pass, (part + 1) * batches_per_pass // epochs_per_pass


def epoch_steps(epochs: int, batches_per_pass: int, epochs_per_pass: int = 1) -> int:
    """Optimiser steps in the first `epochs` epochs (before any `train.max_steps` cap)."""
    check_epochs_per_pass(epochs_per_pass)
    passes, part = divmod(epochs, epochs_per_pass)
    return passes * batches_per_pass + slice_bounds(batches_per_pass, epochs_per_pass, part)[0]


def capped_steps(epochs: int, batches_per_pass: int, epochs_per_pass: int = 1, max_steps: int = 0) -> int:
    """`epoch_steps`, capped by a step budget (`max_steps`, 0: none)."""
    steps = epoch_steps(epochs, batches_per_pass, epochs_per_pass)
    return min(steps, max_steps) if max_steps else steps


def epochs_for_steps(steps: int, batches_per_pass: int, epochs_per_pass: int = 1) -> int:
    """The fewest epochs that hold `steps` optimiser steps (a run at its budget ends at its final epoch)."""
    check_epochs_per_pass(epochs_per_pass)
    passes, rest = divmod(steps, batches_per_pass)
    # the fewest slices r of a pass with r * batches // k >= rest, i.e. r >= rest * k / batches
    return passes * epochs_per_pass + -(-rest * epochs_per_pass // batches_per_pass)


def check_epochs_per_pass(epochs_per_pass: int) -> None:
    if epochs_per_pass < 1:
        raise ValueError(f"train.epochs_per_pass must be >= 1 (got {epochs_per_pass})")
