"""Plain addition (the nl_mix arithmetic; padding_reverse after Lee et al. 2023; lsd_first and
line_padding_reverse, the formats of Abacus embeddings and position coupling, for length generalisation)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from arith.data import formats, sampling
from arith.data.tasks.base import Task


class Add(Task):
    name = "add"
    operator = "+"
    formats = ("basic", "random_space", "padding_reverse", "lsd_first", "line_padding_reverse")
    options = frozenset({"max_digits", "rng", "spaces"})
    direct = frozenset({"basic", "padding_reverse", "lsd_first", "line_padding_reverse"})
    #: the formats made for length generalisation: no width fixed, so a model trained on short sums is
    #: tested on any longer one; their test adds a `mixed` cell, the longest length beside every shorter
    length_formats = frozenset({"lsd_first", "line_padding_reverse"})
    paper_defaults: ClassVar[Mapping[str, Any]] = {"train_samples": 120_000, "min_digits": 1, "max_digits": 3}

    def line(self, fmt, a, b, **options):
        return formats.add_line(fmt, a, b, **options)

    def train_set(self, cfg):
        return sampling.add_train(cfg)

    def typed_example(self, cfg, a, b):
        cell = ("main", None, max(len(str(a)), len(str(b))))
        rng = np.random.default_rng(cfg.seed)
        return self.example(cfg.format, a, b, cell=cell, rng=rng, max_digits=cfg.max_digits)

    def test_set(self, cfg):
        digits = self.test_digits(cfg)
        equal = sampling.add_test(cfg, digits)
        if cfg.format not in self.length_formats or max(digits) < 2:
            return equal
        return equal + sampling.add_mixed_test(cfg, max(digits))
