"""The search space and the scales: every grid resolves to valid, distinct, tagged trial configs, and the
command line rejects bad input at once (no Ray, no MLflow: these tests take seconds)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from arith.config import ConfigError, ExperimentConfig
from arith.data.datasets import train_examples, train_size
from arith.overrides import parse_only
from arith.tracking.commands import seeds_argument
from arith.training import hardware
from experiments.grid import Grid, Variant
from lab.paper_trial import longest_trial, paper_trial
from lab.sweep import main as lab_sweep
from sweeps import cluster
from sweeps.errors import SweepError
from sweeps.grids import GRIDS, get_grid, points
from sweeps.offline import SweepPart
from sweeps.run import SweepOptions, absolute_uri, build_configs, main, trial_outcomes, trial_table
from sweeps.scales import SCALES, get_scale
from sweeps.space import parse_seeds, trial_config

ROOT = Path(__file__).resolve().parent.parent
PAPER_TABLES = ROOT / "experiments" / "paper_tables.csv"
ISSUE_GRIDS = [
    "mul_format",
    "mul_one_digit_weight",
    "mul_simple_case",
    "add_length",
    "reverse_posembed",
    "add_posembed",
    "nl_mix",
    "position_schemes",
]


def test_registry_has_every_grid_of_the_issue():
    assert set(ISSUE_GRIDS) <= set(GRIDS)
    assert set(SCALES) == {"paper", "cpu", "cpu_recipe", "gpu", "smoke"}


@pytest.mark.parametrize("grid", ISSUE_GRIDS)
@pytest.mark.parametrize("scale", ["paper", "cpu", "smoke"])
def test_every_point_is_valid_distinct_and_tagged(grid, scale):
    cfgs = points(grid, scale, seeds=2)
    assert len(cfgs) == 2 * len(GRIDS[grid].points())
    names = {c.tracking.run_name for c in cfgs}
    assert len(names) == len(cfgs)
    for cfg in cfgs:
        tags = cfg.tracking.tags
        assert tags["grid"] == grid and tags["scale"] == scale
        assert tags["seed"] == str(cfg.train.seed) and cfg.data.seed == cfg.train.seed
        assert cfg.tracking.experiment == grid
        assert cfg.tracking.run_name == f"{tags['point']},seed={cfg.train.seed}"
        epochs = json.loads(tags["paper_epochs"])
        assert str(cfg.train.epochs) in epochs
        # round trip through the dict Tune carries
        assert ExperimentConfig.from_dict(cfg.to_dict()) == cfg


def test_mul_format_points_and_tables():
    cfgs = points("mul_format")
    got = {(c.data.format, c.data.max_digits): c.tracking.tags["paper_table"] for c in cfgs}
    assert got[("basic", 5)] == "tb:basic-5"
    assert got[("padding", 10)] == "tb:padding-10"
    assert got[("padding_reverse", 20)] == "tb:padding-20"
    # 15 and 20 digits exist for padding_reverse only
    assert {f for f, d in got if d in (15, 20)} == {"padding_reverse"}
    assert len(got) == 4 * 2 + 2


def test_paper_scale_is_the_papers_setup():
    mul = points("mul_format")[0]
    assert (mul.model.preset, mul.data.train_samples, mul.train.epochs, mul.train.lr) == (
        "gpt2-small",
        300_000,
        300,
        2e-5,
    )
    assert mul.train.loss_on == "all" and mul.model.init == "random"
    add = next(c for c in points("add_length") if c.model.init == "pretrained")
    assert (add.data.train_samples, add.train.epochs, add.data.min_digits, add.data.max_digits) == (
        120_000,
        5,
        2,
        10,
    )
    assert add.data.test_digits == [9, 10, 11, 12, 13]
    nl = points("nl_mix")[0]
    assert (nl.train.epochs, nl.train.eval_epochs, nl.data.mix_samples) == (100, [50, 100], 120_000)


def test_paper_scale_follows_hugging_face_defaults_where_the_paper_is_silent():
    """docs/SETTINGS.md: GPT2Config dropout, TrainingArguments' AdamW, no weight decay, linear decay
    without warm-up, GPT-2's tokenizer for random-init models too; cpu keeps its measured choices."""
    for cfg in points("mul_format")[:1] + points("add_length"):
        m, t = cfg.model, cfg.train
        assert (m.dropout, m.tokenizer, m.pretrained) == (0.1, "pretrained", "gpt2")
        assert (t.adam_beta1, t.adam_beta2, t.adam_eps, t.weight_decay) == (0.9, 0.999, 1e-8, 0.0)
        assert (t.schedule, t.warmup_steps, t.warmup_ratio) == ("linear", 0, 0.0)
    cpu = points("mul_format", "cpu")[0]
    assert (cpu.model.dropout, cpu.model.tokenizer, cpu.train.adam_beta2, cpu.train.warmup_ratio) == (
        0.0,
        "auto",
        0.95,
        0.05,
    )


