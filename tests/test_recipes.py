"""Variants and recipes: a budget variant is one entry, a grid made for one scale says so at another, a
recipe is declared once on the experiments it trains, a rejected one runs on its pre-search seeds only,
and every setting of a trial says where it came from."""

from __future__ import annotations

import pytest

from arith.config import ConfigError
from experiments.recipes import ADD_SCRATCHPAD_24K, REVERSE_RECIPE
from experiments.registry import EXPERIMENTS
from lab.recipes import ADD_SCRATCHPAD_12K, ADD_SCRATCHPAD_CANDIDATE, EVIDENCE
from sweeps.grids import GRIDS, get_grid, points
from sweeps.run import main
from sweeps.scales import SCALES, get_scale
from sweeps.space import trial_config


def test_a_budget_variant_is_one_entry():
    """docs/DESIGN.md, "Add a budget variant": one `variant()` call derives the grid; the sweep's tags say
    whose variant it is, and the parent's claims judge it."""
    from experiments.grid import variant
    from experiments.registry import claims_for
    from sweeps.storage import sweep_tags

    derived = variant(
        GRIDS["mul_format"],
        "mul_format_short",
        "mul_format's basic vs padding_reverse at 1,000 steps.",
        {"data.max_digits": 5, "train.max_steps": 1_000},
        only={"data.format": ["basic", "padding_reverse"]},
        over_scale=("train.max_steps",),
        scale="cpu",
    )
    assert [p.name for p in derived.points()] == ["format=basic", "format=padding_reverse"]
    assert derived.paper_tables == ("tb:basic-5", "tb:padding-5") and derived.parent == "mul_format"
    configs = points(derived, "cpu", 1)
    assert {c.train.max_steps for c in configs} == {1_000} and {c.data.max_digits for c in configs} == {3}
    # the _long grids are variants too, with the trial configs they had as grids of their own
    assert GRIDS["mul_format_long"].parent == "mul_format"
    assert GRIDS["mul_simple_case_long"].parent == "mul_simple_case"
    GRIDS[derived.name] = derived
    try:
        tags = sweep_tags(derived, SCALES["cpu"], 2, "abc")
    finally:
        del GRIDS[derived.name]
    assert tags["variant_of"] == "mul_format"
    assert claims_for(derived.name, tags["variant_of"]) == claims_for("mul_format")


def test_a_grid_made_for_one_scale_says_so_at_another():
    from sweeps.space import scale_note

    assert scale_note(GRIDS["demo"], "cpu") is None
    assert "made for --scale cpu" in scale_note(GRIDS["demo"], "paper")
    with pytest.raises(ConfigError, match="made for --scale cpu"):
        points("demo", "paper", 1)


def test_a_cpu_recipe_is_declared_once_on_the_experiments_it_trains():
    """The cpu_recipe scale declares no recipe: each is written once in experiments/recipes.py and declared
    on the experiments that train at it (variants inherit it); a grid with none is refused, saying what its
    task's nearest pre-search reached."""
    assert SCALES["cpu_recipe"].needs_recipe and not SCALES["cpu_recipe"].recipes
    for name in ("reverse_posembed", "reverse_posembed_recipe", "reverse_posembed_replication"):
        assert EXPERIMENTS[name].recipe("cpu_recipe") is REVERSE_RECIPE
    for name in ("add_length", "add_posembed", "add_posembed_recipe_24k"):
        assert EXPERIMENTS[name].recipe("cpu_recipe") is ADD_SCRATCHPAD_24K
    # the 6,000- and 12,000-step pre-search records keep the candidates they rejected
    assert EXPERIMENTS["add_posembed_recipe"].recipe("cpu_recipe") is ADD_SCRATCHPAD_CANDIDATE
    assert EXPERIMENTS["add_posembed_recipe_long"].recipe("cpu_recipe") is ADD_SCRATCHPAD_12K
    assert EXPERIMENTS["reverse_posembed"].recipe("cpu") is None
    # a recipe is data; why it was chosen (or rejected) is the lab's record, one for every recipe declared
    declared = {r.name: r for e in EXPERIMENTS.values() for r in e.recipes}
    assert set(declared) == set(EVIDENCE) and all(EVIDENCE[n].chosen_by for n in declared)
    (cfg,) = points("reverse_posembed_replication", "cpu_recipe", 1, only={"model.position": "none"})
    assert (cfg.train.max_steps, cfg.train.precision, cfg.data.train_samples) == (6000, "bf16", 120_000)
    with pytest.raises(ConfigError, match=r"no recipe for task 'mul': the recipe search mul_format_recipe"):
        points("mul_format", "cpu_recipe", 1)


