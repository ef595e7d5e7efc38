"""Multiplication (section 3.1, appendix A): ``a * b # a·b`` in four formats, with augmentations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from arith.data import formats, sampling
from arith.data.tasks.base import Task


class Mul(Task):
    name = "mul"
    formats = ("basic", "reverse_product", "padding", "padding_reverse")
    options = frozenset({"max_digits", "first_step"})
    direct = frozenset(formats)
    paper_defaults: ClassVar[Mapping[str, Any]] = {"train_samples": 300_000, "min_digits": 1, "max_digits": 5}
    settings = frozenset({"one_digit_weight", "augment"})
    carries = "product"
    operator = "*"
    layout = "grid"
    paper_name = "mul"
    paper_by_max_digits = True

    def line(self, fmt, a, b, **options):
        return formats.mul_line(fmt, a, b, **options)

    def example(self, fmt, a, b, *, kind="main", cell=None, **options):
        kind = "first_step" if options.get("first_step") else kind
        return super().example(fmt, a, b, kind=kind, cell=cell, **options)

    def train_set(self, cfg):
        return sampling.mul_train(cfg)

    def test_set(self, cfg):
        return sampling.mul_test(cfg, self.test_digits(cfg))

    def problem_id(self, example):
        return ("%" if example.kind == "first_step" else "*", example.a, example.b)

    def typed_example(self, cfg, a, b):
        cell = ("main", len(str(b)), len(str(a)))
        return self.example(cfg.format, a, b, cell=cell, max_digits=cfg.max_digits)
