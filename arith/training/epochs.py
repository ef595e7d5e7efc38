"""An epoch as a share of a pass over the training lines (`train.epochs_per_pass`).

An epoch is where the trainer evaluates, checkpoints and reports to a scheduler. In the paper it is one
pass over the training set (`epochs_per_pass` = 1). A recipe search sets more: Ray Tune's ASHA acts only
when a trial reports, so with an epoch of 300,000 lines (8 to 38 core-minutes on one CPU core) its rungs
at 10 and 30 core-minutes would be read up to a pass late. With `epochs_per_pass` = k, pass p's batches,
in the order the whole pass would have them, are cut into k consecutive slices, epochs k(p-1)+1 .. kp:
the same steps in the same order, read k times as often. Each epoch is deterministic from (seed, epoch)
alone, so a checkpoint at its end resumes the run exactly. A position scheme's random draws (random_embed's
tags, random offsets) are reseeded each epoch (`ArithModel.new_epoch`): with k > 1 they are other draws of
the same distribution, so a run compares with another of its own k.

Plain integer arithmetic, no torch: the sweeps fit a step budget's epochs with it (`sweeps.scales`), the
loader cuts its passes with it (`arith.training.batching`).
"""

from __future__ import annotations


def pass_of(epoch: int, epochs_per_pass: int) -> tuple[int, int]:
    """The pass (1-based) an epoch (1-based) belongs to, and which of its slices it is (0-based)."""
    check_epochs_per_pass(epochs_per_pass)
    return (epoch - 1) // epochs_per_pass + 1, (epoch - 1) % epochs_per_pass


def slice_bounds(batches_per_pass: int, epochs_per_pass: int, part: int) -> tuple[int, int]:
    """The batches [start, stop) of a pass that its slice `part` (0-based) holds: as even as integers
    allow, the longer slices last."""
    return (
        part * batches_per_pass // epochs_per_pass,
        (part + 1) * batches_per_pass // epochs_per_pass,
    )


def epoch_steps(epochs: int, batches_per_pass: int, epochs_per_pass: int = 1) -> int:
    """Optimiser steps in the first `epochs` epochs (before any `train.max_steps` cap)."""
    check_epochs_per_pass(epochs_per_pass)
    passes, part = divmod(epochs, epochs_per_pass)
    return passes * batches_per_pass + slice_bounds(batches_per_pass, epochs_per_pass, part)[0]


def steps_after(
    epochs: int, lines: int, batch_size: int, epochs_per_pass: int = 1, max_steps: int = 0
) -> int:
    """Optimiser steps a run over `lines` training lines has taken at the end of epoch `epochs`, where it
    evaluates and reports, capped by `max_steps` (0: none): a step count compares across machines where
    core-minutes do not."""
    return capped_steps(epochs, -(-lines // batch_size), epochs_per_pass, max_steps)


def capped_steps(epochs: int, batches_per_pass: int, epochs_per_pass: int = 1, max_steps: int = 0) -> int:
    """`epoch_steps`, capped by a step budget (`max_steps`, 0: none)."""
    steps = epoch_steps(epochs, batches_per_pass, epochs_per_pass)
    return min(steps, max_steps) if max_steps else steps


def epochs_for_steps(steps: int, batches_per_pass: int, epochs_per_pass: int = 1) -> int:
    """The fewest epochs that hold `steps` optimiser steps: a step budget's epochs, so that its last
    step falls in its last epoch (a run at its budget ends at its final epoch, evaluated)."""
    check_epochs_per_pass(epochs_per_pass)
    passes, rest = divmod(steps, batches_per_pass)
    # the fewest slices r of a pass with r * batches // k >= rest, i.e. r >= rest * k / batches
    return passes * epochs_per_pass + -(-rest * epochs_per_pass // batches_per_pass)


def check_epochs_per_pass(epochs_per_pass: int) -> None:
    if epochs_per_pass < 1:
        raise ValueError(f"train.epochs_per_pass must be >= 1 (got {epochs_per_pass})")
