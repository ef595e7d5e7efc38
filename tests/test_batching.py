"""Length-bucketed batches: deterministic per (seed, epoch), every line once, little padding, right masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arith.batching import BUCKET_WINDOW, BatchLoader, EncodedLine, collate, epoch_order


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