def test_the_recursive_row_of_tb_acc_dataformat_is_the_reversed_addends_run():
    """The appendix's recursive scratchpad reverses the addends (and tab:fail shows it so)."""
    tagged = {
        (c.data.format, c.data.reverse_addends, c.model.init): c.tracking.tags["paper_table"]
        for c in points("add_length")
    }
    assert tagged[("recursive_scratchpad", True, "pretrained")] == "tb:acc_dataformat"
    assert tagged[("recursive_scratchpad", False, "pretrained")] == "none"
    assert tagged[("basic", False, "pretrained")] == tagged[("random_space", False, "pretrained")]


def test_every_paper_label_exists_in_the_papers_tables():
    with PAPER_TABLES.open() as f:
        tables = {row["table"] for row in csv.DictReader(f)}
    for grid in GRIDS.values():
        # a tuning grid of a scale's own settings (tiny-model tag widths) exists at that scale only
        for cfg in points(grid, "cpu" if grid.over_scale else "paper"):
            for label in cfg.tracking.tags["paper_table"].split(","):
                assert label == "none" or label.startswith("fig:") or label in tables, (grid.name, label)
        assert all(t.startswith("fig:") or t in tables for t in grid.paper_tables)


def test_coupled_points_are_explicit():
    names = [p.name for p in GRIDS["add_length"].points()]
    assert "format=recursive_scratchpad,reverse_addends=true,init=random" in names
    assert not any("reverse_addends" in n and "format=basic" in n for n in names)
    tasks = {c.data.task: c for c in points("position_schemes")}
    assert tasks["mul"].data.train_samples == 300_000 and tasks["add"].data.train_samples == 120_000


def test_nl_mix_labels_and_scaled_eval_epochs():
    by_mix = {c.data.mix_format: c.tracking.tags["paper_table"] for c in points("nl_mix")}
    assert by_mix["none"] == "tb:acc_nldia_a,tb:acc_nldia_b"
    assert by_mix["basic"].endswith("tb:acc_nldia_d")
    cpu = points("nl_mix", "cpu")[0]
    half, end = cpu.train.eval_epochs
    assert end == cpu.train.epochs and half == round(end / 2)
    assert json.loads(cpu.tracking.tags["paper_epochs"]) == {str(half): 50, str(end): 100}
    # the dialogue task keeps its 2-3 vs 4-5 digit split at every scale
    assert cpu.data.test_digits == [2, 3, 4, 5]


def test_cpu_scale_keeps_the_papers_dialogue_data_whole():
    for cfg in points("nl_mix", "cpu"):
        assert (cfg.data.dialogue_easy, cfg.data.dialogue_hard) == (12_200, 1_040)
        assert cfg.data.mix_samples == 120_000  # the 9:1 mixture of the paper, not capped
    mul = points("mul_format", "cpu")[0]  # other tasks do not read these counts: scaled like any data
    assert (mul.data.mix_samples, mul.data.dialogue_easy) == (4_000, 407)
    smoke = points("nl_mix", "smoke")[0]  # no dialogue fraction: the dialogues shrink like any data
    assert (smoke.data.dialogue_easy, smoke.data.dialogue_hard) == (12, 1)


