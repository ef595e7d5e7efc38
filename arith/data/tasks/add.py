"""Plain addition (the nl_mix arithmetic; padding_reverse after Lee et al. 2023)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from arith.data import formats, sampling
from arith.data.tasks.base import Task


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
        return self.checked_example(cfg.format, a, b, cell=cell, rng=rng, max_digits=cfg.max_digits)

    def test_set(self, cfg):
        return sampling.add_test(cfg, self.test_digits(cfg))