def test_a_rejected_recipe_runs_on_its_presearch_seeds_only():
    """A candidate recipe its pre-search did not choose (scratchpad addition: random_embed did not learn at
    6,000 steps, nor on a judged seed at 12,000) runs on the scale's pre-search seeds, which judge nothing; a
    judged sweep is refused."""
    assert REVERSE_RECIPE.chosen and not ADD_SCRATCHPAD_CANDIDATE.chosen
    assert {c.train.seed for c in points("add_posembed_recipe", "cpu_recipe", (100,))} == {100}
    with pytest.raises(
        ConfigError, match=r"did not choose .*pre-search seeds 100, 101, 102 run it, not 0, 1$"
    ):
        points("add_posembed_recipe", "cpu_recipe", 2)
    assert len(points("reverse_posembed_recipe", "cpu_recipe", 2)) == 8
    # 12,000 steps, chosen on seed 100, rejected when a judged seed missed the gate: no fresh seed runs it
    assert not ADD_SCRATCHPAD_12K.chosen
    with pytest.raises(ConfigError, match=r"did not choose .*not 5, 6$"):
        points("add_posembed_recipe_long", "cpu_recipe", (5, 6))
    # its successor ran on the pre-search seeds 101 and 102, which chose it: fresh seeds run it now
    only = {"model.position": "random_embed"}
    presearch = points("add_posembed_recipe_24k", "cpu_recipe", (101, 102), only=only)
    settings = {(c.train.seed, c.train.max_steps, c.train.precision, c.data.train_samples) for c in presearch}
    assert settings == {(101, 24_000, "bf16", 120_000), (102, 24_000, "bf16", 120_000)}
    assert ADD_SCRATCHPAD_24K.chosen
    assert {c.train.seed for c in points("add_posembed_recipe_24k", "cpu_recipe", (5, 6))} == {5, 6}


def test_every_setting_of_a_trial_says_where_it_came_from(capsys, tmp_path):
    """The recipe is one step of the precedence, after the scale: reverse_posembed at cpu_recipe takes its
    steps, precision and the paper's sample count from the recipe, the model from the scale, the position
    from the point; a --set and the seed come last. The dry run prints every setting's source."""
    from sweeps.space import config_stages, provenance, setting_sources

    grid, scale = get_grid("reverse_posembed"), get_scale("cpu_recipe")
    point = next(p for p in grid.points() if "position=none" in p.name and "init=random" in p.name)
    stages = config_stages(grid, point, scale, {"train.log_every_steps": 7}, seed=3)
    assert [s.source for s in stages] == [
        "default", "grid base", "grid point", "--scale", "recipe", "grid point (over the scale)", "--set",
        "--seeds",
    ]  # fmt: skip
    assert stages[-1].config == trial_config(grid, point, scale, {"train.log_every_steps": 7}, seed=3)
    sources = provenance(stages)
    assert {
        k: sources[k] for k in ("train.max_steps", "train.precision", "data.train_samples")
    } == dict.fromkeys(("train.max_steps", "train.precision", "data.train_samples"), "recipe")
    assert sources["model.preset"] == sources["train.lr"] == "--scale"  # the tiny model, lr x 50
    assert sources["model.position"] == "grid point" and sources["data.task"] == "grid base"
    assert sources["train.log_every_steps"] == "--set" and sources["train.seed"] == "--seeds"
    assert sources["train.epochs"] == "recipe"  # the epochs its 6,000 steps need
    assert sources["train.adam_beta1"] == "default"
    rows = setting_sources(grid, scale, [stages[-1].config], {"train.log_every_steps": 7})
    assert {r["setting"]: r["from"] for r in rows} == sources
    args = ["--grid", "demo", "--scale", "cpu", "--seeds", "2", "--set", "train.lr=0.002", "--dry-run"]
    assert main([*args, "--tracking-uri", f"sqlite:///{tmp_path}/m.db", "--storage-path", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Every setting's source (default < grid base < grid point < --scale < recipe" in out
    line = next(line for line in out.splitlines() if line.strip().startswith("train.lr "))
    assert line.split()[1:] == ["--set", "0.002"]