def test_scales_shrink_but_keep_points_distinct():
    for grid in GRIDS.values():
        for scale in ("cpu", "smoke"):
            flats = [c.flat() for c in points(grid, scale)]
            varying = [{k: v for k, v in f.items() if not k.startswith("tracking.")} for f in flats]
            assert len({json.dumps(v, sort_keys=True) for v in varying}) == len(varying), (grid.name, scale)
    cpu = get_scale("cpu")
    assert [cpu.digits(n) for n in (1, 2, 5, 6, 10, 20)] == [1, 2, 3, 4, 5, 8]
    smoke = points("mul_format", "smoke")[0]
    assert smoke.model.preset == "nano" and smoke.data.train_samples <= 300 and smoke.train.epochs <= 2


@pytest.mark.parametrize("grid", ISSUE_GRIDS)
def test_cpu_scale_trains_every_task_for_its_step_budget(grid):
    scale = get_scale("cpu")
    for cfg in points(grid, "cpu"):
        t = cfg.train
        batches = -(-train_size(cfg.data) // t.batch_size)
        assert t.max_steps == scale.steps == 3000
        # just enough epochs for the budget: the run ends on max_steps in its last epoch
        assert (t.epochs - 1) * batches < t.max_steps <= t.epochs * batches
        assert t.checkpoint_every == max(1, t.epochs // 10)
        assert cfg.model.n_hash == 8 and cfg.model.preset == "tiny"


def test_a_new_budget_or_batch_moves_the_epochs_unless_epochs_are_given():
    base = points("mul_format", "cpu")[0]
    more = points("mul_format", "cpu", overrides={"train.max_steps": 6000, "train.batch_size": 32})[0]
    assert more.train.max_steps == 6000
    assert more.train.epochs * -(-base.data.train_samples // 32) >= 6000 > base.train.epochs * 313 - 313
    pinned = points("mul_format", "cpu", overrides={"train.max_steps": 6000, "train.epochs": 2})[0]
    assert pinned.train.epochs == 2


def test_over_scale_keys_beat_the_scale_and_the_rest_is_scaled():
    grid = Grid(
        name="tune_demo",
        description="a tuning grid of the scale's own settings",
        base={
            "data.task": "reverse",
            "data.format": "basic",
            "data.max_digits": 10,
            "data.train_samples": 120_000,
            "train.lr": 2e-5,
        },
        axes={"model.n_hash": [4, 16], "train.max_steps": [1000, 6000], "model.position": ["random_embed"]},
        over_scale=("model.n_hash", "train.max_steps"),
    )
    cfgs = points(grid, "cpu")
    assert sorted({(c.model.n_hash, c.train.max_steps) for c in cfgs}) == [
        (4, 1000),
        (4, 6000),
        (16, 1000),
        (16, 6000),
    ]
    for cfg in cfgs:
        assert cfg.train.lr == pytest.approx(2e-5 * get_scale("cpu").lr_factor)  # paper units, scaled
        assert cfg.data.max_digits == 5 and cfg.data.train_samples == 4000
        assert cfg.train.epochs * -(-4000 // 64) >= cfg.train.max_steps
    # without over_scale the scale's tag width wins over the point's
    plain = Grid(name="plain", description="", base=dict(grid.base), axes={"model.n_hash": [4]})
    assert points(plain, "cpu")[0].model.n_hash == 8


def test_a_variant_that_fixes_its_steps_names_the_papers_own_trial_beside_them():
    # add_posembed_recipe_24k runs 24,000 steps at every scale, paper included; the paper's own
    # add_posembed trial is far longer, and the report's "a trial at paper scale" must not hide it
    assert longest_trial("add_posembed_recipe_24k") == 24_000
    paper = longest_trial("add_posembed")
    assert paper > 24_000
    assert paper_trial("add_posembed_recipe_24k") == (
        f"24,000 steps (GPT-2 small); the variant fixes its steps at every scale: the paper's own trial "
        f"(add_posembed) is {paper:,}"
    )
    assert paper_trial("add_posembed") == f"{paper:,} steps (GPT-2 small)"
    # a variant that keeps the paper's steps says nothing more
    assert paper_trial("add_posembed_recipe") == f"{paper:,} steps (GPT-2 small)"


def test_a_grid_made_for_another_scale_and_refused_at_paper_scale_says_so_in_the_report():
    with pytest.raises(ConfigError):
        points("length_gen", "paper")
    assert paper_trial("length_gen") == "none: the grid is made for --scale cpu and refused at paper scale"


def test_one_function_builds_a_trial_in_the_documented_order():
    """sweeps.space.trial_config: defaults < base < point < scale < over_scale keys < --set < seed."""
    base = {"data.task": "reverse", "data.format": "basic", "data.max_digits": 10, "train.lr": 2e-5}
    grid = Grid(
        name="order",
        description="",
        base=base,
        axes={"train.max_steps": [1000], "model.n_hash": [4]},
        over_scale=("train.max_steps",),
    )
    (point,) = grid.points()
    cpu = get_scale("cpu")
    cfg = trial_config(grid, point, cpu)
    assert cfg.data.max_digits == 5 and cfg.train.lr == pytest.approx(2e-5 * cpu.lr_factor)  # the scale's
    assert cfg.train.max_steps == 1000 and cfg.model.n_hash == 8  # over_scale beats the scale; n_hash not
    assert cfg.train.epochs * -(-cfg.data.train_samples // cfg.train.batch_size) >= 1000  # refitted
    over = trial_config(grid, point, cpu, {"train.max_steps": 2000, "model.n_hash": 4}, seed=3)
    assert (over.train.max_steps, over.model.n_hash) == (2000, 4)  # --set beats both
    assert (over.train.seed, over.data.seed) == (3, cfg.data.seed + 3 - cfg.train.seed)  # the seed last
    assert over.tracking.run_name == "max_steps=1000,n_hash=4,seed=3" and over.tracking.tags["seed"] == "3"
    assert points(grid, cpu, seeds=1) == [cfg]


def test_train_size_counts_without_generating():
    for overrides in [
        {
            "data.task": "mul",
            "data.format": "padding_reverse",
            "data.max_digits": 3,
            "data.augment": "first_step",
        },
        {"data.task": "add_scratchpad", "data.format": "recursive_scratchpad", "data.max_digits": 4},
        {"data.task": "dialogue", "data.format": "basic", "data.dialogue_easy": 30, "data.dialogue_hard": 4},
        {
            "data.task": "dialogue",
            "data.format": "basic",
            "data.dialogue_easy": 30,
            "data.dialogue_hard": 4,
            "data.mix_format": "random_space",
            "data.mix_samples": 50,
        },
    ]:
        data = ExperimentConfig().with_overrides({"data.train_samples": 120, **overrides}).data
        assert train_size(data) == len(train_examples(data))


def test_overrides_seeds_and_precedence():
    cfgs = points("add_posembed", "smoke", seeds=3, overrides={"train.epochs": "1", "train.seed": "7"})
    assert [c.train.seed for c in cfgs[:3]] == [7, 8, 9]
    assert all(c.train.epochs == 1 for c in cfgs)
    with pytest.raises(ConfigError, match="valid keys"):
        points("add_posembed", "smoke", overrides={"train.nope": 1})
    with pytest.raises(ConfigError, match="seeds"):
        points("add_posembed", "smoke", seeds=0)
    # explicit seeds add seeds to an earlier sweep: the data seed moves with the training seed
    later = points("add_posembed", "smoke", seeds=parse_seeds("1,2"))
    assert [(c.train.seed, c.data.seed) for c in later[:2]] == [(1, 1), (2, 2)]
    assert parse_seeds("3") == 3 and parse_seeds("4,") == (4,)
    # a command line written for the record reads back as the seeds it ran: one explicit seed is not a count
    for seeds in (3, (100,), (100, 101)):
        assert parse_seeds(seeds_argument(seeds)) == seeds
    assert SweepPart("nl_mix", "gpu", (100,)).command().endswith("--seeds 100,")
    # ranges, both ends included, alone or in a list
    assert parse_seeds("20-23") == (20, 21, 22, 23) and parse_seeds("5,7-9") == (5, 7, 8, 9)
    assert parse_seeds("100-100") == (100,)
    for bad in ("2-1", ",", "-1", "a"):
        with pytest.raises(ConfigError, match="like 1,2"):
            parse_seeds(bad)
    # a bare 100 is seed 100 without its comma, not a hundred seeds (pre-search seeds start there)
    with pytest.raises(ConfigError, match=r"--seeds 100, \(with its comma\)"):
        parse_seeds("100")
    assert parse_seeds("99") == 99


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ConfigError, match="mul_format"):
        get_grid("mul_formats")
    with pytest.raises(ConfigError, match="paper, cpu, gpu, smoke"):
        get_scale("tpu")


def test_a_point_the_trainer_rejects_fails_naming_it():
    bad = Grid(
        "bad", "", base={"data.task": "mul"}, axes={"data.format": [Variant("x", {"data.format": "?"})]}
    )
    with pytest.raises(ConfigError, match=r"grid 'bad' point 'format=x'.*data.format"):
        points(bad, "smoke")


def test_cli_bad_input_fails_at_once(capsys):
    assert main(["--grid", "mul_formats"]) == 2
    err = capsys.readouterr().err
    assert "choose one of: " in err and "mul_format," in err
    assert main(["--grid", "nl_mix", "--scale", "tiny"]) == 2
    assert "paper, cpu, gpu, smoke" in capsys.readouterr().err
    assert main(["--grid", "nl_mix", "--set", "model.positions=none"]) == 2
    assert "valid keys" in capsys.readouterr().err
    assert main(["--grid", "nl_mix", "--set", "novalue"]) == 2
    assert "key=value" in capsys.readouterr().err
    assert main([]) == 2
    assert "--grid is required" in capsys.readouterr().err


def test_unreachable_tracking_server_fails_naming_the_uri(capsys, tmp_path):
    uri = "http://127.0.0.1:9"  # the discard port: nothing listens
    rc = main(
        ["--grid", "add_posembed", "--scale", "smoke", "--tracking-uri", uri, "--storage-path", str(tmp_path)]
    )
    assert rc == 2
    assert uri in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing started


def test_list_and_dry_run(capsys, tmp_path):
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    for name in ISSUE_GRIDS:
        assert name in out
    assert "tb:padding-20" in out
    # the lab's recipe searches `python -m lab.sweep --search NAME` takes, with what they serve and where
    # ASHA compares
    assert lab_sweep(["--list"]) == 0
    out = capsys.readouterr().out
    assert "search mul_format_recipe  (24 configurations)" in out
    assert "for: mul_format; ASHA at 10 / 30 / 90 core-minutes; pre-search seeds 100" in out
    assert (
        main(
            [
                "--grid",
                "mul_format",
                "--scale",
                "cpu",
                "--seeds",
                "2",
                "--dry-run",
                "--tracking-uri",
                f"sqlite:///{tmp_path}/m.db",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "20 trials" in out and "format=padding_reverse,max_digits=20" in out
    assert not (tmp_path / "m.db").exists()  # a dry run touches nothing


def test_only_runs_the_matching_points(capsys, tmp_path):
    uri = f"sqlite:///{tmp_path}/m.db"
    args = ["--grid", "reverse_posembed", "--scale", "cpu", "--dry-run", "--tracking-uri", uri]
    assert main([*args, "--only", "model.init=random"]) == 0
    out = capsys.readouterr().out
    assert "5 trials" in out and "init=pretrained" not in out
    assert main([*args, "--only", "model.init=random", "--only", "model.position=none"]) == 0
    assert "2 trials" in capsys.readouterr().out
    assert main([*args, "--only", "model.init=scratch"]) == 2
    assert "matches none of the grid's 8 points" in capsys.readouterr().err
    assert main([*args, "--only", "model.inti=random"]) == 2
    assert "unknown key" in capsys.readouterr().err


def test_only_picks_points_before_set_moves_them(capsys, tmp_path):
    """`--only` reads the points as the scale makes them; `--set` then applies to those it kept, so it
    neither unpicks them nor fails on a point left out (nl_mix's dialogue-alone runs 308 epochs at the gpu
    scale, its mixed points 31: evaluation epochs set for the first do not exist in the others)."""
    uri = f"sqlite:///{tmp_path}/m.db"
    args = ["--grid", "nl_mix", "--scale", "gpu", "--dry-run", "--tracking-uri", uri]
    epochs = "train.eval_epochs=[77,154,231,308]"
    assert main([*args, "--only", "data.mix_format=none", "--set", epochs]) == 0
    out = capsys.readouterr().out.split("Every setting's source")[0]  # the trial table
    assert "3 trials" in out and "random_space" not in out
    assert main([*args, "--set", epochs]) == 2  # every point: the mixed ones have 31 epochs
    assert "fall outside 1..train.epochs=31" in capsys.readouterr().err
    # a --set of the --only key moves the kept points and keeps them
    moved = points(
        "mul_format", "cpu", overrides={"data.format": "padding_reverse"}, only={"data.format": "basic"}
    )
    assert len(moved) == len(points("mul_format", "cpu", only={"data.format": "basic"})) > 0
    assert all(c.data.format == "padding_reverse" and "format=basic" in c.tracking.run_name for c in moved)


def test_one_setting_named_twice_in_only_keeps_either_value(capsys, tmp_path):
    """`--only k=a --only k=b` keeps the points with a or b (a plan part of two schemes); settings apart must
    all match. It once kept b alone, silently: the second value overwrote the first."""
    assert parse_only(["model.position=none", "model.position=learned", "data.max_digits=5"]) == {
        "model.position": ("none", "learned"),
        "data.max_digits": ("5",),
    }
    with pytest.raises(ConfigError, match="key=value"):
        parse_only(["model.position"])
    two = points(
        "add_posembed_recipe_24k",
        "cpu_recipe",
        (101,),
        only=parse_only(["model.position=none", "model.position=random_embed"]),
    )
    assert sorted(c.model.position for c in two) == ["none", "random_embed"]
    # a str value is one value, never matched as a substring of the config's ("learned" is no "learnedx")
    assert points("add_posembed_recipe_24k", "cpu_recipe", (101,), only={"model.position": "learned"})
    with pytest.raises(SweepError, match="matches none"):
        points("add_posembed_recipe_24k", "cpu_recipe", (101,), only={"model.position": "learnedx"})
    # the command line: the dry run lists both schemes' trials and no other
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    args = ["--grid", "add_posembed_recipe_24k", "--scale", "cpu_recipe", "--seeds", "101,102", "--dry-run"]
    only = ["--only", "model.position=none", "--only", "model.position=learned"]
    assert main([*args, *only, "--tracking-uri", uri]) == 0
    out = capsys.readouterr().out
    assert "4 trials" in out and "random_embed" not in out


def test_a_local_bf16_sweep_says_when_this_cpu_has_no_bf16_hardware(capsys, tmp_path, monkeypatch):
    """bf16 trials on a CPU without bf16 hardware run at about fp32 speed: the sweep says so before they
    start (a dry run too), and says nothing where the CPU has it, the trials are fp32, or they run
    elsewhere (a GPU each, a cluster)."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    args = ["--grid", "add_posembed_recipe_24k", "--scale", "cpu_recipe", "--seeds", "1", "--dry-run"]
    for native, precision, said in ((False, "bf16", True), (True, "bf16", False), (False, "fp32", False)):
        monkeypatch.setattr(hardware, "cpu_has_native_bf16", lambda native=native: native)
        assert main([*args, "--set", f"train.precision={precision}", "--tracking-uri", uri]) == 0
        err = capsys.readouterr().err
        assert ("no bf16 hardware (AVX512-BF16 or AMX): 3 of the 3 trials train in bf16" in err) == said, err
    monkeypatch.setattr(hardware, "cpu_has_native_bf16", lambda: False)
    configs = build_configs(GRIDS["add_posembed_recipe_24k"], SCALES["cpu_recipe"], SweepOptions(), uri)
    assert cluster.emulated_bf16_note(configs, 0.0, None)
    assert cluster.emulated_bf16_note(configs, 0.25, None) is None  # a GPU each
    assert cluster.emulated_bf16_note(configs, 0.0, "auto") is None  # a cluster's workers, not this CPU


def test_trial_table_shows_config_and_resources(tmp_path):
    options = SweepOptions(sets=(f"model.pretrained={tmp_path}",))
    configs = build_configs(GRIDS["reverse_posembed"], SCALES["smoke"], options, "sqlite:////x.db")
    table = trial_table(configs, {"cpu": 1.0, "gpu": 0.25})
    assert len(table) == len(configs) == 8
    assert {"point", "seed", "paper_table", "position", "init", "epochs", "lr", "cpus", "gpus"} <= set(
        table.columns
    )
    assert (table["gpus"] == 0.25).all()
    first = next(iter(configs.values()))
    assert first.model.pretrained == str(tmp_path.resolve())
    assert first.tracking.tracking_uri == "sqlite:////x.db"


def test_a_failed_trial_counts_once_whether_tune_or_its_run_says_so(tmp_path):
    """Tune's errored trials (retries exhausted) and the FAILED runs overlap: a trial whose every attempt
    raised is both. Counted twice it left a negative count of unfinished trials, reported as interrupted."""
    from arith.tracking import store

    uri = f"sqlite:///{tmp_path}/m.db"
    configs = build_configs(GRIDS["mul_simple_case"], SCALES["smoke"], SweepOptions(), uri)
    keys = list(configs)  # four trials
    parent = store.open_parent_run(uri, "mul_simple_case", "sweep", {"sweep": "1"})
    client = store.client(uri)
    experiment = client.get_experiment_by_name("mul_simple_case").experiment_id
    for key, status in zip(keys, ["FINISHED", "FAILED", "RUNNING"], strict=False):
        name = configs[key].tracking.run_name
        run = client.create_run(experiment, run_name=name, tags={"mlflow.parentRunId": parent})
        if status != "RUNNING":
            client.set_terminated(run.info.run_id, status=status)
    # the FAILED trial errored in Tune too; the RUNNING one's worker died with its last attempt
    assert trial_outcomes(uri, parent, configs, errored=keys[1:3]) == (1, 2)
    assert trial_outcomes(uri, parent, configs) == (1, 1)  # an interrupted sweep: Tune saw no error


def test_relative_sqlite_uri_becomes_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert absolute_uri("sqlite:///m.db") == f"sqlite:///{tmp_path}/m.db"
    assert absolute_uri("sqlite:////abs/m.db") == "sqlite:////abs/m.db"
    assert absolute_uri("http://host:5000") == "http://host:5000"


@pytest.mark.parametrize("entry", [["sweeps/run.py"], ["-m", "sweeps.run"]])
def test_runs_as_script_and_module(entry):
    out = subprocess.run(
        [sys.executable, *entry, "--list"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "nl_mix" in out
