"""Every data format of the paper, one small function each, and the exact-match key of an answer.

A format turns operands into one line, split into the prompt (up to and including the answer marker: mul
``#`` or ``%``, add ``=``, add_scratchpad ``:``, reverse ``#``) and the answer (starting with a space).
Every digit has a space before it, as the paper's footnote says, so a tokenizer sees each as a token."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arith.errors import ConfigError


def spaced(digits: str) -> str:
    """'1060' -> '1 0 6 0': one space between digits (a space *before* each, once joined into a line)."""
    return " ".join(digits)


def padded(n: int, width: int) -> str:
    """Zero-pad `n` to `width` digits, refusing numbers that do not fit (padding formats need them to)."""
    s = str(n)
    if len(s) > width:
        raise ConfigError(f"operand {n}: {len(s)} digits, more than max_digits={width} allows (padding)")
    return s.zfill(width)


@dataclass(frozen=True)
class Direct:
    """How a direct format (``a op b marker answer``) writes its numbers."""

    #: operands zero-padded to max_digits, the answer to its widest (a product's 2·max_digits)
    padded: bool
    #: the answer written least significant digit first
    reversed_answer: bool
    #: the operands written least significant digit first too (Abacus's format: every number reversed)
    reversed_operands: bool = False
    #: operands zero-padded to the line's longer one, a sum to one digit more (position coupling's):
    #: no width is fixed, so a line of any length can be written
    padded_to_line: bool = False


DIRECT_FORMATS: dict[str, Direct] = {
    "basic": Direct(padded=False, reversed_answer=False),
    "reverse_product": Direct(padded=False, reversed_answer=True),
    "padding": Direct(padded=True, reversed_answer=False),
    "padding_reverse": Direct(padded=True, reversed_answer=True),
    # beyond the paper, for length generalisation (McLeish et al. 2024; Cho et al. 2024)
    "lsd_first": Direct(padded=False, reversed_answer=True, reversed_operands=True),
    "line_padding_reverse": Direct(padded=False, reversed_answer=True, padded_to_line=True),
}


def direct_numbers(
    task: str, fmt: str, a: int, b: int, result: int, max_digits: int | None, answer_width: int
) -> tuple[str, str, str]:
    """The digits of a, b and the answer as `fmt` writes them; `answer_width` pads the answer (a padded
    format's); a format padded to the line pads a sum to the longer operand's digits + 1."""
    layout = DIRECT_FORMATS[fmt]
    if layout.padded:
        if max_digits is None or max_digits < 1:
            raise ConfigError(f"{task} format {fmt!r} needs max_digits >= 1 (got {max_digits!r})")
        sa, sb, sr = padded(a, max_digits), padded(b, max_digits), padded(result, answer_width)
    elif layout.padded_to_line:
        width = max(len(str(a)), len(str(b)))
        sa, sb, sr = str(a).zfill(width), str(b).zfill(width), str(result).zfill(width + 1)
    else:
        sa, sb, sr = str(a), str(b), str(result)
    if layout.reversed_operands:
        sa, sb = sa[::-1], sb[::-1]
    return sa, sb, sr[::-1] if layout.reversed_answer else sr


def mul_line(
    fmt: str, a: int, b: int, *, max_digits: int | None = None, first_step: bool = False
) -> tuple[str, str, str]:
    """(prompt, answer, key) of ``a * b # a·b`` in `fmt`; first_step writes ``a * b % a·(b mod 10)``."""
    result = a * (b % 10) if first_step else a * b
    width = 2 * max_digits if max_digits else 0
    sa, sb, sr = direct_numbers("mul", fmt, a, b, result, max_digits, width)
    marker = "%" if first_step else "#"
    return f"{spaced(sa)} * {spaced(sb)} {marker}", " " + spaced(sr), sr


def _digit_steps(a: int, b: int) -> list[tuple[int, int, int, int]]:
    """(carry_in, a_i, b_i, carry_in + a_i + b_i) for each digit, least significant first (the shorter
    addend zero-padded)."""
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
    line = random_spaces(prompt + answer, rng, random_space_prob, spaces)
    # The prompt ends at the ':' marker; the answer keeps the extra spaces that follow it.
    cut = line.index(":") + 1
    return line[:cut], line[cut:], key


#: the gap between two visible characters of a line: one space or none
_GAP = re.compile(r"(?<=\S)( ?)(?=\S)")


def random_spaces(
    line: str, rng: np.random.Generator | None, prob: float, spaces: Sequence[bool] | None
) -> str:
    """Insert an extra space, with probability `prob`, at each gap between two visible characters; `spaces`
    (one bool per gap) fixes the choice instead of `rng`, e.g. to rebuild a line of the paper."""
    chars = line.replace(" ", "")
    gaps = len(chars) - 1
    if spaces is None and rng is None:
        raise ConfigError("add_scratchpad random_space needs rng= (a numpy Generator) or explicit spaces=")
    spaces = (rng.random(gaps) < prob).tolist() if spaces is None else spaces
    if len(spaces) != gaps:
        raise ConfigError(f"spaces= needs one entry per gap between characters ({gaps}), got {len(spaces)}")
    parts = _GAP.split(line)  # visible character, gap, visible character, gap, ...
    parts[1::2] = [gap + " " if extra else gap for gap, extra in zip(parts[1::2], spaces, strict=True)]
    return "".join(parts)


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
    spaces + `` 5 2`` (no operators, as the paper's example). Beyond the paper, for length generalisation:
    lsd_first ``8 4 + 4 = 2 5`` (Abacus embeddings', McLeish et al. 2024) and line_padding_reverse
    ``4 8 + 0 4 = 2 5 0`` (position coupling's, Cho et al. 2024)."""
    s = a + b
    if fmt == "random_space":
        if spaces is None and rng is None:
            raise ConfigError("add random_space needs rng= (a numpy Generator) or explicit spaces=(n1, n2)")
        n1, n2 = rng.integers(1, 6, size=2).tolist() if spaces is None else spaces
        return f"{spaced(str(a))}{' ' * n1} {spaced(str(b))}{' ' * n2}", " " + spaced(str(s)), str(s)
    sa, sb, sr = direct_numbers("add", fmt, a, b, s, max_digits, (max_digits or 0) + 1)
    return f"{spaced(sa)} + {spaced(sb)} =", " " + spaced(sr), sr


def reverse_line(a: int, *, digits: int | None = None) -> tuple[str, str, str]:
    """``1 2 3 4 5 # 5 4 3 2 1``; `digits` writes the number with exactly that many digits (leading zeros)."""
    s = str(a) if digits is None else padded(a, digits)
    return f"{spaced(s)} #", " " + spaced(s[::-1]), s[::-1]


def dialogue_line(a: int, b: int) -> tuple[str, str, str]:
    """The paper's dialogue-context test prompt (appendix C), with a plain teacher reply as reference."""
    s = str(a + b)
    prompt = f"Student: Hi, what is the sum of {spaced(str(a))} and {spaced(str(b))}?"
    return prompt, f" Teacher: The answer is {spaced(s)}.", s


_NUMBER = re.compile(r"\d(?: ?\d)*")


def first_line(completion: str) -> str:
    """The completion up to the first newline or end-of-text token."""
    return re.split(r"<\|endoftext\|>|\n", completion, maxsplit=1)[0]


def digits_key(text: str) -> str | None:
    """A direct format's key: the digits, spaces dropped, leading zeros kept; None if not all digits."""
    digits = "".join(text.split())
    return digits if digits.isascii() and digits.isdigit() else None


def scratchpad_key(fmt: str, text: str) -> str | None:
    """A scratchpad's key: the final sum after the last comma (after ``=`` in the recursive format)."""
    text = text.rsplit(",", 1)[-1].strip()
    if fmt == "recursive_scratchpad":
        if not text.startswith("="):
            return None
        text = text[1:]
    return digits_key(text)


def dialogue_key(text: str) -> str | None:
    """A dialogue reply's key: the last number before the student speaks again."""
    numbers = _NUMBER.findall(text.split("Student:", 1)[0])
    return numbers[-1].replace(" ", "") if numbers else None
