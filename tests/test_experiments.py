"""The experiments package: each experiment declared once (grid, paper tables, claims, pre-search seeds),
found by the registry, read alike by `sweeps` and `analysis`; and docs/DESIGN.md's "Add a grid" followed
end to end: a toy experiment declared in one module of its own, run at smoke scale through
`python sweeps/run.py` and judged by `python -m analysis`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from experiments import registry
from experiments.claim import Experiment
from lab.catalog.tuning import CPU_TUNE_GRIDS
from sweeps.grids import GRIDS
from sweeps.offline import main as offline_main
from sweeps.run import main as sweep_main

ROOT = Path(__file__).resolve().parent.parent

#: a researcher's experiment, outside the repository: a grid with the paper tables its points reproduce, a
#: claim and its check, nothing registered anywhere else
TOY = textwrap.dedent(
    '''
    """Toy: padded, reversed products against the basic format on 5-digit multiplication (2 points)."""

    from experiments.claim import Claim, Experiment
    from experiments.grid import Grid
    from experiments.setups import MUL_SETUP
    from experiments.cells import large_products, measured, small_products
    from experiments.verdicts import Side, compared, competence, difference, untestable


    def padded_beats_basic(frame, digit_map=None):
        cells = measured(frame)
        basic, padded = (cells[cells["data.format"] == f] for f in ("basic", "padding_reverse"))
        if basic.empty or padded.empty:
            return untestable("needs basic and padding_reverse trials")
        sides = {"basic": basic, "padding_reverse": padded}
        why, on = competence(sides, digit_map, small_products, "the small products")
        if why:
            return untestable(why, [on])
        better = Side.of("padding_reverse", large_products(padded))
        worse = Side.of("basic", large_products(basic))
        return compared([difference(better, worse, "the large products")], notes=[on])


    def table_of(cfg):
        return ("tb:basic-5",) if cfg.data.format == "basic" else ("tb:padding-5",)


    TOY = Experiment(
        Grid(
            name="toy_mul",
            description="Toy: padding + reversed product vs basic, 5-digit factors.",
            base={**MUL_SETUP, "data.max_digits": 5},
            axes={"data.format": ["basic", "padding_reverse"]},
            paper_tables=("tb:basic-5", "tb:padding-5"),
            table_of=table_of,
        ),
        claims=(
            Claim("toy: padding + reversed product beats basic", "tb:basic-5 vs tb:padding-5",
                  padded_beats_basic),
        ),
    )

    EXPERIMENTS = (TOY,)
    '''
)


def test_every_experiment_is_declared_once_and_sweeps_run_exactly_them() -> None:
    assert registry.EXPERIMENTS and all(isinstance(e, Experiment) for e in registry.EXPERIMENTS.values())
    assert all(name == e.grid.name for name, e in registry.EXPERIMENTS.items())
    # the lab's tuning grids are experiments of its own (without claims), registered like any plugin's
    assert set(GRIDS) == set(registry.EXPERIMENTS) >= {g.name for g in CPU_TUNE_GRIDS}
    assert all(GRIDS[name] is e.grid for name, e in registry.EXPERIMENTS.items())
    # a variant holds its parent's claims, the same objects (a replication some of them), and says whose
    # variant it is
    for experiment in registry.EXPERIMENTS.values():
        if experiment.grid.parent:
            parent = registry.EXPERIMENTS[experiment.grid.parent].claims
            assert experiment.claims is parent or {id(c) for c in experiment.claims} < {id(c) for c in parent}
    # every claim of the paper comes with a paper label and a check; an experiment with paper tables
    # declares which label each point reproduces
    for experiment in registry.EXPERIMENTS.values():
        assert all(c.source and callable(c.check) for c in experiment.claims)


def test_a_module_of_experiments_outside_the_repository_is_found_by_its_name(tmp_path, monkeypatch) -> None:
    (tmp_path / "toy_experiments.py").write_text(TOY)
    (tmp_path / "not_experiments.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "toy_mul" not in registry.EXPERIMENTS  # the catalogue before the plugin is named
    monkeypatch.setenv(registry.PLUGINS_ENV, "toy_experiments")
    found = registry._collect()
    assert set(found) == set(registry.EXPERIMENTS) | {"toy_mul"}
    assert registry.EXPERIMENTS["mul_format"].grid.paper_tables[:2] == found["toy_mul"].grid.paper_tables
    monkeypatch.setenv(registry.PLUGINS_ENV, "toy_experiments,not_experiments")
    with pytest.raises(registry.PluginError, match="not_experiments declares no EXPERIMENTS"):
        registry._collect()
    (tmp_path / "twice.py").write_text("from toy_experiments import EXPERIMENTS\n")
    monkeypatch.setenv(registry.PLUGINS_ENV, "toy_experiments,twice")
    with pytest.raises(registry.PluginError, match="'toy_mul' is declared twice"):
        registry._collect()


#: broken plugins of experiments, each as a module's text (None: no such module) and what the one line says
BROKEN = {
    "missing_experiments": (None, "no module named 'missing_experiments'"),
    "raising_experiments": (
        "raise ZeroDivisionError('boom')\n",
        "failed to import (ZeroDivisionError: boom)",
    ),
    "empty_experiments": ("X = 1\n", "declares no EXPERIMENTS"),
    "named_experiments": ('EXPERIMENTS = ("mul_format",)\n', "EXPERIMENTS holds 'mul_format', not an"),
    "twice_experiments": (
        "from experiments.catalog.multiplication import EXPERIMENTS\n",
        "'mul_format' is declared twice",
    ),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_plugin_is_one_line_from_every_command(tmp_path, monkeypatch, capsys, name) -> None:
    """Each of these was a traceback from every command (the catalogue was built at import,
    before a command's error handling); now each command says what is wrong in one line, exit 2."""
    text, says = BROKEN[name]
    if text is not None:
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(registry.PLUGINS_ENV, name)
    for catalogue in (registry.EXPERIMENTS, GRIDS):  # built again, as in a fresh process
        monkeypatch.setattr(catalogue, "_items", None)
    out = tmp_path / "out" / "x.jsonl"
    for command, argv in (
        (sweep_main, ["--grid", "demo", "--scale", "smoke", "--dry-run"]),
        (sweep_main, ["--list"]),
        (offline_main, ["--grid", "demo", "--scale", "smoke", "--out", str(out)]),
    ):
        assert command(argv) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], lines
    assert not out.parent.exists()


