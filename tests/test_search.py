"""The recipe search (`python sweeps/run.py --search NAME`): its declaration (`experiments.search`), the
cost-to-gate table built from the store (`analysis.search`), and a real search at smoke scale under Ray
Tune's ASHA on a local Ray into a SQLite MLflow store."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from analysis.load import find_parent
from analysis.plan import PLAN
from analysis.search import (
    NOT_NEEDED,
    cost_to_gate,
    recipe_costs,
    search_cost_table,
    search_evaluations,
)
from analysis.search import main as search_main
from analysis.search_report import search_sections
from arith.config import ConfigError, ExperimentConfig
from arith.tracking import store
from arith.tracking.archive import export_sweep, import_sweep
from arith.tracking.schema import CPU_SECONDS, POINT_TAG
from arith.training.epochs import epoch_steps
from arith.training.hardware import machine
from arith.training.metrics import MIN_UNSEEN, weakest_unseen
from arith.training.optim import run_steps
from experiments import registry
from experiments.search import (
    CORE_MINUTES,
    GATE_METRIC,
    PRESEARCH_FIRST_SEED,
    STOPPED_TAG,
    Asha,
    ChosenRecipe,
    Search,
)
from sweeps.errors import SweepError
from sweeps.grids import get_grid, points
from sweeps.run import main
from sweeps.search import PASSED, SearchRun, gate_cells, stopped_why
from sweeps.storage import digit_map

ROOT = Path(__file__).resolve().parent.parent

#: a search of one's own, outside the repository: digit reversal (learned in seconds at smoke scale) at
#: three peak learning rates, the good one first. The good one ends at the gate after 0.04-0.15
#: core-minutes (a Zen 4 EPYC idle; a Zen 3 one, AVX2 only, beside a sweep); the slow two read 0.00 alike at
#: every rung (so the rungs cannot rank them) and would need ~1.2 (Zen 4) for their 100 passes, so the
#: scheduler's budget (0.4) stops them: some 3x of margin either side, as CPUs differ.
#: Two epochs a pass, as the real search cuts its passes (there ten): the scheduler hears every half pass
TOY_SEARCH = textwrap.dedent(
    """
    from experiments.claim import Experiment
    from experiments.grid import Grid
    from experiments.search import Asha, Search


    def regular(frame):
        return frame[frame["context"] == "regular"]


    TOY = Experiment(
        Grid(
            name="toy_reverse",
            description="Toy: digit reversal of 2-3 digits.",
            base={
                "data.task": "reverse", "data.format": "basic", "data.min_digits": 2, "data.max_digits": 3,
                "data.test_digits": [2, 3], "data.train_samples": 200_000, "model.init": "random",
            },
            axes={"data.format": ["basic"]},
        )
    )
    EXPERIMENTS = (TOY,)
    SEARCHES = (
        Search(
            name="toy_reverse_recipe",
            description="Toy: the learning rate at which reversal passes its gate.",
            experiment="toy_reverse",
            compared={"data.format": ["basic"]},
            axes={"train.lr": [3e-3, 1e-5, 2e-5]},
            base={
                "train.epochs": 200, "train.epochs_per_pass": 2, "train.loss_on": "answer",
                "data.test_per_cell": 20,
            },
            scale="smoke",
            scheduler=Asha(grace_core_min=0.01, max_core_min=0.4, reduction_factor=2),
            fallback=regular,
        ),
    )
    """
)


#: the toy search again, at a learning rate whose loss becomes NaN within its first steps, beside a sane one
NAN_SEARCH = TOY_SEARCH.replace('"train.lr": [3e-3, 1e-5, 2e-5]', '"train.lr": [1e30, 3e-3]').replace(
    '"train.epochs": 200', '"train.epochs": 6'
)


def evaluations(rows: list[tuple[str, int, int, float, float, str]]) -> pd.DataFrame:
    """A search's evaluations: (point, seed, epoch, core-minutes, gate, stopped tag); 100 steps an epoch."""
    frame = pd.DataFrame(rows, columns=["point", "seed", "epoch", "core_minutes", "gate", "stopped"])
    return frame.assign(status="FINISHED", steps=frame["epoch"] * 100)


def test_the_cost_to_gate_is_the_first_evaluation_at_the_gate_on_every_seed() -> None:
    table = cost_to_gate(
        evaluations(
            [
                ("fast", 100, 1, 5.0, 0.50, ""),
                ("fast", 100, 2, 10.0, 0.92, ""),
                ("fast", 100, 3, 15.0, 0.80, ""),  # a later dip does not undo the gate
                ("fast", 101, 1, 6.0, 0.95, ""),
                ("slow", 100, 1, 5.0, 0.10, ""),
                ("slow", 100, 2, 30.0, 0.90, ""),  # 0.9 is the gate
                ("never", 100, 1, 5.0, 0.20, "rung"),
                ("never", 101, 1, 5.0, 0.60, ""),
                ("never", 101, 2, 9.0, 0.95, ""),
            ]
        )
    )
    assert list(table["configuration"]) == ["fast", "slow", "never"]  # cheapest first
    fast, slow, never = (table.iloc[i] for i in range(3))
    assert fast["core-min to gate"] == "10"  # the most over its seeds: seed 100 took 10
    assert fast["steps to gate"] == "200"  # seed 100's second evaluation, the later of the two seeds
    assert fast["seeds"] == "100, 101" and fast["core-min spent"] == 21.0
    assert slow["core-min to gate"] == "30" and slow["steps to gate"] == "200"
    assert never["steps to gate"] == "not reached"
    # seconds of CPU time are not rounded away
    quick = cost_to_gate(evaluations([("quick", 100, 1, 0.0437, 0.95, "")])).iloc[0]
    assert quick["core-min to gate"] == "0.044" and quick["core-min spent"] == 0.044
    # one seed never reached it: not reached, with the best its weakest seed read
    assert never["core-min to gate"] == "not reached (best 0.20)"
    assert never["cut at a rung"] == "1 of 2" and never["best weakest cell"] == 0.2
    # a trial stopped at the search's core-minute budget spent the whole of it: not cut
    spent = cost_to_gate(evaluations([("spent", 100, 1, 90.0, 0.79, "budget")])).iloc[0]
    assert spent["cut at a rung"] == "0 of 1" and spent["core-min to gate"] == "not reached (best 0.79)"


