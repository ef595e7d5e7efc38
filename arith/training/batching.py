"""Length-bucketed training batches and loss masks. Each pass is shuffled from (seed, pass) alone, so a
resumed run draws exactly the batches an uninterrupted one would; lines are sorted by length within a
window of batches so that little is padding. A digit curriculum (`train.curriculum`) draws the first
batches from lines of few digits; fixed bucket lengths (`train.bucket_lengths`) give CUDA graphs a handful
of shapes, the padding masked out, so a step computes what it would without them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from arith.config import LOSS_ON
from arith.training.epochs import check_epochs_per_pass, pass_of, slice_bounds

#: how many batches' worth of shuffled lines are sorted by length together: larger = less padding,
#: smaller = batches closer to i.i.d.
BUCKET_WINDOW = 50


@dataclass(frozen=True, slots=True)
class EncodedLine:
    """One training line as token ids; tokens from `answer_start` on are the answer (eos included)."""

    input_ids: tuple[int, ...]
    answer_start: int

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass
class Batch:
    """Right-padded tensors for one optimiser step. `loss_mask[i, t] = 1` where token t is learned."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor

    @property
    def n_tokens(self) -> int:
        """Real (non-pad) tokens, the unit of tokens/s."""
        return int(self.attention_mask.sum())

    def to(self, device: torch.device | str) -> Batch:
        non_blocking = torch.device(device).type == "cuda"
        return Batch(*(t.to(device, non_blocking=non_blocking) for t in vars(self).values()))


def pad_token_id(tokenizer) -> int:
    """The tokenizer's pad id; GPT-2's own tokenizer has none, so eos stands in (masked out anyway)."""
    pad = tokenizer.pad_token_id
    return tokenizer.eos_token_id if pad is None else pad


