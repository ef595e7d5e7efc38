"""Addition with a scratchpad (section 3.1, appendix B): digit-wise steps, then the sum."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from arith.data import formats, sampling
from arith.data.tasks.base import Task


class AddScratchpad(Task):
    name = "add_scratchpad"
    settings = frozenset({"reverse_addends", "random_space_prob"})
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
        return sampling.add_scratchpad_test(cfg, self.test_digits(cfg))

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
        return self.example(cfg.format, a, b, cell=cell, rng=np.random.default_rng(cfg.seed), **options)
