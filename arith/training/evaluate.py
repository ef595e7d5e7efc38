"""The paper's evaluation: greedy answers, exact match per test cell, memorisation and failures.

Prompts are decoded in batches of similar length (sorted by prompt length, left-padded) with the KV
cache. Each reply is decoded whole: until end of text, or end of line once the reply has begun (every
format's answer is one line), capped at the longest reply the data can produce (`reply_cap`: for a
dialogue the longest teacher reply of arith/data/dialogue.py's templates at the test's digit counts) plus a
margin. A generation is correct iff it ended within the cap and
`arith.data.tasks.answer_key(task, format, generated) == example.key`: for dialogues the last number of
the teacher's reply, as the paper checks "the teacher's response". Each cell also records the fraction of
its test problems that were in the training set (`arith.data.tasks.problem_id`), which the paper worries
about for small digit counts but never measures.

Wrong answers are kept: every one up to `errors_per_cell` a cell (`EvalResult.errors`, with the operands,
for `arith.tracking.digit_errors`), and the first `failures_per_cell` of those as `EvalResult.failures`.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Collection, Hashable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import torch

from arith.data.examples import Cell, Example
from arith.data.tasks import answer_key, get_task, problem_id
from arith.model.tokenizer import encode_examples
from arith.tracking.schema import (
    ACCURACY_SEEN_COLUMN,
    ACCURACY_UNSEEN_COLUMN,
    CELL_COLUMNS,
    COL_DIGITS_COLUMN,
    CONTEXT_COLUMN,
    ERROR_COLUMNS,
    N_SEEN_COLUMN,
    ROW_DIGITS_COLUMN,
    SEEN_IN_TRAIN_COLUMN,
)

#: extra tokens decoded beyond the longest reply the data can produce (room for a wrong, longer answer)
ANSWER_MARGIN = 4


@dataclass(frozen=True)
class CellResult:
    """One cell of the paper's grids, its accuracy split by whether each test problem is also a training
    problem: a model that memorised its training set is right on the seen ones only. `seen_in_train`
    (the seen fraction), `n_seen` and the split accuracies are NaN when no training set was given; an
    accuracy is NaN where its part is empty."""

    context: str
    row_digits: int | None
    col_digits: int
    n: int
    correct: int
    accuracy: float
    seen_in_train: float
    n_seen: float = math.nan
    accuracy_seen: float = math.nan
    accuracy_unseen: float = math.nan


@dataclass(frozen=True)
class Failure:
    """A wrong answer, like the paper's table tab:fail."""

    prompt: str
    expected: str
    generated: str
    cell: Cell
    #: the operands (b is None for reversal)
    a: int | None = None
    b: int | None = None

    def to_json(self) -> dict:
        context, row_digits, col_digits = self.cell
        return {
            "prompt": self.prompt,
            "expected": self.expected,
            "generated": self.generated,
            CONTEXT_COLUMN: context,
            ROW_DIGITS_COLUMN: row_digits,
            COL_DIGITS_COLUMN: col_digits,
        }


@dataclass
class EvalResult:
    cells: list[CellResult]
    #: the first `failures_per_cell` wrong answers of each cell
    failures: list[Failure]
    #: wall-clock seconds of the whole evaluation (encoding, decoding, scoring)
    seconds: float
    #: every wrong answer, up to `errors_per_cell` a cell, in the order of the examples
    errors: list[Failure] = field(default_factory=list)

    @property
    def n_samples(self) -> int:
        return sum(cell.n for cell in self.cells)

    @property
    def samples_per_s(self) -> float:
        return self.n_samples / self.seconds if self.seconds > 0 else math.inf

    def mean_accuracy(self, context: str | None = None) -> float:
        """The unweighted mean over cells (the paper's tables give every cell equal weight)."""
        cells = [c for c in self.cells if context is None or c.context == context]
        return float(np.mean([c.accuracy for c in cells])) if cells else math.nan

    def seen_fraction(self) -> float:
        """Fraction of all test items that were also training items (NaN without a training set)."""
        if not self.cells or math.isnan(self.cells[0].seen_in_train):
            return math.nan
        return sum(c.seen_in_train * c.n for c in self.cells) / self.n_samples

    def to_frame(self) -> pd.DataFrame:
        """One row per cell, columns CELL_COLUMNS (row_digits is None for one-dimensional grids)."""
        return pd.DataFrame([asdict(c) for c in self.cells], columns=CELL_COLUMNS)

    def failures_frame(self) -> pd.DataFrame:
        columns = ["prompt", "expected", "generated", CONTEXT_COLUMN, ROW_DIGITS_COLUMN, COL_DIGITS_COLUMN]
        return pd.DataFrame([f.to_json() for f in self.failures], columns=columns)

    def errors_frame(self) -> pd.DataFrame:
        """The kept wrong answers, one row each, columns ERROR_COLUMNS (`reply` = the generated text)."""
        rows = [(*f.cell, f.a, f.b, f.prompt, f.expected, f.generated) for f in self.errors]
        frame = pd.DataFrame(rows, columns=ERROR_COLUMNS)
        return frame.astype({"a": "Int64", "b": "Int64", ROW_DIGITS_COLUMN: "Int64"})


