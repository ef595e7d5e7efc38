"""`--resume` and the flags of how Tune runs the trials (`--max-concurrent`, `--max-failures`): Tune
restores a sweep with the values it started with, so those flags neither pick the sweep to resume nor
pass unremarked when they ask for something else."""

from __future__ import annotations

from arith.tracking.commands import flag_values, same_sweep, sweep_identity, unapplied_on_resume
from sweeps import run
from sweeps.grids import GRIDS
from sweeps.scales import get_scale
from sweeps.storage import SweepStorage, sweep_state

STARTED = ["--grid", "demo", "--scale", "smoke", "--seeds", "0,1", "--max-concurrent", "2"]


def test_the_restored_flags_are_read_in_either_form() -> None:
    argv = ["--max-concurrent=3", "--seeds", "2", "--max-failures", "1", "--max-concurrent", "4"]
    assert flag_values(argv, {"--max-concurrent": True, "--max-failures": True}) == {
        "--max-concurrent": "4",  # the last, as argparse reads it
        "--max-failures": "1",
    }


def test_a_resume_names_the_sweep_whatever_it_says_of_concurrency() -> None:
    assert same_sweep(STARTED, ["--grid", "demo", "--scale", "smoke", "--seeds", "0,1"])
    assert same_sweep(STARTED, [*STARTED[:-1], "4"])
    assert not same_sweep(STARTED, ["--grid", "demo", "--scale", "smoke", "--seeds", "0,1,2"])
    assert unapplied_on_resume(STARTED, STARTED) == []
    assert unapplied_on_resume(STARTED, STARTED[:-2]) == []  # not asked again: nothing to say
    (line,) = unapplied_on_resume(STARTED, [*STARTED[:-1], "4", "--max-failures=0"][:-1])
    assert line.startswith("--max-concurrent 4 is not applied") and "(--max-concurrent 2;" in line
    (line,) = unapplied_on_resume(STARTED[:-2], [*STARTED[:-2], "--max-failures", "0"])
    assert "without --max-failures" in line


def test_a_part_resumed_at_another_concurrency_is_found_and_told_it_keeps_its_own(tmp_path, capsys) -> None:
    storage = tmp_path / "ray_results"
    folders = SweepStorage(str(storage))
    name = "demo-smoke-20261204-000000"
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    scale = get_scale("smoke")
    configs = run.build_configs(GRIDS["demo"], scale, run.SweepOptions(seeds=(0, 1)), uri)
    res = run.resources(scale, None, 1.0)
    folders.create(name, sweep_state(GRIDS["demo"], scale, uri, "abc", res, configs, STARTED))
    assert folders.latest("demo", "smoke", [*STARTED[:-1], "1"]) == name
    assert folders.latest("demo", "smoke", STARTED[:-2]) == name

    argv = [*STARTED[:-1], "1", "--resume", "--dry-run", "--storage-path", str(storage)]
    argv += ["--tracking-uri", uri]
    assert sweep_identity(argv) == [*STARTED[:-1], "1"]
    assert run.main(argv) == 0
    err = capsys.readouterr().err
    assert "--max-concurrent 1 is not applied: a resumed sweep runs as it started (--max-concurrent 2" in err
    assert f"resuming sweep {name}, started as: {' '.join(STARTED)}" in err
