"""The task registry: what each task answers for the rest of the code, and the add-a-task recipe."""

from __future__ import annotations

import pytest

from arith.config import ConfigError, DataConfig, ExperimentConfig
from arith.data import formats, sampling, tasks
from arith.data.datasets import PAPER_DEFAULTS, test_examples, train_examples
from arith.data.examples import Example
from arith.data.tasks import (
    TASK_FORMATS,
    TASKS,
    Task,
    answer_key,
    get_task,
    problem_id,
    render_example,
    render_line,
)
from arith.data.tasks.base import LSD, MSD
from arith.validation import validate


def test_the_registry_is_what_config_and_data_read():
    assert list(TASKS) == ["mul", "add_scratchpad", "reverse", "add", "dialogue"]
    assert {name: task.formats for name, task in TASKS.items()} == TASK_FORMATS
    assert PAPER_DEFAULTS["mul"] == {"train_samples": 300_000, "min_digits": 1, "max_digits": 5}
    with pytest.raises(ConfigError, match="choose one of: mul, add_scratchpad, reverse, add, dialogue"):
        get_task("division")


@pytest.mark.parametrize(
    ("task", "fmt", "order"),
    [
        ("mul", "padding_reverse", (MSD, MSD, LSD)),
        ("mul", "reverse_product", (MSD, MSD, LSD)),
        ("add", "padding_reverse", (MSD, MSD, LSD)),
        ("mul", "basic", None),
        ("mul", "padding", None),
        ("add", "basic", None),
        ("add", "random_space", None),
        ("add_scratchpad", "recursive_scratchpad", None),
        ("reverse", "basic", None),
        ("dialogue", "basic", None),
    ],
)
def test_digit_order_is_defined_for_reversed_answers_only(task, fmt, order):
    if order is None:
        with pytest.raises(ConfigError, match="position coupling"):
            get_task(task).digit_order(fmt)
    else:
        assert get_task(task).digit_order(fmt) == order


def test_padding_is_one_definition_read_by_every_padded_format():
    assert formats.DIRECT_FORMATS["padding_reverse"] == formats.Direct(padded=True, reversed_answer=True)
    assert render_line("add", "padding_reverse", 48, 4, max_digits=3) == "0 4 8 + 0 0 4 = 2 5 0 0"
    with pytest.raises(ConfigError, match="must not exceed it"):
        train_examples(DataConfig(task="add", format="padding_reverse", max_digits=3, test_digits=[4]))


# --- the add-a-task recipe (docs/DESIGN.md) ----------------------------------------------------------------


def sub_line(a: int, b: int) -> tuple[str, str, str]:
    """``a - b = |a-b|``: a task beyond the paper, written as a new task's module would write it."""
    d = abs(a - b)
    return f"{formats.spaced(str(a))} - {formats.spaced(str(b))} =", " " + formats.spaced(str(d)), str(d)


class Sub(Task):
    name = "sub"
    formats = ("basic",)
    question = "-"

    def line(self, fmt, a, b, **options):
        return sub_line(a, b)

    def train_set(self, cfg):
        rng = sampling.generator(cfg.seed, "train")
        digits = rng.integers(cfg.min_digits, cfg.max_digits + 1, size=cfg.train_samples)
        pairs = zip(sampling.with_digits(rng, digits), sampling.with_digits(rng, digits), strict=True)
        return [self.example("basic", a, b) for a, b in pairs]

    def test_set(self, cfg):
        rng = sampling.generator(cfg.seed, "test")
        out = []
        for n in tasks.test_digits(cfg):
            a_list, b_list = (sampling.with_digits(rng, [n] * cfg.test_per_cell) for _ in range(2))
            out += [
                self.example("basic", a, b, cell=("main", None, n))
                for a, b in zip(a_list, b_list, strict=True)
            ]
        return out


def test_a_task_is_one_class_plus_one_registration(monkeypatch):
    monkeypatch.setitem(TASKS, "sub", Sub())
    cfg = DataConfig(task="sub", format="basic", max_digits=3, train_samples=50, test_per_cell=4)
    validate(ExperimentConfig(data=cfg))
    train, test = train_examples(cfg), test_examples(cfg)
    assert len(train) == 50 and {e.cell for e in test} == {("main", None, n) for n in (1, 2, 3)}
    e = render_example("sub", "basic", 17, 40)
    assert e == Example("sub", "basic", 17, 40, "1 7 - 4 0 =", " 2 3", "23")
    assert answer_key("sub", "basic", " 2 3<|endoftext|>") == "23" and problem_id(e) == ("-", 17, 40)
    with pytest.raises(ConfigError, match="applies to task 'mul' only"):
        validate(ExperimentConfig(data=DataConfig(task="sub", format="basic", augment="first_step")))
