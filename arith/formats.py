"""Every data format of the paper, one small function each, and the exact-match key of an answer.

A format turns operands into one line of text, split into the prompt (everything up to and including
the answer marker) and the answer (which starts with a space). Every digit is written with a space
before it, as the paper's footnote says, so that a tokenizer sees each digit as its own token.

Answer markers: mul ``... #`` (``%`` for first-step lines), add ``... =``, add_scratchpad ``... :``,
reverse ``... #``, add random_space has none (the prompt ends with the random spaces), dialogue: the
student's turn, the answer being `` Teacher: ...``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from arith.config import TASK_FORMATS, ConfigError
from arith.examples import Example

# ---------------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------------


def spaced(digits: str) -> str:
    """'1060' -> '1 0 6 0': one space between digits (a space *before* each, once joined into a line)."""
    return " ".join(digits)


def padded(n: int, width: int) -> str:
    """Zero-pad `n` to `width` digits, refusing numbers that do not fit (padding formats need them to)."""
    s = str(n)
    if len(s) > width:
        raise ConfigError(
            f"operand {n} has {len(s)} digits, more than max_digits={width} allows with padding"
        )
    return s.zfill(width)


def check_format(task: str, fmt: str) -> None:
    """Fail with the valid choices for an unknown task or format."""
    if task not in TASK_FORMATS:
        raise ConfigError(f"unknown task {task!r}; choose one of: {', '.join(TASK_FORMATS)}")
    if fmt not in TASK_FORMATS[task]:
        raise ConfigError(
            f"unknown format {fmt!r} for task {task!r}; choose one of: {', '.join(TASK_FORMATS[task])}"
        )


def _check_operand(n: int | None, name: str) -> int:
    if n is None or n < 0:
        raise ConfigError(f"{name} must be a non-negative integer (got {n!r})")
    return int(n)


# ---------------------------------------------------------------------------------------------------------
# Multiplication (tab:dataformat_mul, tab:dataformat_mul_3data)
# ---------------------------------------------------------------------------------------------------------

_MUL_PADDED = {"basic": False, "reverse_product": False, "padding": True, "padding_reverse": True}
_MUL_REVERSED = {"basic": False, "reverse_product": True, "padding": False, "padding_reverse": True}


def mul_line(
    fmt: str, a: int, b: int, *, max_digits: int | None = None, first_step: bool = False
) -> tuple[str, str, str]:
    """(prompt, answer, key) of ``a * b # a·b`` in `fmt`; first_step writes ``a * b % a·(b mod 10)``.

    Padding pads both factors to `max_digits` and the product to 2·max_digits; the reverse formats write
    the product least-significant digit first.
    """
    result = a * (b % 10) if first_step else a * b
    if _MUL_PADDED[fmt]:
        if max_digits is None or max_digits < 1:
            raise ConfigError(f"mul format {fmt!r} needs max_digits >= 1 (got {max_digits!r})")
        sa, sb, sr = padded(a, max_digits), padded(b, max_digits), padded(result, 2 * max_digits)
    else:
        sa, sb, sr = str(a), str(b), str(result)
    if _MUL_REVERSED[fmt]:
        sr = sr[::-1]
    marker = "%" if first_step else "#"
    return f"{spaced(sa)} * {spaced(sb)} {marker}", " " + spaced(sr), sr


# ---------------------------------------------------------------------------------------------------------
# Addition with a scratchpad (tab:dataformat, appendix B)
# ---------------------------------------------------------------------------------------------------------


def _digit_steps(a: int, b: int) -> list[tuple[int, int, int, int]]:
    """(carry_in, a_i, b_i, carry_in + a_i + b_i) for each digit, least significant first.

    The shorter addend is zero-padded to the longer one's length (in the steps only)."""
    width = max(len(str(a)), len(str(b)))
    da, db = str(a).zfill(width)[::-1], str(b).zfill(width)[::-1]
    steps, carry = [], 0
    for x, y in zip(da, db, strict=True):
        total = carry + int(x) + int(y)
        steps.append((carry, int(x), int(y), total))
        carry = total // 10
    return steps


