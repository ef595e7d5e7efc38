"""The tasks: one object per task holds everything the rest of the code asks about it.

A `Task` knows its formats, how one line of each is rendered (`line`, `example`), its training and
test sets under the paper's protocol, its default test digits and sizes, what exact match compares
(`answer_key`), what makes two lines the same problem (`problem_id`), which settings it accepts
(`check`), and which way each number of a line is written (`digit_order`, what position coupling
needs). Config validation, the data layer, the model and the evaluator read `TASKS`; adding a task is
its class (here or in a module of its own) plus one entry in `TASKS` (docs/DESIGN.md, "Add a task").

The line functions themselves stay in `arith.formats` and the samplers in `arith.sampling` /
`arith.dialogue`; a task class wires its own together.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from arith import formats, sampling
from arith.config import DataConfig
from arith.dialogue import dialogue_test, dialogue_train
from arith.errors import ConfigError
from arith.examples import Example

#: the order a number's digits are written in: most or least significant first
MSD, LSD = "msd", "lsd"


class Task:
    """Base class: a two-operand task whose answer is the digits of a number (exact match on them)."""

    name = "base"
    #: the task's data formats; the first is the default of `arith.data.generate`
    formats: tuple[str, ...] = ()
    #: operands of a line (a and b; reversal has a only)
    operands = 2
    #: keyword options `line` accepts (`render(..., max_digits=5)`)
    options: frozenset[str] = frozenset()
    #: formats whose numbers are written as `arith.formats.DIRECT_FORMATS` says (padded operands,
    #: reversed answer): what the padding check and position coupling read
    direct: frozenset[str] = frozenset()
    #: the paper's sizes and training digit ranges (the data CLI's and `generate`'s defaults)
    paper_defaults: ClassVar[Mapping[str, Any]] = {}
    #: the first element of a problem_id: tasks that pose the same question share it (every addition
    #: task and the dialogues: "+"), so `seen_in_train` finds a sum whatever its format
    question = "+"
    #: DataConfig fields that only some tasks read: field -> its value when unused
    OWN_SETTINGS: ClassVar[Mapping[str, Any]] = {"augment": "none", "mix_format": "none"}
    #: the OWN_SETTINGS fields this task reads
    settings: frozenset[str] = frozenset()

    # --- lines -------------------------------------------------------------------------------------------

    def line(self, fmt: str, a: int, b: int | None, **options) -> tuple[str, str, str]:
        """(prompt, answer, key) of one line in `fmt`."""
        raise NotImplementedError

    def example(
        self, fmt: str, a: int, b: int | None, *, kind: str = "main", cell=None, **options
    ) -> Example:
        prompt, answer, key = self.line(fmt, a, b, **options)
        return Example(self.name, fmt, a, b, prompt, answer, key, kind, cell)

    # --- data sets ---------------------------------------------------------------------------------------

    def train_set(self, cfg: DataConfig) -> list[Example]:
        raise NotImplementedError

    def test_set(self, cfg: DataConfig) -> list[Example]:
        raise NotImplementedError

    def train_size(self, cfg: DataConfig) -> int:
        """Lines in the training set, without generating it."""
        return cfg.train_samples

    def sized(self, count: int) -> dict[str, Any]:
        """The DataConfig fields that make a training set of `count` lines (the data CLI's --count)."""
        return {"train_samples": count}

    def default_test_digits(self, cfg: DataConfig) -> list[int]:
        """The paper's test cells when cfg.test_digits is empty: the training range."""
        return list(range(cfg.min_digits, cfg.max_digits + 1))

    # --- checks ------------------------------------------------------------------------------------------

    def check(self, cfg: DataConfig) -> None:
        """Raise ConfigError for a setting this task does not read or cannot produce."""
        for name, unused in self.OWN_SETTINGS.items():
            value = getattr(cfg, name)
            if value != unused and name not in self.settings:
                readers = [t.name for t in TASKS.values() if name in t.settings]
                raise ConfigError(
                    f"data.{name}={value!r} applies to task {' or '.join(map(repr, readers))} only "
                    f"(task is {self.name!r})"
                )

    def check_data(self, cfg: DataConfig) -> None:
        """Checks that need the test digits (the data layer's `validate_data`)."""
        padded = cfg.format in self.direct and formats.DIRECT_FORMATS[cfg.format].padded
        if padded and max(sampling.test_digits(cfg)) > cfg.max_digits:
            raise ConfigError(
                f"format {cfg.format!r} pads operands to max_digits={cfg.max_digits}; "
                f"test digits {sampling.test_digits(cfg)} must not exceed it"
            )

    # --- reading answers ---------------------------------------------------------------------------------

    def answer_key(self, fmt: str, completion: str) -> str | None:
        """What exact match compares with `Example.key`: the answer's digits, spaces dropped (leading
        zeros kept, as padded and reversed formats need), read up to the first newline or end-of-text."""
        return formats.digits_key(formats.first_line(completion))

    def problem_id(self, example: Example) -> tuple:
        """What makes two examples the same problem, whatever the format or random spaces."""
        if example.b is None:
            return ("text", " ".join(example.prompt.split()))
        return (self.question, example.a, example.b)

    # --- structure ---------------------------------------------------------------------------------------

    def digit_order(self, fmt: str) -> tuple[str, ...]:
        """For each number of a line (operands, then the answer): MSD or LSD first. Position coupling
        reads it. Defined for the direct formats with a reversed answer (operands MSD first, answer
        LSD first); any other format raises ConfigError: scratchpads, reversal and dialogues have no
        operand-answer digit alignment, and an answer written most significant digit first has digits
        whose significance is unknown until it ends, which decoding cannot wait for."""
        reversed_formats = [
            f for f in self.formats if f in self.direct and formats.DIRECT_FORMATS[f].reversed_answer
        ]
        if not reversed_formats:
            raise ConfigError(
                f"position coupling needs the significance of every digit; task {self.name!r} does not "
                f"define it (add and mul do, with a reversed answer)"
            )
        if fmt not in reversed_formats:
            raise ConfigError(
                f"position coupling needs the answer written least significant digit first; {self.name} "
                f"format {fmt!r} does not, so a digit's significance is unknown until the answer ends. "
                f"Use format {' or '.join(map(repr, reversed_formats))}"
            )
        return (MSD, MSD, LSD)


class Mul(Task):
    """Multiplication (section 3.1, appendix A): ``a * b # a·b`` in four formats, with augmentations."""

    name = "mul"
    formats = ("basic", "reverse_product", "padding", "padding_reverse")
    options = frozenset({"max_digits", "first_step"})
    direct = frozenset(formats)
    paper_defaults: ClassVar[Mapping[str, Any]] = {"train_samples": 300_000, "min_digits": 1, "max_digits": 5}
    settings = frozenset({"augment"})

    def line(self, fmt, a, b, **options):
        return formats.mul_line(fmt, a, b, **options)

    def example(self, fmt, a, b, *, kind="main", cell=None, **options):
        if options.get("first_step"):
            kind = "first_step"
        return super().example(fmt, a, b, kind=kind, cell=cell, **options)

    def train_set(self, cfg):
        return sampling.mul_train(cfg)

    def test_set(self, cfg):
        return sampling.mul_test(cfg)

    def problem_id(self, example):
        return ("%" if example.kind == "first_step" else "*", example.a, example.b)


class AddScratchpad(Task):
    """Addition with a scratchpad (section 3.1, appendix B): digit-wise steps, then the sum."""

    name = "add_scratchpad"
    formats = ("basic", "random_space", "recursive_scratchpad")
    options = frozenset({"reverse_addends", "rng", "random_space_prob", "spaces"})
    paper_defaults: ClassVar[Mapping[str, Any]] = {
        "train_samples": 120_000,
        "min_digits": 2,
        "max_digits": 10,
    }

    def line(self, fmt, a, b, **options):
        return formats.scratchpad_line(fmt, a, b, **options)

    def train_set(self, cfg):
        return sampling.add_scratchpad_train(cfg)

    def test_set(self, cfg):
        return sampling.add_scratchpad_test(cfg)

    def default_test_digits(self, cfg):
        """The paper trains on 2..10 digits and tests on 9..13: max-1 .. max+3."""
        return list(range(max(1, cfg.max_digits - 1), cfg.max_digits + 4))

    def answer_key(self, fmt, completion):
        """The final sum, after the last comma (after ``=`` in the recursive format)."""
        return formats.scratchpad_key(fmt, formats.first_line(completion))


class Reverse(Task):
    """Digit reversal (section 3.2): ``1 2 3 # 3 2 1``; one operand, no b."""

    name = "reverse"
    operands = 1
    formats = ("basic",)
    options = frozenset({"digits"})
    paper_defaults: ClassVar[Mapping[str, Any]] = {
        "train_samples": 120_000,
        "min_digits": 2,
        "max_digits": 10,
    }

    def line(self, fmt, a, b=None, **options):
        return formats.reverse_line(a, **options)

    def example(self, fmt, a, b=None, *, kind="main", cell=None, **options):
        return super().example(fmt, a, None, kind=kind, cell=cell, **options)

    def train_set(self, cfg):
        return sampling.reverse_train(cfg)

    def test_set(self, cfg):
        return sampling.reverse_test(cfg)

    def default_test_digits(self, cfg):
        """Regular and repetitive numbers from the fewest training digits to six beyond the most."""
        return list(range(cfg.min_digits, cfg.max_digits + 7))

    def problem_id(self, example):
        """The digits as written (leading zeros included)."""
        return ("reverse", "".join(ch for ch in example.prompt if ch.isdigit()))


class Add(Task):
    """Plain addition (the nl_mix arithmetic; padding_reverse after Lee et al. 2023)."""

    name = "add"
    formats = ("basic", "random_space", "padding_reverse")
    options = frozenset({"max_digits", "rng", "spaces"})
    direct = frozenset({"basic", "padding_reverse"})
    paper_defaults: ClassVar[Mapping[str, Any]] = {"train_samples": 120_000, "min_digits": 1, "max_digits": 3}

    def line(self, fmt, a, b, **options):
        return formats.add_line(fmt, a, b, **options)

    def train_set(self, cfg):
        return sampling.add_train(cfg)

    def test_set(self, cfg):
        return sampling.add_test(cfg)


class Dialogue(Task):
    """Student-teacher dialogues about sums (section 4, nl_mix), optionally mixed with plain additions."""

    name = "dialogue"
    formats = ("basic",)
    paper_defaults: ClassVar[Mapping[str, Any]] = {}
    settings = frozenset({"mix_format"})
    #: the test protocol: sums of 2..5-digit numbers (appendix C)
    TEST_DIGITS = (2, 3, 4, 5)
    #: the paper's dialogue counts (2-3-digit, 4-5-digit), by which a --count is split
    SPLIT = (12_200, 1_040)

    def line(self, fmt, a, b, **options):
        return formats.dialogue_line(a, b)

    def train_set(self, cfg):
        return dialogue_train(cfg)

    def test_set(self, cfg):
        return dialogue_test(cfg)

    def train_size(self, cfg):
        if cfg.dialogue_file:
            dialogues = len(self.train_set(dataclasses.replace(cfg, mix_format="none")))
        else:
            dialogues = cfg.dialogue_easy + cfg.dialogue_hard
        return dialogues + (cfg.mix_samples if cfg.mix_format != "none" else 0)

    def sized(self, count):
        easy = round(count * self.SPLIT[0] / sum(self.SPLIT))
        return {"dialogue_easy": easy, "dialogue_hard": count - easy}

    def default_test_digits(self, cfg):
        return list(self.TEST_DIGITS)

    def check_data(self, cfg):
        super().check_data(cfg)
        counts = (cfg.dialogue_easy, cfg.dialogue_hard)
        if not cfg.dialogue_file and (min(counts) < 0 or sum(counts) < 1):
            raise ConfigError(
                "data.dialogue_easy and data.dialogue_hard must be >= 0 with at least one dialogue"
            )
        if cfg.mix_format != "none" and cfg.mix_samples < 1:
            raise ConfigError(f"data.mix_samples must be >= 1 with mix_format={cfg.mix_format!r}")

    def answer_key(self, fmt, completion):
        """The last number of the teacher's reply (which may open with a line break)."""
        return formats.dialogue_key(formats.first_line(completion.lstrip()))


#: every task by its `data.task` name; adding one is its class plus one entry here
TASKS: dict[str, Task] = {task.name: task for task in (Mul(), AddScratchpad(), Reverse(), Add(), Dialogue())}


def get_task(name: str) -> Task:
    """The registered task called `name`; an unknown name fails listing the valid ones."""
    if name not in TASKS:
        raise ConfigError(f"data.task={name!r} is not valid; choose one of: {', '.join(TASKS)}")
    return TASKS[name]