def evaluate(
    model,
    tokenizer,
    examples: Sequence[Example],
    *,
    batch_size: int = 256,
    train_problems: Collection[Hashable] | None = None,
    failures_per_cell: int = 3,
    errors_per_cell: int = 100,
    seed: int = 0,
    max_new_tokens: int = 0,
) -> EvalResult:
    """Greedy-decode every example's prompt and score it per cell.

    `train_problems`: `arith.data.tasks.problem_ids(train_examples)`, for each cell's `seen_in_train`.
    `errors_per_cell`: wrong answers kept a cell (`EvalResult.errors`; the failures are the first of them).
    `seed` fixes the random position draws (random_embed tags, randomized ids) of the test.
    `max_new_tokens`: the decoding cap of every reply (0 = `reply_cap`, fitted to the data; set it for
    a dialogue file whose replies are longer than the generator's templates)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
    missing = [e for e in examples if e.cell is None]
    if missing:
        raise ValueError(f"every test example needs a cell; {len(missing)} have none, e.g. {missing[0]}")
    start = time.perf_counter()
    generated, ended = _generate(model, tokenizer, examples, batch_size, seed, max_new_tokens)
    correct = [is_right(e, text, done) for e, text, done in zip(examples, generated, ended, strict=True)]
    seen = None
    if train_problems is not None:
        seen = [problem_id(e) in train_problems for e in examples]
    cells = _score_cells(examples, correct, seen)
    errors = _pick_failures(examples, generated, correct, max(errors_per_cell, failures_per_cell))
    failures = _first_per_cell(errors, failures_per_cell)
    errors = _first_per_cell(errors, errors_per_cell)
    return EvalResult(cells=cells, failures=failures, seconds=time.perf_counter() - start, errors=errors)


def generate_answers(
    model,
    tokenizer,
    examples: Sequence[Example],
    *,
    batch_size: int = 256,
    seed: int = 0,
    max_new_tokens: int = 0,
) -> list[str]:
    """The model's greedy reply to each prompt, as text up to end of text, in the order of `examples`."""
    return generate_replies(
        model, tokenizer, examples, batch_size=batch_size, seed=seed, max_new_tokens=max_new_tokens
    )[0]


def generate_replies(
    model,
    tokenizer,
    examples: Sequence[Example],
    *,
    batch_size: int = 256,
    seed: int = 0,
    max_new_tokens: int = 0,
) -> tuple[list[str], list[bool]]:
    """(replies, whether each ended within its cap): what `evaluate` scores, with `is_right`."""
    return _generate(model, tokenizer, examples, batch_size, seed, max_new_tokens)


def is_right(example: Example, reply: str, ended: bool) -> bool:
    """The evaluation's exact match: the reply ended within its cap and its answer key is the example's."""
    return ended and answer_key(example.task, example.format, reply) == example.key


def reply_cap(tokenizer, example: Example, answer_tokens: int) -> int:
    """Tokens to decode for `example`: the longest reply its data can produce, plus ANSWER_MARGIN.

    `answer_tokens`: the reference answer's length (end of text included). Direct formats and the plain
    scratchpads write one reply per problem, so that length is the longest; random-space scratchpads may
    put an extra space token in every gap (at most twice the tokens); a dialogue's teacher may answer with
    any template of arith/data/dialogue.py, the longest of which is measured at the example's digit counts."""
    return get_task(example.task).reply_tokens(tokenizer, example, answer_tokens) + ANSWER_MARGIN


