"""The recipe search (`python -m lab.sweep --search NAME`): its declaration (`lab.search.declared`), the
cost-to-gate table built from the store (`lab.search.costs`), and a real search at smoke scale under Ray
Tune's ASHA on a local Ray into a SQLite MLflow store."""

from __future__ import annotations

import dataclasses
import math
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from arith.config import ConfigError
from arith.tracking.schema import POINT_TAG
from arith.training.epochs import epoch_steps
from arith.training.metrics import MIN_UNSEEN, weakest_unseen
from arith.training.optim import run_steps
from experiments import registry
from experiments.grid import PRESEARCH_FIRST_SEED
from experiments.recipes import Recipe
from lab.recipes import EVIDENCE
from lab.search.costs import (
    cost_to_gate,
)
from lab.search.declared import Asha, Search
from lab.search.sweep import SearchRun
from lab.sweep import main
from sweeps.errors import SweepError
from sweeps.grids import get_grid, points

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
    from lab.search.declared import Asha, Search


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
    from lab.search.figure import search_figure

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
    configs = run.prepare({str(i): c for i, c in enumerate(points(run.grid, run.scale, (100,)))})
    assert len(configs) == 24
    for config in configs.values():
        t = config.train
        batches = math.ceil(300_000 / t.batch_size)
        assert t.epochs_per_pass == 10 and t.eval_epochs == list(range(1, t.epochs + 1))
        assert epoch_steps(t.epochs - 1, batches, 10) < t.max_steps <= epoch_steps(t.epochs, batches, 10)
        assert run_steps(config) == t.max_steps


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
    chosen = Recipe(
        "gpt2_mini_b512_6k",
        "cpu_recipe",
        {"model.preset": "gpt2-mini", "train.batch_size": 512, "train.lr": 3e-3, "train.max_steps": 6000},
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
    """Each recipe whose evidence names the search that tries it (`lab.recipes.EVIDENCE`): every point of the
    grid it is declared on trains, on a pre-search seed, the config one of the search's configurations
    trains (the search only adds its evaluations and gate cells, and ends at the gate), so a judged
    sweep at it computes what the search read."""
    from lab.choice import search_recipe

    searched_by = {name: e.search for name, e in EVIDENCE.items() if e.search}
    tried = [
        (name, e) for name, e in registry.EXPERIMENTS.items() for r in e.recipes if r.name in searched_by
    ]
    assert tried, "mul_simple_case_40k declares the recipe mul_simple_case_recipe tries"
    for name, experiment in tried:
        recipe = next(r for r in experiment.recipes if r.name in searched_by)
        assert search_recipe(searched_by[recipe.name]) is recipe
        run = SearchRun.of(searched_by[recipe.name], None, (PRESEARCH_FIRST_SEED,))
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
