"""Digit reversal (section 3.2): ``1 2 3 # 3 2 1``; one operand, no b."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from arith.data import formats, sampling
from arith.data.tasks.base import Task


class Reverse(Task):
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
        return sampling.reverse_test(cfg, self.test_digits(cfg))

    def default_test_digits(self, cfg):
        """Regular and repetitive numbers from the fewest training digits to six beyond the most."""
        return list(range(cfg.min_digits, cfg.max_digits + 7))

    def problem_id(self, example):
        """The digits as written (leading zeros included)."""
        return ("reverse", "".join(ch for ch in example.prompt if ch.isdigit()))
