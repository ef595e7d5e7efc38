"""The `Task` interface: everything the rest of the code asks about a task, with the defaults most tasks
share (two operands, an answer that is the digits of a number, exact match on them). A task never looks
another up by name, so the registry (`arith.data.tasks`) imports the task modules, not the reverse."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from arith.config import ConfigError, DataConfig, choice
from arith.data import formats
from arith.data.examples import Example

#: the order a number's digits are written in: most or least significant first
MSD, LSD = "msd", "lsd"


class Task:
    """Base class: a two-operand task whose answer is the digits of a number (exact match on them)."""

    name = "base"
    #: the task's data formats; the first is the default of `arith.data.datasets.generate`
    formats: tuple[str, ...] = ()
    #: operands of a line (a and b; reversal has a only)
    operands = 2
    #: keyword options `line` accepts (`render_line(..., max_digits=5)`)
    options: frozenset[str] = frozenset()
    #: formats written as `arith.data.formats.DIRECT_FORMATS` says (the padding check and coupling read it)
    direct: frozenset[str] = frozenset()
    #: the paper's sizes and training digit ranges (the data CLI's and `generate`'s defaults)
    paper_defaults: ClassVar[Mapping[str, Any]] = {}
    #: a problem_id's first element, shared by tasks posing the same question (a sum whatever its format)
    question = "+"
    #: the `data.*` config fields only this task reads
    settings: ClassVar[frozenset[str]] = frozenset()
    #: settings that a task not reading them must leave at their default (the others are harmless)
    EXCLUSIVE: ClassVar[tuple[str, ...]] = ("augment", "mix_format")
    #: the answer as a result of the operands, for digit errors' carry chains: "sum", "product" or ""
    carries: ClassVar[str] = "sum"
    #: the operator a typed problem is written with (`python -m arith.ask RUN "12+34"`); "" = none
    operator: ClassVar[str] = ""
    #: the report's layout of its cells: "grid" (digits of a x of b), "contexts" (a panel per test
    #: context) or "length" (accuracy by digit count)
    layout: ClassVar[str] = "length"
    #: the task's name in experiments/paper_tables.csv (None: the paper has no table of it)
    paper_name: ClassVar[str | None] = None
    #: the paper reads this task's runs at given epochs (nl_mix: 50 and 100), not only at the end
    paper_reads_epochs: ClassVar[bool] = False
    #: the paper's tables of this task differ by the training digits (multiplication: 5 vs 10)
    paper_by_max_digits: ClassVar[bool] = False

    def line(self, fmt: str, a: int, b: int | None, **options) -> tuple[str, str, str]:
        """(prompt, answer, key) of one line in `fmt`."""
        raise NotImplementedError

    def example(
        self, fmt: str, a: int, b: int | None = None, *, kind: str = "main", cell=None, **options
    ) -> Example:
        """One line of `fmt` as an `Example`, once `check_line` has passed it (`render_example`)."""
        self.check_line(fmt, a, b, options)
        a, b = int(a), None if b is None else int(b)
        return Example(self.name, fmt, a, b, *self.line(fmt, a, b, **options), kind, cell)

    def check_line(self, fmt: str, a: int, b: int | None, options: Mapping[str, Any]) -> None:
        """Raise ConfigError for a format, an option or an operand this task cannot render."""
        choice("data.format", fmt, self.formats)
        unknown = set(options) - self.options
        if unknown:
            valid = ", ".join(sorted(self.options)) or "none"
            raise ConfigError(f"unknown option(s) {sorted(unknown)} for task {self.name!r}; valid: {valid}")
        for name, n in zip("ab", (a, b)[: self.operands], strict=False):
            if n is None or n < 0:
                raise ConfigError(f"{name} must be a non-negative integer (got {n!r})")

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

    def test_digits(self, cfg: DataConfig) -> list[int]:
        """cfg.test_digits, else this task's default range."""
        return list(cfg.test_digits) if cfg.test_digits else self.default_test_digits(cfg)

    def reads(self, name: str) -> bool:
        """Whether the `data.<name>` field is one of this task's own settings."""
        return name in self.settings

    def reply_tokens(self, tokenizer, example: Example, answer_tokens: int) -> int:
        """The longest reply (in tokens) the data can give to `example`, whose reference answer has
        `answer_tokens` (direct formats write one reply per problem)."""
        return answer_tokens

    def typed_example(self, cfg: DataConfig, a: int, b: int) -> Example:
        """The typed problem `a <operator> b` rendered as a test line of `cfg` (`python -m arith.ask`)."""
        raise ConfigError(f"task {self.name!r} takes no typed problem")

    def paper_format(self, fmt: str, mix_format: str) -> str | None:
        """The paper's name for this data (paper_tables.csv's format column)."""
        return fmt

    def check(self, cfg: DataConfig) -> None:
        """Raise ConfigError for a setting this task cannot produce (another task's settings are the
        registry's to refuse: it knows every task)."""

    def check_data(self, cfg: DataConfig) -> None:
        """Checks that need the test digits (the data layer's `validate_data`)."""
        padded = cfg.format in self.direct and formats.DIRECT_FORMATS[cfg.format].padded
        if padded and max(self.test_digits(cfg)) > cfg.max_digits:
            raise ConfigError(
                f"format {cfg.format!r} pads operands to max_digits={cfg.max_digits}; "
                f"test digits {self.test_digits(cfg)} must not exceed it"
            )

    def answer_key(self, fmt: str, completion: str) -> str | None:
        """What exact match compares with `Example.key`: the answer's digits, spaces dropped (leading
        zeros kept, as padded and reversed formats need), read up to the first newline or end-of-text."""
        return formats.digits_key(formats.first_line(completion))

    def problem_id(self, example: Example) -> tuple:
        """What makes two examples the same problem, whatever the format or random spaces."""
        if example.b is None:
            return ("text", " ".join(example.prompt.split()))
        return (self.question, example.a, example.b)

    def digit_order(self, fmt: str) -> tuple[str, ...]:
        """For each number of a line (operands, then the answer): MSD or LSD first, as position coupling
        reads it. Only direct formats with a reversed answer have one: an answer written MSD first has
        digits whose significance is unknown until it ends, which decoding cannot wait for."""
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
        operand = LSD if formats.DIRECT_FORMATS[fmt].reversed_operands else MSD
        return (operand, operand, LSD)
