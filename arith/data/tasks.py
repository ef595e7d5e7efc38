"""The tasks: one object per task holds everything the rest of the code asks about it.

A `Task` knows its formats, how one line of each is rendered (`line`, `example`), its training and
test sets under the paper's protocol, its default test digits and sizes, what exact match compares
(`answer_key`), what makes two lines the same problem (`problem_id`), which settings it accepts
(`check`), and which way each number of a line is written (`digit_order`, what position coupling
needs). Config validation, the data layer, the model and the evaluator read `TASKS`; adding a task is
its class (here or in a module of its own) plus one entry in `TASKS` (docs/DESIGN.md, "Add a task").

The line functions themselves stay in `arith.data.formats` and the samplers in `arith.data.sampling` /
`arith.data.dialogue`; a task class wires its own together. The functions that take a task's name
(`render`, `answer_key`, `problem_id`, `test_digits`) live here, beside the registry they look up, so
that formats and samplers never import the registry. Every rule that depends on the task is a method
of its class: the rest of the project asks the task rather than comparing its name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from arith.config import (
    AUGMENTS,
    MIX_FORMATS,
    ConfigError,
    DataConfig,
    DialogueSettings,
    MulSettings,
    NoSettings,
    ScratchpadSettings,
    choice,
)
from arith.data import formats, sampling
from arith.data.dialogue import dialogue_test, dialogue_train, longest_teacher_reply
from arith.data.examples import Example
from arith.data.formats import _check_operand

#: the order a number's digits are written in: most or least significant first
MSD, LSD = "msd", "lsd"


class Task:
    """Base class: a two-operand task whose answer is the digits of a number (exact match on them)."""

    name = "base"
    #: the task's data formats; the first is the default of `arith.data.datasets.generate`
    formats: tuple[str, ...] = ()
    #: operands of a line (a and b; reversal has a only)
    operands = 2
    #: keyword options `line` accepts (`render(..., max_digits=5)`)
    options: frozenset[str] = frozenset()
    #: formats whose numbers are written as `arith.data.formats.DIRECT_FORMATS` says (padded operands,
    #: reversed answer): what the padding check and position coupling read
    direct: frozenset[str] = frozenset()
    #: the paper's sizes and training digit ranges (the data CLI's and `generate`'s defaults)
    paper_defaults: ClassVar[Mapping[str, Any]] = {}
    #: the first element of a problem_id: tasks that pose the same question share it (every addition
    #: task and the dialogues: "+"), so `seen_in_train` finds a sum whatever its format
    question = "+"
    #: the `data.*` config fields only this task reads, with their defaults (an arith.config class)
    Settings: ClassVar[type] = NoSettings
    #: Settings fields that a task not reading them must leave at their default (the others are harmless)
    EXCLUSIVE: ClassVar[tuple[str, ...]] = ("augment", "mix_format")
    #: what the answer is of the two operands, for the carry chains of digit errors: "sum", "product", or
    #: "" (no carries: the answer is not an arithmetic result of the operands)
    carries: ClassVar[str] = "sum"
    #: the operator a typed problem is written with (`python -m arith.ask RUN "12+34"`); "" = none
    operator: ClassVar[str] = ""
    #: the report's table layout for its cells: "grid" (digits of a x digits of b), "contexts" (one panel
    #: per test context, read at the paper's epochs) or "length" (accuracy by digit count)
    layout: ClassVar[str] = "length"
    #: the task's name in analysis/paper_tables.csv (None: the paper has no table of it)
    paper_name: ClassVar[str | None] = None
    #: the paper reads this task's runs at given epochs (nl_mix: 50 and 100), not only at the end
    paper_reads_epochs: ClassVar[bool] = False
    #: the paper's tables of this task differ by the training digits (multiplication: 5 vs 10)
    paper_by_max_digits: ClassVar[bool] = False

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

    def reads(self, name: str) -> bool:
        """Whether the `data.<name>` field is one of this task's own Settings (a scale shrinks a dialogue
        count only for the task that reads it)."""
        return name in _fields(self.Settings)

    def reply_tokens(self, tokenizer, example: Example, answer_tokens: int) -> int:
        """The longest reply (in tokens) the data can give to `example` whose reference answer has
        `answer_tokens`: direct formats and plain scratchpads write one reply per problem."""
        return answer_tokens

    def typed_example(self, cfg: DataConfig, a: int, b: int) -> Example:
        """The typed problem `a <operator> b` rendered as a test line of `cfg` (`python -m arith.ask`)."""
        raise ConfigError(f"task {self.name!r} takes no typed problem")

    def paper_format(self, fmt: str, mix_format: str) -> str | None:
        """The paper's name for this data (paper_tables.csv's format column)."""
        return fmt

    # --- checks ------------------------------------------------------------------------------------------

    def check(self, cfg: DataConfig) -> None:
        """Raise ConfigError for a setting this task does not read or cannot produce."""
        for name in self.EXCLUSIVE:
            value = getattr(cfg, name)
            if value != _DEFAULTS[name] and name not in _fields(self.Settings):
                readers = [t.name for t in TASKS.values() if name in _fields(t.Settings)]
                raise ConfigError(
                    f"data.{name}={value!r} applies to task {' or '.join(map(repr, readers))} only "
                    f"(task is {self.name!r})"
                )

    def check_data(self, cfg: DataConfig) -> None:
        """Checks that need the test digits (the data layer's `validate_data`)."""
        padded = cfg.format in self.direct and formats.DIRECT_FORMATS[cfg.format].padded
        if padded and max(test_digits(cfg)) > cfg.max_digits:
            raise ConfigError(
                f"format {cfg.format!r} pads operands to max_digits={cfg.max_digits}; "
                f"test digits {test_digits(cfg)} must not exceed it"
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
    Settings = MulSettings
    carries = "product"
    operator = "*"
    layout = "grid"
    paper_name = "mul"
    paper_by_max_digits = True

    def line(self, fmt, a, b, **options):
        return formats.mul_line(fmt, a, b, **options)

    def example(self, fmt, a, b, *, kind="main", cell=None, **options):
        if options.get("first_step"):
            kind = "first_step"
        return super().example(fmt, a, b, kind=kind, cell=cell, **options)

    def train_set(self, cfg):
        return sampling.mul_train(cfg)

    def test_set(self, cfg):
        return sampling.mul_test(cfg, test_digits(cfg))

    def problem_id(self, example):
        return ("%" if example.kind == "first_step" else "*", example.a, example.b)

    def typed_example(self, cfg, a, b):
        cell = ("main", len(str(b)), len(str(a)))
        return render_example(self.name, cfg.format, a, b, cell=cell, max_digits=cfg.max_digits)


class AddScratchpad(Task):
    """Addition with a scratchpad (section 3.1, appendix B): digit-wise steps, then the sum."""

    name = "add_scratchpad"
    Settings = ScratchpadSettings
    operator = "+"
    paper_name = "add_scratchpad"
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
        return sampling.add_scratchpad_test(cfg, test_digits(cfg))

    def default_test_digits(self, cfg):
        """The paper trains on 2..10 digits and tests on 9..13: max-1 .. max+3."""
        return list(range(max(1, cfg.max_digits - 1), cfg.max_digits + 4))

    def answer_key(self, fmt, completion):
        """The final sum, after the last comma (after ``=`` in the recursive format)."""
        return formats.scratchpad_key(fmt, formats.first_line(completion))

    def reply_tokens(self, tokenizer, example, answer_tokens):
        """Random-space scratchpads may put an extra space token in every gap: at most twice the tokens."""
        return 2 * answer_tokens if example.format == "random_space" else answer_tokens

    def typed_example(self, cfg, a, b):
        options = {"reverse_addends": cfg.reverse_addends, "random_space_prob": cfg.random_space_prob}
        cell = ("main", None, max(len(str(a)), len(str(b))))
        return render_example(
            self.name, cfg.format, a, b, cell=cell, rng=np.random.default_rng(cfg.seed), **options
        )


class Reverse(Task):
    """Digit reversal (section 3.2): ``1 2 3 # 3 2 1``; one operand, no b."""

    name = "reverse"
    operands = 1
    carries = ""
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
        return sampling.reverse_test(cfg, test_digits(cfg))

    def default_test_digits(self, cfg):
        """Regular and repetitive numbers from the fewest training digits to six beyond the most."""
        return list(range(cfg.min_digits, cfg.max_digits + 7))

    def problem_id(self, example):
        """The digits as written (leading zeros included)."""
        return ("reverse", "".join(ch for ch in example.prompt if ch.isdigit()))


class Add(Task):
    """Plain addition (the nl_mix arithmetic; padding_reverse after Lee et al. 2023)."""

    name = "add"
    operator = "+"
    formats = ("basic", "random_space", "padding_reverse")
    options = frozenset({"max_digits", "rng", "spaces"})
    direct = frozenset({"basic", "padding_reverse"})
    paper_defaults: ClassVar[Mapping[str, Any]] = {"train_samples": 120_000, "min_digits": 1, "max_digits": 3}

    def line(self, fmt, a, b, **options):
        return formats.add_line(fmt, a, b, **options)

    def train_set(self, cfg):
        return sampling.add_train(cfg)

    def typed_example(self, cfg, a, b):
        cell = ("main", None, max(len(str(a)), len(str(b))))
        rng = np.random.default_rng(cfg.seed)
        return render_example(self.name, cfg.format, a, b, cell=cell, rng=rng, max_digits=cfg.max_digits)

    def test_set(self, cfg):
        return sampling.add_test(cfg, test_digits(cfg))


class Dialogue(Task):
    """Student-teacher dialogues about sums (section 4, nl_mix), optionally mixed with plain additions."""

    name = "dialogue"
    formats = ("basic",)
    paper_defaults: ClassVar[Mapping[str, Any]] = {}
    Settings = DialogueSettings
    layout = "contexts"
    paper_name = "nl_mix"
    paper_reads_epochs = True
    #: data.mix_format -> the paper's nl_mix data name
    PAPER_MIX_NAMES: ClassVar[Mapping[str, str]] = {
        "none": "dia",
        "basic": "dia+basic",
        "random_space": "dia+random_space",
    }
    #: the test protocol: sums of 2..5-digit numbers (appendix C)
    TEST_DIGITS = (2, 3, 4, 5)
    #: the paper's dialogue counts (2-3-digit, 4-5-digit), by which a --count is split
    SPLIT = (12_200, 1_040)

    def line(self, fmt, a, b, **options):
        return formats.dialogue_line(a, b)

    def train_set(self, cfg):
        return dialogue_train(cfg)

    def test_set(self, cfg):
        return dialogue_test(cfg, test_digits(cfg))

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

    def reply_tokens(self, tokenizer, example, answer_tokens):
        """A teacher may answer with any template of arith/data/dialogue.py: the longest, measured at the
        example's digit counts (+ end of text)."""
        if example.b is None:
            return answer_tokens
        longest = longest_teacher_reply(tokenizer, len(str(example.a)), len(str(example.b)))
        return max(answer_tokens, longest + 1)

    def paper_format(self, fmt, mix_format):
        return self.PAPER_MIX_NAMES.get(mix_format)


#: every task by its `data.task` name; adding one is its class plus one entry here
TASKS: dict[str, Task] = {task.name: task for task in (Mul(), AddScratchpad(), Reverse(), Add(), Dialogue())}


def get_task(name: str) -> Task:
    """The registered task called `name`; an unknown name fails listing the valid ones."""
    if name not in TASKS:
        raise ConfigError(f"data.task={name!r} is not valid; choose one of: {', '.join(TASKS)}")
    return TASKS[name]


def check_data_config(d: DataConfig) -> None:
    """Raise ConfigError for a data config that cannot be generated: the task's own checks and the
    general ones. The data part of `arith.validation.validate`, here so the data layer needs no model."""
    task = get_task(d.task)
    choice("data.format", d.format, task.formats)
    choice("data.augment", d.augment, AUGMENTS)
    choice("data.mix_format", d.mix_format, MIX_FORMATS)
    task.check(d)
    if d.reverse_addends and d.format != "recursive_scratchpad":
        raise ConfigError("data.reverse_addends applies to add_scratchpad format 'recursive_scratchpad'")
    if d.min_digits < 1 or d.max_digits < d.min_digits:
        raise ConfigError(
            f"digit range must satisfy 1 <= min_digits <= max_digits (got {d.min_digits}..{d.max_digits})"
        )
    if d.one_digit_weight < 0:
        raise ConfigError(f"data.one_digit_weight must be >= 0 (got {d.one_digit_weight})")
    if not 0 <= d.random_space_prob < 1:
        raise ConfigError(f"data.random_space_prob must be in [0, 1) (got {d.random_space_prob})")
    for name in ("train_samples", "test_per_cell"):
        if getattr(d, name) < 1:
            raise ConfigError(f"data.{name} must be >= 1 (got {getattr(d, name)})")
    if any(n < 1 for n in d.test_digits):
        raise ConfigError(f"data.test_digits must be >= 1 (got {d.test_digits})")
    if d.dialogue_file and not Path(d.dialogue_file).exists():
        raise ConfigError(f"data.dialogue_file {d.dialogue_file!r} does not exist")


#: task -> its formats (the data CLI's and the docs' table)
TASK_FORMATS: dict[str, tuple[str, ...]] = {task.name: task.formats for task in TASKS.values()}

_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(DataConfig)}


def _fields(settings: type) -> set[str]:
    return {f.name for f in dataclasses.fields(settings)}


def test_digits(cfg: DataConfig) -> list[int]:
    """cfg.test_digits, else the task's default range (`Task.default_test_digits`)."""
    if cfg.test_digits:
        return list(cfg.test_digits)
    return get_task(cfg.task).default_test_digits(cfg)


test_digits.__test__ = False  # type: ignore[attr-defined]  # not a pytest test when imported into one


# ---------------------------------------------------------------------------------------------------------
# Lines by task name: rendering, exact match and problem identity ask the task
# ---------------------------------------------------------------------------------------------------------


def check_format(task: str, fmt: str) -> Task:
    """The registered task (arith.data.tasks) called `task`, failing with the valid choices for an unknown
    task or format."""
    if task not in TASKS:
        raise ConfigError(f"unknown task {task!r}; choose one of: {', '.join(TASKS)}")
    names = TASKS[task].formats
    if fmt not in names:
        raise ConfigError(f"unknown format {fmt!r} for task {task!r}; choose one of: {', '.join(names)}")
    return TASKS[task]


def render_parts(task: str, fmt: str, a: int, b: int | None = None, **options) -> tuple[str, str, str]:
    """(prompt, answer, key) of one line. Options per task (`Task.options`): mul `max_digits`,
    `first_step`; add_scratchpad `reverse_addends`, `rng`, `random_space_prob`, `spaces`; reverse
    `digits`; add `max_digits`, `rng`, `spaces`."""
    spec = _checked(task, fmt, a, b, options)
    return spec.line(fmt, a, b, **options)


def _checked(task: str, fmt: str, a: int, b: int | None, options: dict):
    spec = check_format(task, fmt)
    unknown = set(options) - spec.options
    if unknown:
        valid = ", ".join(sorted(spec.options)) or "none"
        raise ConfigError(f"unknown option(s) {sorted(unknown)} for task {task!r}; valid: {valid}")
    _check_operand(a, "a")
    if spec.operands == 2:
        _check_operand(b, "b")
    return spec


def render(task: str, fmt: str, a: int, b: int | None = None, **options) -> str:
    """The whole line, e.g. ``render("mul", "padding_reverse", 73866, 1001, max_digits=5)``
    == ``"7 3 8 6 6 * 0 1 0 0 1 # 6 6 8 9 3 9 3 7 0 0"``."""
    prompt, answer, _ = render_parts(task, fmt, a, b, **options)
    return prompt + answer


def render_example(
    task: str, fmt: str, a: int, b: int | None = None, *, kind: str = "main", cell=None, **options
) -> Example:
    """One `Example` (prompt, answer and exact-match key) of `task`/`fmt`."""
    spec = _checked(task, fmt, a, b, options)
    return spec.example(fmt, int(a), None if b is None else int(b), kind=kind, cell=cell, **options)


def answer_key(task: str, fmt: str, completion: str) -> str | None:
    """The part of a completion that exact match compares with `Example.key`, or None if there is none
    (`Task.answer_key`). Direct formats: the answer's digits (spaces dropped; leading zeros kept, as
    padded and reversed formats need). Scratchpads: the final sum after the last comma (after ``=`` in
    the recursive format). Dialogues: the last number in the teacher's reply. The completion is read up
    to the first newline (leading ones skipped for dialogues) or end-of-text token.
    """
    return check_format(task, fmt).answer_key(fmt, completion)


def problem_id(example: Example) -> tuple:
    """What makes two examples the same problem, whatever the format or random spaces (`Task.problem_id`).

    ``("*", a, b)`` for multiplication (``("%", a, b)`` for first-step lines), ``("+", a, b)`` for every
    addition task and dialogue, ``("reverse", digits)`` for reversal (the digits as written, leading zeros
    included), ``("text", prompt)`` for a user's dialogue without two numbers. The evaluator's
    `seen_in_train` is ``problem_id(test_example) in {problem_id(e) for e in train}``.
    """
    return get_task(example.task).problem_id(example)


def problem_ids(examples: Sequence[Example]) -> set[tuple]:
    """The set of `problem_id`s of a training set: build once, then ask membership per test example."""
    return {problem_id(e) for e in examples}