def scratchpad_basic_answer(a: int, b: int) -> str:
    """`` 0 + 9 + 1 = 1 0, 1 + 3 + 2 = 6, 0 + 2 + 8 = 1 0, 1 0 6 0`` for 239 + 821."""
    steps = [f"{c} + {x} + {y} = {spaced(str(s))}" for c, x, y, s in _digit_steps(a, b)]
    return " " + ", ".join([*steps, spaced(str(a + b))])


def scratchpad_recursive_answer(a: int, b: int) -> str:
    """Before each digit-wise sum, the addends' remaining digits (reversed); after it, the sum so far.

    239 + 821 -> `` 0 + 9 + 1 = 1 0 , = 0 , 3 2 + 2 8 : 1 + 3 + 2 = 6 , = 6 0 , 2 + 8 : ... , = 1 0 6 0``.
    """
    width = max(len(str(a)), len(str(b)))
    da, db = str(a).zfill(width)[::-1], str(b).zfill(width)[::-1]
    parts: list[str] = []
    partial = ""
    for i, (c, x, y, s) in enumerate(_digit_steps(a, b)):
        if i:
            parts.append(f"{spaced(da[i:])} + {spaced(db[i:])} :")
        partial = str(s % 10) + partial
        parts.append(f"{c} + {x} + {y} = {spaced(str(s))} , = {spaced(partial)} ,")
    parts.append(f"= {spaced(str(a + b))}")
    return " " + " ".join(parts)


def scratchpad_line(
    fmt: str,
    a: int,
    b: int,
    *,
    reverse_addends: bool = False,
    rng: np.random.Generator | None = None,
    random_space_prob: float = 0.3,
    spaces: Sequence[bool] | None = None,
) -> tuple[str, str, str]:
    """(prompt, answer, key) of an add_scratchpad line; the key is the final sum."""
    key = str(a + b)
    if fmt == "recursive_scratchpad":
        sa, sb = (str(a)[::-1], str(b)[::-1]) if reverse_addends else (str(a), str(b))
        return f"{spaced(sa)} + {spaced(sb)} :", scratchpad_recursive_answer(a, b), key
    prompt, answer = f"{spaced(str(a))} + {spaced(str(b))} :", scratchpad_basic_answer(a, b)
    if fmt == "basic":
        return prompt, answer, key
    line = random_spaces(prompt + answer, rng=rng, prob=random_space_prob, spaces=spaces)
    # The prompt ends at the ':' marker; the answer keeps the extra spaces that follow it.
    cut = line.index(":") + 1
    return line[:cut], line[cut:], key


#: the gap between two visible characters of a line: one space or none
_GAP = re.compile(r"(?<=\S)( ?)(?=\S)")


def random_spaces(
    line: str,
    *,
    rng: np.random.Generator | None = None,
    prob: float = 0.3,
    spaces: Sequence[bool] | None = None,
) -> str:
    """Insert an extra space, with probability `prob`, at each gap between two visible characters.

    `spaces` (one bool per gap) fixes the choice instead of `rng`, e.g. to rebuild a line of the paper.
    """
    chars = line.replace(" ", "")
    gaps = len(chars) - 1
    if spaces is None:
        if rng is None:
            raise ConfigError(
                "add_scratchpad random_space needs rng= (a numpy Generator) or explicit spaces="
            )
        spaces = (rng.random(gaps) < prob).tolist()
    if len(spaces) != gaps:
        raise ConfigError(f"spaces= needs one entry per gap between characters ({gaps}), got {len(spaces)}")
    parts = _GAP.split(line)  # visible character, gap, visible character, gap, ...
    parts[1::2] = [gap + " " if extra else gap for gap, extra in zip(parts[1::2], spaces, strict=True)]
    return "".join(parts)