@functools.lru_cache(maxsize=8)
def line_end_ids(tokenizer) -> tuple[int, ...]:
    """The tokens that hold a line break ("\\n"; GPT-2 has several: "\\n", "\\n\\n", ...)."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    return tuple(i for i, text in enumerate(texts) if "\n" in text)


def _generate(
    model, tokenizer, examples: Sequence[Example], batch_size: int, seed: int, max_new_tokens: int
) -> tuple[list[str], list[bool]]:
    """(reply texts up to end of text, whether each reply ended within its cap)."""
    if not examples:
        return [], []
    eos = tokenizer.eos_token_id
    pad = eos if tokenizer.pad_token_id is None else tokenizer.pad_token_id
    encoded = encode_examples(tokenizer, examples)  # the training encoding: prompt = ids[:answer_start]
    prompts = [ids[:start] for ids, start in encoded]
    caps = [
        max_new_tokens or reply_cap(tokenizer, e, len(ids) - start)
        for e, (ids, start) in zip(examples, encoded, strict=True)
    ]
    line_ends = line_end_ids(tokenizer)
    order = sorted(range(len(examples)), key=lambda i: (len(prompts[i]), caps[i]))
    device = model.device
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    was_training = model.training
    model.eval()
    outputs: list[tuple[list[int], torch.Tensor]] = []
    try:
        for first in range(0, len(order), batch_size):
            rows = order[first : first + batch_size]
            input_ids, attention_mask = left_pad([prompts[i] for i in rows], pad)
            new_tokens = model.generate_greedy(
                input_ids.to(device, non_blocking=True),
                attention_mask.to(device, non_blocking=True),
                max_new_tokens=max(caps[i] for i in rows),
                eos_token_id=eos,
                generator=generator,
                stop_token_ids=line_ends,
            )
            outputs.append((rows, new_tokens))
    finally:
        model.train(was_training)
    texts: list[str] = [""] * len(examples)
    ended: list[bool] = [False] * len(examples)
    stops = set(line_ends)
    for rows, new_tokens in outputs:  # one device->host copy per batch, after all decoding is queued
        for i, ids in zip(rows, new_tokens.tolist(), strict=True):
            ids = ids[: caps[i]]
            end = ids.index(eos) if eos in ids else len(ids)
            ended[i] = end < len(ids) or _line_ended(ids, stops)
            texts[i] = tokenizer.decode(ids[:end], skip_special_tokens=True)
    return texts, ended


def _line_ended(ids: Sequence[int], line_ends: Collection[int]) -> bool:
    """Whether a line break follows the reply's first token that is not one (a reply may open with one)."""
    begun = False
    for token in ids:
        if token not in line_ends:
            begun = True
        elif begun:
            return True
    return False


def left_pad(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) with every sequence right-aligned, as greedy decoding needs."""
    width = max(len(s) for s in sequences)
    ids = np.full((len(sequences), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), width), dtype=np.int64)
    for row, seq in enumerate(sequences):
        if seq:
            ids[row, width - len(seq) :] = seq
            mask[row, width - len(seq) :] = 1
    return torch.from_numpy(ids), torch.from_numpy(mask)


def _cell_order(examples: Sequence[Example]) -> list[Cell]:
    """Cells sorted by context (in order of first appearance), then row and column digits."""
    contexts: dict[str, int] = {}
    for e in examples:
        contexts.setdefault(e.cell[0], len(contexts))
    cells = {e.cell for e in examples}
    return sorted(cells, key=lambda c: (contexts[c[0]], -1 if c[1] is None else c[1], c[2]))


def _score_cells(
    examples: Sequence[Example], correct: Sequence[bool], seen: Sequence[bool] | None
) -> list[CellResult]:
    by_cell: dict[Cell, list[int]] = {}
    for i, e in enumerate(examples):
        by_cell.setdefault(e.cell, []).append(i)
    results = []
    for cell in _cell_order(examples):
        items = by_cell[cell]
        n_correct = sum(correct[i] for i in items)
        split: dict[str, float] = {}
        if seen is not None:
            seen_items = [i for i in items if seen[i]]
            unseen_items = [i for i in items if not seen[i]]
            split = {
                SEEN_IN_TRAIN_COLUMN: len(seen_items) / len(items),
                N_SEEN_COLUMN: float(len(seen_items)),
                ACCURACY_SEEN_COLUMN: _accuracy(correct, seen_items),
                ACCURACY_UNSEEN_COLUMN: _accuracy(correct, unseen_items),
            }
        results.append(
            CellResult(
                cell[0],
                cell[1],
                cell[2],
                len(items),
                n_correct,
                n_correct / len(items),
                split.pop(SEEN_IN_TRAIN_COLUMN, math.nan),
                **split,
            )
        )
    return results


def _accuracy(correct: Sequence[bool], items: Sequence[int]) -> float:
    return sum(correct[i] for i in items) / len(items) if items else math.nan


def _pick_failures(
    examples: Sequence[Example], generated: Sequence[str], correct: Sequence[bool], per_cell: int
) -> list[Failure]:
    """The first `per_cell` wrong answers of each cell, in the order of `examples`."""
    kept: dict[Cell, int] = {}
    failures = []
    for e, text, ok in zip(examples, generated, correct, strict=True):
        if ok or kept.get(e.cell, 0) >= per_cell:
            continue
        kept[e.cell] = kept.get(e.cell, 0) + 1
        failures.append(
            Failure(
                prompt=e.prompt, expected=e.answer.strip(), generated=text.strip(), cell=e.cell, a=e.a, b=e.b
            )
        )
    return failures


def _first_per_cell(failures: Sequence[Failure], per_cell: int) -> list[Failure]:
    kept: dict[Cell, int] = {}
    out = []
    for failure in failures:
        if kept.get(failure.cell, 0) < per_cell:
            kept[failure.cell] = kept.get(failure.cell, 0) + 1
            out.append(failure)
    return out