def test_the_search_figure_draws_each_format_apart_and_marks_how_each_trial_ended() -> None:
    """One panel per compared format; in each, a line per trial of every configuration (its colour the
    same in both panels) and its end: a star at the gate (tagged so, or its last epoch read it), a cross
    where ASHA cut it at a rung, a square where it spent its whole budget short of the gate (every epoch,
    or the search's core-minutes), a ring while it runs or waits to resume; ASHA's rungs and the gate
    drawn across."""
    from analysis.curves import search_figure

    rows = evaluations(
        [
            ("model=a,format=basic", 100, 1, 10.0, 0.5, ""),
            ("model=a,format=basic", 100, 2, 20.0, 0.95, "passed"),
            ("model=b,format=basic", 100, 1, 12.0, 0.0, "rung"),
            ("model=c,format=basic", 100, 1, 9.0, 0.2, ""),  # stopped with its session: it resumes
            ("model=a,format=reverse", 100, 1, 11.0, 0.1, ""),
            ("model=a,format=reverse", 100, 2, 22.0, 0.3, ""),
            ("model=b,format=reverse", 100, 1, 30.0, 0.4, ""),  # its whole budget, short of the gate
            ("model=d,format=reverse", 100, 1, 90.0, 0.7, "budget"),  # the search's whole core-minutes
            ("model=c,format=reverse", 100, 1, 25.0, 0.95, ""),  # passed at its last epoch: no tag
        ]
    )
    rows.loc[rows["point"] == "model=a,format=reverse", "status"] = "RUNNING"
    rows.loc[rows["point"] == "model=c,format=basic", "status"] = "KILLED"
    rows.loc[rows["point"] == "model=d,format=reverse", "status"] = "KILLED"  # as ASHA's stopped trials
    split = lambda point: tuple(point.split(","))  # noqa: E731 (recipe, format)
    assert search_figure(rows.iloc[:0], split, [10, 30, 90]) is None
    figure = search_figure(rows, split, [10, 30, 90])
    basic, reverse = figure.axes
    assert (basic.get_title(), reverse.get_title()) == ("format=basic", "format=reverse")
    colour = {line.get_label(): line.get_color() for line in reverse.get_legend().get_lines()}
    ends = {(line.get_marker(), line.get_color()) for line in basic.lines if line.get_linestyle() == "None"}
    assert ends == {("*", colour["model=a"]), ("x", colour["model=b"]), ("o", colour["model=c"])}
    ends = {(line.get_marker(), line.get_color()) for line in reverse.lines if line.get_linestyle() == "None"}
    assert ends == {
        ("o", colour["model=a"]), ("s", colour["model=b"]), ("*", colour["model=c"]), ("s", colour["model=d"])
    }  # fmt: skip
    ring = [line for line in reverse.lines if line.get_marker() == "o"]
    assert len(ring) == 1 and ring[0].get_markerfacecolor() == "none"
    said = [text.get_text() for text in reverse.get_legend().get_texts()]
    assert said[-4:] == [
        "passed the gate",
        "cut by ASHA at a rung",
        "whole budget, short of the gate",
        "running, or paused to resume",
    ]
    verticals = [line for line in basic.lines if list(line.get_xdata()) in ([10, 10], [30, 30], [90, 90])]
    assert len(verticals) == 3
    assert any(list(line.get_ydata()) == [0.9, 0.9] for line in basic.lines)  # the gate


def test_the_cost_table_of_no_evaluations_is_empty_with_its_columns() -> None:
    assert cost_to_gate(evaluations([])).empty
    assert "core-min to gate" in cost_to_gate(evaluations([])).columns


def test_the_weakest_cell_reads_unseen_problems_where_a_cell_has_enough_of_them() -> None:
    cells = pd.DataFrame(
        {
            "context": ["main", "main", "main", "main"],
            "row_digits": [1, 2, 3, 3],
            "col_digits": [1, 2, 3, 1],
            "n": [100, 100, 100, 100],
            "accuracy": [1.0, 0.95, 0.2, 0.92],
            # 1x1 has no unseen problem (every one trained on): its accuracy stands
            "accuracy_unseen": [math.nan, 0.5, 0.1, 0.0],
            # ... nor does 3x1 with one of its 100 unseen (98 of 2x2's seen in mul_format_recipe's first
            # run read 0.0 / 0.5 / 1.0 from one evaluation to the next): read on all of its problems
            "n_seen": [100, 50, 1, 99],
        }
    )
    assert weakest_unseen(cells, ["main:1x1", "main:2x2"]) == 0.5  # memorised 2x2 does not pass
    assert weakest_unseen(cells, ["main:1x1"]) == 1.0
    assert weakest_unseen(cells, ["main:1x1", "main:3x1"]) == 0.92
    assert weakest_unseen(cells.assign(n_seen=[100, 100 - MIN_UNSEEN + 1, 1, 99]), ["main:2x2"]) == 0.95
    assert weakest_unseen(cells.assign(n_seen=[100, 100 - MIN_UNSEEN, 1, 99]), ["main:2x2"]) == 0.5
    assert weakest_unseen(cells.drop(columns="n_seen"), ["main:3x1"]) == 0.0  # no counts: unseen as read
    assert math.isnan(weakest_unseen(cells, ["main:4x4"]))


def test_the_mul_search_declares_both_formats_at_every_recipe_on_presearch_seeds() -> None:
    run = SearchRun.of("mul_format_recipe", None, 1)
    points = run.grid.points()
    formats = {p.overrides["data.format"] for p in points}
    assert formats == {"basic", "padding_reverse"}
    # every recipe (model x batch-and-steps x lr) once per compared format, the two side by side
    recipes = [p.name.rsplit(",", 2)[0] for p in points]
    assert len(points) == 2 * len(set(recipes)) == 24
    assert recipes[0::2] == recipes[1::2] and points[0].overrides["data.format"] == "basic"
    assert points[1].overrides["data.format"] == "padding_reverse"
    assert run.seeds == (100,) and run.grid.presearch_seeds == (100,)
    assert run.scale.name == "cpu_recipe" and run.scale.recipe("mul").chosen is False
    # what a recipe sets is set after the scale: the peak lr as declared, not x 50
    assert {"train.lr", "train.batch_size", "train.max_steps", "model.preset"} <= set(run.grid.over_scale)
    assert Asha(10, 90, 3).rungs() == [10, 30, 90]


def test_the_mul_search_reads_the_gate_every_tenth_of_a_pass_and_ends_at_its_budget() -> None:
    """ASHA acts only at reports: a pass of 300,000 lines is 8-38 core-minutes on one core, so each
    configuration is evaluated and reports every tenth of one (30,000 lines), and its step budget's
    last step falls in its last epoch (the one evaluated as final)."""
    run = SearchRun.of("mul_format_recipe", None, (100,))
    configs = run.prepare({str(i): c.to_dict() for i, c in enumerate(points(run.grid, run.scale, (100,)))})
    assert len(configs) == 24
    for config in configs.values():
        t = ExperimentConfig.from_dict(config).train
        batches = math.ceil(300_000 / t.batch_size)
        assert t.epochs_per_pass == 10 and t.eval_epochs == list(range(1, t.epochs + 1))
        assert epoch_steps(t.epochs - 1, batches, 10) < t.max_steps <= epoch_steps(t.epochs, batches, 10)
        assert run_steps(ExperimentConfig.from_dict(config)) == t.max_steps


def test_seeds_below_100_are_refused() -> None:
    with pytest.raises(ConfigError, match=f"from {PRESEARCH_FIRST_SEED} up"):
        SearchRun.of("mul_format_recipe", None, (3, 100))
    with pytest.raises(ConfigError, match="not 7"):
        Search("s", "", "mul_format", {}, {"train.lr": [1e-3]}, seeds=(7,))
    assert main(["--search", "mul_format_recipe", "--seeds", "0,1", "--dry-run"]) == 2
    assert main(["--search", "mul_format_recipe", "--grid", "add_length", "--dry-run"]) == 2