def bucket_width(width: int, bucket_lengths: Sequence[int] = ()) -> int:
    """A batch's padded width: the least bucket holding its longest line, else a multiple of the largest."""
    if not bucket_lengths:
        return width
    fits = [b for b in bucket_lengths if b >= width]
    if fits:
        return min(fits)
    largest = max(bucket_lengths)
    return -(-width // largest) * largest


def collate(
    lines: Sequence[EncodedLine],
    pad_id: int,
    loss_on: str = "answer",
    bucket_lengths: Sequence[int] = (),
) -> Batch:
    """Right-pad `lines` into a Batch (to a bucket length, given `bucket_lengths`) that learns the answer
    tokens (`loss_on="answer"`) or every real token after the first (`all`)."""
    if loss_on not in LOSS_ON:
        raise ValueError(f"loss_on={loss_on!r} is not valid; choose one of: {', '.join(LOSS_ON)}")
    if not lines:
        raise ValueError("collate needs at least one line")
    width = bucket_width(max(len(line) for line in lines), bucket_lengths)
    ids = np.full((len(lines), width), pad_id, dtype=np.int64)
    attention = np.zeros((len(lines), width), dtype=np.int64)
    learn = np.zeros((len(lines), width), dtype=np.float32)
    for i, line in enumerate(lines):
        n = len(line)
        ids[i, :n] = line.input_ids
        attention[i, :n] = 1
        learn[i, (line.answer_start if loss_on == "answer" else 1) : n] = 1.0
    return Batch(torch.from_numpy(ids), torch.from_numpy(attention), torch.from_numpy(learn))


def epoch_order(lengths: Sequence[int], batch_size: int, seed: int, epoch: int) -> list[np.ndarray]:
    """Index batches for one epoch: shuffled by (seed, epoch), sorted by length within windows of
    BUCKET_WINDOW batches, then the batches themselves shuffled (so long and short ones interleave)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(len(lengths))
    lengths_arr = np.asarray(lengths)
    window = batch_size * BUCKET_WINDOW
    batches: list[np.ndarray] = []
    for start in range(0, len(order), window):
        chunk = order[start : start + window]
        chunk = chunk[np.argsort(lengths_arr[chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def batches_per_epoch(n_lines: int, batch_size: int) -> int:
    """Batches in an epoch of `n_lines` lines (each bucketing window may end in one short batch)."""
    window = batch_size * BUCKET_WINDOW
    full, rest = divmod(n_lines, window)
    return full * BUCKET_WINDOW + -(-rest // batch_size)


def example_digits(example) -> int:
    """How hard a line is for the curriculum: the digit count of its longer operand."""
    return max((len(str(abs(n))) for n in (example.a, example.b) if n is not None), default=0)


def curriculum_cap(step: int, curriculum_steps: int, fewest: int, most: int) -> int:
    """The most digits a line may have at `step` (0-based): every count from `fewest` to `most` gets an
    equal share of the first `curriculum_steps` steps; after them, no cap."""
    if step >= curriculum_steps:
        return most
    return min(most, fewest + (most - fewest + 1) * step // curriculum_steps)


@dataclass(eq=False)
class BatchLoader:
    """The training set as length-bucketed batches, deterministic per (seed, epoch). With `epochs_per_pass`
    = k each epoch is one of k slices of its pass; with `digits` (one count per line), the first
    `curriculum_steps` batches are drawn from the lines under the curriculum's cap at that step."""

    lines: Sequence[EncodedLine]
    batch_size: int
    pad_id: int
    loss_on: str
    seed: int
    digits: Sequence[int] | None = None
    curriculum_steps: int = 0
    bucket_lengths: Sequence[int] = ()
    epochs_per_pass: int = 1

    def __post_init__(self) -> None:
        if not self.lines:
            raise ValueError("the training set is empty")
        if self.curriculum_steps and (self.digits is None or len(self.digits) != len(self.lines)):
            raise ValueError("a curriculum needs one digit count per line")
        self.lines = list(self.lines)
        self._lengths = [len(line) for line in self.lines]
        self._digits = np.asarray(self.digits if self.digits is not None else [0] * len(self.lines))
        self.bucket_lengths = tuple(sorted(self.bucket_lengths))
        check_epochs_per_pass(self.epochs_per_pass)
        if self.epochs_per_pass > len(self):
            raise ValueError(
                f"train.epochs_per_pass={self.epochs_per_pass} cuts a pass of {len(self)} batches into "
                "epochs without a step: at most one epoch a batch"
            )

    def __len__(self) -> int:
        """Batches per pass over the lines (each bucketing window may end in one short batch)."""
        return batches_per_epoch(len(self.lines), self.batch_size)

    def epoch(self, epoch: int) -> Iterator[Batch]:
        """The batches of `epoch` (1-based, as the trainer counts)."""
        for idx in self.epoch_indices(epoch):
            yield collate([self.lines[i] for i in idx], self.pad_id, self.loss_on, self.bucket_lengths)

    def epoch_indices(self, epoch: int) -> list[np.ndarray]:
        """The index batches of `epoch`: its slice of its pass (the whole pass at one epoch a pass)."""
        pass_number, part = pass_of(epoch, self.epochs_per_pass)
        start, stop = slice_bounds(len(self), self.epochs_per_pass, part)
        return self.pass_indices(pass_number)[start:stop]

    def pass_indices(self, pass_number: int) -> list[np.ndarray]:
        """The index batches of one pass (1-based) over the lines, in order."""
        order = epoch_order(self._lengths, self.batch_size, self.seed, pass_number)
        first_step = (pass_number - 1) * len(self)
        if not self.curriculum_steps or first_step >= self.curriculum_steps:
            return order
        rng = np.random.default_rng([self.seed, pass_number, 1])
        fewest, most = int(self._digits.min()), int(self._digits.max())
        allowed = {cap: np.flatnonzero(self._digits <= cap) for cap in range(fewest, most + 1)}
        lengths = np.asarray(self._lengths)
        for b in range(min(len(order), self.curriculum_steps - first_step)):
            pool = allowed[curriculum_cap(first_step + b, self.curriculum_steps, fewest, most)]
            picked = rng.choice(pool, size=min(self.batch_size, len(pool)), replace=False)
            order[b] = picked[np.argsort(lengths[picked], kind="stable")]
        return order

    def batch_shapes(self, epoch: int = 1) -> set[tuple[int, int]]:
        """The distinct (rows, width) of one epoch's batches: the shapes a compiled step records."""
        return {
            (len(idx), bucket_width(max(self._lengths[i] for i in idx), self.bucket_lengths))
            for idx in self.epoch_indices(epoch)
        }

    def padding_fraction(self, epoch: int = 1) -> float:
        """Share of batch cells that are padding in one epoch."""
        cells = real = 0
        for idx in self.epoch_indices(epoch):
            widths = [self._lengths[i] for i in idx]
            cells += bucket_width(max(widths), self.bucket_lengths) * len(widths)
            real += sum(widths)
        return 1.0 - real / cells