# ---------------------------------------------------------------------------------------------------------
# Plain addition (tab:nlarith_example; padding_reverse after Lee et al. 2023)
# ---------------------------------------------------------------------------------------------------------


def add_line(
    fmt: str,
    a: int,
    b: int,
    *,
    max_digits: int | None = None,
    rng: np.random.Generator | None = None,
    spaces: Sequence[int] | None = None,
) -> tuple[str, str, str]:
    """(prompt, answer, key): basic ``4 8 + 4 = 5 2``; random_space ``4 8`` + 1-5 spaces + `` 4`` + 1-5
    spaces + `` 5 2`` (no operators, as the paper's example); padding_reverse pads the operands to
    `max_digits` and the sum to max_digits + 1 digits, written least-significant digit first."""
    s = a + b
    if fmt == "basic":
        return f"{spaced(str(a))} + {spaced(str(b))} =", " " + spaced(str(s)), str(s)
    if fmt == "random_space":
        if spaces is None:
            if rng is None:
                raise ConfigError(
                    "add random_space needs rng= (a numpy Generator) or explicit spaces=(n1, n2)"
                )
            spaces = rng.integers(1, 6, size=2).tolist()
        n1, n2 = spaces
        return f"{spaced(str(a))}{' ' * n1} {spaced(str(b))}{' ' * n2}", " " + spaced(str(s)), str(s)
    if max_digits is None or max_digits < 1:
        raise ConfigError(f"add format {fmt!r} needs max_digits >= 1 (got {max_digits!r})")
    rev = padded(s, max_digits + 1)[::-1]
    return f"{spaced(padded(a, max_digits))} + {spaced(padded(b, max_digits))} =", " " + spaced(rev), rev


# ---------------------------------------------------------------------------------------------------------
# Digit reversal (section 3.2) and the dialogue test line (appendix C)
# ---------------------------------------------------------------------------------------------------------


def reverse_line(a: int, *, digits: int | None = None) -> tuple[str, str, str]:
    """``1 2 3 4 5 # 5 4 3 2 1``; `digits` writes the number with exactly that many digits (leading zeros)."""
    s = str(a) if digits is None else padded(a, digits)
    return f"{spaced(s)} #", " " + spaced(s[::-1]), s[::-1]


#: the paper's test question in the dialogue context (appendix C)
DIALOGUE_TEST_QUESTION = "Student: Hi, what is the sum of {a} and {b}?"
DIALOGUE_TEST_REPLY = " Teacher: The answer is {s}."


def dialogue_line(a: int, b: int) -> tuple[str, str, str]:
    """The paper's dialogue-context test prompt, with a plain teacher reply as the reference answer."""
    s = str(a + b)
    prompt = DIALOGUE_TEST_QUESTION.format(a=spaced(str(a)), b=spaced(str(b)))
    return prompt, DIALOGUE_TEST_REPLY.format(s=spaced(s)), s


# ---------------------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------------------

_OPTIONS = {
    "mul": {"max_digits", "first_step"},
    "add_scratchpad": {"reverse_addends", "rng", "random_space_prob", "spaces"},
    "reverse": {"digits"},
    "add": {"max_digits", "rng", "spaces"},
    "dialogue": set(),
}


def render_parts(task: str, fmt: str, a: int, b: int | None = None, **options) -> tuple[str, str, str]:
    """(prompt, answer, key) of one line. Options per task: mul `max_digits`, `first_step`;
    add_scratchpad `reverse_addends`, `rng`, `random_space_prob`, `spaces`; reverse `digits`;
    add `max_digits`, `rng`, `spaces`."""
    check_format(task, fmt)
    unknown = set(options) - _OPTIONS[task]
    if unknown:
        valid = ", ".join(sorted(_OPTIONS[task])) or "none"
        raise ConfigError(f"unknown option(s) {sorted(unknown)} for task {task!r}; valid: {valid}")
    a = _check_operand(a, "a")
    if task == "reverse":
        return reverse_line(a, **options)
    b = _check_operand(b, "b")
    if task == "mul":
        return mul_line(fmt, a, b, **options)
    if task == "add_scratchpad":
        return scratchpad_line(fmt, a, b, **options)
    if task == "add":
        return add_line(fmt, a, b, **options)
    return dialogue_line(a, b)