def test_the_dry_run_prints_the_search_configurations(capsys) -> None:
    assert main(["--search", "mul_format_recipe", "--seeds", "100,101", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "model=gpt2-mini,batch=512x6000,lr=0.003,format=padding_reverse,max_digits=5" in out
    assert "48 trials" in out and "24 configurations x seeds [100, 101]" in out
    assert "ASHA on gate/weakest_unseen at 10 / 30 / 90 core-minutes" in out
    # the bound of its cost sums ASHA's brackets, one a compared format: each runs alone to 90 at most
    assert main(["--search", "mul_format_recipe_long", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "2 configurations x seeds [100]" in out and "one per compared point (2); at most ~180" in out
    assert "model=tiny,batch=128x40000,lr=0.001,format=padding_reverse,max_digits=5" in out


def test_a_part_of_a_search_picks_its_model_shape_by_name(capsys) -> None:
    """The plan runs a search longer than a session as parts (docs/results/plan.yaml), one model shape
    each: `--only model=tiny` picks a bundle axis by its name, where tiny and 4x256 share model.preset."""
    run = SearchRun.of("mul_format_recipe", None, (100,))
    assert run.grid.bundle_axes() == ["model", "batch"]
    tiny = points(run.grid, run.scale, (100,), only={"model": "tiny"})
    assert len(tiny) == 8 and all(c.model.preset == "tiny" and c.model.n_embd is None for c in tiny)
    wide = points(run.grid, run.scale, (100,), only={"model": ("4x256",), "data.format": "basic"})
    assert len(wide) == 4 and all(c.model.n_embd == 256 and c.data.format == "basic" for c in wide)
    both = points(run.grid, run.scale, (100,), only={"model": ("tiny", "gpt2-mini")})
    assert {c.model.preset for c in both} == {"tiny", "gpt2-mini"} and len(both) == 16
    with pytest.raises(SweepError, match="matches none"):
        points(run.grid, run.scale, (100,), only={"model": "tin"})  # a name, never a part of one
    assert main(["--search", "mul_format_recipe", "--only", "model=gpt2-mini", "--dry-run"]) == 0
    assert "8 configurations x seeds [100]" in capsys.readouterr().out


def test_a_recipe_declared_on_an_experiment_trains_both_compared_formats(monkeypatch) -> None:
    """The recipe a search chose, declared with its experiment: at its scale every point trains at it (the
    scale's own refusal of a task without a recipe gives way), at other scales nothing changes."""
    chosen = ChosenRecipe(
        "cpu_recipe",
        {"model.preset": "gpt2-mini", "train.batch_size": 512, "train.lr": 3e-3, "train.max_steps": 6000},
        chosen_by="mul_format_recipe",
    )
    experiment = registry.EXPERIMENTS["mul_format"]
    monkeypatch.setitem(
        registry.EXPERIMENTS, "mul_format", dataclasses.replace(experiment, recipes=(chosen,))
    )
    assert registry.recipe_for("mul_format", "cpu_recipe") is chosen
    only = {"data.max_digits": "3", "data.format": "basic"}
    configs = [
        *points(get_grid("mul_format"), "cpu_recipe", (0, 1), only=only),
        *points(
            get_grid("mul_format"), "cpu_recipe", (0, 1), only={**only, "data.format": "padding_reverse"}
        ),
    ]
    assert {c.data.format for c in configs} == {"basic", "padding_reverse"}
    for cfg in configs:
        t = cfg.train
        assert (cfg.model.preset, t.batch_size, t.lr, t.max_steps) == ("gpt2-mini", 512, 3e-3, 6000)
        assert cfg.data.train_samples == 300_000  # the paper's count, as the recipe scale draws it
        assert t.epochs == math.ceil(6000 / math.ceil(cfg.data.train_samples / 512))
    assert points(get_grid("mul_format"), "cpu", 1, only=only)[0].train.max_steps == 3000


def test_a_recipe_a_search_tries_trains_its_judged_grid_as_the_search_trained_it() -> None:
    """Each recipe declared with the search that tries it (`ChosenRecipe.search`): every point of the
    grid it is declared on trains, on a pre-search seed, the config one of the search's configurations
    trains (the search only adds its evaluations and gate cells, and ends at the gate), so a judged
    sweep at it computes what the search read."""
    from analysis.choice import search_recipe

    tried = [(name, e) for name, e in registry.EXPERIMENTS.items() for r in e.recipes if r.search]
    assert tried, "mul_simple_case_40k declares the recipe mul_simple_case_recipe tries"
    for name, experiment in tried:
        recipe = next(r for r in experiment.recipes if r.search)
        assert search_recipe(recipe.search) is recipe
        run = SearchRun.of(recipe.search, None, (PRESEARCH_FIRST_SEED,))
        searched = [c.flat() for c in points(run.grid, run.scale, (PRESEARCH_FIRST_SEED,))]
        judged = points(get_grid(name), recipe.scale, (PRESEARCH_FIRST_SEED,))
        assert judged
        compared = {p for values in run.search.compared.values() for p in map(str, values)}
        for cfg in judged:
            point = cfg.tracking.tags[POINT_TAG]
            flat = {k: v for k, v in cfg.flat().items() if not k.startswith("tracking.")}
            if compared and not any(f"={p}" in point for p in compared):
                # a point the search did not compare (length_gen's learned, none, ...) trains the recipe
                assert {k: flat[k] for k in recipe.settings} == recipe.settings, f"{name}: {point}"
                continue
            same = [c for c in searched if {k: c[k] for k in flat} == flat]
            assert len(same) == 1, f"{name}: {point} is no configuration of the search"


def toy_search_command(
    tmp_path: Path, plugin: str, source: str, ray_temp: str
) -> tuple[list[str], dict[str, str], str]:
    """`sweeps/run.py --search toy_reverse_recipe` as a user runs it, the search declared by the plugin
    module `plugin` (its `source` written into tmp_path), on a local Ray into a SQLite store there, one
    trial at a time: (command, environment, the store's URI)."""
    (tmp_path / f"{plugin}.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    env[registry.PLUGINS_ENV] = plugin
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    command = [
        sys.executable, "sweeps/run.py", "--search", "toy_reverse_recipe", "--cpus-per-trial", "1",
        "--max-concurrent", "1", "--ray-temp-dir", ray_temp, "--tracking-uri", uri,
        "--storage-path", str(tmp_path / "ray_results"),
    ]  # fmt: skip
    return command, env, uri


def run_toy_search(tmp_path: Path, plugin: str, source: str) -> tuple[subprocess.CompletedProcess, str]:
    """The toy search run to its end (`toy_search_command`); returns the finished process and the store's
    URI."""
    ray_temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Unix socket paths stay short
    command, env, uri = toy_search_command(tmp_path, plugin, source, ray_temp)
    try:
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    finally:
        shutil.rmtree(ray_temp, ignore_errors=True)
    return proc, uri


@pytest.mark.slow
def test_a_smoke_search_stops_trials_early_and_tables_their_cost(tmp_path) -> None:
    """A real search: ASHA on a local Ray (one trial at a time, the good learning rate first), the real
    trainer, a SQLite store; the cost-to-gate table read back from the store."""
    proc, uri = run_toy_search(tmp_path, "toy_search", TOY_SEARCH)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "core-min to gate" in proc.stdout  # the table, printed at the end
    assert f"| best {GATE_METRIC}: " in proc.stdout  # the progress line shows what ASHA reads, each point's
    # ... and logged on the search's parent run, with its figure, for the MLflow UI
    client = store.client(uri)
    parent = find_parent(client, "toy_reverse_recipe")
    logged = {f.path for f in client.list_artifacts(parent.info.run_id, "search")}
    assert logged == {"search/cost_to_gate.md", "search/cost_to_gate.png"}
    table = Path(client.download_artifacts(parent.info.run_id, "search/cost_to_gate.md", str(tmp_path)))
    assert "core-min to gate" in table.read_text()

    check_the_toy_search(uri)
    # archived and imported into a fresh store (as docs/RESULTS.md is rebuilt from docs/results/sweeps/):
    # the same table, stopped trials, core-minutes and all
    parent = find_parent(store.client(uri), "toy_reverse_recipe")
    archive = tmp_path / "toy_reverse_recipe.jsonl"
    export_sweep(store.client(uri), parent.info.run_id, archive)
    fresh = f"sqlite:///{tmp_path}/fresh.db"
    import_sweep(fresh, archive)
    assert search_cost_table(fresh, "toy_reverse_recipe").equals(search_cost_table(uri, "toy_reverse_recipe"))
    check_the_toy_search(fresh)


@pytest.mark.slow
def test_a_search_run_as_plan_parts_is_archived_part_by_part_and_read_as_one(tmp_path) -> None:
    """A search longer than a session runs as parts of the plan (docs/results/plan.yaml, `search: true`),
    each a slice of it by `--only`, run and archived when it ends by the reproduction's own `run_part`; a
    fresh store that imports the archives (a new machine) finds each part again and reads them as one
    search: every configuration once, the cost table as if one sweep had run them."""
    from test_faults import clean_env

    from analysis.plan import Planned, part_runs, restore_archives

    (tmp_path / "toy_parts.py").write_text(TOY_SEARCH)
    uri, storage = f"sqlite:///{tmp_path}/mlflow.db", tmp_path / "ray_results"
    archives = tmp_path / "archives"
    archives.mkdir()
    parts = (
        Planned("toy_reverse_recipe", seeds=(100,), scale="smoke", only=("train.lr=0.003",), search=True),
        Planned("toy_reverse_recipe", seeds=(100,), scale="smoke", only=("train.lr=1e-05", "train.lr=2e-05"),
                search=True),
    )  # fmt: skip
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Unix socket paths stay short
    env = clean_env(RAY_TMPDIR=ray_tmp, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    env[registry.PLUGINS_ENV] = "toy_parts"
    try:
        for part in parts:
            code = (
                "import pathlib\n"
                "from analysis.plan import Planned\n"
                "from sweeps.reproduce import run_part\n"
                f"run_part({part!r}, {uri!r}, {str(storage)!r}, archives=pathlib.Path({str(archives)!r}))\n"
            )
            proc = subprocess.run(
                [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
            )
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert sorted(p.name for p in archives.iterdir()) == sorted(part.archive_name for part in parts)
    fresh = f"sqlite:///{tmp_path}/fresh.db"
    restore_archives(fresh, archives)  # the store reads alone: no declaration of the search is needed
    found = part_runs(store.client(fresh), "toy_reverse_recipe", parts)
    assert [run is not None for _, run in found] == [True, True]  # each part found by its command
    check_the_toy_search_parts(fresh)
    section = search_sections(fresh, ["toy_reverse_recipe"])
    assert "its sweeps (the plan's parts, read as one search)" in section
    # named by the ids they ran under, not the import's new ones: every clone's rebuild reads alike
    ran_under = [run.info.run_id for run in store.sweep_runs(store.client(uri), "toy_reverse_recipe")]
    imported = [run.info.run_id for run in store.sweep_runs(store.client(fresh), "toy_reverse_recipe")]
    assert all(run_id in section for run_id in ran_under)
    assert not any(run_id in section for run_id in imported)
    assert section.count("| lr=0.003,format=basic |") == 1
    # a part's choice rule is read in the section: the step each configuration first reached the gate
    ruled = [(dataclasses.replace(plan, choose_if_gate_by_step=10**9), run) for plan, run in found]
    section = search_sections(fresh, ["toy_reverse_recipe"], plan_parts={"toy_reverse_recipe": ruled[:1]})
    rule = "- choice rule, declared before it ran: every configuration at the gate on every seed by step"
    assert f"{rule} 1,000,000,000: met (lr=0.003,format=basic seed 100 at the gate at step " in section


def check_the_toy_search_parts(uri: str) -> None:
    """The toy search's two parts read as one: a cost row per configuration, lr 0.003 at the gate."""
    from analysis.search import every_part_evaluations

    runs = store.sweep_runs(store.client(uri), "toy_reverse_recipe")
    assert len(runs) == 2
    table = cost_to_gate(every_part_evaluations(uri, runs))
    assert len(table) == 3 and "lr=0.003" in table.iloc[0]["configuration"]
    assert not table.iloc[0]["core-min to gate"].startswith("not reached")
    assert table.iloc[1:]["core-min to gate"].str.startswith("not reached").all()


@pytest.mark.slow
def test_a_search_trial_whose_loss_becomes_nan_fails_alone(tmp_path) -> None:
    """A NaN ends its trial without an error (so Tune does not retry it) and with a report that lacks the
    scheduler's metrics: Tune's strict metric check must not end the whole search for it."""
    proc, uri = run_toy_search(tmp_path, "nan_search", NAN_SEARCH)
    output = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "did not include the specified metric" not in proc.stdout + proc.stderr, output
    parent = find_parent(store.client(uri), "toy_reverse_recipe")
    trials = store.trial_runs(uri, ["toy_reverse_recipe"], parent.info.run_id)
    by_lr = {run.data.params["train.lr"]: run for run in trials}
    assert set(by_lr) == {"1e+30", "0.003"}, output
    assert by_lr["1e+30"].info.status == "FAILED" and by_lr["1e+30"].data.tags["failure"] == "nonfinite_loss"
    # the other trial ran to its end, or to its first evaluation at the gate
    sane = by_lr["0.003"]
    assert sane.info.status == "FINISHED" or sane.data.tags.get(STOPPED_TAG) == "passed", output
    assert proc.returncode == 1, output  # a failed trial: the sweep says so in its exit code


def check_the_toy_search(uri: str, resumed: bool = False) -> None:
    """What the smoke search left in its store: a cost row per configuration, the good learning rate at
    the gate and ended there (FINISHED, tagged passed), the others stopped early by ASHA (tagged; KILLED
    where cut at a rung, FINISHED where they spent the whole budget; fewer evaluations)."""
    table = search_cost_table(uri, "toy_reverse_recipe")
    assert len(table) == 3  # one row per configuration
    good = table.iloc[0]
    assert "lr=0.003" in good["configuration"]
    assert not good["core-min to gate"].startswith("not reached") and float(good["core-min to gate"]) > 0
    assert good["best weakest cell"] >= 0.9 and good["cut at a rung"] == "0 of 1"
    slow = table.iloc[1:]
    assert slow["core-min to gate"].str.startswith("not reached").all()
    assert (slow["best weakest cell"] < 0.9).all()
    parent = find_parent(store.client(uri), "toy_reverse_recipe")
    trials = store.trial_runs(uri, ["toy_reverse_recipe"], parent.info.run_id)
    stopped = [run for run in trials if run.data.tags.get(STOPPED_TAG)]
    assert len(trials) == 3 and len(stopped) >= 1
    for run in stopped:  # the MLflow UI draws a trial that passed, or spent its budget, as ended well
        expected = "KILLED" if run.data.tags[STOPPED_TAG] == "rung" else "FINISHED"
        assert run.info.status == expected, run.data.tags
    by_point = {run.data.tags[POINT_TAG]: run for run in trials}
    assert by_point[good["configuration"]].data.tags[STOPPED_TAG] == "passed"
    evaluations = search_evaluations(uri, parent.info.run_id)
    client = store.client(uri)
    for run in trials:  # the trainer's CPU clock, logged each epoch: a running search's core-minutes
        live = {m.step: m.value for m in client.get_metric_history(run.info.run_id, CPU_SECONDS)}
        recorded = {m.step: m.value for m in client.get_metric_history(run.info.run_id, CORE_MINUTES)}
        assert recorded and set(recorded) <= set(live)
        assert list(pd.Series(live).sort_index()) == sorted(live.values())  # a clock: it only goes on
        if not resumed:  # the clock Tune received; an epoch re-run after a restore keeps its first value
            # (both stored to 6 significant digits, arith.tracking.runs.stored)
            assert all(math.isclose(live[epoch] / 60, v, rel_tol=1e-5) for epoch, v in recorded.items())
    mine = evaluations[evaluations["point"] == good["configuration"]].sort_values("epoch")
    # it ended at its first evaluation at the gate, not at its 25th epoch
    assert mine["gate"].iloc[-1] >= 0.9 and (mine["gate"].iloc[:-1] < 0.9).all()
    assert mine["epoch"].max() < 25
    cut = [run for run in stopped if run.data.tags[STOPPED_TAG] in ("rung", "budget")]
    assert cut and all(run.data.tags[POINT_TAG] != good["configuration"] for run in cut)
    # a ready-made MLflow UI view of the search: its trials, best gate first, with their core-minutes
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert (
            search_main(["--grid", "toy_reverse_recipe", "--tracking-uri", uri, "--ui-url", "http://h:5000"])
            == 0
        )
    (link,) = [
        line for line in said.getvalue().splitlines() if line.startswith("MLflow UI view of this search")
    ]
    key = link.rsplit("viewStateShareKey=", 1)[1]
    assert "workflowType=machine_learning" in link and key == f"search-{parent.info.run_id[:12]}"
    experiment = client.get_experiment(parent.info.experiment_id)
    view = json.loads(experiment.tags[f"mlflow.sharedViewState.{key}"])
    assert view["orderByKey"] == f"metrics.`{GATE_METRIC}`" and not view["orderByAsc"]
    assert (
        f"metrics.`{CORE_MINUTES}`" in view["selectedColumns"] and "tags.`point`" in view["selectedColumns"]
    )
    assert view["searchFilter"] == store.trials_filter(parent.info.run_id)
    # its charts open on the gate against the CPU clock, in the section MLflow draws first (by name)
    (section,) = view["compareRunSections"]
    assert section["name"].startswith("Cost to the gate") and section["name"] < "eval"
    line, bar = view["compareRunCharts"]
    assert (line["type"], line["metricKey"], line["selectedXAxisMetricKey"]) == (
        "LINE",
        GATE_METRIC,
        CPU_SECONDS,
    )
    assert (bar["type"], bar["metricKey"]) == ("BAR", GATE_METRIC)
    # docs/RESULTS.md's section, from the store alone
    figures = Path(uri.removeprefix("sqlite:///")).parent / "figures"
    figures.mkdir(exist_ok=True)
    section = search_sections(uri, ["toy_reverse_recipe", "mul_format_recipe"], figures, "results/figures")
    assert "### Recipe search toy_reverse_recipe" in section and "mul_format_recipe" not in section
    assert "(results/figures/search_toy_reverse_recipe.png)" in section
    assert (figures / "search_toy_reverse_recipe.png").stat().st_size > 0
    assert good["configuration"] in section and "not reached" in section
    assert f", on {machine()[0]}; ended." in section  # where its core-minutes were measured; it ended
    # the search's seeds are its parent run's pre-search seeds: no claim is judged on them
    assert parent.data.tags["presearch_seeds"] == "[100]" and parent.info.status == "FINISHED"


def test_asha_keeps_its_rungs_across_a_resume(tmp_path) -> None:
    """Tune pickles the scheduler when a sweep starts (tuner.pkl) and unpickles that copy on --resume:
    SearchAsha comes back with the rungs it recorded since, so a trial reporting after the resume is
    still measured against the ones before it."""
    import pickle
    from types import SimpleNamespace

    from ray.tune.schedulers import TrialScheduler

    from sweeps.asha import ASHA_STATE_FILE

    run = SearchRun.of("mul_format_recipe", None, 1)
    asha = run.scheduler(str(tmp_path))
    at_start = pickle.dumps(asha)  # what tuner.pkl holds
    basic = {"point": "model=tiny,batch=128x20000,lr=0.001,format=basic,max_digits=5"}
    good, bad, later = (SimpleNamespace(trial_id=name, config=basic) for name in ("good", "bad", "later"))
    for trial in (good, bad, later):
        asha.on_trial_add(None, trial)
    ten = {"cpu_seconds": 10 * 60.0}
    assert asha.on_trial_result(None, good, {**ten, "gate/weakest_unseen": 0.8}) == TrialScheduler.CONTINUE
    assert asha.on_trial_result(None, bad, {**ten, "gate/weakest_unseen": 0.1}) == TrialScheduler.STOP
    assert (tmp_path / ASHA_STATE_FILE).is_file()

    restored = pickle.loads(at_start)  # Tuner.restore
    (tmp_path / ASHA_STATE_FILE).unlink()
    forgetful = pickle.loads(at_start)  # what Tune alone would restore: an empty ASHA
    # after the resume, a weak trial at the first rung is stopped against the rungs recorded before it
    assert restored.on_trial_result(None, later, {**ten, "gate/weakest_unseen": 0.2}) == TrialScheduler.STOP
    forgetful.on_trial_add(None, later)
    assert forgetful.on_trial_result(None, later, {**ten, "gate/weakest_unseen": 0.2}) == (
        TrialScheduler.CONTINUE
    )


def test_asha_compares_a_configuration_with_its_own_format_only_and_ends_it_at_the_gate(tmp_path) -> None:
    """The easy format must not fill the rungs the hard one is measured at (the recipe must serve both),
    and a trial whose weakest gated cell reached the gate has nothing left to show the search."""
    from types import SimpleNamespace

    from ray.tune.schedulers import TrialScheduler

    asha = SearchRun.of("mul_format_recipe", None, 1).scheduler(str(tmp_path))
    recipes = ["model=tiny,batch=128x20000,lr=0.001", "model=tiny,batch=128x20000,lr=0.003",
               "model=tiny,batch=512x6000,lr=0.001", "model=tiny,batch=512x6000,lr=0.003"]  # fmt: skip

    def trial(name: str, recipe: str, fmt: str) -> SimpleNamespace:
        # as a restored sweep's trials are: the point's name, its axes Tune's placeholders
        point = f"{recipe},format={fmt},max_digits=5"
        return SimpleNamespace(trial_id=name, config={"point": point, "data.format": ("__fn_ph", "85")})

    trials = {f"b{i + 1}": trial(f"b{i + 1}", r, "basic") for i, r in enumerate(recipes)}
    trials |= {f"p{i + 1}": trial(f"p{i + 1}", r, "padding_reverse") for i, r in enumerate(recipes[:2])}
    for t in trials.values():
        asha.on_trial_add(None, t)

    def report(name: str, minutes: float, gate: float) -> str:
        return asha.on_trial_result(
            None, trials[name], {"cpu_seconds": minutes * 60, "gate/weakest_unseen": gate}
        )

    for name, gate in [("b1", 0.6), ("b2", 0.65), ("b3", 0.7)]:
        assert report(name, 10, gate) == TrialScheduler.CONTINUE
    assert report("b4", 10, 0.2) == TrialScheduler.STOP  # below its own format's rung
    # padding + reversed product, far below every basic trial, meets its own format's rung only
    assert report("p1", 10, 0.05) == TrialScheduler.CONTINUE
    assert report("p2", 10, 0.12) == TrialScheduler.CONTINUE
    # at the gate (0.9, less the verdicts' rounding tolerance), a trial ends there, wherever it stands
    assert report("b1", 12, 0.9) == TrialScheduler.STOP and asha.passed == {"b1"}
    assert report("p1", 15, 0.5) == TrialScheduler.CONTINUE
    assert set(asha._groups) == {"format=basic,max_digits=5", "format=padding_reverse,max_digits=5"}


def test_a_trial_is_stopped_by_the_scheduler_only_when_its_last_result_is_done_before_its_last_epoch() -> (
    None
):

    cut = {"done": True, "epoch": 3, GATE_METRIC: 0.4, CPU_SECONDS: 100.0}
    assert stopped_why(cut, epochs=10, budget_s=600.0) == "rung"
    assert stopped_why({**cut, CPU_SECONDS: 600.0}, 10, 600.0) == "budget"
    assert stopped_why({**cut, GATE_METRIC: PASSED}, 10, 600.0) == "passed"
    assert stopped_why({**cut, "epoch": 10}, 10, 600.0) == ""  # it ran to its end
    assert stopped_why({**cut, "done": False}, 10, 600.0) == ""  # an interrupted sweep left it unfinished
    assert stopped_why({**cut, "nonfinite_loss": 1}, 10, 600.0) == ""  # its NaN loss ended it


def test_ending_a_stopped_trials_run_never_ends_the_search(tmp_path, capsys) -> None:
    """A Tune callback that raises ends the whole Tune run (as a stale progress callback did on a resume):
    a store that cannot be reached only warns, and the search's end records the run."""
    from ray.tune.experiment import Trial

    from sweeps.search import EndStoppedRuns

    configs = {"p|seed=100": {"train": {"epochs": 10}, "tracking": {"experiment": "x", "run_name": "p"}}}
    (tmp_path / "a_file").write_text("")
    unreachable = f"sqlite:///{tmp_path}/a_file/mlflow.db"  # no store can be made there
    callback = EndStoppedRuns(configs, unreachable, "parent", budget_s=600.0)
    stopped = Trial("run_trial", config={"point": "p", "seed": 100}, stub=True)
    stopped.update_last_result({"done": True, "epoch": 3, GATE_METRIC: 0.2, CPU_SECONDS: 60.0})
    callback.on_trial_complete(0, [stopped], stopped)
    assert "warning: p stays RUNNING until the search ends" in capsys.readouterr().err


def test_a_claim_not_testable_names_what_its_recipe_search_found(tmp_path) -> None:
    """The not-testable row of a grid whose claims a search serves (mul_format and its variant
    mul_format_long share its claim) reads the search's store: per compared format the cheapest
    configuration at the gate, or that none of those read passed and the best; none for other grids."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    from analysis.search_report import search_evidence
    from experiments.search import CORE_MINUTES

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert search_evidence(uri, "mul_format") == ""  # no search has run
    client = MlflowClient(uri)
    experiment = client.create_experiment("mul_format_recipe", artifact_location=(tmp_path / "a").as_uri())
    parent = client.create_run(experiment, tags={"sweep": "1", "grid": "mul_format_recipe"})
    trials = {  # configuration -> (gate, core-minutes) at each epoch
        "model=tiny,batch=128x20000,lr=0.001,format=basic,max_digits=5": [(0.65, 16.0), (0.93, 30.5)],
        "model=4x256,batch=128x20000,lr=0.003,format=basic,max_digits=5": [(0.0, 20.2)],
        "model=tiny,batch=128x20000,lr=0.001,format=padding_reverse,max_digits=5": [
            (0.1, 12.0),
            (0.25, 61.2),
        ],
        "model=gpt2-mini,batch=512x6000,lr=0.001,format=padding_reverse,max_digits=5": [(0.05, 38.0)],
    }
    for point, readings in trials.items():
        tags = {"mlflow.parentRunId": parent.info.run_id, POINT_TAG: point, "seed": "100"}
        run = client.create_run(experiment, tags=tags)
        metrics = [
            Metric(name, value, 0, epoch)
            for epoch, (gate, spent) in enumerate(readings, 1)
            for name, value in ((GATE_METRIC, gate), (CORE_MINUTES, spent))
        ]
        client.log_batch(run.info.run_id, metrics=metrics)
    found = search_evidence(uri, "mul_format")
    assert found.startswith("mul_format_recipe (not ended; 4 of 24 configurations read, at most 90 core-min")
    assert "format=basic,max_digits=5 passed at 30.5 core-min (model=tiny,batch=128x20000,lr=0.001)" in found
    assert (
        "format=padding_reverse,max_digits=5: none of 2 configurations read passed (best 0.25, "
        "model=tiny,batch=128x20000,lr=0.001)"
    ) in found
    assert search_evidence(uri, "mul_format_long") == found  # its variant: the same claim
    assert search_evidence(uri, "add_posembed") == ""
    # where the plan declares the search's parts, how many of them have run, not whether a sweep ended
    # (the plan's parts as declared, none yet ended: the test sets what the plan says of them below)
    first, *rest = [dataclasses.replace(p, ended_early="") for p in PLAN if p.grid == "mul_format_recipe"]
    parts = [(first, parent), *((p, None) for p in rest)]
    planned = search_evidence(uri, "mul_format", {"mul_format_recipe": parts})
    assert planned.startswith(
        "mul_format_recipe (1 of 6 plan parts run, 1 sweep not ended; 4 of 24 configurations"
    )
    client.set_terminated(parent.info.run_id, "FINISHED")
    assert search_evidence(uri, "mul_format").startswith("mul_format_recipe (ended; ")
    # a second part of the search (docs/results/plan.yaml): its own configuration, and one of the first
    # part's run again, which is read from this later sweep alone; both parts read as one search
    later = client.create_run(experiment, tags={"sweep": "1", "grid": "mul_format_recipe"})
    again = {
        "model=gpt2-mini,batch=512x6000,lr=0.001,format=padding_reverse,max_digits=5": [(0.95, 45.0)],
        "model=gpt2-mini,batch=128x20000,lr=0.003,format=basic,max_digits=5": [(0.4, 38.0)],
    }
    for point, readings in again.items():
        tags = {"mlflow.parentRunId": later.info.run_id, POINT_TAG: point, "seed": "100"}
        run = client.create_run(experiment, tags=tags)
        metrics = [
            Metric(n, v, 0, 1) for n, v in ((GATE_METRIC, readings[0][0]), (CORE_MINUTES, readings[0][1]))
        ]
        client.log_batch(run.info.run_id, metrics=metrics)
    found = search_evidence(uri, "mul_format")
    assert found.startswith("mul_format_recipe (2 sweeps, 1 not ended; 5 of 24 configurations read")
    assert (
        "format=padding_reverse,max_digits=5 passed at 45 core-min (model=gpt2-mini,batch=512x6000,lr=0.001)"
    ) in found
    section = search_sections(uri, ["mul_format_recipe"])
    assert (
        f"its sweeps (the plan's parts, read as one search) {parent.info.run_id}; {later.info.run_id}; "
        "2 sweeps, 1 not ended." in section
    )
    parts = [(first, parent), (rest[0], later), *((p, None) for p in rest[1:])]
    planned = search_sections(uri, ["mul_format_recipe"], plan_parts={"mul_format_recipe": parts})
    assert (
        f"{later.info.run_id}; 2 of 6 plan parts run, 1 sweep not ended; the tables read the configurations "
        "run so far." in planned
    )
    # the plan ends the parts left before they run (a basic part of a shape whose padded ones all failed)
    ended = [(dataclasses.replace(p, ended_early="no padded configuration passed"), None) for p in rest[1:]]
    planned = search_sections(uri, ["mul_format_recipe"], plan_parts={"mul_format_recipe": parts[:2] + ended})
    assert (
        f"{later.info.run_id}; 2 of 6 plan parts run, 1 sweep not ended, 4 ended unrun "
        "(docs/results/plan.yaml says why)." in planned
    )
    assert section.count("model=gpt2-mini,batch=512x6000,lr=0.001,format=padding_reverse") == 1
    # the command line reads the parts as one too; --run reads one sweep
    for run, rows in ((None, 5), (parent.info.run_id, 4)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert (
                search_main(
                    ["--grid", "mul_format_recipe", "--tracking-uri", uri, *(["--run", run] if run else [])]
                )
                == 0
            )
        by_configuration, by_recipe = out.getvalue().split("By recipe:")
        assert sum(line.startswith("| model=") for line in by_configuration.splitlines()) == rows
        assert "| recipe | format=basic,max_digits=5 | format=padding_reverse,max_digits=5 |" in by_recipe
        assert "at most 90 core-minutes a trial" in by_configuration
    # no conclusion while a part runs; once every part has run or was ended unrun, the search is complete
    # and says that no recipe it read served the claim within its budget
    ended_plan = {"mul_format_recipe": parts[:2] + ended}
    assert "complete" not in search_evidence(uri, "mul_format", ended_plan)
    client.set_terminated(later.info.run_id, "FINISHED")
    found = search_evidence(uri, "mul_format", ended_plan)
    assert found.endswith(
        "; complete: none of the 4 recipes read brought every compared point to the gate within 90 "
        "core-min a trial (its trials that missed it ran out of steps first, after 20-61 core-min)"
    )  # no trial here is tagged as stopped by the scheduler: those that missed the gate ran their steps
    assert "**Found:** complete: none of the 4 recipes" in search_sections(uri, plan_parts=ended_plan)
    # a recipe at which every compared point passed is the search's finding, whether or not it is complete
    mini = "model=gpt2-mini,batch=512x6000,lr=0.001"
    run = client.create_run(
        experiment,
        tags={
            "mlflow.parentRunId": later.info.run_id,
            POINT_TAG: f"{mini},format=basic,max_digits=5",
            "seed": "100",
        },
    )
    client.log_batch(
        run.info.run_id, metrics=[Metric(GATE_METRIC, 0.97, 0, 1), Metric(CORE_MINUTES, 20.0, 0, 1)]
    )
    served = f"every compared point passed at {mini}, 45 core-min a trial"
    assert search_evidence(uri, "mul_format", ended_plan).endswith(served)
    assert search_evidence(uri, "mul_format").endswith(served)


def test_a_search_section_names_every_processor_its_sessions_ran_on() -> None:
    from types import SimpleNamespace

    from analysis.search_report import machines
    from experiments.search import MACHINES_TAG

    def parent(tag: str) -> SimpleNamespace:
        return SimpleNamespace(data=SimpleNamespace(tags={MACHINES_TAG: tag} if tag else {}))

    assert machines(parent("")) == ""
    assert machines(parent("AMD EPYC (no native bf16)")) == ", on AMD EPYC (no native bf16)"
    both = machines(parent("AMD EPYC (no native bf16); Intel Xeon (native bf16)"))
    assert "AMD EPYC (no native bf16) and Intel Xeon (native bf16)" in both and "mix processors" in both


@pytest.mark.slow
def test_a_search_stopped_part_way_resumes_with_its_rungs(tmp_path) -> None:
    """A real search stopped (Ctrl+C to its session) once its good trial has ended at the gate and the next
    one has a checkpoint, then resumed: the trial left at a checkpoint goes on from it, the one not yet
    started is cut against the rungs recorded before the stop (the slow two read alike, so only the good
    trial's record can cut it), and every trial is one run with each epoch once."""
    import pickle
    import signal

    from test_faults import end_session, wait_for

    from sweeps.asha import ASHA_STATE_FILE

    ray_temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    command, env, uri = toy_search_command(tmp_path, "toy_search", TOY_SEARCH, ray_temp)
    results = tmp_path / "ray_results"

    def second_trial_checkpointed() -> bool:
        return len({c.parent for c in results.glob("*/*/checkpoint_*")}) >= 2

    try:
        with (tmp_path / "session1.log").open("w") as log:
            first = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
            try:
                wait_for(second_trial_checkpointed, first, 600, "the second trial's checkpoint")
                # the good trial, stopped at the gate, is ended in the store while the search runs (not
                # left RUNNING in the MLflow UI until the session ends)
                running = find_parent(store.client(uri), "toy_reverse_recipe").info.run_id
                runs = store.trial_runs(uri, ["toy_reverse_recipe"], running)
                (good,) = [run for run in runs if run.data.params["train.lr"] == "0.003"]
                os.killpg(first.pid, signal.SIGINT)
                first.wait(timeout=600)
            finally:
                end_session(first.pid)
        said = (tmp_path / "session1.log").read_text()
        assert first.returncode == 130, said[-3000:]
        # a stopped search says what it found so far, and logs it for the MLflow UI, where no trial is
        # left running
        assert "So far:" in said and "core-min to gate" in said, said[-3000:]
        logged = {f.path for f in store.client(uri).list_artifacts(running, "search")}
        assert "search/cost_to_gate.md" in logged
        stopped = store.trial_runs(uri, ["toy_reverse_recipe"], running)
        assert stopped and "RUNNING" not in {run.info.status for run in stopped}
        assert (good.info.status, good.data.tags.get(STOPPED_TAG)) == ("FINISHED", "passed"), said[-3000:]
        (sweep,) = [p for p in results.iterdir() if p.is_dir()]
        assert (sweep / ASHA_STATE_FILE).is_file()
        second = subprocess.run(
            [*command, "--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
        )
    finally:
        shutil.rmtree(ray_temp, ignore_errors=True)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    check_the_toy_search(uri, resumed=True)
    parent = find_parent(store.client(uri), "toy_reverse_recipe")
    trials = store.trial_runs(uri, ["toy_reverse_recipe"], parent.info.run_id)
    by_lr = {run.data.params["train.lr"]: run for run in trials}
    assert len(trials) == 3 and set(by_lr) == {"0.003", "1e-05", "2e-05"}
    assert by_lr["2e-05"].data.tags.get(STOPPED_TAG) in ("rung", "budget")
    # the scheduler came back with what it had recorded: the good trial's rungs, from before the stop, are
    # beside those the trials recorded after it
    state = pickle.loads((sweep / ASHA_STATE_FILE).read_bytes())
    (asha,) = state["_groups"].values()
    recorded = {trial for _, rung in asha._brackets[0]._rungs for trial in rung}
    # every trial, the one that ended before the stop too (Tune's sync had put the first session's state
    # back over this one's when it was a .pkl)
    assert len(recorded) == 3, recorded
    evaluations = search_evaluations(uri, parent.info.run_id)
    assert not evaluations.duplicated(["point", "seed", "epoch"]).any()  # no epoch twice after the resume


def test_a_recipe_costs_the_most_its_compared_points_needed_and_serves_only_where_all_passed() -> None:
    search = registry.SEARCHES["mul_format_recipe"]
    assert search.split_point("model=tiny,batch=128x20000,lr=0.001,format=basic,max_digits=5") == (
        "model=tiny,batch=128x20000,lr=0.001",
        "format=basic,max_digits=5",
    )
    tiny, mini = "model=tiny,batch=128x20000,lr=0.001", "model=gpt2-mini,batch=512x6000,lr=0.003"
    rows = [
        (f"{tiny},format=basic,max_digits=5", 100, 1, 16.0, 0.95, "passed"),
        (f"{tiny},format=padding_reverse,max_digits=5", 100, 1, 30.0, 0.40, "rung"),
        (f"{mini},format=basic,max_digits=5", 100, 1, 20.0, 0.92, "passed"),
        (f"{mini},format=padding_reverse,max_digits=5", 100, 1, 50.0, 0.50, ""),
        (f"{mini},format=padding_reverse,max_digits=5", 100, 2, 70.0, 0.91, "passed"),
    ]
    recipes = recipe_costs(cost_to_gate(evaluations(rows)), search)
    assert list(recipes["recipe"]) == [mini, tiny]  # the one both formats passed at, first
    both = "core-min to gate, every compared point"
    assert recipes.iloc[0][both] == "70"  # padding_reverse's 70 > basic's 20
    assert recipes.iloc[0]["format=basic,max_digits=5"] == "20"
    assert recipes.iloc[1][both] == "not reached by format=padding_reverse,max_digits=5"
    # a recipe one of whose compared points has not run yet is not costed by the others' alone: its column
    # says so, and it sorts after every recipe all points passed at, before those a point failed at
    wide = "model=4x256,batch=128x20000,lr=0.001"
    more = [*rows, (f"{wide},format=basic,max_digits=5", 100, 1, 9.0, 0.93, "passed")]
    recipes = recipe_costs(cost_to_gate(evaluations(more)), search)
    assert list(recipes["recipe"]) == [mini, wide, tiny]
    assert recipes.iloc[1]["format=padding_reverse,max_digits=5"] == "not run yet"
    assert recipes.iloc[1][both] == "not known: format=padding_reverse,max_digits=5 not run yet"
    # a point not run at a recipe another point missed the gate at is not needed there (the plan ends its
    # part unrun): the table does not wait on it
    big = "model=4x256,batch=512x6000,lr=0.001"
    missed = [*rows, (f"{big},format=padding_reverse,max_digits=5", 100, 1, 90.0, 0.84, "budget")]
    (row,) = (
        recipe_costs(cost_to_gate(evaluations(missed)), search).query("recipe == @big").to_dict("records")
    )
    assert row["format=basic,max_digits=5"] == NOT_NEEDED
    assert row[both] == "not reached by format=padding_reverse,max_digits=5"
    # a search whose first part ran one format only still names both columns
    basic_only = recipe_costs(cost_to_gate(evaluations(rows[:1])), search)
    basic, padded = "format=basic,max_digits=5", "format=padding_reverse,max_digits=5"
    assert list(basic_only.columns) == ["recipe", basic, padded, both]
    assert "machine" not in cost_to_gate(evaluations(rows))  # one processor (none named): no column
    # the plan's parts of a search may run sessions apart, on other processors: a core-minute of a CPU with
    # AMX is not one of a CPU without, so the table names each configuration's and a recipe measured on
    # two says so beside its cost
    amd, xeon = "AMD EPYC (native bf16)", "Intel Xeon (AMX)"
    parts = evaluations(rows).assign(machine=[amd, amd, amd, xeon, xeon])
    table = cost_to_gate(parts)
    assert (
        dict(zip(table["configuration"], table["machine"], strict=True))[f"{mini},format=basic,max_digits=5"]
        == amd
    )
    recipes = recipe_costs(table, search)
    assert recipes.iloc[0][both] == "70 (measured on different processors: compare within one)"


def test_the_mul_search_gates_each_format_on_the_cells_its_paper_table_learned() -> None:
    """Through the cpu scales' digit map (the paper's 5 digits read as 3: each 3-digit cell stands for the
    paper's 5-digit one), tb:basic-5's model reached 0.9 on 1x1-1x5, 2x1-2x3 (2x5 0.86 is not), 3x1 and
    5x1, and tb:padding-5's padding + reversed product on every cell: the search's gate is the verdict's,
    not the fallback's small products."""
    run = SearchRun.of("mul_format_recipe", None, 1)
    digits = digit_map(run.grid, run.scale)
    by_format = {
        cfg.data.format: gate_cells(cfg, digits, run.search) for cfg in points(run.grid, run.scale, (100,))
    }
    assert by_format["basic"] == ["main:1x1", "main:1x2", "main:1x3", "main:2x1", "main:2x2", "main:3x1"]
    assert by_format["padding_reverse"] == [f"main:{r}x{c}" for r in (1, 2, 3) for c in (1, 2, 3)]


def test_a_search_whose_trials_ran_out_of_steps_before_its_budget_says_so() -> None:
    from analysis.search_report import conclusion

    search = registry.SEARCHES["mul_simple_case_recipe"]  # 180 core-min a trial at most
    shape = "model=4x256,batch=128x40000,lr=0.001,max_digits=5"
    rows = [
        (f"{shape},augment=n_times_1", 100, 10, 104.8, 0.38, ""),
        (f"{shape},augment=first_step", 100, 10, 106.6, 0.30, ""),
    ]
    budget = "to the gate within 180 core-min a trial"
    said = conclusion(cost_to_gate(evaluations(rows)), search, complete=True)
    assert said.endswith(
        f"{budget} (its trials that missed it ran out of steps first, after 105-107 core-min)"
    )
    # a trial cut at a rung stopped for the scheduler, not for its steps: the budget alone is said
    cut = [rows[0], (*rows[1][:5], "rung")]
    assert conclusion(cost_to_gate(evaluations(cut)), search, complete=True).endswith(budget)
    # two seeds a configuration: the core-minutes spent are per trial
    seeds = [*rows, (f"{shape},augment=n_times_1", 101, 10, 104.8, 0.40, "")]
    assert "after 105-107 core-min" in conclusion(cost_to_gate(evaluations(seeds)), search, complete=True)
