"""Trials per GPU: chosen from a packing measurement (throughput and memory), one a GPU without one."""

from __future__ import annotations

import pytest

from sweeps import packing
from sweeps.packing import (
    PackingMeasurement,
    check_packing,
    choose_trials_per_gpu,
    default_gpus_per_trial,
    fits,
)
from sweeps.run import SweepError, resources
from sweeps.scales import SCALES

GIB = 2**30


def _measured(trial_gib: float, device_gib: float, steps_per_s: dict[int, float]) -> PackingMeasurement:
    return PackingMeasurement("test device", int(device_gib * GIB), int(trial_gib * GIB), steps_per_s)


def test_memory_check_keeps_headroom() -> None:
    assert fits(4, 10 * GIB, 80 * GIB)
    assert not fits(4, 19 * GIB, 80 * GIB)  # 76 GiB of 80: over the 90% headroom
    assert fits(1, 70 * GIB, 80 * GIB) and not fits(2, 70 * GIB, 80 * GIB)


def test_the_largest_packing_that_fits_and_pays_is_chosen() -> None:
    assert choose_trials_per_gpu(_measured(5, 80, {1: 30.0, 2: 55.0, 4: 90.0})) == 4
    # 4 would be fastest but does not fit in memory: 2
    assert choose_trials_per_gpu(_measured(25, 80, {1: 30.0, 2: 55.0, 4: 90.0})) == 2
    # packing that gains under 10% is not worth the memory: stay at one
    assert choose_trials_per_gpu(_measured(5, 80, {1: 30.0, 2: 32.0, 4: 32.5})) == 1
    # 2 gains nothing but 4 does (over the best smaller one)
    assert choose_trials_per_gpu(_measured(5, 80, {1: 30.0, 2: 30.5, 4: 40.0})) == 4
    with pytest.raises(ValueError, match="one-trial baseline"):
        choose_trials_per_gpu(_measured(5, 80, {2: 30.0}))


def test_measurement_round_trips_and_sets_the_paper_default(tmp_path, monkeypatch) -> None:
    m = _measured(5, 80, {1: 30.0, 2: 55.0, 4: 90.0})
    assert PackingMeasurement.from_json(m.to_json()) == m
    assert m.speedup(4) == pytest.approx(3.0)
    path = tmp_path / "gpu_packing.json"
    assert default_gpus_per_trial(path) == 1.0  # nothing measured: one trial a GPU
    path.write_text(m.to_json())
    assert default_gpus_per_trial(path) == 0.25
    # the sweep's default resources follow it at the paper scale, and an explicit flag still wins
    monkeypatch.setattr(packing, "MEASUREMENT_FILE", path)
    monkeypatch.setattr("sweeps.run.default_gpus_per_trial", lambda: default_gpus_per_trial(path))
    assert resources(SCALES["paper"], None, 1.0) == {"cpu": 1.0, "gpu": 0.25}
    assert resources(SCALES["paper"], 1.0, 1.0)["gpu"] == 1.0
    assert resources(SCALES["cpu"], None, 1.0)["gpu"] == 0.0


def test_a_packing_the_measured_memory_cannot_hold_is_refused(tmp_path, monkeypatch) -> None:
    path = tmp_path / "gpu_packing.json"
    check_packing(0.25, path)  # nothing measured: nothing to check
    path.write_text(_measured(25, 80, {1: 30.0, 2: 55.0}).to_json())
    check_packing(0.5, path)  # two trials of 25 GiB fit in 80
    check_packing(1.0, path)
    with pytest.raises(SweepError, match=r"packs 4 trials.*25.0 GiB of the 80 GiB.*at least 0.5"):
        check_packing(0.25, path)
    monkeypatch.setattr("sweeps.run.check_packing", lambda gpus: check_packing(gpus, path))
    with pytest.raises(SweepError, match="packs 4 trials"):
        resources(SCALES["paper"], 0.25, 1.0)
