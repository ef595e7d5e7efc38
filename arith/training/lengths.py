"""Whether a trial's batches (a training line padded to its bucket; prompts plus the reply cap) fit its
position scheme's columns, known before it trains: a wider one would fail in the scheme's lookup on every
retry alike. Checked before launch (`check_positions`) and in the trial's setup, on what it has encoded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from arith.config import ConfigError, ExperimentConfig
from arith.data.datasets import test_examples, train_examples
from arith.data.examples import Example
from arith.model.schemes import scheme_class
from arith.model.tokenizer import encode_examples, tokenizer_for
from arith.training.batching import bucket_width
from arith.training.decoding import decoding_plan
from arith.training.metrics import probe_examples


def check_positions(cfg: ExperimentConfig) -> None:
    """Raise ConfigError when a training or decoding batch would span more columns than the scheme places.
    A token holds at least one byte, so only lines whose bytes could be too many are encoded."""
    train_set = train_examples(cfg.data)
    tokenizer = tokenizer_for(cfg.model, [example.text for example in train_set])
    limit, _ = scheme_class(cfg.model.position).max_width(cfg)
    buckets = cfg.train.bucket_lengths
    wide = [e for e in train_set if bucket_width(_byte_bound(e), buckets) > limit]
    check_train_lines([len(ids) for ids, _ in encode_examples(tokenizer, wide)], cfg)
    probe = probe_examples(cfg) if cfg.train.target_accuracy > 0 else []
    check_decoding(tokenizer, test_examples(cfg.data) + probe, cfg)


def check_train_lines(lengths: Iterable[int], cfg: ExperimentConfig) -> None:
    """Training lines (their token counts), padded to their bucket, against the scheme's columns."""
    limit, bound = scheme_class(cfg.model.position).max_width(cfg)
    longest = max(lengths, default=0)
    width = bucket_width(longest, cfg.train.bucket_lengths)
    if width > limit:
        padded = f" (padded to {width} by train.bucket_lengths)" if width > longest else ""
        raise ConfigError(
            f"training data: the longest line is {longest} tokens{padded}, more than "
            f"{bound or f'model.n_positions={limit}'}; raise it (GPT-2's n_positions is 1024) or use "
            "fewer digits"
        )


def check_decoding(tokenizer, examples: Sequence[Example], cfg: ExperimentConfig) -> None:
    """Decoding batches, as the evaluation forms them (`decoding_plan`), against the scheme's columns."""
    limit, bound = scheme_class(cfg.model.position).max_width(cfg)
    t = cfg.train
    prompts, caps, order = decoding_plan(tokenizer, examples, t.eval_max_new_tokens)
    for first in range(0, len(order), t.eval_batch_size):
        rows = order[first : first + t.eval_batch_size]
        prompt, cap = max(len(prompts[i]) for i in rows), max(caps[i] for i in rows)
        if prompt + cap > limit:
            raise ConfigError(
                f"test problems: a decoding batch spans {prompt + cap} columns (prompts of up to {prompt} "
                f"tokens, then up to {cap} new ones), more than {bound}; raise it or test fewer digits "
                "(data.test_digits)"
            )


def _byte_bound(example: Example) -> int:
    """The most tokens a line can encode to: a byte each of " " + prompt and of answer, plus end of text."""
    return len((" " + example.prompt).encode()) + len(example.answer.encode()) + 1
