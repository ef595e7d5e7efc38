"""The experiment config: round trips, overrides, and rejection of impossible settings before training."""

from __future__ import annotations

import json

import pytest

from arith.config import ConfigError, ExperimentConfig
from arith.overrides import parse_set
from arith.validation import validate


def test_round_trip_through_dict_json_and_yaml(tmp_path):
    cfg = ExperimentConfig().with_overrides(
        {"data.task": "mul", "data.format": "padding", "data.max_digits": 5}
    )
    assert ExperimentConfig.from_dict(json.loads(cfg.to_json())) == cfg
    path = tmp_path / "c.yaml"
    path.write_text("data:\n  task: mul\n  format: padding\n  max_digits: 5\n")
    assert ExperimentConfig.load(path) == cfg
    (tmp_path / "c.json").write_text(cfg.to_json())
    assert ExperimentConfig.load(tmp_path / "c.json") == cfg


def test_overrides_parse_strings_to_field_types():
    cfg = ExperimentConfig().with_overrides(
        parse_set(
            [
                "data.max_digits=7",
                "data.one_digit_weight=0.2",
                "train.compile=true",
                "train.eval_epochs=50,100",
                "model.n_layer=none",
                "data.test_digits=[9, 10]",
                'tracking.tags={"grid": "nl_mix"}',
            ]
        )
    )
    assert cfg.data.max_digits == 7 and cfg.data.one_digit_weight == 0.2 and cfg.train.compile is True
    assert (
        cfg.train.eval_epochs == [50, 100] and cfg.model.n_layer is None and cfg.data.test_digits == [9, 10]
    )
    assert cfg.tracking.tags == {"grid": "nl_mix"}


def test_flat_keys_cover_every_field_and_print():
    cfg = ExperimentConfig()
    flat = cfg.flat()
    assert "data.format" in flat and "model.position" in flat and "train.lr" in flat
    assert str(cfg).count("\n") == len(flat) - 1


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"data.task": "division"}, "choose one of: mul, add_scratchpad"),
        (
            {"data.task": "mul", "data.format": "random_space"},
            "basic, reverse_product, padding, padding_reverse",
        ),
        ({"model.position": "rotary"}, "learned, none, random_embed, randomized, abacus"),
        ({"model.position": "random_embed", "model.n_hash": 6}, "multiple of n_head"),
        ({"model.position": "random_embed", "model.n_hash": 128}, "smaller than n_embd"),
        ({"data.max_digits": 0}, "min_digits <= max_digits"),
        ({"data.one_digit_weight": -1}, ">= 0"),
        ({"data.augment": "first_step"}, "task 'mul' only"),
        ({"train.epochs": 10, "train.eval_epochs": [5, 20]}, "outside 1..train.epochs"),
        ({"model.n_head": 3}, "n_head | n_embd"),
        ({"train.curriculum": 1.0}, "a fraction of the steps"),
    ],
)
def test_impossible_configs_fail_at_validation(overrides, message):
    with pytest.raises(ConfigError, match=message.replace("|", r"\|")):
        validate(ExperimentConfig().with_overrides(overrides))


def test_unknown_keys_and_bad_values_name_the_valid_ones():
    with pytest.raises(ConfigError, match=r"valid keys: data\.task"):
        ExperimentConfig().with_overrides({"data.maxdigits": 3})
    with pytest.raises(ConfigError, match="cannot read 'many' as int"):
        ExperimentConfig().with_overrides({"data.max_digits": "many"})
    with pytest.raises(ConfigError, match="key=value"):
        parse_set(["data.max_digits"])
