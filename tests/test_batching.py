"""Length-bucketed batches: deterministic per (seed, epoch), every line once, little padding, right masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arith.data.examples import Example
from arith.training.batching import (
    BUCKET_WINDOW,
    BatchLoader,
    EncodedLine,
    bucket_width,
    collate,
    curriculum_cap,
    epoch_order,
    example_digits,
)


def _lines(n: int, seed: int = 0) -> list[EncodedLine]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        length = int(rng.integers(5, 40))
        answer_start = int(rng.integers(1, length))
        out.append(EncodedLine(tuple(int(x) for x in rng.integers(3, 50, size=length)), answer_start))
    return out


def test_epoch_order_covers_every_line_once_and_is_deterministic() -> None:
    lengths = [len(line) for line in _lines(1000)]
    order = epoch_order(lengths, batch_size=32, seed=3, epoch=5)
    flat = np.concatenate(order)
    assert sorted(flat.tolist()) == list(range(1000))
    again = epoch_order(lengths, batch_size=32, seed=3, epoch=5)
    assert all((a == b).all() for a, b in zip(order, again, strict=True))
    other_epoch = np.concatenate(epoch_order(lengths, batch_size=32, seed=3, epoch=6))
    other_seed = np.concatenate(epoch_order(lengths, batch_size=32, seed=4, epoch=5))
    assert not (flat == other_epoch).all()
    assert not (flat == other_seed).all()


def test_bucketing_keeps_padding_small() -> None:
    lines = _lines(4000)
    loader = BatchLoader(lines, batch_size=32, pad_id=0, loss_on="answer", seed=0)
    # random batches of lines 5..39 long waste about 40% on padding; sorted windows almost none
    rng = np.random.default_rng(0)
    lengths = np.array([len(line) for line in lines])
    perm = rng.permutation(len(lines))
    unsorted = 1 - lengths.sum() / sum(lengths[perm[i : i + 32]].max() * 32 for i in range(0, len(perm), 32))
    assert unsorted > 0.3
    assert loader.padding_fraction(epoch=1) < 0.05


def test_len_counts_the_batches_of_an_epoch() -> None:
    for n, batch_size in [(1, 4), (100, 7), (32 * BUCKET_WINDOW + 5, 32), (2 * 16 * BUCKET_WINDOW, 16)]:
        loader = BatchLoader(_lines(n), batch_size=batch_size, pad_id=0, loss_on="all", seed=1)
        batches = list(loader.epoch(0))
        assert len(batches) == len(loader)
        assert sum(b.input_ids.shape[0] for b in batches) == n


def test_collate_pads_right_and_masks_the_answer() -> None:
    lines = [EncodedLine((5, 6, 7, 8, 2), 3), EncodedLine((9, 10, 2), 1)]
    batch = collate(lines, pad_id=0, loss_on="answer")
    assert batch.input_ids.tolist() == [[5, 6, 7, 8, 2], [9, 10, 2, 0, 0]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]
    assert batch.loss_mask.tolist() == [[0, 0, 0, 1, 1], [0, 1, 1, 0, 0]]
    assert batch.n_tokens == 8
    whole = collate(lines, pad_id=0, loss_on="all")
    assert whole.loss_mask.tolist() == [[0, 1, 1, 1, 1], [0, 1, 1, 0, 0]]
    assert batch.input_ids.dtype == torch.long and batch.loss_mask.dtype == torch.float32


def test_collate_rejects_unknown_loss_target() -> None:
    with pytest.raises(ValueError, match="answer, all"):
        collate([EncodedLine((1, 2), 1)], pad_id=0, loss_on="prompt")


def test_curriculum_cap_gives_each_digit_count_an_equal_share_then_lifts() -> None:
    caps = [curriculum_cap(step, 100, fewest=1, most=5) for step in range(120)]
    assert caps[0] == 1 and caps[19] == 1 and caps[20] == 2 and caps[99] == 5 and caps[100:] == [5] * 20
    assert caps == sorted(caps)
    assert [caps.count(d) for d in range(1, 5)] == [20, 20, 20, 20]


def test_example_digits_reads_the_longer_operand() -> None:
    def ex(a: int, b: int | None) -> Example:
        return Example("add", "basic", a, b, "p", " a", "a")

    assert example_digits(ex(7, 12345)) == 5
    assert example_digits(ex(9876, None)) == 4


def test_curriculum_batches_stay_under_the_cap_and_epochs_keep_their_length() -> None:
    lines = _lines(3000)
    digits = [1 + i % 5 for i in range(len(lines))]
    plain = BatchLoader(lines, batch_size=16, pad_id=0, loss_on="answer", seed=2, digits=digits)
    loader = BatchLoader(lines, 16, 0, "answer", seed=2, digits=digits, curriculum_steps=len(plain) + 40)
    steps = len(loader)
    first, second = loader.epoch_indices(1), loader.epoch_indices(2)
    assert len(first) == len(second) == steps == len(plain)
    for step, idx in enumerate(first + second):
        cap = curriculum_cap(step, loader.curriculum_steps, 1, 5)
        assert max(digits[i] for i in idx) <= cap
        assert len(set(idx.tolist())) == len(idx)
    # the curriculum starts at the fewest digits and has reached the most by its end
    assert {digits[i] for i in first[0]} == {1}
    assert max(digits[i] for idx in second[30:40] for i in idx) == 5
    # after the curriculum the epoch is the plain one, batch for batch; epochs are deterministic
    tail = [(a == b).all() for a, b in zip(second[40:], plain.epoch_indices(2)[40:], strict=True)]
    assert all(tail)
    assert all((a == b).all() for a, b in zip(first, loader.epoch_indices(1), strict=True))
    assert all((a == b).all() for a, b in zip(loader.epoch_indices(3), plain.epoch_indices(3), strict=True))


def test_a_curriculum_needs_a_digit_count_per_line() -> None:
    with pytest.raises(ValueError, match="one digit count per line"):
        BatchLoader(_lines(10), 4, 0, "answer", seed=0, curriculum_steps=5)


def test_bucket_width_is_the_smallest_bucket_that_holds_the_batch() -> None:
    buckets = (16, 32, 64)
    assert [bucket_width(w, buckets) for w in (1, 16, 17, 32, 33, 64)] == [16, 16, 32, 32, 64, 64]
    assert bucket_width(65, buckets) == 128 and bucket_width(129, buckets) == 192  # multiples past the top
    assert bucket_width(23, ()) == 23  # no buckets: the longest line


def test_bucketed_batches_take_few_shapes_and_keep_their_lines_and_masks() -> None:
    lines = _lines(3000)
    plain = BatchLoader(lines, batch_size=32, pad_id=0, loss_on="answer", seed=2)
    bucketed = BatchLoader(
        lines, batch_size=32, pad_id=0, loss_on="answer", seed=2, bucket_lengths=[24, 16, 40]
    )
    assert len(plain.batch_shapes()) > 10  # every width from 5 to 39 occurs
    assert {width for _, width in bucketed.batch_shapes()} <= {16, 24, 40}
    assert len(bucketed.batch_shapes()) <= 2 * 3  # the epoch's one short batch may add a row count
    for a, b in zip(plain.epoch(1), bucketed.epoch(1), strict=True):
        assert b.input_ids.shape[1] == bucket_width(a.input_ids.shape[1], (16, 24, 40))
        width = a.input_ids.shape[1]
        # the real cells are the same; what buckets add is padding, unattended and unlearned
        assert torch.equal(a.input_ids, b.input_ids[:, :width])
        assert torch.equal(a.attention_mask, b.attention_mask[:, :width])
        assert torch.equal(a.loss_mask, b.loss_mask[:, :width])
        assert not b.attention_mask[:, width:].any() and not b.loss_mask[:, width:].any()
        assert a.n_tokens == b.n_tokens
    assert bucketed.padding_fraction() > plain.padding_fraction()


@pytest.mark.parametrize("curriculum_steps", [0, 280])
def test_a_pass_cut_into_epochs_is_the_same_batches_in_the_same_order(curriculum_steps) -> None:
    """`train.epochs_per_pass`: epochs 1..k are pass 1's batches in k consecutive slices, k+1..2k pass
    2's (a digit curriculum, here over the first pass and a half, included): the steps of k = 1."""
    lines = _lines(3000)
    digits = [1 + i % 5 for i in range(len(lines))]
    whole = BatchLoader(lines, 16, 0, "answer", seed=2, digits=digits, curriculum_steps=curriculum_steps)
    cut = BatchLoader(
        lines, 16, 0, "answer", seed=2, digits=digits, curriculum_steps=curriculum_steps, epochs_per_pass=7
    )
    for pass_number in (1, 2):
        slices = [cut.epoch_indices(7 * (pass_number - 1) + part) for part in range(1, 8)]
        assert {len(s) for s in slices} <= {len(whole) // 7, len(whole) // 7 + 1}
        joined = [idx for s in slices for idx in s]
        assert len(joined) == len(whole)
        assert all((a == b).all() for a, b in zip(joined, whole.epoch_indices(pass_number), strict=True))


def test_a_pass_cannot_be_cut_into_more_epochs_than_batches() -> None:
    with pytest.raises(ValueError, match="epochs_per_pass=9 cuts a pass of 8 batches"):
        BatchLoader(_lines(128), 16, 0, "answer", seed=0, epochs_per_pass=9)