def render(task: str, fmt: str, a: int, b: int | None = None, **options) -> str:
    """The whole line, e.g. ``render("mul", "padding_reverse", 73866, 1001, max_digits=5)``
    == ``"7 3 8 6 6 * 0 1 0 0 1 # 6 6 8 9 3 9 3 7 0 0"``."""
    prompt, answer, _ = render_parts(task, fmt, a, b, **options)
    return prompt + answer


def render_example(
    task: str, fmt: str, a: int, b: int | None = None, *, kind: str = "main", cell=None, **options
) -> Example:
    """One `Example` (prompt, answer and exact-match key) of `task`/`fmt`."""
    prompt, answer, key = render_parts(task, fmt, a, b, **options)
    if task == "mul" and options.get("first_step"):
        kind = "first_step"
    return Example(task, fmt, a, None if task == "reverse" else b, prompt, answer, key, kind, cell)


# ---------------------------------------------------------------------------------------------------------
# Exact match
# ---------------------------------------------------------------------------------------------------------

_NUMBER = re.compile(r"\d(?: ?\d)*")
_STOP = ("<|endoftext|>", "\n")


def _first_line(completion: str) -> str:
    for stop in _STOP:
        completion = completion.split(stop, 1)[0]
    return completion


def answer_key(task: str, fmt: str, completion: str) -> str | None:
    """The part of a completion that exact match compares with `Example.key`, or None if there is none.

    Direct formats: the answer's digits (spaces dropped; leading zeros kept, as padded and reversed
    formats need). Scratchpads: the final sum after the last comma (after ``=`` in the recursive
    format). Dialogues: the last number in the teacher's reply. The completion is read up to the first
    newline (leading ones skipped for dialogues) or end-of-text token.
    """
    check_format(task, fmt)
    # a dialogue reply may open with the line break that ~1.5% of the training dialogues have
    text = _first_line(completion.lstrip() if task == "dialogue" else completion)
    if task == "dialogue":
        text = text.split("Student:", 1)[0]
        numbers = _NUMBER.findall(text)
        return numbers[-1].replace(" ", "") if numbers else None
    if task == "add_scratchpad":
        text = text.rsplit(",", 1)[-1].strip()
        if fmt == "recursive_scratchpad":
            if not text.startswith("="):
                return None
            text = text[1:]
    digits = "".join(text.split())
    return digits if digits.isascii() and digits.isdigit() else None


def problem_id(example: Example) -> tuple:
    """What makes two examples the same problem, whatever the format or random spaces.

    ``("*", a, b)`` for multiplication (``("%", a, b)`` for first-step lines), ``("+", a, b)`` for every
    addition task and dialogue, ``("reverse", digits)`` for reversal (the digits as written, leading zeros
    included), ``("text", prompt)`` for a user's dialogue without two numbers. The evaluator's
    `seen_in_train` is ``problem_id(test_example) in {problem_id(e) for e in train}``.
    """
    if example.task == "mul":
        return ("%" if example.kind == "first_step" else "*", example.a, example.b)
    if example.task == "reverse":
        return ("reverse", "".join(ch for ch in example.prompt if ch.isdigit()))
    if example.b is None:
        return ("text", " ".join(example.prompt.split()))
    return ("+", example.a, example.b)


def problem_ids(examples: Sequence[Example]) -> set[tuple]:
    """The set of `problem_id`s of a training set: build once, then ask membership per test example."""
    return {problem_id(e) for e in examples}