def test_help_works_with_a_broken_plugin(tmp_path) -> None:
    (tmp_path / "raising_experiments.py").write_text(BROKEN["raising_experiments"][0])
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    env[registry.PLUGINS_ENV] = "raising_experiments"
    command = [sys.executable, "sweeps/run.py", "--help"]
    helped = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert helped.returncode == 0 and "--grid" in helped.stdout, helped.stderr[-2000:]
    text = " ".join(helped.stdout.split())  # argparse wraps the help
    assert "(none listed: POSDESC_EXPERIMENTS: module 'raising_experiments' failed" in text


@pytest.mark.slow
def test_a_toy_experiment_in_one_module_runs_through_the_sweep_and_the_analysis(tmp_path) -> None:
    """DESIGN.md's "Add a grid": one module (here outside the repository, named by $POSDESC_EXPERIMENTS),
    the paper's numbers it reproduces (tb:basic-5, tb:padding-5, already in experiments/paper_tables.csv)
    and this test. The sweep runs its grid at smoke scale on a local Ray into a SQLite MLflow store; the
    analysis puts its trials beside the paper's table and judges its claim."""
    (tmp_path / "toy_experiments.py").write_text(TOY)
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    env[registry.PLUGINS_ENV] = "toy_experiments"
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    ray_temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Unix socket paths stay short
    try:
        listed = subprocess.run(
            [sys.executable, "sweeps/run.py", "--list"], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert "toy_mul" in listed.stdout, listed.stderr[-2000:]
        sweep = subprocess.run(
            [
                sys.executable, "sweeps/run.py", "--grid", "toy_mul", "--scale", "smoke", "--seeds", "1",
                "--cpus-per-trial", "1", "--max-concurrent", "2", "--ray-temp-dir", ray_temp,
                "--tracking-uri", uri, "--storage-path", str(tmp_path / "ray_results"),
            ],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        shutil.rmtree(ray_temp, ignore_errors=True)
    assert sweep.returncode == 0, sweep.stdout[-3000:] + sweep.stderr[-3000:]
    report = subprocess.run(
        [sys.executable, "-m", "analysis", "--grid", "toy_mul", "--tracking-uri", uri, "--no-log"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr[-3000:]
    text = report.stdout
    assert "# Sweep analysis: toy_mul" in text
    # its trials beside the paper's numbers of the tables its points reproduce
    assert "tb:basic-5" in text and "tb:padding-5" in text and "paper" in text
    # its claim judged by the rules: one seed a side is not enough for a verdict
    claim = next(line for line in text.splitlines() if "toy: padding + reversed product beats basic" in line)
    assert "**not testable**" in claim
