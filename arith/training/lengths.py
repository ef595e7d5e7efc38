"""Whether a trial's sequences fit its positions, known from its config and its data before it trains.

Every position scheme places a bounded number of columns (`PositionScheme.max_width`: GPT-2's
`model.n_positions` rows, or the ids `randomized` draws from). A wider sequence fails in the scheme's
lookup inside the trial, on every retry alike. Two kinds of sequence are made from the data: a training
batch, its longest line padded to its bucket (`train.bucket_lengths`), and a decoding batch (the test
grid's, the probe's), its prompts left-padded to the longest plus the reply cap decoded after them (the
whole width is drawn, as `randomized` draws it and `arith.ask` checks a problem, though a scheme indexed
by rank never reads the last column). Both are measured here the same way before launch
(`check_positions`, from a config) and in the trial's setup (`check_train_lines` and `check_decoding`, on
what it has encoded already).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from arith.config import ConfigError, ExperimentConfig
from arith.data.datasets import test_examples, train_examples
from arith.data.examples import Example
from arith.model.schemes import scheme_class
from arith.model.tokenizer import encode_examples, tokenizer_for
from arith.training.batching import bucket_width, check_line_lengths
from arith.training.decoding import decoding_order, reply_cap
from arith.training.metrics import probe_examples


def check_positions(cfg: ExperimentConfig) -> None:
    """Raise ConfigError when a training or decoding batch of the trial's data would span more columns
    than its position scheme places. A token holds at least one byte, so a training line is encoded only
    when its bytes alone could be too many: a large training set costs its generation, not its encoding."""
    train_set = train_examples(cfg.data)
    tokenizer = tokenizer_for(cfg.model, [example.text for example in train_set])
    limit, _ = scheme_class(cfg.model.position).max_width(cfg)
    buckets = cfg.train.bucket_lengths
    wide = [e for e in train_set if bucket_width(_byte_bound(e), buckets) > limit]
    check_train_lines([len(ids) for ids, _ in encode_examples(tokenizer, wide)], cfg)
    check_decoding(tokenizer, evaluated_examples(cfg), cfg)


def evaluated_examples(cfg: ExperimentConfig) -> list[Example]:
    """The problems a trial decodes: its test grid, and its probe when it stops at a target accuracy."""
    return test_examples(cfg.data) + (probe_examples(cfg) if cfg.train.target_accuracy > 0 else [])


def check_train_lines(lengths: Iterable[int], cfg: ExperimentConfig) -> None:
    """Training lines (their token counts) padded to their bucket against the scheme's columns."""
    limit, bound = scheme_class(cfg.model.position).max_width(cfg)
    check_line_lengths(lengths, limit, "training data", cfg.train.bucket_lengths, bound)


def check_decoding(tokenizer, examples: Sequence[Example], cfg: ExperimentConfig) -> None:
    """Decoding batches, as the evaluation forms them (`decoding_order`), against the scheme's columns."""
    limit, bound = scheme_class(cfg.model.position).max_width(cfg)
    t = cfg.train
    encoded = encode_examples(tokenizer, examples)
    prompts = [start for _, start in encoded]
    caps = [
        t.eval_max_new_tokens or reply_cap(tokenizer, example, len(ids) - start)
        for example, (ids, start) in zip(examples, encoded, strict=True)
    ]
    order = decoding_order(prompts, caps)
    for first in range(0, len(order), t.eval_batch_size):
        rows = order[first : first + t.eval_batch_size]
        prompt, cap = max(prompts[i] for i in rows), max(caps[i] for i in rows)
        if prompt + cap > limit:
            raise ConfigError(
                f"test problems: a decoding batch spans {prompt + cap} columns (prompts of up to {prompt} "
                f"tokens, then up to {cap} new ones), more than {bound}; raise it or test fewer digits "
                "(data.test_digits)"
            )


def _byte_bound(example: Example) -> int:
    """The most tokens a line can encode to: one a byte of its prompt (after the leading space the
    encoding adds) and of its answer, plus end of text."""
    return len((" " + example.prompt).encode()) + len(example.answer.encode()) + 1
