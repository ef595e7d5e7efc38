"""The task registry `TASKS` (one `Task` object per task) and the functions that take a task's name
(`render_line`, `answer_key`, `problem_id`, ...). Every rule that depends on the task is a method of its
class, so the rest of the project asks the task rather than comparing names; adding a task is its class
plus one entry in `TASKS` (docs/DESIGN.md, "Add a task")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from arith.config import AUGMENTS, MIX_FORMATS, ConfigError, DataConfig, choice
from arith.data.examples import Example
from arith.data.tasks.add import Add
from arith.data.tasks.add_scratchpad import AddScratchpad
from arith.data.tasks.base import LSD, Task
from arith.data.tasks.dialogue import Dialogue
from arith.data.tasks.mul import Mul
from arith.data.tasks.reverse import Reverse

#: every task by its `data.task` name; adding one is its class plus one entry here
TASKS: dict[str, Task] = {task.name: task for task in (Mul(), AddScratchpad(), Reverse(), Add(), Dialogue())}


def get_task(name: str) -> Task:
    """The registered task called `name`; an unknown name fails listing the valid ones."""
    choice("data.task", name, TASKS)
    return TASKS[name]


def check_data_config(d: DataConfig) -> None:
    """Raise ConfigError for a data config that cannot be generated (the data part of `validate`, here so
    that the data layer needs no model)."""
    task = get_task(d.task)
    choice("data.format", d.format, task.formats)
    choice("data.augment", d.augment, AUGMENTS)
    choice("data.mix_format", d.mix_format, MIX_FORMATS)
    for name in task.EXCLUSIVE:  # another task's setting, away from its default
        value = getattr(d, name)
        if value != getattr(DataConfig(), name) and not task.reads(name):
            readers = " or ".join(repr(t.name) for t in TASKS.values() if t.reads(name))
            raise ConfigError(f"data.{name}={value!r} applies to task {readers} only (task is {task.name!r})")
    task.check(d)
    if d.reverse_addends and d.format != "recursive_scratchpad":
        raise ConfigError("data.reverse_addends applies to add_scratchpad format 'recursive_scratchpad'")
    if d.min_digits < 1 or d.max_digits < d.min_digits:
        raise ConfigError(f"digits need 1 <= min_digits <= max_digits (got {d.min_digits}..{d.max_digits})")
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


def test_digits(cfg: DataConfig) -> list[int]:
    """cfg.test_digits, else the task's default range (`Task.default_test_digits`)."""
    return get_task(cfg.task).test_digits(cfg)


test_digits.__test__ = False  # type: ignore[attr-defined]  # not a pytest test when imported into one


def render_parts(task: str, fmt: str, a: int, b: int | None = None, **options) -> tuple[str, str, str]:
    """(prompt, answer, key) of one line; `options` are the task's (`Task.options`: mul `max_digits`...)."""
    spec = get_task(task)
    spec.check_line(fmt, a, b, options)
    return spec.line(fmt, a, b, **options)


def render_line(task: str, fmt: str, a: int, b: int | None = None, **options) -> str:
    """The whole line, e.g. ``render_line("mul", "padding_reverse", 73866, 1001, max_digits=5)``
    == ``"7 3 8 6 6 * 0 1 0 0 1 # 6 6 8 9 3 9 3 7 0 0"``."""
    prompt, answer, _ = render_parts(task, fmt, a, b, **options)
    return prompt + answer


def render_example(task: str, fmt: str, a: int, b: int | None = None, **options) -> Example:
    """One `Example` of `task`/`fmt`; `options` as `Task.example` takes them (kind, cell...)."""
    return get_task(task).example(fmt, a, b, **options)


def answer_key(task: str, fmt: str, completion: str) -> str | None:
    """The part of a completion that exact match compares with `Example.key`, or None (`Task.answer_key`)."""
    spec = get_task(task)
    choice("data.format", fmt, spec.formats)
    return spec.answer_key(fmt, completion)


def lsd_first(task: str, fmt: str) -> bool:
    """Whether the format writes its answer least significant digit first."""
    try:
        return get_task(task).digit_order(fmt)[-1] == LSD
    except ConfigError:  # every format without a digit order writes its answer as usual
        return False


def answer_digits(task: str, fmt: str, text: str) -> str | None:
    """The answer's digits, least significant first (None when the text holds no answer)."""
    key = answer_key(task, fmt, str(text))
    if key is None:
        return None
    digits = "".join(ch for ch in key if ch.isdigit())
    return digits if lsd_first(task, fmt) else digits[::-1]


def answer_number(task: str, fmt: str, text: str) -> int | None:
    """The number a person reads in an answer of a sum or product (`9 7 5 0`, padded and reversed: 579);
    None for a text without digits or a task whose answer is no number (a reversal)."""
    digits = answer_digits(task, fmt, text) if get_task(task).carries else None
    return int(digits[::-1]) if digits else None


def problem_id(example: Example) -> tuple:
    """What makes two examples the same problem, whatever the format or random spaces (`Task.problem_id`):
    ``("*", a, b)``, ``("+", a, b)`` for every addition and dialogue, ``("reverse", digits)``, ..."""
    return get_task(example.task).problem_id(example)


def problem_ids(examples: Sequence[Example]) -> set[tuple]:
    """The set of `problem_id`s of a training set: build once, then ask membership per test example."""
    return {problem_id(e) for e in examples}
