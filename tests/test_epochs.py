"""An epoch as a share of a pass (`train.epochs_per_pass`): the step counts the loader, the schedule and a
step budget's epochs agree on."""

from __future__ import annotations

import itertools

import pytest

from arith.training.batching import batches_per_epoch
from arith.training.epochs import epoch_steps, epochs_for_steps, pass_of, slice_bounds
from lab.training_records import steps_after


def test_epochs_number_the_slices_of_each_pass_in_order() -> None:
    assert [pass_of(e, 3) for e in range(1, 8)] == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2), (3, 0)]
    assert [pass_of(e, 1) for e in (1, 2, 5)] == [(1, 0), (2, 0), (5, 0)]
    with pytest.raises(ValueError, match="epochs_per_pass must be >= 1"):
        pass_of(1, 0)


@pytest.mark.parametrize("batches", [1, 7, 10, 2344, 586])
@pytest.mark.parametrize("parts", [1, 3, 10])
def test_slices_cover_a_pass_and_step_counts_add_up(batches, parts) -> None:
    if parts > batches:
        return
    bounds = [slice_bounds(batches, parts, k) for k in range(parts)]
    assert bounds[0][0] == 0 and bounds[-1][1] == batches
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    assert all(stop > start for start, stop in bounds)
    sizes = [stop - start for start, stop in bounds]
    for epochs in range(0, 3 * parts + 1):
        assert epoch_steps(epochs, batches, parts) == sum((sizes * 3)[:epochs])


@pytest.mark.parametrize("batches, parts", [(2344, 1), (2344, 10), (586, 10), (7, 3), (10, 10)])
def test_a_step_budget_ends_in_its_last_epoch(batches, parts) -> None:
    """The fewest epochs that hold the budget: its last step falls in the last of them, so a run at its
    budget ends at its final (evaluated) epoch; at one epoch a pass this is ceil(steps / batches)."""
    for steps in [1, batches - 1, batches, batches + 1, 6000, 20_000]:
        if steps < 1:
            continue
        epochs = epochs_for_steps(steps, batches, parts)
        assert epoch_steps(epochs - 1, batches, parts) < steps <= epoch_steps(epochs, batches, parts)
        if parts == 1:
            assert epochs == -(-steps // batches)


@pytest.mark.parametrize("lines, batch_size", [(300_000, 128), (300_000, 512), (120_000, 64), (1_001, 7)])
def test_the_steps_after_an_epoch_are_those_of_the_loaders_batches(lines, batch_size) -> None:
    """What a search's evaluation is put at (`lab.search.costs`): the optimiser steps by the end of an
    epoch, counted over the loader's own batches a pass (each bucketing window may end short), and
    never past the step budget."""
    per_pass = batches_per_epoch(lines, batch_size)
    for parts in (1, 10):
        if parts > per_pass:
            continue
        for epochs in (1, parts, parts + 1, 3 * parts):
            assert steps_after(epochs, lines, batch_size, parts) == epoch_steps(epochs, per_pass, parts)
        assert steps_after(3 * parts, lines, batch_size, parts, max_steps=per_pass) == per_pass
    # the mul_simple_case search's schedule: 300,000 lines, batch 128, ten epochs a pass, 40,000 steps
    assert [steps_after(e, 300_000, 128, 10, 40_000) for e in (127, 128, 171)] == [29_768, 30_003, 40_000]
