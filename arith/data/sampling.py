"""Digit-count distributions, training sets and test sets, following the paper's appendix per task.

Numbers are drawn in bulk from numpy's PCG64 seeded by a SeedSequence of (seed, stream): the same seed
gives the same data on any machine, and the training and the test set draw from different streams.
- mul: each factor's digit count drawn from {min..max} with weights {α, 1, ..., 1} (α = weight of 1
  digit), the number uniform among those digits; every third line augmented.
- add_scratchpad, reverse: n uniform on {min..max}, each number uniform on [0, 10^n - 1]; reversal tests
  "regular" (exactly n digits) and "repetitive" (one digit n times) numbers.
- add: the two operands' digit counts independent and uniform on {min..max}.
Test operands have exactly the cell's digits."""

from __future__ import annotations

import numpy as np

from arith.config import DataConfig
from arith.data.examples import Example
from arith.data.formats import add_line, mul_line, reverse_line, scratchpad_line

#: fixed stream numbers (never hash()): the train and the test set of one seed are independent draws
STREAMS = {"train": 0, "test": 1, "dialogue": 2, "mix": 3, "dialogue_test": 4, "mixed_test": 5}
_CHUNK = 18  # decimal digits that always fit an int64 draw


def generator(seed: int, stream: str) -> np.random.Generator:
    """A PCG64 generator for one named stream of one seed."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, STREAMS[stream]])))


def digit_counts(
    rng: np.random.Generator, size: int, lo: int, hi: int, one_digit_weight: float = 1.0
) -> np.ndarray:
    """Digit counts in lo..hi, uniform except that 1 digit has weight `one_digit_weight` (α)."""
    values = np.arange(lo, hi + 1)
    weights = np.where(values == 1, float(one_digit_weight), 1.0)
    if weights.sum() <= 0:
        raise ValueError(f"no digit count in {lo}..{hi} has positive weight")
    return rng.choice(values, size=size, p=weights / weights.sum())


def below_pow10(rng: np.random.Generator, digits: np.ndarray) -> list[int]:
    """For each d in `digits`, a number uniform on [0, 10^d - 1]; any d (drawn 18 digits at a time)."""
    digits = np.asarray(digits, dtype=np.int64)
    if digits.size == 0:
        return []
    n_chunks = max(1, -(-int(digits.max()) // _CHUNK))
    total = 0
    for k in range(n_chunks):
        width = np.clip(digits - _CHUNK * k, 0, _CHUNK)
        chunk = rng.integers(0, 10**width, dtype=np.int64)
        if n_chunks == 1:
            return chunk.tolist()
        total = total + chunk.astype(object) * (10 ** (_CHUNK * k))
    return [int(x) for x in total]


def with_digits(rng: np.random.Generator, digits: np.ndarray) -> list[int]:
    """For each d in `digits`, a number uniform among those with exactly d digits (0 counts as 1 digit)."""
    digits = np.asarray(digits, dtype=np.int64)
    lead = rng.integers(np.where(digits == 1, 0, 1), 10)
    rest = below_pow10(rng, digits - 1)
    if digits.size and digits.max() <= _CHUNK:
        return (lead * 10 ** (digits - 1) + np.asarray(rest, dtype=np.int64)).tolist()
    return [
        int(x) * 10 ** int(d - 1) + r for x, d, r in zip(lead.tolist(), digits.tolist(), rest, strict=True)
    ]


def repetitive(rng: np.random.Generator, digits: np.ndarray) -> list[int]:
    """For each d, one digit 0-9 repeated d times (the reversal task's hard test case)."""
    picks = rng.integers(0, 10, size=len(digits)).tolist()
    return [int(str(p) * int(d)) for p, d in zip(picks, np.asarray(digits).tolist(), strict=True)]


def mul_train(cfg: DataConfig) -> list[Example]:
    rng = generator(cfg.seed, "train")
    n = cfg.train_samples
    da = digit_counts(rng, n, cfg.min_digits, cfg.max_digits, cfg.one_digit_weight)
    db = digit_counts(rng, n, cfg.min_digits, cfg.max_digits, cfg.one_digit_weight)
    return mul_lines(with_digits(rng, da), with_digits(rng, db), cfg.format, cfg.augment, cfg.max_digits)


def mul_lines(
    a_list: list[int], b_list: list[int], fmt: str, augment: str, max_digits: int, cell=None
) -> list[Example]:
    """Render factor pairs, augmenting every third line (index % 3 == 0), as tab:dataformat_mul_3data:
    n_times_1 replaces b by b % 10; first_step writes ``a * b % a·(b mod 10)``."""
    out = []
    for i, (a, b) in enumerate(zip(a_list, b_list, strict=True)):
        kind = "main"
        if i % 3 == 0 and augment == "n_times_1":
            b, kind = b % 10, "n_times_1"
        elif i % 3 == 0 and augment == "first_step":
            kind = "first_step"
        line = mul_line(fmt, a, b, max_digits=max_digits, first_step=kind == "first_step")
        out.append(Example("mul", fmt, a, b, *line, kind, cell))
    return out


def add_scratchpad_train(cfg: DataConfig) -> list[Example]:
    rng = generator(cfg.seed, "train")
    digits = rng.integers(cfg.min_digits, cfg.max_digits + 1, size=cfg.train_samples)
    a_list, b_list = below_pow10(rng, digits), below_pow10(rng, digits)
    return [_scratchpad(cfg, a, b, rng) for a, b in zip(a_list, b_list, strict=True)]


def _scratchpad(cfg: DataConfig, a: int, b: int, rng: np.random.Generator, cell=None) -> Example:
    options = {"reverse_addends": cfg.reverse_addends, "random_space_prob": cfg.random_space_prob}
    line = scratchpad_line(cfg.format, a, b, rng=rng, **options)
    return Example("add_scratchpad", cfg.format, a, b, *line, cell=cell)


def reverse_train(cfg: DataConfig) -> list[Example]:
    rng = generator(cfg.seed, "train")
    digits = rng.integers(cfg.min_digits, cfg.max_digits + 1, size=cfg.train_samples)
    return [_reverse(a, d) for a, d in zip(below_pow10(rng, digits), digits.tolist(), strict=True)]


def _reverse(a: int, digits: int, cell=None) -> Example:
    return Example("reverse", "basic", a, None, *reverse_line(a, digits=digits), cell=cell)


def add_examples(
    rng: np.random.Generator, fmt: str, size: int, lo: int, hi: int, max_digits: int, kind: str = "main"
) -> list[Example]:
    """`size` plain additions whose operands have independent digit counts uniform on lo..hi."""
    da, db = rng.integers(lo, hi + 1, size=size), rng.integers(lo, hi + 1, size=size)
    return [
        _add(fmt, a, b, rng, max_digits, kind=kind)
        for a, b in zip(with_digits(rng, da), with_digits(rng, db), strict=True)
    ]


def _add(
    fmt: str, a: int, b: int, rng: np.random.Generator, max_digits: int, kind="main", cell=None
) -> Example:
    return Example("add", fmt, a, b, *add_line(fmt, a, b, max_digits=max_digits, rng=rng), kind, cell)


def add_train(cfg: DataConfig) -> list[Example]:
    rng = generator(cfg.seed, "train")
    return add_examples(rng, cfg.format, cfg.train_samples, cfg.min_digits, cfg.max_digits, cfg.max_digits)


def same_digits(rng: np.random.Generator, n: int, per_cell: int) -> tuple[list[int], list[int]]:
    digits = np.full(per_cell, n)
    return with_digits(rng, digits), with_digits(rng, digits)


def mul_test(cfg: DataConfig, digits: list[int]) -> list[Example]:
    rng = generator(cfg.seed, "test")
    out = []
    for rows in digits:  # digits of b (the multiplier)
        for cols in digits:  # digits of a (the multiplicand)
            a_list = with_digits(rng, np.full(cfg.test_per_cell, cols))
            b_list = with_digits(rng, np.full(cfg.test_per_cell, rows))
            out += mul_lines(a_list, b_list, cfg.format, "none", cfg.max_digits, cell=("main", rows, cols))
    return out


def add_scratchpad_test(cfg: DataConfig, digits: list[int]) -> list[Example]:
    rng = generator(cfg.seed, "test")
    return [
        _scratchpad(cfg, a, b, rng, cell=("main", None, n))
        for n in digits
        for a, b in zip(*same_digits(rng, n, cfg.test_per_cell), strict=True)
    ]


def reverse_test(cfg: DataConfig, digits: list[int]) -> list[Example]:
    rng = generator(cfg.seed, "test")
    out = []
    for n in digits:
        counts = np.full(cfg.test_per_cell, n)
        out += [_reverse(a, n, ("regular", None, n)) for a in with_digits(rng, counts)]
        out += [_reverse(a, n, ("repetitive", None, n)) for a in repetitive(rng, counts)]
    return out


def add_test(
    cfg: DataConfig, digits: list[int], context: str = "main", fmt: str | None = None
) -> list[Example]:
    rng = generator(cfg.seed, "test")
    return [
        _add(fmt or cfg.format, a, b, rng, cfg.max_digits, cell=(context, None, n))
        for n in digits
        for a, b in zip(*same_digits(rng, n, cfg.test_per_cell), strict=True)
    ]


def add_mixed_test(cfg: DataConfig, longest: int) -> list[Example]:
    """`test_per_cell` sums of a `longest`-digit operand and one of 1..longest digits (uniform), in either
    order: the unequal lengths a length test meets beside its equal-length cells, at its longest. A
    stream of its own, so the equal-length cells are the same problems with or without it."""
    rng = generator(cfg.seed, "mixed_test")
    long = with_digits(rng, np.full(cfg.test_per_cell, longest))
    short = with_digits(rng, rng.integers(1, longest + 1, size=cfg.test_per_cell))
    swap = (rng.random(cfg.test_per_cell) < 0.5).tolist()
    pairs = [(b, a) if flip else (a, b) for a, b, flip in zip(long, short, swap, strict=True)]
    return [_add(cfg.format, a, b, rng, cfg.max_digits, cell=("mixed", None, longest)) for a, b in pairs]
